use sausage_plugin::{Result, rpc};

/// A plugin.
struct P;

#[rpc]
impl P {
    fn undocumented(&self) -> Result<()> {
        Ok(())
    }
}

fn main() {}
