use std::rc::Rc;

use sausage_plugin::{Result, listen, rpc};

/// A plugin.
struct P;

#[rpc]
impl P {
    /// Serve.
    async fn serve(&self) -> Result<()> {
        listen("/run/p", Rc::new(Vault)).await
    }
}

/// A vault.
struct Vault;

#[rpc]
impl Vault {
    /// Nothing.
    fn nothing(&self) -> Result<()> {
        Ok(())
    }
}

fn main() {}
