use std::collections::HashMap;

use sausage_plugin::schema;

/// Counts by name, under another name: the bound sees through the alias.
type Counts = HashMap<String, u32>;

/// Statistics.
#[schema]
struct Stats {
    /// Counts by name.
    counts: Counts,
}

fn main() {}
