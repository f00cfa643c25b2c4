//! The compile-time rules of the macros: each `fail/*.rs` must fail with the
//! error in its `.stderr` file (the item named, and what to write), and each
//! `pass/*.rs` must compile.
//!
//! rustc words its notes a little differently from version to version, so
//! the expected errors are compared only with the rustc they were written
//! for ([`WRITTEN_FOR`], the toolchain of `/opt/rust-wasip2` that CI uses).
//! Refresh them with `TRYBUILD=overwrite cargo test -p ui-tests --test ui`,
//! then read them.

use std::process::Command;

/// The rustc version of the `.stderr` files.
const WRITTEN_FOR: &str = "rustc 1.96.";

#[test]
fn rules() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let version = Command::new(&rustc)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let cases = trybuild::TestCases::new();
    if version.starts_with(WRITTEN_FOR) {
        cases.compile_fail("tests/fail/*.rs");
    } else if std::env::var_os("UI_TESTS_PASS_ONLY").is_none() {
        panic!(
            "the expected errors are written for {WRITTEN_FOR}x, and this is {}: run with that \
             toolchain (`. /opt/rust-wasip2/env.sh`), or set UI_TESTS_PASS_ONLY=1 to run only the \
             cases that must compile",
            version.trim()
        );
    }
    cases.pass("tests/pass/*.rs");
}
