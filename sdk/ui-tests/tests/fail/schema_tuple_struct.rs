use sausage_plugin::schema;

/// An ID.
#[schema]
struct Id(String);

fn main() {}
