//! Clock: a service that tells the time through the endpoint `time` at
//! `/run/clock`. Run it as a service: `clock.serve` in `/config/boot.yaml`.

use std::rc::Rc;

use sausage_plugin::{Result, connect, listen, rpc};

/// The clock plugin.
struct Clock;

#[rpc(endpoints(time = Time))]
impl Clock {
    /// Serve the endpoint `time` at `/run/clock`. The process lives while it listens.
    async fn serve(&self) -> Result<()> {
        listen("/run/clock", Rc::new(Time)).await
    }

    /// Milliseconds since 1970, asked of the running service.
    async fn now(&self) -> Result<u64> {
        let time = connect("/run/clock").await?;
        time.call("now", sausage_plugin::serde_json::json!({})).returning::<u64>().await
    }
}

/// The clock's endpoint.
struct Time;

#[rpc]
impl Time {
    /// Milliseconds since 1970.
    fn now(&self) -> Result<u64> {
        let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        Ok(since.as_millis() as u64)
    }
}

fn main() {
    sausage_plugin::run(Clock);
}
