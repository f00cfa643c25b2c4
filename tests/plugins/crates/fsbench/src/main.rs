//! `fsbench`: a raw JSON-RPC benchmark plugin (no SDK).
//!
//! It answers the one request on its stdin, as `probe` does. Each method runs
//! a loop of one kind of operation and reports the time it measured itself
//! (`std::time::Instant`, the WASI monotonic clock), so that the start of the
//! process is not part of the figure.
//!
//! - `fs {"dir", "ops": [{"op": "read"|"write"|"stat", "size", "n", "warmup"}]}`:
//!   for each op, `warmup` untimed then `n` timed operations on a file of
//!   `size` bytes in `dir`: `read` is `std::fs::read` (open, read all,
//!   close), `write` opens the file (created the first time), writes it
//!   whole from the start and closes it, without truncating: it overwrites
//!   the same bytes, so that the filesystem has no blocks to free and
//!   allocate again (which makes the time of a truncating write that of the
//!   disk), `stat` is `std::fs::metadata`. Answers `{"results": [{"op", "size",
//!   "n", "ns"}]}`.
//! - `locks {"mode": "lock"|"pair"|"trip", "n", "warmup", "path"}`: `n`
//!   timed JSON-RPC round trips to the core. `lock`: `core.lock` of a new
//!   path each time (every one granted and held). `pair`: `core.lock` of
//!   `path` with `wait: false`, then the notification `core.unlock`; the
//!   next lock is only granted if the unlock before it took effect, so each
//!   lock answer also covers the unlock before it. `trip`: `core.lock` with
//!   `wait: false` of a path this process holds already (refused at once:
//!   the bare round trip). Answers `{"n", "ns", "refused"}`.

use serde_json::{json, Value};
use std::fs::OpenOptions;
use std::io::{BufRead, Write};
use std::time::Instant;

use rawrpc::{next_message, reply, reply_error, send};

/// Sends a request and returns the result of its response; notifications in between are skipped.
fn call(
    lines: &mut impl Iterator<Item = std::io::Result<String>>,
    id: u64,
    method: &str,
    params: Value,
) -> Result<Value, String> {
    send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    loop {
        let Some(msg) = next_message(lines) else {
            return Err(format!("{method}: EOF before the answer"));
        };
        if msg.get("method").is_some() {
            continue;
        }
        if msg["id"] != json!(id) {
            return Err(format!(
                "{method}: an answer with the id {}, not {id}",
                msg["id"]
            ));
        }
        if let Some(error) = msg.get("error") {
            return Err(format!("{method}: {error}"));
        }
        return Ok(msg["result"].clone());
    }
}

fn notify(method: &str, params: Value) {
    send(&json!({"jsonrpc": "2.0", "method": method, "params": params}));
}

fn io<T>(what: &str, r: std::io::Result<T>) -> Result<T, String> {
    r.map_err(|e| format!("{what}: {e} ({:?})", e.kind()))
}

/// One file operation on `path`; `data` is what a write writes.
fn file_op(op: &str, path: &str, size: usize, data: &[u8]) -> Result<(), String> {
    match op {
        "read" => {
            let bytes = io(path, std::fs::read(path))?;
            if bytes.len() != size {
                return Err(format!("{path}: read {} bytes, not {size}", bytes.len()));
            }
        }
        "write" => {
            let mut file = io(path, OpenOptions::new().write(true).create(true).open(path))?;
            io(path, file.write_all(data))?;
        }
        "stat" => {
            let meta = io(path, std::fs::metadata(path))?;
            if meta.len() != size as u64 {
                return Err(format!("{path}: {} bytes, not {size}", meta.len()));
            }
        }
        other => return Err(format!("no file op {other}")),
    }
    Ok(())
}

fn fs_ops(params: &Value) -> Result<Value, String> {
    let dir = params["dir"]
        .as_str()
        .unwrap_or("/bench")
        .trim_end_matches('/')
        .to_string();
    io(&dir, std::fs::create_dir_all(&dir))?;
    let mut results = Vec::new();
    for spec in params["ops"].as_array().cloned().unwrap_or_default() {
        let op = spec["op"].as_str().unwrap_or("").to_string();
        let size = spec["size"].as_u64().unwrap_or(4096) as usize;
        let n = spec["n"].as_u64().unwrap_or(100);
        let warmup = spec["warmup"].as_u64().unwrap_or(0);
        let data: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
        let path = match op.as_str() {
            "write" => format!("{dir}/write-{size}.bin"),
            _ => {
                // read and stat use a file written beforehand, untimed
                let path = format!("{dir}/read-{size}.bin");
                io(&path, std::fs::write(&path, &data))?;
                path
            }
        };
        for _ in 0..warmup {
            file_op(&op, &path, size, &data)?;
        }
        let start = Instant::now();
        for _ in 0..n {
            file_op(&op, &path, size, &data)?;
        }
        let ns = start.elapsed().as_nanos() as u64;
        results.push(json!({"op": op, "size": size, "n": n, "ns": ns}));
    }
    Ok(json!({"results": results}))
}

fn lock_loop(
    lines: &mut impl Iterator<Item = std::io::Result<String>>,
    params: &Value,
) -> Result<Value, String> {
    let mode = params["mode"].as_str().unwrap_or("pair").to_string();
    let n = params["n"].as_u64().unwrap_or(100);
    let warmup = params["warmup"].as_u64().unwrap_or(0);
    let path = params["path"].as_str().unwrap_or("/bench/lock").to_string();
    let mut next_id = 1u64;
    let mut refused = 0u64;
    if mode == "trip" {
        // hold the lock, so that each later lock with wait: false is refused at once
        call(lines, 0, "core.lock", json!({"path": path}))?;
    }
    let mut one = |lines: &mut _, i: u64| -> Result<(), String> {
        next_id += 1;
        let result = match mode.as_str() {
            "lock" => call(
                lines,
                next_id,
                "core.lock",
                json!({"path": format!("{path}/{i}")}),
            )?,
            "pair" | "trip" => call(
                lines,
                next_id,
                "core.lock",
                json!({"path": path, "wait": false}),
            )?,
            other => return Err(format!("no lock mode {other}")),
        };
        let held = result["held"].as_bool() == Some(true);
        if mode == "trip" {
            if held {
                return Err("a lock held by this process was granted again".into());
            }
        } else if !held {
            refused += 1;
        }
        if mode == "pair" {
            notify("core.unlock", json!({"path": path}));
        }
        Ok(())
    };
    for i in 0..warmup {
        one(lines, i)?;
    }
    let start = Instant::now();
    for i in warmup..warmup + n {
        one(lines, i)?;
    }
    let ns = start.elapsed().as_nanos() as u64;
    Ok(json!({"n": n, "ns": ns, "refused": refused}))
}

fn main() {
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let Some(request) = next_message(&mut lines) else {
        eprintln!("fsbench: no request");
        return;
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let params = request.get("params").cloned().unwrap_or(json!({}));
    let method = request["method"].as_str().unwrap_or("").to_string();
    let outcome = match method.as_str() {
        "fs" => fs_ops(&params),
        "locks" => lock_loop(&mut lines, &params),
        "echo" => Ok(params.clone()),
        other => {
            reply_error(&id, -32601, &format!("fsbench has no method {other}"));
            return;
        }
    };
    match outcome {
        Ok(result) => reply(&id, result),
        Err(message) => reply_error(&id, 1, &message),
    }
}
