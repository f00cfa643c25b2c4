use sausage_plugin::rpc;

/// A plugin.
struct P;

#[rpc]
impl P {
    /// Count.
    fn count(&self) -> u32 {
        1
    }
}

fn main() {}
