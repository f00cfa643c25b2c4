//! `probe`: a raw JSON-RPC test plugin (no SDK).
//!
//! It answers the one request the core writes to its stdin, then returns from
//! `main`, as a plugin should. Each method exercises one rule of the protocol:
//! crashes, silence, noise on stdout, floods, nested calls, notifications.

use serde_json::{json, Value};
use std::io::{BufRead, Seek, Write};

use rawrpc::{next_message, reply, reply_error, send};

/// Sends a request and waits for its response; notifications in between are collected.
fn call(
    lines: &mut impl Iterator<Item = std::io::Result<String>>,
    id: Value,
    method: &str,
    params: Value,
    seen: &mut Vec<Value>,
) -> Value {
    send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    loop {
        let Some(msg) = next_message(lines) else {
            return json!({"eof": true});
        };
        if msg.get("method").is_some() {
            seen.push(msg);
            continue;
        }
        if msg["id"] == id {
            return msg;
        }
        eprintln!("probe: response with an unexpected id: {}", msg["id"]);
    }
}

thread_local! {
    static HEAP: std::cell::RefCell<Box<u64>> = std::cell::RefCell::new(Box::new(0));
}

fn main() {
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let Some(request) = next_message(&mut lines) else {
        eprintln!("probe: no request");
        return;
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let params = request.get("params").cloned().unwrap_or(json!({}));
    let method = request["method"].as_str().unwrap_or("").to_string();
    match method.as_str() {
        // Returns its params.
        "echo" => reply(&id, params),
        // Returns the request exactly as it arrived on stdin.
        "request" => reply(&id, request.clone()),
        // The SAUSAGE_* variables, the arguments and the current folder.
        "env" => {
            let vars: serde_json::Map<String, Value> = std::env::vars()
                .filter(|(k, _)| k.starts_with("SAUSAGE_"))
                .map(|(k, v)| (k, Value::String(v)))
                .collect();
            let args: Vec<String> = std::env::args().collect();
            let cwd = std::env::current_dir().map(|p| p.display().to_string()).ok();
            reply(&id, json!({"vars": vars, "args": args, "cwd": cwd}));
        }
        // Adds one to a counter in linear memory and to a heap value, and returns both:
        // a fresh instance says 1 and 1, whoever ran before it.
        "bump" => {
            static COUNT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
            let count = COUNT.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            let heap = HEAP.with(|h| {
                **h.borrow_mut() += 1;
                **h.borrow()
            });
            reply(&id, json!({"count": count, "heap": heap}));
        }
        // A JSON-RPC error answer.
        "fail" => reply_error(&id, 4711, "probe failed on purpose"),
        // Ends with an exit status before answering.
        "exit" => {
            eprintln!("probe: exiting with {}", params["code"]);
            std::process::exit(params["code"].as_i64().unwrap_or(1) as i32);
        }
        // Panics: with panic=abort this traps.
        "panic" => {
            eprintln!("probe: about to panic");
            panic!("probe panicked on purpose");
        }
        // Computes forever without a host call.
        "spin" => {
            eprintln!("probe: spinning");
            let mut x: u64 = params["seed"].as_u64().unwrap_or(1);
            loop {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                if x == 0 {
                    break;
                }
            }
            reply(&id, json!(x));
        }
        // Computes for `ms` milliseconds, then answers.
        "busy" => {
            let ms = params["ms"].as_u64().unwrap_or(100) as u128;
            let start = std::time::Instant::now();
            let mut x: u64 = 1;
            while start.elapsed().as_millis() < ms {
                for _ in 0..10_000 {
                    x = x.wrapping_mul(31).wrapping_add(7);
                }
            }
            reply(&id, json!({"x": x % 1000}));
        }
        // Sleeps, then answers.
        "sleep" => {
            let ms = params["ms"].as_u64().unwrap_or(100);
            std::thread::sleep(std::time::Duration::from_millis(ms));
            reply(&id, json!({"slept": ms}));
        }
        // Never answers: waits for EOF on stdin, then ends.
        "never" => {
            eprintln!("probe: waiting for EOF");
            while next_message(&mut lines).is_some() {}
            eprintln!("probe: got EOF");
        }
        // Answers, then stays until EOF and runs a stop hook (a file and a note).
        "linger" => {
            if let Some(name) = params["self_file"].as_str() {
                std::fs::write(format!("/self/{name}"), b"from self").unwrap();
            }
            reply(&id, json!("lingering"));
            while next_message(&mut lines).is_some() {}
            if let Some(path) = params["hook_file"].as_str() {
                std::fs::write(path, b"stopped").unwrap();
            }
            if let Some(method) = params["call_on_stop"].as_str() {
                send(&json!({"jsonrpc": "2.0", "id": 99, "method": method, "params": {}}));
                send(&json!({"jsonrpc": "2.0", "method": "core.notify",
                    "params": {"name": "stopping", "params": {}}}));
            }
            eprintln!("probe: stop hook ran");
        }
        // Ignores EOF: must be killed after the grace period.
        "stubborn" => {
            reply(&id, json!("stubborn"));
            while next_message(&mut lines).is_some() {}
            eprintln!("probe: ignoring EOF");
            loop {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        }
        // Writes noise on stdout (not JSON-RPC), then answers.
        "noise" => {
            let mut out = std::io::stdout().lock();
            out.write_all(b"hello, this is not json\n[1,2,3]\n{\"jsonrpc\":\"1.0\"}\n").unwrap();
            out.write_all(b"partial line without newline").unwrap();
            out.flush().unwrap();
            drop(out);
            reply(&id, json!("after noise"));
        }
        // Writes invalid UTF-8 on stdout and stderr, then answers.
        "bad_utf8" => {
            let mut out = std::io::stdout().lock();
            out.write_all(b"\n{\"jsonrpc\":\"2.0\",\"method\":\"x\xff\xfe\"}\n").unwrap();
            out.flush().unwrap();
            drop(out);
            std::io::stderr().write_all(b"bad \xff\xfe bytes\n").unwrap();
            reply(&id, json!("after bad utf8"));
        }
        // Writes `lines` lines to stderr, then answers.
        "log" => {
            let n = params["lines"].as_u64().unwrap_or(1);
            let text = params["text"].as_str().unwrap_or("line").to_string();
            for i in 0..n {
                eprintln!("{text} {i}");
            }
            reply(&id, json!({"logged": n}));
        }
        // Writes a line of `mb` MiB without a newline, then answers (if it can).
        "huge_line" => {
            let mb = params["mb"].as_u64().unwrap_or(64) as usize;
            let chunk = vec![b'x'; 1 << 20];
            let mut out = std::io::stdout().lock();
            for _ in 0..mb {
                out.write_all(&chunk).unwrap();
            }
            out.flush().unwrap();
            drop(out);
            reply(&id, json!("survived"));
        }
        // Answers with a wrong id first, then the right one.
        "wrong_id" => {
            send(&json!({"jsonrpc": "2.0", "id": "not-my-id", "result": "wrong"}));
            send(&json!({"jsonrpc": "2.0", "id": 12345, "result": "wrong"}));
            reply(&id, json!("right"));
        }
        // Answers twice: the second answer is late and must be dropped.
        "twice" => {
            reply(&id, json!("first"));
            reply(&id, json!("second"));
        }
        // Calls `method` with `params` and returns the response it got.
        "call" => {
            let mut seen = Vec::new();
            let target = params["method"].as_str().unwrap_or("").to_string();
            // the call's own time, on the monotonic clock, for the benchmark
            let started = std::time::Instant::now();
            let response = call(&mut lines, json!(1), &target, params["params"].clone(), &mut seen);
            let micros = started.elapsed().as_micros() as u64;
            reply(&id, json!({"response": response, "notifications": seen, "micros": micros}));
        }
        // Makes `count` calls at once with ids 1..=count and returns the responses by id.
        "fan_out" => {
            let target = params["method"].as_str().unwrap_or("probe.echo").to_string();
            let count = params["count"].as_u64().unwrap_or(3);
            for i in 1..=count {
                send(&json!({"jsonrpc": "2.0", "id": i, "method": target, "params": {"i": i}}));
            }
            let mut responses = serde_json::Map::new();
            while (responses.len() as u64) < count {
                let Some(msg) = next_message(&mut lines) else { break };
                if msg.get("method").is_some() {
                    continue;
                }
                responses.insert(msg["id"].to_string(), msg);
            }
            reply(&id, Value::Object(responses));
        }
        // Calls itself `fan` times at once, `depth` levels deep; answers how many leaves
        // answered, how many calls failed, and the first error.
        "tree" => {
            let (fan, depth) = (params["fan"].as_u64().unwrap_or(2), params["depth"].as_u64().unwrap_or(0));
            let mut out = json!({"leaves": if depth == 0 { 1 } else { 0 }, "failed": 0, "error": null});
            for i in 1..=if depth == 0 { 0 } else { fan } {
                send(&json!({"jsonrpc": "2.0", "id": i, "method": "probe.tree",
                    "params": {"fan": fan, "depth": depth - 1}}));
            }
            for _ in 1..=if depth == 0 { 0 } else { fan } {
                let Some(msg) = next_message(&mut lines) else { break };
                let (leaves, failed, error) = match msg.get("error") {
                    Some(e) => (0, 1, e.clone()),
                    None => (msg["result"]["leaves"].as_u64().unwrap_or(0),
                        msg["result"]["failed"].as_u64().unwrap_or(0), msg["result"]["error"].clone()),
                };
                out["leaves"] = json!(out["leaves"].as_u64().unwrap() + leaves);
                out["failed"] = json!(out["failed"].as_u64().unwrap() + failed);
                if out["error"].is_null() { out["error"] = error; }
            }
            reply(&id, out);
        }
        // Sends `count` notifications `method` with `params` without waiting, then answers.
        "notify_flood" => {
            let target = params["method"].as_str().unwrap_or("probe.echo").to_string();
            for _ in 0..params["count"].as_u64().unwrap_or(1) {
                send(&json!({"jsonrpc": "2.0", "method": target, "params": params["params"]}));
            }
            reply(&id, json!("sent"));
        }
        // Sends a notification to `method`, then answers.
        "notify_plugin" => {
            let target = params["method"].as_str().unwrap_or("").to_string();
            send(&json!({"jsonrpc": "2.0", "method": target, "params": params["params"]}));
            reply(&id, json!("sent"));
        }
        // Sends `count` core.notify progress notifications, then answers.
        "progress" => {
            let count = params["count"].as_u64().unwrap_or(3);
            for i in 0..count {
                send(&json!({"jsonrpc": "2.0", "method": "core.notify",
                    "params": {"name": "progress", "params": {"step": i}}}));
            }
            reply(&id, json!({"steps": count}));
        }
        // Sends raw text lines (for batch and malformed requests), then answers with what came back.
        "raw" => {
            let text = params["line"].as_str().unwrap_or("").to_string();
            let mut out = std::io::stdout().lock();
            out.write_all(format!("\n{text}\n").as_bytes()).unwrap();
            out.flush().unwrap();
            drop(out);
            let answer = next_message(&mut lines).unwrap_or(Value::Null);
            reply(&id, json!({"answer": answer}));
        }
        // Under the lock on `path`: reads the number in the file, writes it plus one.
        "locked_increment" => {
            let path = params["path"].as_str().unwrap_or("/state/counter").to_string();
            let mut seen = Vec::new();
            call(&mut lines, json!("lock"), "core.lock", json!({"path": path}), &mut seen);
            let n: u64 = std::fs::read_to_string(&path).ok().and_then(|t| t.trim().parse().ok()).unwrap_or(0);
            std::thread::sleep(std::time::Duration::from_millis(params["hold_ms"].as_u64().unwrap_or(0)));
            let tmp = format!("{path}.{}", std::env::var("SAUSAGE_PID").unwrap_or_default());
            std::fs::write(&tmp, format!("{}", n + 1)).unwrap();
            std::fs::rename(&tmp, &path).unwrap();
            send(&json!({"jsonrpc": "2.0", "method": "core.unlock", "params": {"path": path}}));
            reply(&id, json!({"was": n}));
        }
        // Under the lock on `path`, appends `parts` lines ("<pid> <i>") to it, each
        // by a write at the end it has just measured, with a pause between them:
        // without the lock, two processes would write over each other.
        "locked_append" => {
            let path = params["path"].as_str().unwrap_or("/state/appended").to_string();
            let parts = params["parts"].as_u64().unwrap_or(8);
            let pid = std::env::var("SAUSAGE_PID").unwrap_or_default();
            let mut seen = Vec::new();
            call(&mut lines, json!("lock"), "core.lock", json!({"path": path}), &mut seen);
            for i in 0..parts {
                let mut file = std::fs::OpenOptions::new().create(true).write(true).open(&path).unwrap();
                let end = file.metadata().unwrap().len();
                file.seek(std::io::SeekFrom::Start(end)).unwrap();
                file.write_all(format!("{pid} {i}\n").as_bytes()).unwrap();
                drop(file);
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            send(&json!({"jsonrpc": "2.0", "method": "core.unlock", "params": {"path": path}}));
            reply(&id, json!({"pid": pid}));
        }
        // Takes the lock on `path`, then appends 4 KiB blocks to it forever.
        "append_forever" => {
            let path = params["path"].as_str().unwrap_or("/state/append.bin").to_string();
            let mut seen = Vec::new();
            let lock = call(&mut lines, json!("lock"), "core.lock", json!({"path": path}), &mut seen);
            eprintln!("probe: lock answer {lock}");
            let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&path).unwrap();
            let block = vec![b'a'; 4096];
            loop {
                file.write_all(&block).unwrap();
            }
        }
        // One filesystem operation: rename, mkdir, remove, read_link, metadata.
        "fs_op" => {
            let op = params["op"].as_str().unwrap_or("");
            let path = params["path"].as_str().unwrap_or("");
            let to = params["to"].as_str().unwrap_or("");
            let result: std::io::Result<Value> = match op {
                "rename" => std::fs::rename(path, to).map(|_| json!(true)),
                "mkdir" => std::fs::create_dir_all(path).map(|_| json!(true)),
                "remove" => std::fs::remove_file(path).map(|_| json!(true)),
                "read_link" => std::fs::read_link(path).map(|p| json!(p.display().to_string())),
                "metadata" => std::fs::metadata(path)
                    .map(|m| json!({"dir": m.is_dir(), "len": m.len(), "readonly": m.permissions().readonly()})),
                _ => Ok(json!("unknown op")),
            };
            match result {
                Ok(v) => reply(&id, json!({"ok": v})),
                Err(e) => reply(&id, json!({"error": e.to_string(), "kind": format!("{:?}", e.kind())})),
            }
        }
        // Writes a file and reads it back.
        "write_file" => {
            let path = params["path"].as_str().unwrap_or("/probe.txt");
            let text = params["text"].as_str().unwrap_or("");
            let result = std::fs::write(path, text).and_then(|_| std::fs::read_to_string(path));
            match result {
                Ok(back) => reply(&id, json!({"read": back})),
                Err(e) => reply(&id, json!({"error": e.to_string(), "kind": format!("{:?}", e.kind())})),
            }
        }
        // Reads a file.
        "read_file" => {
            let path = params["path"].as_str().unwrap_or("");
            match std::fs::read_to_string(path) {
                Ok(text) => reply(&id, json!({"text": text})),
                Err(e) => reply(&id, json!({"error": e.to_string(), "kind": format!("{:?}", e.kind())})),
            }
        }
        // Lists a folder.
        "list_dir" => {
            let path = params["path"].as_str().unwrap_or("/");
            match std::fs::read_dir(path) {
                Ok(entries) => {
                    let mut names: Vec<String> = entries
                        .filter_map(|e| e.ok())
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect();
                    names.sort();
                    reply(&id, json!({"names": names}));
                }
                Err(e) => reply(&id, json!({"error": e.to_string(), "kind": format!("{:?}", e.kind())})),
            }
        }
        // Random bytes and the clocks: through std, and through the raw WASI calls.
        // {"random_len"?: n} (default 16) sets how many random bytes each source gives.
        "clocks" => {
            use wasip2::clocks::{monotonic_clock, wall_clock};
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0);
            let wall = wall_clock::now();
            let wall_resolution = wall_clock::resolution();
            let mono_before = monotonic_clock::now();
            let start = std::time::Instant::now();
            std::thread::sleep(std::time::Duration::from_millis(20));
            let elapsed = start.elapsed().as_micros() as u64;
            let mono_after = monotonic_clock::now();
            let len = params["random_len"].as_u64().unwrap_or(16);
            let hex = |bytes: Vec<u8>| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
            reply(
                &id,
                json!({
                    "wall_ms": now,
                    "slept_us": elapsed,
                    "wall": {"seconds": wall.seconds, "nanoseconds": wall.nanoseconds},
                    "wall_resolution_ns": wall_resolution.seconds * 1_000_000_000
                        + u64::from(wall_resolution.nanoseconds),
                    "monotonic_ns": [mono_before, mono_after],
                    "monotonic_resolution_ns": monotonic_clock::resolution(),
                    "random": hex(wasip2::random::random::get_random_bytes(len)),
                    "random_again": hex(wasip2::random::random::get_random_bytes(len)),
                    "random_u64": wasip2::random::random::get_random_u64().to_string(),
                    "insecure": hex(wasip2::random::insecure::get_insecure_random_bytes(len)),
                }),
            );
        }
        // Discovery: the document in /state/probe-discover.json when there is one, a minimal
        // one otherwise; no answer at all when /state/probe-discover-hangs exists.
        "rpc.discover" => {
            if std::path::Path::new("/state/probe-discover-hangs").exists() {
                eprintln!("probe: not answering rpc.discover");
                while next_message(&mut lines).is_some() {}
                return;
            }
            let document = std::fs::read_to_string("/state/probe-discover.json")
                .ok()
                .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                .unwrap_or_else(|| json!({
                    "openrpc": "1.2.6",
                    "info": {"title": "probe", "version": "0.1.0"},
                    "methods": [{"name": "echo", "params": [], "result": {"name": "params", "schema": {}}}]
                }));
            reply(&id, document);
        }
        // The hook of an upgrade: notes what it was told.
        "rpc.retired" => {
            let _ = std::fs::write("/state/retired.json", params.to_string());
            reply(&id, json!({"migrated": true}));
        }
        // Answers, then sends a core.notify: too late, the core must drop it.
        "notify_late" => {
            reply(&id, json!("answered"));
            send(&json!({"jsonrpc": "2.0", "method": "core.notify",
                "params": {"name": "late", "params": {}}}));
            eprintln!("probe: sent a notification after the answer");
        }
        // Takes the lock on `path`, waits until the file `go` exists, then panics holding it.
        "locked_panic" => {
            let path = params["path"].as_str().unwrap_or("/state/locked").to_string();
            let go = params["go"].as_str().unwrap_or("/state/go").to_string();
            let mut seen = Vec::new();
            call(&mut lines, json!("lock"), "core.lock", json!({"path": path}), &mut seen);
            while !std::path::Path::new(&go).exists() {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            panic!("probe panicked holding the lock on {path}");
        }
        // Waits `ms`, sends the core.notify `name` with `params`, waits `ms` again, then answers.
        // What a process sees of its linear memory: the pages at its start and what a
        // growth returns, whether `marker` reversed is anywhere in it before it writes it,
        // and the byte at `peek` (an address an earlier process wrote to). Then it grows
        // by `grow` pages and writes the reversed marker at the start of them.
        "memory" => {
            use core::arch::wasm32::{memory_grow, memory_size};
            let start_pages = memory_size(0);
            let secret: Vec<u8> = params["marker"].as_str().unwrap_or("").bytes().rev().collect();
            let size = start_pages * 65536;
            // SAFETY: every address below memory.size is in bounds of the linear memory
            let memory = unsafe { std::slice::from_raw_parts(std::ptr::null::<u8>().add(1), size - 1) };
            // (the one copy it holds itself excepted)
            let own = secret.as_ptr() as usize;
            let found = !secret.is_empty()
                && memory.windows(secret.len()).enumerate().any(|(i, w)| w == secret && i + 1 != own);
            let peeked = params["peek"].as_u64().map(|at| {
                // SAFETY: a read the test asks for; out of bounds, it traps
                unsafe { std::ptr::read_volatile(at as usize as *const u8) }
            });
            let grow = params["grow"].as_u64().unwrap_or(0) as usize;
            let grew_from = memory_grow(0, grow);
            let written_at = grew_from * 65536;
            if grow > 0 && grew_from != usize::MAX && !secret.is_empty() {
                // SAFETY: the pages just grown are in bounds and no one else's
                unsafe {
                    std::ptr::copy_nonoverlapping(secret.as_ptr(), written_at as *mut u8, secret.len())
                };
            }
            reply(&id, json!({"start_pages": start_pages, "found": found, "peeked": peeked,
                "grew_from": grew_from as isize, "pages": memory_size(0), "written_at": written_at}));
        }
        // Exits (status 0, after its answer) with what a later process on the same instance
        // must not inherit: the preopened folders and a file opened in /state left open (their
        // handle numbers are the answer), and the stack pointer `depth` frames of 64 KiB down.
        "leave" => {
            use wasip2::filesystem::preopens::get_directories;
            use wasip2::filesystem::types::{DescriptorFlags, OpenFlags, PathFlags};
            let mut handles = Vec::new();
            for (dir, _) in get_directories() {
                if let Ok(file) = dir.open_at(
                    PathFlags::empty(),
                    "state/left-open",
                    OpenFlags::CREATE,
                    DescriptorFlags::READ | DescriptorFlags::WRITE,
                ) {
                    handles.push(file.take_handle());
                }
                handles.push(dir.take_handle());
            }
            fn down(depth: u64, answer: &dyn Fn()) -> u8 {
                let frame = std::hint::black_box([depth as u8; 65536]);
                if depth == 0 {
                    answer();
                    std::process::exit(0);
                }
                down(depth - 1, answer) ^ frame[depth as usize % 65536]
            }
            let depth = params["depth"].as_u64().unwrap_or(0);
            down(depth, &|| reply(&id, json!({"handles": handles})));
        }
        // Uses handle numbers it was never given ({"handles": [..]}, those a `leave` left) as
        // descriptors: the component model says that traps; an answer would be a leak.
        "forge" => {
            use wasip2::filesystem::types::Descriptor;
            let mut seen = Vec::new();
            for h in params["handles"].as_array().cloned().unwrap_or_default() {
                // SAFETY: none: that is the point of the test
                let forged = unsafe { Descriptor::from_handle(h.as_u64().unwrap_or(0) as u32) };
                seen.push(format!("{:?}", forged.stat().map(|s| s.type_)));
            }
            reply(&id, json!({"seen": seen}));
        }
        "slow_notify" => {
            let pause = std::time::Duration::from_millis(params["ms"].as_u64().unwrap_or(500));
            std::thread::sleep(pause);
            send(&json!({"jsonrpc": "2.0", "method": "core.notify",
                "params": {"name": params["name"].as_str().unwrap_or("note"), "params": params["params"]}}));
            std::thread::sleep(pause);
            reply(&id, json!("notified"));
        }
        // Takes the lock on `lock` when given, answers when `answer` is true, waits
        // `after_ms`, logs `marker` (the line a test host takes as the order to crash this
        // process's worker), then waits for EOF.
        "crash_worker" => {
            if let Some(path) = params["lock"].as_str() {
                let mut seen = Vec::new();
                call(&mut lines, json!("lock"), "core.lock", json!({"path": path}), &mut seen);
            }
            if params["answer"].as_bool() == Some(true) {
                reply(&id, json!("crashing soon"));
            }
            let after = params["after_ms"].as_u64().unwrap_or(0);
            std::thread::sleep(std::time::Duration::from_millis(after));
            eprintln!("{}", params["marker"].as_str().unwrap_or("crash this worker"));
            while next_message(&mut lines).is_some() {}
            eprintln!("probe: the worker did not crash");
        }
        "" => eprintln!("probe: a request without a method"),
        other => reply_error(&id, -32601, &format!("probe has no method {other}")),
    }
}
