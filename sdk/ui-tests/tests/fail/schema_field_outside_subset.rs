use std::collections::HashMap;

use sausage_plugin::schema;

/// A note.
#[schema]
struct Note {
    /// Counts.
    counts: HashMap<String, u32>,
    /// Anything.
    extra: sausage_plugin::serde_json::Value,
    /// A pair.
    pair: (u8, u8),
    /// A letter.
    letter: char,
}

fn main() {}
