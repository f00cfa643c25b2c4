//! Counter: one total, stored in `/state/counter/total.json`.

use sausage_plugin::{Result, lock, rpc, schema, serde_json, state_dir, write_atomic};

/// The counter plugin.
struct Counter;

/// The params of `add`.
#[schema]
struct AddParams {
    /// How much to add.
    by: u64,
}

#[rpc]
impl Counter {
    /// Add to the total; returns the new total.
    async fn add(&self, AddParams { by }: AddParams) -> Result<u64> {
        let file = state_dir().join("total.json");
        let _lock = lock(&file).await?;
        let total = read(&file)? + by;
        write_atomic(&file, serde_json::to_vec(&total)?)?;
        Ok(total)
    }

    /// The total.
    fn total(&self) -> Result<u64> {
        read(&state_dir().join("total.json"))
    }
}

/// Reads the total; no file yet means 0.
fn read(file: &std::path::Path) -> Result<u64> {
    let Ok(bytes) = std::fs::read(file) else { return Ok(0) };
    Ok(serde_json::from_slice(&bytes)?)
}

fn main() {
    sausage_plugin::run(Counter);
}
