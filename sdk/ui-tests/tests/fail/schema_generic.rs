use sausage_plugin::schema;

/// A page.
#[schema]
struct Page<T> {
    /// The items.
    items: Vec<T>,
}

fn main() {}
