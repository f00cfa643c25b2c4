use sausage_plugin::{Result, rpc};

/// A plugin.
struct P;

#[rpc]
impl P {
    /// Greet someone.
    fn greet(&self, name: String) -> Result<String> {
        Ok(name)
    }
}

fn main() {}
