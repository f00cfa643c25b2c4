use sausage_plugin::{Result, rpc, schema};

/// A plugin.
struct P;

/// A.
#[schema]
struct A {
    /// x.
    x: u32,
}

#[rpc]
impl P {
    /// Read x.
    fn read(&self, a: &A) -> Result<u32> {
        Ok(a.x)
    }
}

fn main() {}
