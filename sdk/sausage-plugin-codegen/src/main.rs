//! `sausage-plugin-codegen PROVIDER < discover.json > client.rs`
//!
//! The generator as a command: it reads an `rpc.discover` document on stdin
//! and writes the module that `sausage_plugin::import!("PROVIDER")` generates
//! to stdout. Built for `wasm32-wasip2`, it is the component the host runs to
//! serve `/proc/core/plugins/<name>/client.rs`. On an error it writes the
//! reason to stderr and exits with status 1.

use std::io::{Read, Write};

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(provider), None) = (args.next(), args.next()) else {
        eprintln!("usage: sausage-plugin-codegen PROVIDER < discover.json > client.rs");
        std::process::exit(2);
    };
    let mut document = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut document) {
        eprintln!("sausage-plugin-codegen: cannot read stdin: {e}");
        std::process::exit(1);
    }
    match sausage_plugin_codegen::generate(&document, &provider) {
        Ok(code) => {
            let mut out = std::io::stdout().lock();
            if out.write_all(code.as_bytes()).and_then(|()| out.flush()).is_err() {
                std::process::exit(1);
            }
        }
        Err(e) => {
            eprintln!("sausage-plugin-codegen: {e}");
            std::process::exit(1);
        }
    }
}
