#[sausage_plugin::test]
fn plain() {}

fn main() {}
