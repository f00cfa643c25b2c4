use sausage_plugin::{Result, rpc};

/// A plugin.
struct P;

/// Not an interface.
struct Vault;

#[rpc(endpoints(vault = Vault))]
impl P {
    /// Nothing.
    fn nothing(&self) -> Result<()> {
        Ok(())
    }
}

fn main() {}
