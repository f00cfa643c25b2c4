//! Counter: totals by name, stored in `/state/counter/totals.json`. The first
//! version kept one total in `total.json`: it becomes the name `default`.

use sausage_plugin::{Result, Retired, lock, on_retired, rpc, schema, serde_json, state_dir, write_atomic};

/// The counter plugin.
struct Counter;

/// The params of `add`.
#[schema]
struct AddParams {
    /// How much to add.
    by: u64,
    /// Whose total (default `default`).
    name: Option<String>,
}

/// The params of `total` and `reset`.
#[schema]
struct NameParams {
    /// Whose total (default `default`).
    name: Option<String>,
}

/// Totals by name.
type Totals = serde_json::Map<String, serde_json::Value>;

#[rpc]
impl Counter {
    /// Add to a total; returns the new total.
    async fn add(&self, AddParams { by, name }: AddParams) -> Result<u64> {
        let _lock = lock(state_dir().join("total.json")).await?;
        let mut totals = load()?;
        let name = name.unwrap_or_else(|| "default".into());
        let total = totals.get(&name).and_then(|v| v.as_u64()).unwrap_or(0) + by;
        totals.insert(name, total.into());
        save(&totals)?;
        Ok(total)
    }

    /// A total.
    async fn total(&self, NameParams { name }: NameParams) -> Result<u64> {
        let _lock = lock(state_dir().join("total.json")).await?;
        let totals = load()?;
        Ok(totals.get(name.as_deref().unwrap_or("default")).and_then(|v| v.as_u64()).unwrap_or(0))
    }

    /// Set a total back to 0.
    async fn reset(&self, NameParams { name }: NameParams) -> Result<()> {
        let _lock = lock(state_dir().join("total.json")).await?;
        let mut totals = load()?;
        totals.remove(name.as_deref().unwrap_or("default"));
        save(&totals)
    }

    /// Moves the old state to the new format, once no old process runs.
    #[on_retired]
    async fn retired(&self, Retired { previous }: Retired) -> Result<String> {
        let _lock = lock(state_dir().join("total.json")).await?;
        load()?;
        Ok(format!("migrated the state of {previous}"))
    }
}

/// Reads the totals; the old format (one total) becomes the name `default`. Call it with the lock held.
fn load() -> Result<Totals> {
    let (old, new) = (state_dir().join("total.json"), state_dir().join("totals.json"));
    if !new.exists() {
        let mut totals = Totals::new();
        if let Ok(text) = std::fs::read_to_string(&old) {
            totals.insert("default".into(), serde_json::from_str(&text)?);
        }
        save(&totals)?;
    }
    Ok(serde_json::from_slice(&std::fs::read(&new)?)?)
}

/// Writes the totals.
fn save(totals: &Totals) -> Result<()> {
    write_atomic(state_dir().join("totals.json"), serde_json::to_vec(totals)?)?;
    Ok(())
}

fn main() {
    sausage_plugin::run(Counter);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[sausage_plugin::test]
    async fn the_old_total_becomes_default() {
        write_atomic(state_dir().join("total.json"), "5").unwrap();
        let name = |n: &str| Some(n.to_string());
        assert_eq!(Counter.add(AddParams { by: 2, name: None }).await.unwrap(), 7);
        assert_eq!(Counter.add(AddParams { by: 3, name: name("x") }).await.unwrap(), 3);
        assert_eq!(Counter.total(NameParams { name: name("x") }).await.unwrap(), 3);
        assert_eq!(Counter.total(NameParams { name: None }).await.unwrap(), 7);
    }
}
