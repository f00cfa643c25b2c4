use sausage_plugin::{Result, rpc};

/// A plugin.
struct P;

struct Vault;

#[rpc]
impl Vault {
    /// The secret.
    fn get(&self) -> Result<String> {
        Ok(String::new())
    }
}

#[rpc(endpoints(vault = Vault))]
impl P {
    /// Nothing.
    fn nothing(&self) -> Result<()> {
        Ok(())
    }
}

fn main() {}
