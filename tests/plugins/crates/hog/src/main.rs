//! `hog`: a raw JSON-RPC test plugin (no SDK) that takes what it can of one
//! resource, to meet the limits of PROTOCOL 3.10: linear memory, stdin it
//! never reads, and files in `/self` and `/run`.

use serde_json::{json, Value};
use std::io::{BufRead, Write};

use rawrpc::{next_message, reply, send};

const MIB: usize = 1 << 20;

/// The size of the linear memory now, in MiB.
fn memory_mib() -> usize {
    core::arch::wasm32::memory_size(0) * 65536 / MIB
}

/// Writes `mib` MiB to `path` in 1 MiB pieces; stops at the first error.
fn write_file(path: &str, mib: usize) -> Value {
    let mut file = match std::fs::File::create(path) {
        Ok(f) => f,
        Err(e) => return json!({"written": 0, "error": e.to_string()}),
    };
    let piece = vec![0x5a_u8; MIB];
    let mut written = 0;
    for _ in 0..mib {
        let mut rest = &piece[..];
        // a short write is continued: the next write says why it stopped
        while !rest.is_empty() {
            match file.write(rest) {
                Ok(0) => return json!({"written": written, "error": "wrote nothing"}),
                Ok(n) => {
                    written += n;
                    rest = &rest[n..];
                }
                Err(e) => return json!({"written": written, "error": e.to_string()}),
            }
        }
    }
    json!({"written": written, "error": null})
}

fn main() {
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let Some(request) = next_message(&mut lines) else {
        eprintln!("hog: no request");
        return;
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let params = request.get("params").cloned().unwrap_or(json!({}));
    let method = request["method"].as_str().unwrap_or("").to_string();
    let number = |name: &str, default: u64| params[name].as_u64().unwrap_or(default) as usize;
    match method.as_str() {
        // Grows its memory by `mib` MiB in pieces of 1 MiB that it touches.
        "grow" => {
            let mut held: Vec<Vec<u8>> = Vec::new();
            for i in 0..number("mib", 1) {
                held.push(vec![i as u8 | 1; MIB]);
            }
            let total: usize = held.iter().map(|v| v.len()).sum();
            reply(&id, json!({"held_mib": total / MIB, "memory_mib": memory_mib()}));
        }
        // Asks for `mib` MiB at once.
        "grow_once" => {
            let v = vec![1_u8; number("mib", 1) * MIB];
            reply(&id, json!({"held_mib": v.len() / MIB, "memory_mib": memory_mib()}));
        }
        // The size of its memory.
        "memory" => reply(&id, json!({"memory_mib": memory_mib()})),
        // Sends `count` requests of `method` and reads none of the answers
        // for `wait_ms`; then reads them and says how many came.
        "unread" => {
            let count = number("count", 1);
            let call = params["method"].as_str().unwrap_or("core.log").to_string();
            for i in 0..count {
                send(&json!({
                    "jsonrpc": "2.0",
                    "id": i + 1,
                    "method": call,
                    "params": params["params"].clone(),
                }));
            }
            std::thread::sleep(std::time::Duration::from_millis(number("wait_ms", 1000) as u64));
            let mut answers = 0;
            while answers < count {
                match next_message(&mut lines) {
                    Some(m) if m.get("id").is_some() => answers += 1,
                    Some(_) => {}
                    None => break,
                }
            }
            reply(&id, json!({"answers": answers}));
        }
        // A string of `mib` MiB (an answer that is large).
        "big" => reply(&id, json!("x".repeat(number("mib", 1) * MIB))),
        // Writes `mib` MiB to `path`, then answers how much it wrote and the error, if any.
        "write" => {
            let path = params["path"].as_str().unwrap_or("/self/hog").to_string();
            reply(&id, write_file(&path, number("mib", 1)));
        }
        // Writes like `write`, answers, and keeps the file until EOF.
        "write_and_wait" => {
            let path = params["path"].as_str().unwrap_or("/self/hog").to_string();
            reply(&id, write_file(&path, number("mib", 1)));
            while next_message(&mut lines).is_some() {}
        }
        // Removes `path`.
        "remove" => {
            let path = params["path"].as_str().unwrap_or("/run/hog");
            let error = std::fs::remove_file(path).err().map(|e| e.to_string());
            reply(&id, json!({"error": error}));
        }
        other => rawrpc::reply_error(&id, -32601, &format!("hog has no method {other}")),
    }
}
