//! Todo: a list of things to do, stored in `/state/todo/items.json`.

use sausage_plugin::{Error, Result, lock, rpc, schema, serde_json, state_dir, write_atomic};

/// The todo plugin. Each call reads the file.
struct Todo;

/// One thing to do.
#[schema]
struct Item {
    /// Its number, from 1.
    id: u64,
    /// What to do.
    text: String,
    /// Whether it is done.
    done: bool,
}

/// The params of `add`.
#[schema]
struct AddParams {
    /// What to do.
    text: String,
}

/// The params of `done`.
#[schema]
struct DoneParams {
    /// The number of the item.
    id: u64,
}

#[rpc]
impl Todo {
    /// Add an item; returns its number.
    async fn add(&self, AddParams { text }: AddParams) -> Result<u64> {
        let _lock = lock(file()).await?;
        let mut items = load()?;
        let id = items.iter().map(|i| i.id).max().unwrap_or(0) + 1;
        items.push(Item { id, text, done: false });
        write_atomic(file(), serde_json::to_vec(&items)?)?;
        Ok(id)
    }

    /// All items, the oldest first.
    fn list(&self) -> Result<Vec<Item>> {
        load()
    }

    /// Mark an item as done.
    async fn done(&self, DoneParams { id }: DoneParams) -> Result<()> {
        let _lock = lock(file()).await?;
        let mut items = load()?;
        let Some(item) = items.iter_mut().find(|i| i.id == id) else {
            return Err(Error::invalid_params(format!("there is no item {id}")));
        };
        item.done = true;
        write_atomic(file(), serde_json::to_vec(&items)?)?;
        Ok(())
    }
}

/// The file of the items: a JSON list.
fn file() -> std::path::PathBuf {
    state_dir().join("items.json")
}

/// Reads the items; no file yet means none.
fn load() -> Result<Vec<Item>> {
    let Ok(bytes) = std::fs::read(file()) else { return Ok(vec![]) };
    Ok(serde_json::from_slice(&bytes)?)
}

fn main() {
    sausage_plugin::run(Todo);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[sausage_plugin::test]
    async fn add_then_done() {
        assert_eq!(Todo.add(AddParams { text: "milk".into() }).await.unwrap(), 1);
        Todo.done(DoneParams { id: 1 }).await.unwrap();
        assert!(Todo.list().unwrap()[0].done);
        assert_eq!(Todo.done(DoneParams { id: 9 }).await.unwrap_err().code(), -32602);
    }
}
