use sausage_plugin::{Result, rpc};

/// A plugin.
struct P;

#[rpc]
impl P {
    /// Change something.
    fn change(&mut self) -> Result<()> {
        Ok(())
    }
}

fn main() {}
