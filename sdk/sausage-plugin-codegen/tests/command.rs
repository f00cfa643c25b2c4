//! The generator's command, which the host runs (built for `wasm32-wasip2`)
//! to serve `/proc/core/plugins/<name>/client.rs`: for every document it
//! writes exactly [`sausage_plugin_codegen::generate`] of it, the function
//! that `import!` calls (see the tests of `sausage-plugin-macros`), whether
//! the document is indented (a copy in `imports/`) or compact (what the host
//! sends).

use std::io::Write;
use std::process::{Command, Output, Stdio};

/// The documents of the SDK's examples, as the Rust tests import them.
const DOCUMENTS: [(&str, &str); 4] = [
    ("notes", include_str!("../../ui-tests/imports/notes.json")),
    ("www", include_str!("../../ui-tests/imports/www.json")),
    ("secrets", include_str!("../../ui-tests/imports/secrets.json")),
    ("odd", include_str!("../../ui-tests/imports/odd.json")),
];

/// The command that cargo built for this test. (`env!("CARGO_BIN_EXE_…")`
/// is not used: a `/bin/sh` wrapper around rustc, like the one in
/// `/opt/rust-wasip2`, drops variables with a `-` in the name.)
fn program() -> std::path::PathBuf {
    if let Some(path) = option_env!("CARGO_BIN_EXE_sausage-plugin-codegen") {
        return path.into();
    }
    if let Ok(path) = std::env::var("CARGO_BIN_EXE_sausage-plugin-codegen") {
        return path.into();
    }
    // target/<profile>/deps/command-<hash> → target/<profile>/sausage-plugin-codegen
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().parent().unwrap().join(format!("sausage-plugin-codegen{}", std::env::consts::EXE_SUFFIX))
}

/// Runs the command, as the host does: the provider name as the argument,
/// the document on stdin.
fn command(provider: &str, document: &str) -> Output {
    let mut child = Command::new(program())
        .arg(provider)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(document.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

fn compact(document: &str) -> String {
    serde_json::to_string(&serde_json::from_str::<serde_json::Value>(document).unwrap()).unwrap()
}

#[test]
fn the_command_writes_exactly_what_import_generates() {
    for (name, document) in DOCUMENTS {
        let expected = sausage_plugin_codegen::generate(document, name).unwrap();
        for input in [document.to_owned(), compact(document)] {
            let out = command(name, &input);
            assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
            assert_eq!(String::from_utf8(out.stdout).unwrap(), expected, "{name}");
            assert!(out.stderr.is_empty(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
}

#[test]
fn the_command_fails_with_the_generators_reason() {
    let out = command("notes", "{\"methods\": 7}");
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    let reason = sausage_plugin_codegen::generate("{\"methods\": 7}", "notes").unwrap_err();
    assert_eq!(String::from_utf8(out.stderr).unwrap(), format!("sausage-plugin-codegen: {reason}\n"));
}

#[test]
fn the_command_wants_one_provider_name() {
    let out = Command::new(program()).stdin(Stdio::null()).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("usage: sausage-plugin-codegen PROVIDER"));
}
