//! Dash: shows the counter's total, through a typed import of `counter`.

use sausage_plugin::{Result, rpc};

sausage_plugin::import!("counter");

/// The dash plugin.
struct Dash;

#[rpc]
impl Dash {
    /// The default total of the counter, as `total: N`.
    async fn show(&self) -> Result<String> {
        let total = counter::total(counter::NameParams { name: None }).await?;
        Ok(format!("total: {total}"))
    }
}

fn main() {
    sausage_plugin::run(Dash);
}
