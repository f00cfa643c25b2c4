sausage_plugin::import!("nothing-here");

fn main() {}
