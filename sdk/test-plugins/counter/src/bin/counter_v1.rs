//! The counter, version 1: the count is text in `count.txt`.

use std::rc::Rc;

use counter::{ENDPOINT, Hit, read_text, text_file, write_text};
use sausage_plugin::{Result, connect, listen, lock, pid, rpc, serde_json::json};

/// The counter plugin.
struct Counter;

/// The endpoint of the running service.
struct Hits;

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
        Ok(read_text()?.unwrap_or(0))
    }
}

#[rpc]
impl Hits {
    /// Count a hit.
    async fn hit(&self) -> Result<Hit> {
        let _lock = lock(text_file()).await?;
        let count = read_text()?.unwrap_or(0) + 1;
        write_text(count)?;
        Ok(Hit { count, version: 1 })
    }
}

fn main() {
    sausage_plugin::run(Counter);
}
