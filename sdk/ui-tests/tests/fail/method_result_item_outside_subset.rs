use sausage_plugin::{Result, rpc};

/// A plugin.
struct P;

#[rpc]
impl P {
    /// Counts by name.
    fn counts(&self) -> Result<Vec<(String, u32)>> {
        Ok(Vec::new())
    }
}

fn main() {
    sausage_plugin::run(P);
}
