use sausage_plugin::rpc;

/// A plugin.
struct P;

#[rpc]
impl Default for P {
    fn default() -> Self {
        P
    }
}

fn main() {}
