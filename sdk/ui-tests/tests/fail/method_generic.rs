use sausage_plugin::{Result, rpc};

/// A plugin.
struct P;

#[rpc]
impl P {
    /// Anything.
    fn any<T: Default>(&self) -> Result<()> {
        let _ = T::default();
        Ok(())
    }
}

fn main() {}
