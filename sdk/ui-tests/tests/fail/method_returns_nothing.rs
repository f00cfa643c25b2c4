use sausage_plugin::rpc;

/// A plugin.
struct P;

#[rpc]
impl P {
    /// Do something.
    fn act(&self) {}
}

fn main() {}
