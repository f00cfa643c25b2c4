use std::collections::HashMap;

use sausage_plugin::{Result, rpc};

/// A plugin.
struct P;

#[rpc]
impl P {
    /// Counts by name.
    fn counts(&self) -> Result<HashMap<String, u32>> {
        Ok(HashMap::new())
    }
}

fn main() {
    sausage_plugin::run(P);
}
