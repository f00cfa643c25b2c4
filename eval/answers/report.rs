//! Report: a summary of the todo list, through a typed import of `todo`.

use sausage_plugin::{Result, rpc, schema};

sausage_plugin::import!("todo");

/// The report plugin.
struct Report;

/// How many items are open and done.
#[schema]
struct Summary {
    /// Items not done yet.
    open: u64,
    /// Items done.
    done: u64,
}

#[rpc]
impl Report {
    /// Count the open and the done items of the todo list.
    async fn summary(&self) -> Result<Summary> {
        let items = todo::list().await?;
        let done = items.iter().filter(|i| i.done).count() as u64;
        Ok(Summary { open: items.len() as u64 - done, done })
    }
}

fn main() {
    sausage_plugin::run(Report);
}
