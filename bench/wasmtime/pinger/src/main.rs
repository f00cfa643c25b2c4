//! `pinger`: a raw JSON-RPC plugin (no SDK) for `deno task bench`.
//!
//! - `ping` answers `{}`.
//! - `serve` answers `{}`, then reads stdin until EOF, as a plugin written as
//!   one loop over the lines of stdin does: it lives until it is stopped.
//! - `loop {method, params, n}` makes `n` calls of `method` one after the
//!   other from this one process, times each from writing its request to
//!   reading its response (`std::time::Instant`, the WASI monotonic clock),
//!   and answers `{"micros": [...]}`.
//!
//! It reads stdin as a plain Rust program does, with
//! `std::io::stdin().lock().lines()`.

use serde_json::{json, Value};
use std::io::BufRead;

use rawrpc::{next_message, reply, reply_error, send};

fn main() {
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let Some(request) = next_message(&mut lines) else {
        eprintln!("pinger: no request");
        return;
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let params = request.get("params").cloned().unwrap_or(json!({}));
    match request["method"].as_str().unwrap_or("") {
        "ping" => reply(&id, json!({})),
        "serve" => {
            reply(&id, json!({}));
            while next_message(&mut lines).is_some() {}
        }
        "loop" => {
            let method = params["method"]
                .as_str()
                .unwrap_or("pinger.ping")
                .to_string();
            let inner = params.get("params").cloned().unwrap_or(json!({}));
            let n = params["n"].as_u64().unwrap_or(1);
            let mut micros = Vec::with_capacity(n as usize);
            for i in 1..=n {
                let started = std::time::Instant::now();
                send(&json!({"jsonrpc": "2.0", "id": i, "method": method, "params": inner}));
                let answer = loop {
                    let Some(msg) = next_message(&mut lines) else {
                        return eprintln!("pinger: EOF before the answer of call {i}");
                    };
                    if msg.get("method").is_none() && msg["id"] == json!(i) {
                        break msg;
                    }
                };
                micros.push(started.elapsed().as_secs_f64() * 1e6);
                if answer.get("error").is_some() {
                    return reply_error(&id, 1, &format!("call {i} of {method} failed: {answer}"));
                }
            }
            reply(&id, json!({"micros": micros}));
        }
        other => reply_error(&id, -32601, &format!("pinger has no method {other:?}")),
    }
}
