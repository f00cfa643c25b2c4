use sausage_plugin::{Result, rpc, schema};

/// A plugin.
struct P;

/// A color.
#[schema]
enum Color {
    /// Red.
    Red,
}

#[rpc]
impl P {
    /// Paint.
    fn paint(&self, color: Color) -> Result<()> {
        let _ = color;
        Ok(())
    }
}

fn main() {}
