use sausage_plugin::schema;

#[schema]
struct Note {
    text: String,
    /// Documented.
    tags: Vec<String>,
}

fn main() {}
