//! `hostile`: the fault suite's plugin (raw JSON-RPC, no SDK).
//!
//! Each method is one way a plugin can attack its host: fan-out, floods,
//! memory, deep nesting, unread answers, garbage, crashes, hangs, kills under
//! a lock, escapes of the world. A few healthy methods serve as bystanders and
//! as "another plugin" that must still answer. Every method that runs long
//! first tells its caller its pid (`core.notify` `pid`), so that the suite can
//! stop or kill it.

use serde_json::{json, Value};
use std::io::{BufRead, Write};

use rawrpc::{next_message, reply, reply_error, send};

type Lines<'a> = std::io::Lines<std::io::StdinLock<'a>>;

fn me() -> String {
    std::env::var("SAUSAGE_PLUGIN").unwrap_or_else(|_| "hostile".into())
}

fn pid() -> String {
    std::env::var("SAUSAGE_PID").unwrap_or_default()
}

/// Tells the caller this process's pid (the suite stops or kills it by pid).
fn announce() {
    send(&json!({"jsonrpc": "2.0", "method": "core.notify",
        "params": {"name": "pid", "params": {"pid": pid()}}}));
}

/// Sends a request and waits for the response with its id; other messages are skipped.
fn call(lines: &mut Lines, id: Value, method: &str, params: Value) -> Value {
    send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    while let Some(msg) = next_message(lines) {
        if msg.get("method").is_none() && msg["id"] == id {
            return msg;
        }
    }
    json!({"eof": true})
}

/// Waits for EOF on stdin (a stop), reading and dropping what comes.
fn until_eof(lines: &mut Lines) {
    while next_message(lines).is_some() {}
}

/// Sleeps forever, deaf to EOF: only a kill ends it.
fn forever() -> ! {
    loop {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// A value nested `depth` levels deep, built as text (serde_json would refuse to nest it).
fn nested_text(depth: usize) -> String {
    let mut s = String::with_capacity(depth * 6);
    for i in 0..depth {
        s.push_str(if i % 2 == 0 { "[" } else { "{\"v\":" });
    }
    s.push('1');
    for i in (0..depth).rev() {
        s.push(if i % 2 == 0 { ']' } else { '}' });
    }
    s
}

fn raw_line(text: &str) {
    let mut out = std::io::stdout().lock();
    out.write_all(format!("\n{text}\n").as_bytes()).unwrap();
    out.flush().unwrap();
}

fn fs_result<T: Into<Value>>(r: std::io::Result<T>) -> Value {
    match r {
        Ok(v) => json!({"ok": v.into()}),
        Err(e) => json!({"error": format!("{:?}", e.kind())}),
    }
}

extern "C" {
    /// wasi-libc's `symlink` (`std::os::wasi::fs::symlink_path` is unstable).
    #[link_name = "symlink"]
    fn libc_symlink(target: *const std::ffi::c_char, path: *const std::ffi::c_char) -> i32;
}

/// Makes a symbolic link at `at` whose content is `target` (replacing one left there).
fn symlink(target: &str, at: &str) -> std::io::Result<bool> {
    let _ = std::fs::remove_file(at);
    let t = std::ffi::CString::new(target).unwrap();
    let p = std::ffi::CString::new(at).unwrap();
    if unsafe { libc_symlink(t.as_ptr(), p.as_ptr()) } == 0 {
        Ok(true)
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Every way out of the world this plugin knows, tried; what each gave.
fn escape(outside: &str, name: &str) -> serde_json::Map<String, Value> {
    let mut out = serde_json::Map::new();
    let read = |path: String| fs_result(std::fs::read_to_string(path));
    let write = |path: String| fs_result(std::fs::write(path, "escaped").map(|_| true));
    out.insert(
        "dotdot".into(),
        read(format!("/../../../../..{outside}/{name}")),
    );
    out.insert("absolute".into(), read(format!("{outside}/{name}")));
    out.insert(
        "proc_dotdot".into(),
        read(format!("/proc/../..{outside}/{name}")),
    );
    out.insert(
        "run_dotdot".into(),
        read(format!("/run/../../..{outside}/{name}")),
    );
    out.insert(
        "self_dotdot".into(),
        read(format!("/self/../../../..{outside}/{name}")),
    );
    let _ = std::fs::create_dir_all("/state/escape");
    out.insert(
        "link_abs".into(),
        fs_result(symlink(&format!("{outside}/{name}"), "/state/escape/abs")),
    );
    out.insert("via_link_abs".into(), read("/state/escape/abs".into()));
    let rel = format!("../../../../../../../..{outside}/{name}");
    out.insert(
        "link_rel".into(),
        fs_result(symlink(&rel, "/state/escape/rel")),
    );
    out.insert("via_link_rel".into(), read("/state/escape/rel".into()));
    out.insert(
        "link_dir".into(),
        fs_result(symlink(outside, "/state/escape/dir")),
    );
    out.insert(
        "via_link_dir".into(),
        read(format!("/state/escape/dir/{name}")),
    );
    out.insert(
        "write_via_link_dir".into(),
        write(format!("/state/escape/dir/{name}-written")),
    );
    out.insert(
        "write_dotdot".into(),
        write(format!("/../../..{outside}/{name}-written")),
    );
    out.insert("write_proc".into(), write("/proc/core/PROTOCOL.md".into()));
    out.insert("write_info".into(), write("/self/info.json".into()));
    out.insert(
        "mkdir_proc".into(),
        fs_result(std::fs::create_dir("/state/../proc/x").map(|_| true)),
    );
    out.insert(
        "rename_out".into(),
        fs_result(std::fs::rename("/state/escape", "/run/escape").map(|_| true)),
    );
    let _ = std::fs::remove_dir_all("/state/escape");
    out
}

fn main() {
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let Some(request) = next_message(&mut lines) else {
        return;
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let params = request.get("params").cloned().unwrap_or(json!({}));
    let method = request["method"].as_str().unwrap_or("").to_string();
    let num = |k: &str, d: u64| params[k].as_u64().unwrap_or(d);
    match method.as_str() {
        "echo" => reply(&id, params),
        "sleep" => {
            std::thread::sleep(std::time::Duration::from_millis(num("ms", 10)));
            reply(&id, json!({"slept": num("ms", 10)}));
        }
        // A bystander: never answers; ends at EOF (a stop).
        "wait" => {
            announce();
            until_eof(&mut lines);
        }
        // A bystander that answers, then stays until EOF holding the lock on `path`.
        "hold_lock" => {
            let path = params["path"]
                .as_str()
                .unwrap_or("/state/bystander")
                .to_string();
            let lock = call(
                &mut lines,
                json!("lock"),
                "core.lock",
                json!({"path": path}),
            );
            reply(&id, json!({"lock": lock["result"], "pid": pid()}));
            until_eof(&mut lines);
        }
        // What /proc shows: the process folders, and the locks of /proc/core/locks.json.
        "proc" => {
            let mut pids: Vec<String> = std::fs::read_dir("/proc")
                .map(|d| {
                    d.filter_map(|e| e.ok())
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            pids.retain(|n| n != "core");
            pids.sort();
            let locks = std::fs::read_to_string("/proc/core/locks.json")
                .ok()
                .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                .unwrap_or(Value::Null);
            reply(&id, json!({"pids": pids, "locks": locks, "me": pid()}));
        }
        // Calls `method` with `params` and returns the response.
        "call" => {
            let target = params["method"].as_str().unwrap_or("").to_string();
            let response = call(&mut lines, json!(1), &target, params["params"].clone());
            reply(&id, json!({"response": response}));
        }
        // Sends a call to `method` and ends at once, without waiting for its answer.
        "call_and_exit" => {
            send(
                &json!({"jsonrpc": "2.0", "id": 1, "method": params["method"].as_str().unwrap_or("other.wait"),
                "params": params["params"]}),
            );
            reply(&id, json!("gone"));
        }
        // Takes and releases a lock, then answers.
        "lock_cycle" => {
            let path = params["path"]
                .as_str()
                .unwrap_or("/state/cycle")
                .to_string();
            let lock = call(&mut lines, json!("l"), "core.lock", json!({"path": path}));
            send(&json!({"jsonrpc": "2.0", "method": "core.unlock", "params": {"path": path}}));
            reply(&id, json!({"held": lock["result"]["held"]}));
        }
        // Calls itself `fan` times at once, `depth` levels deep; counts leaves and failures.
        "tree" => {
            let (fan, depth) = (num("fan", 2), num("depth", 0));
            let mut out =
                json!({"leaves": if depth == 0 { 1 } else { 0 }, "failed": 0, "limit": null});
            let n = if depth == 0 { 0 } else { fan };
            for i in 1..=n {
                send(
                    &json!({"jsonrpc": "2.0", "id": i, "method": format!("{}.tree", me()),
                    "params": {"fan": fan, "depth": depth - 1}}),
                );
            }
            let mut got = 0;
            while got < n {
                let Some(msg) = next_message(&mut lines) else {
                    break;
                };
                if msg.get("method").is_some() {
                    continue;
                }
                got += 1;
                let (leaves, failed, limit) = match msg.get("error") {
                    Some(e) => (0, 1, e["data"]["limit"].clone()),
                    None => (
                        msg["result"]["leaves"].as_u64().unwrap_or(0),
                        msg["result"]["failed"].as_u64().unwrap_or(0),
                        msg["result"]["limit"].clone(),
                    ),
                };
                out["leaves"] = json!(out["leaves"].as_u64().unwrap() + leaves);
                out["failed"] = json!(out["failed"].as_u64().unwrap() + failed);
                if out["limit"].is_null() {
                    out["limit"] = limit;
                }
            }
            reply(&id, out);
        }
        // `count` notifications to `method`, none waited for, then the answer.
        "notify_flood" => {
            let target = params["method"]
                .as_str()
                .unwrap_or("hostile.sleep")
                .to_string();
            let body = json!({"jsonrpc": "2.0", "method": target, "params": params["params"]});
            let line = format!("\n{body}\n");
            let mut out = std::io::stdout().lock();
            for _ in 0..num("count", 1) {
                out.write_all(line.as_bytes()).unwrap();
            }
            out.flush().unwrap();
            drop(out);
            reply(&id, json!("sent"));
        }
        // Grows its memory to `mb` MiB in steps of 16 MiB, each page touched; answers what it got.
        "grow" => {
            announce();
            let mut held: Vec<Vec<u8>> = Vec::new();
            let want = num("mb", 4096);
            let step = 16usize << 20;
            for i in 0..want / 16 {
                let mut block = Vec::new();
                if block.try_reserve_exact(step).is_err() {
                    eprintln!("hostile: allocation failed at {} MiB", i * 16);
                    break;
                }
                block.resize(step, (i % 251) as u8 + 1);
                held.push(block);
            }
            let got = held.len() as u64 * 16;
            eprintln!("hostile: holding {got} MiB");
            reply(&id, json!({"mb": got}));
        }
        // A message nested `depth` deep on stdout (a call to `method`), then one that is fine.
        "deep" => {
            let depth = num("depth", 4000) as usize;
            let target = params["method"].as_str().unwrap_or("other.echo");
            raw_line(&format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"{target}\",\"params\":{{\"x\":{}}}}}",
                nested_text(depth)
            ));
            // and an answer to its own request nested as deep: noise too
            raw_line(&format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{}}}",
                nested_text(depth)
            ));
            let after = call(&mut lines, json!(8), target, json!({"after": true}));
            reply(&id, json!({"after": after["result"]}));
        }
        // `count` core.log requests for `limit` entries each, answers never read; then waits
        // (deaf to EOF unless `stop` is true).
        "unread_logs" => {
            announce();
            for i in 0..num("count", 60) {
                send(
                    &json!({"jsonrpc": "2.0", "id": 100 + i, "method": "core.log",
                    "params": {"limit": num("limit", 10000)}}),
                );
            }
            eprintln!(
                "hostile: {} core.log requests sent, not reading",
                num("count", 60)
            );
            if params["deaf"].as_bool().unwrap_or(false) {
                forever();
            }
            std::thread::sleep(std::time::Duration::from_millis(num("ms", 600_000)));
        }
        // Writes `mb` MiB to /self/blob in 1 MiB pieces; answers how much went in, then holds it
        // until EOF.
        "self_write" => {
            let chunk = vec![b's'; 1 << 20];
            let mut written = 0u64;
            let mut error = Value::Null;
            match std::fs::File::create("/self/blob") {
                Ok(mut f) => {
                    for _ in 0..num("mb", 64) {
                        match f.write(&chunk) {
                            Ok(n) => {
                                written += n as u64;
                                if n < chunk.len() {
                                    error = json!("short write");
                                    break;
                                }
                            }
                            Err(e) => {
                                error = json!(format!("{:?}", e.kind()));
                                break;
                            }
                        }
                    }
                }
                Err(e) => error = json!(format!("{:?}", e.kind())),
            }
            reply(
                &id,
                json!({"written": written, "error": error, "pid": pid()}),
            );
            until_eof(&mut lines);
        }
        // Writes `mb` MiB of short lines that are not JSON-RPC on stdout, then answers.
        "stdout_flood" => {
            let line =
                b"this is not a message, only noise on stdout, line after line\n".repeat(1024);
            let mut out = std::io::stdout().lock();
            let mut sent = 0usize;
            while sent < (num("mb", 64) as usize) << 20 {
                out.write_all(&line).unwrap();
                sent += line.len();
            }
            out.flush().unwrap();
            drop(out);
            reply(&id, json!({"bytes": sent}));
        }
        // Writes `lines` lines of `len` bytes to stderr, then answers.
        "stderr_flood" => {
            let text = "e".repeat(num("len", 100) as usize);
            let mut err = std::io::stderr().lock();
            for i in 0..num("lines", 100_000) {
                writeln!(err, "{i} {text}").unwrap();
            }
            drop(err);
            reply(&id, json!({"lines": num("lines", 100_000)}));
        }
        // A line of `mb` MiB (on stdout, or stderr with `stderr`), no newline, then the answer.
        "huge_line" => {
            let chunk = vec![b'x'; 1 << 20];
            let to_stderr = params["stderr"].as_bool().unwrap_or(false);
            for _ in 0..num("mb", 64) {
                if to_stderr {
                    std::io::stderr().write_all(&chunk).unwrap();
                } else {
                    std::io::stdout().write_all(&chunk).unwrap();
                }
            }
            std::io::stdout().flush().unwrap();
            reply(&id, json!("survived"));
        }
        // Garbage JSON-RPC of every kind on stdout, then the real answer.
        "garbage" => {
            let junk = [
                "{", "}", "[]", "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"other.echo\"}]", "null",
                "\"2.0\"", "{\"jsonrpc\":\"2.0\"}", "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"x.y\"}",
                "{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"other.echo\"}",
                "{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"other.echo\"}",
                "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":42}",
                "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"nodot\"}",
                "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"\"}",
                "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"other.echo\",\"params\":[1,2]}",
                "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"other.echo\",\"params\":\"s\"}",
                "{\"jsonrpc\":\"2.0\",\"id\":\"unknown\",\"result\":1}",
                "{\"jsonrpc\":\"2.0\",\"id\":99999,\"error\":{\"code\":1,\"message\":\"x\"}}",
                "{\"jsonrpc\":\"2.0\",\"result\":1}",
                "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"core.nosuch\"}",
                "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"core.lock\",\"params\":{\"path\":\"\"}}",
                "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"core.stop\",\"params\":{\"pid\":\"nobody\"}}",
                "{\"jsonrpc\":\"2.0\",\"id\":10,\"method\":\"no-such-plugin.x\"}",
                "{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"../etc.x\"}",
                "{\"jsonrpc\":\"2.0\",\"id\":12,\"method\":\"core.call\",\"params\":{\"method\":5}}",
                "{\"jsonrpc\":\"2.0\",\"id\":1e400,\"method\":\"other.echo\"}",
                "{\"jsonrpc\":\"2.0\",\"id\":13,\"method\":\"other.echo\",\"params\":{\"s\":\"\\ud800\"}}",
                "\u{0}\u{1}\u{7f}",
            ];
            for j in junk {
                raw_line(j);
            }
            // the same id twice in flight
            raw_line(
                "{\"jsonrpc\":\"2.0\",\"id\":20,\"method\":\"other.sleep\",\"params\":{\"ms\":50}}",
            );
            raw_line(
                "{\"jsonrpc\":\"2.0\",\"id\":20,\"method\":\"other.sleep\",\"params\":{\"ms\":50}}",
            );
            std::io::stdout()
                .write_all(b"\xff\xfe not utf-8\n")
                .unwrap();
            std::io::stdout().flush().unwrap();
            // read what comes back for a moment, then answer
            let deadline =
                std::time::Instant::now() + std::time::Duration::from_millis(num("ms", 300));
            let mut answers = 0;
            while std::time::Instant::now() < deadline && answers < 16 {
                if next_message(&mut lines).is_none() {
                    break;
                }
                answers += 1;
            }
            reply(&id, json!({"answers": answers}));
        }
        // Crashes (a Rust panic traps).
        "panic" => panic!("hostile: crashing on purpose"),
        // Exits with status `code` before answering.
        "exit" => std::process::exit(num("code", 1) as i32),
        // Never answers; with `deaf`, ignores EOF too (only a kill ends it).
        "hang" => {
            announce();
            if params["deaf"].as_bool().unwrap_or(false) {
                forever();
            }
            until_eof(&mut lines);
        }
        // Computes forever without a host call.
        "spin" => {
            announce();
            let mut x: u64 = num("seed", 1);
            loop {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                if x == 0 {
                    break;
                }
            }
            reply(&id, json!(x));
        }
        // Under the lock on `path`: writes numbered 64 KiB blocks to it until killed (or `mb` MiB).
        "locked_writer" => {
            let path = params["path"]
                .as_str()
                .unwrap_or("/state/locked.bin")
                .to_string();
            let lock = call(
                &mut lines,
                json!("lock"),
                "core.lock",
                json!({"path": path}),
            );
            if lock["result"]["held"] != json!(true) {
                reply_error(&id, 1, "no lock");
                return;
            }
            announce();
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .unwrap();
            // 64 KiB blocks, up to `mb` MiB (then it waits for its kill, holding the lock)
            let blocks = params["mb"].as_u64().map(|mb| mb * 16).unwrap_or(u64::MAX);
            let mut n: u64 = 0;
            while n < blocks {
                let block = format!("{n:016}").repeat(4096);
                f.write_all(block.as_bytes()).unwrap();
                n += 1;
            }
            forever();
        }
        // Tries to leave the world: `..`, links out, /proc writes, the mount names, info.json.
        // Answers what each attempt gave; the suite checks that nothing outside changed.
        "escape" => {
            let outside = params["outside"].as_str().unwrap_or("/tmp").to_string();
            let name = params["name"].as_str().unwrap_or("canary").to_string();
            reply(&id, Value::Object(escape(&outside, &name)));
        }
        "" => {}
        "rpc.discover" => reply(
            &id,
            json!({
                "openrpc": "1.2.6",
                "info": {"title": "hostile", "version": "0.1.0"},
                "methods": [{"name": "echo", "params": [], "result": {"name": "params", "schema": {}}}]
            }),
        ),
        other => reply_error(&id, -32601, &format!("hostile has no method {other}")),
    }
}
