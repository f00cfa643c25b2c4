//! The counter, version 2: the count is JSON in `count.json`. `rpc.retired`
//! moves version 1's text into it; until then, the text is read.

use std::rc::Rc;

use counter::{ENDPOINT, Hit, json_file, read_json, read_text, text_file, write_json};
use sausage_plugin::{Result, Retired, connect, listen, lock, on_retired, pid, rpc, serde_json::json};

/// The counter plugin.
struct Counter;

/// The endpoint of the running service.
struct Hits;

/// The count: version 2's file, or version 1's while it is not migrated.
fn current() -> Result<u64> {
    Ok(read_json()?.or(read_text()?).unwrap_or(0))
}

#[rpc(endpoints(hits = Hits), grace_seconds = 2)]
impl Counter {
    /// Serve the endpoint `hits` at `/run/counter` until stopped; returns the process ID.
    async fn serve(&self) -> Result<String> {
        listen(ENDPOINT, Rc::new(Hits)).await?; // the process lives while it listens
        Ok(pid())
    }

    /// Hit the running service through its endpoint.
    async fn knock(&self) -> Result<Hit> {
        connect(ENDPOINT).await?.call("hit", json!({})).returning().await
    }

    /// The count, as stored.
    fn count(&self) -> Result<u64> {
        current()
    }

    /// Move version 1's count into `count.json`; returns what it did.
    #[on_retired]
    async fn migrate(&self, Retired { previous }: Retired) -> Result<String> {
        let _lock = lock(json_file()).await?;
        let Some(text) = read_text()? else {
            return Ok(format!("nothing to migrate from {previous}"));
        };
        // a hit after version 1 ended already wrote count.json from the text
        let count = read_json()?.unwrap_or(text);
        write_json(count)?;
        std::fs::remove_file(text_file())?;
        Ok(format!("migrated the count {count}"))
    }
}

#[rpc]
impl Hits {
    /// Count a hit.
    async fn hit(&self) -> Result<Hit> {
        let _lock = lock(json_file()).await?;
        let count = current()? + 1;
        write_json(count)?;
        Ok(Hit { count, version: 2 })
    }
}

fn main() {
    sausage_plugin::run(Counter);
}
