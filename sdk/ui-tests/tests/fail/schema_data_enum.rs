use sausage_plugin::schema;

/// A shape.
#[schema]
enum Shape {
    /// A circle.
    Circle { radius: f64 },
    /// A dot.
    Dot,
}

fn main() {}
