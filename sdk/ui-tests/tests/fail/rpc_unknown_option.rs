use sausage_plugin::{Result, rpc};

/// A plugin.
struct P;

#[rpc(grace = 5)]
impl P {
    /// Nothing.
    fn nothing(&self) -> Result<()> {
        Ok(())
    }
}

fn main() {}
