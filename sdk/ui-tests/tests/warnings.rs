//! The generated imports are private to the crate, so rustc warns about each
//! imported method that a plugin does not use, at the `import!` that made
//! it (and about nothing else). Checks the fixture `fixtures/consumer`, the
//! example of the SDK's README, with `cargo check`.

use std::collections::BTreeSet;
use std::process::Command;

#[test]
fn rustc_warns_about_each_unused_imported_method() {
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/consumer/Cargo.toml");
    let target = concat!(env!("CARGO_MANIFEST_DIR"), "/../target/tests/consumer");
    let output = Command::new(env!("CARGO"))
        .args(["check", "--quiet", "--message-format=json", "--manifest-path", manifest])
        .env("CARGO_TARGET_DIR", target)
        .output()
        .expect("cargo runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let mut warnings = BTreeSet::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(message) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        if message["reason"] != "compiler-message" || message["target"]["name"] != "consumer" {
            continue;
        }
        let diagnostic = &message["message"];
        if diagnostic["level"] == "warning" && diagnostic["spans"].as_array().is_some_and(|s| !s.is_empty()) {
            let line = diagnostic["spans"][0]["text"][0]["text"].as_str().unwrap_or("").trim().to_owned();
            warnings.insert(format!("{} | {line}", diagnostic["message"].as_str().unwrap()));
        }
    }
    let expected: BTreeSet<String> = [
        "function `list` is never used | sausage_plugin::import!(\"notes\"); // imports/notes.json",
        "method `stop` is never used | sausage_plugin::import!(\"www\"); // imports/www.json, with its endpoint \"control\"",
        "function `serve` is never used | sausage_plugin::import!(\"secrets\"); // imports/secrets.json, with its endpoint \"vault\"",
        "methods `set`, `remove`, and `names` are never used | sausage_plugin::import!(\"secrets\"); // imports/secrets.json, with its endpoint \"vault\"",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    assert_eq!(warnings, expected);
}
