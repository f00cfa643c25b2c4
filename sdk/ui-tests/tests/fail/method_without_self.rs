use sausage_plugin::{Result, rpc};

/// A plugin.
struct P;

#[rpc]
impl P {
    /// A helper without self.
    fn helper() -> Result<()> {
        Ok(())
    }
}

fn main() {}
