use sausage_plugin::{Result, on_retired};

/// A plugin.
struct P;

impl P {
    /// Migrate.
    #[on_retired]
    fn migrate(&self) -> Result<()> {
        Ok(())
    }
}

fn main() {}
