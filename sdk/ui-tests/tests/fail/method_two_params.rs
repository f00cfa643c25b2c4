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
    /// Add two things.
    fn add(&self, a: A, b: A) -> Result<u32> {
        Ok(a.x + b.x)
    }
}

fn main() {}
