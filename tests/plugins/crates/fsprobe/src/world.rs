//! `fsprobe` as a plugin: in a world it answers one JSON-RPC request.
//!
//! Each method tries things through `std::fs` (and, where wasi-libc would
//! hide the WASI error code, through raw `wasi:filesystem`) and reports what
//! happened, attempt by attempt: the tests on the host side judge. An error
//! is reported as `{"kind", "errno", "code", "message"}`: the `std::io`
//! kind, wasi-libc's errno, and the `wasi:filesystem` error code behind it.

use serde_json::{json, Map, Value};
use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use wasip2::filesystem::preopens::get_directories;
use wasip2::filesystem::types::{
    Descriptor, DescriptorFlags, ErrorCode as WasiError, OpenFlags, PathFlags,
};

/// The names of wasi-libc's errno values (WASI preview 1 numbering).
const ERRNO: [&str; 77] = [
    "SUCCESS",
    "E2BIG",
    "EACCES",
    "EADDRINUSE",
    "EADDRNOTAVAIL",
    "EAFNOSUPPORT",
    "EAGAIN",
    "EALREADY",
    "EBADF",
    "EBADMSG",
    "EBUSY",
    "ECANCELED",
    "ECHILD",
    "ECONNABORTED",
    "ECONNREFUSED",
    "ECONNRESET",
    "EDEADLK",
    "EDESTADDRREQ",
    "EDOM",
    "EDQUOT",
    "EEXIST",
    "EFAULT",
    "EFBIG",
    "EHOSTUNREACH",
    "EIDRM",
    "EILSEQ",
    "EINPROGRESS",
    "EINTR",
    "EINVAL",
    "EIO",
    "EISCONN",
    "EISDIR",
    "ELOOP",
    "EMFILE",
    "EMLINK",
    "EMSGSIZE",
    "EMULTIHOP",
    "ENAMETOOLONG",
    "ENETDOWN",
    "ENETRESET",
    "ENETUNREACH",
    "ENFILE",
    "ENOBUFS",
    "ENODEV",
    "ENOENT",
    "ENOEXEC",
    "ENOLCK",
    "ENOLINK",
    "ENOMEM",
    "ENOMSG",
    "ENOPROTOOPT",
    "ENOSPC",
    "ENOSYS",
    "ENOTCONN",
    "ENOTDIR",
    "ENOTEMPTY",
    "ENOTRECOVERABLE",
    "ENOTSOCK",
    "ENOTSUP",
    "ENOTTY",
    "ENXIO",
    "EOVERFLOW",
    "EOWNERDEAD",
    "EPERM",
    "EPIPE",
    "EPROTO",
    "EPROTONOSUPPORT",
    "EPROTOTYPE",
    "ERANGE",
    "EROFS",
    "ESPIPE",
    "ESRCH",
    "ESTALE",
    "ETIMEDOUT",
    "ETXTBSY",
    "EXDEV",
    "ENOTCAPABLE",
];

/// The `wasi:filesystem` error code that wasi-libc turns into `errno`.
fn wasi_code(errno: &str) -> &'static str {
    match errno {
        "EACCES" => "access",
        "EAGAIN" => "would-block",
        "EBADF" => "bad-descriptor",
        "EBUSY" => "busy",
        "EEXIST" => "exist",
        "EFBIG" => "file-too-large",
        "EILSEQ" => "illegal-byte-sequence",
        "EINVAL" => "invalid",
        "EIO" => "io",
        "EISDIR" => "is-directory",
        "ELOOP" => "loop",
        "EMLINK" => "too-many-links",
        "ENAMETOOLONG" => "name-too-long",
        "ENOENT" => "no-entry",
        "ENOMEM" => "insufficient-memory",
        "ENOSPC" => "insufficient-space",
        "ENOTDIR" => "not-directory",
        "ENOTEMPTY" => "not-empty",
        "ENOTSUP" => "unsupported",
        "EOVERFLOW" => "overflow",
        "EPERM" => "not-permitted",
        "EROFS" => "read-only",
        "EXDEV" => "cross-device",
        "EDQUOT" => "quota",
        _ => "?",
    }
}

/// An I/O error as JSON.
fn error_json(e: &std::io::Error) -> Value {
    let errno = e
        .raw_os_error()
        .and_then(|n| ERRNO.get(n as usize).copied())
        .unwrap_or("");
    json!({
        "kind": format!("{:?}", e.kind()),
        "errno": errno,
        "code": if errno.is_empty() { "" } else { wasi_code(errno) },
        "message": e.to_string(),
    })
}

/// A raw `wasi:filesystem` error code in WIT spelling (`insufficient-memory`).
fn wasi_error_name(e: WasiError) -> String {
    e.name().to_string()
}

/// The outcome of one attempt: `{"ok": ...}` or `{"err": ...}`.
fn outcome<T>(r: std::io::Result<T>, ok: impl FnOnce(T) -> Value) -> Value {
    match r {
        Ok(v) => json!({ "ok": ok(v) }),
        Err(e) => json!({ "err": error_json(&e) }),
    }
}

/// Up to 200 characters of what was read.
fn text(bytes: Vec<u8>) -> Value {
    json!(String::from_utf8_lossy(&bytes)
        .chars()
        .take(200)
        .collect::<String>())
}

fn unit<T>(_: T) -> Value {
    json!(true)
}

// ---------------------------------------------------------------- JSON-RPC

struct Rpc {
    lines: std::io::Lines<std::io::StdinLock<'static>>,
    next_id: u64,
}

impl Rpc {
    fn send(message: &Value) {
        let mut out = std::io::stdout().lock();
        out.write_all(format!("\n{message}\n").as_bytes()).unwrap();
        out.flush().unwrap();
    }

    /// The next message on stdin; `None` at EOF.
    fn next(&mut self) -> Option<Value> {
        for line in self.lines.by_ref() {
            let line = line.ok()?;
            if line.trim().is_empty() {
                continue;
            }
            match serde_json::from_str(&line) {
                Ok(v) => return Some(v),
                Err(e) => eprintln!("fsprobe: unreadable line on stdin: {e}"),
            }
        }
        None
    }

    /// Calls `method` and waits for its response (notifications in between are skipped).
    fn call(&mut self, method: &str, params: &Value) -> Value {
        self.next_id += 1;
        let id = json!(format!("fsprobe-{}", self.next_id));
        Self::send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        while let Some(message) = self.next() {
            if message.get("method").is_none() && message["id"] == id {
                return message;
            }
        }
        json!({"eof": true})
    }
}

/// Answers the one request on stdin.
pub fn serve() {
    let mut rpc = Rpc {
        lines: std::io::stdin().lock().lines(),
        next_id: 0,
    };
    let Some(request) = rpc.next() else {
        eprintln!("fsprobe: no request");
        return;
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let params = request.get("params").cloned().unwrap_or(json!({}));
    let method = request["method"].as_str().unwrap_or("").to_string();
    eprintln!("fsprobe: {method}");
    let result = match method.as_str() {
        "rpc.discover" => Ok(discover()),
        "checks" => Ok(checks(&params)),
        "escape" => Ok(escape(&params)),
        "flip" => Ok(flip(&params)),
        "race" => Ok(race(&params)),
        "names" => Ok(names(&params)),
        "long_paths" => Ok(long_paths(&params)),
        "open_many" => Ok(open_many(&params, &mut rpc)),
        "open_some" => Ok(open_some(&params)),
        "fill" => Ok(fill(&params)),
        "fill_raw" => Ok(fill_raw(&params)),
        "write" => Ok(write(&params)),
        "ops" => Ok(ops(&params)),
        "sqlite" => Ok(sqlite(&params)),
        "tempfiles" => Ok(tempfiles(&params)),
        "deep" => Ok(deep(&params)),
        "many" => Ok(many(&params)),
        other => Err(format!("fsprobe has no method {other}")),
    };
    match result {
        Ok(value) => Rpc::send(&json!({"jsonrpc": "2.0", "id": id, "result": value})),
        Err(message) => Rpc::send(&json!({
            "jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": message}
        })),
    }
}

fn discover() -> Value {
    let method = |name: &str| json!({"name": name, "params": [], "result": {"name": "report", "schema": {}}});
    let methods: Vec<Value> = [
        "checks",
        "escape",
        "flip",
        "race",
        "names",
        "long_paths",
        "open_many",
        "open_some",
        "fill",
        "fill_raw",
        "write",
        "ops",
        "sqlite",
        "tempfiles",
        "deep",
        "many",
    ]
    .iter()
    .map(|n| method(n))
    .collect();
    json!({
        "openrpc": "1.2.6",
        "info": {"title": "fsprobe", "version": "0.1.0"},
        "methods": methods,
    })
}

fn str_param<'a>(params: &'a Value, name: &str, default: &'a str) -> &'a str {
    params[name].as_str().unwrap_or(default)
}

// ---------------------------------------------------------------- checks

/// The `std::fs` checks of command mode under `root` (created first); `prefix` is where
/// `root` is in its layer (`""` at the root of `/run` or `/self`).
fn checks(params: &Value) -> Value {
    let root = PathBuf::from(str_param(params, "root", "/"));
    let _ = crate::PREFIX.set(str_param(params, "prefix", "").to_string());
    let mut results = Map::new();
    if let Err(e) = fs::create_dir_all(&root) {
        return json!({"error": error_json(&e)});
    }
    crate::run_checks(&root, |name, result| {
        let value = match result {
            Ok(true) => "ok".to_string(),
            Ok(false) => "skip".to_string(),
            Err(e) => format!("FAIL: {e}"),
        };
        results.insert(name.to_string(), json!(value));
    });
    json!({ "results": results })
}

// ---------------------------------------------------------------- escapes

/// Makes symbolic links that lead out of the world in each of `areas`, then
/// tries to read, write, open, stat, list, rename, link and remove through
/// them. `outside` is a host folder outside the world (with `secret` and
/// `sub/inner.txt`); `from_root` is the relative path from the world folder to
/// it (`../sausage-outside-x`). Decoys at the places where the links land when
/// they are resolved inside their layer show where they went.
fn escape(params: &Value) -> Value {
    let outside = str_param(params, "outside", "/nonexistent");
    let from_root = str_param(params, "from_root", "../nonexistent");
    let areas: Vec<String> = params["areas"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let mut attempts = Vec::new();
    let mut setup = Vec::new();
    for area in &areas {
        let dir = PathBuf::from(area);
        let depth = area.split('/').filter(|p| !p.is_empty()).count();
        // the layer of the area: its links resolve from there
        let layer = if area.starts_with("/run") {
            "/run"
        } else if area.starts_with("/self") {
            "/self"
        } else {
            ""
        };
        let layer_depth = if layer.is_empty() { depth } else { depth - 1 };
        let ups = "../".repeat(layer_depth);
        let decoy = if layer.is_empty() {
            "world"
        } else {
            &layer[1..]
        };
        // decoys where an absolute or relative target lands inside the layer
        let outside_name = from_root.trim_start_matches("../");
        for decoy_dir in [
            format!("{layer}{outside}"),
            format!("{layer}/{outside_name}"),
        ] {
            let made = fs::create_dir_all(format!("{decoy_dir}/sub")).and_then(|_| {
                fs::write(format!("{decoy_dir}/secret"), format!("DECOY-{decoy}"))?;
                fs::write(
                    format!("{decoy_dir}/sub/inner.txt"),
                    format!("DECOY-{decoy}"),
                )
            });
            setup.push(json!({"decoy": decoy_dir, "result": outcome(made, unit)}));
        }
        let made = fs::create_dir_all(&dir).and_then(|_| fs::write(dir.join("local.txt"), "local"));
        setup.push(json!({"area": area, "result": outcome(made, unit)}));
        let deep = "../".repeat(24);
        let links: Vec<(String, String)> = vec![
            ("abs_etc".into(), "/etc".into()),
            ("abs_passwd".into(), "/etc/passwd".into()),
            ("abs_secret".into(), format!("{outside}/secret")),
            ("abs_outdir".into(), outside.to_string()),
            (
                "abs_new".into(),
                format!("{outside}/fsprobe-escape-abs-new"),
            ),
            ("rel_secret".into(), format!("{ups}{from_root}/secret")),
            ("rel_outdir".into(), format!("{ups}{from_root}")),
            (
                "rel_new".into(),
                format!("{ups}{from_root}/fsprobe-escape-rel-new"),
            ),
            (
                "deep_secret".into(),
                format!("{deep}{}/secret", &outside[1..]),
            ),
            ("deep_outdir".into(), format!("{deep}{}", &outside[1..])),
            ("dotdot".into(), "..".into()),
            ("hop".into(), "rel_outdir".into()),
            ("hop_abs".into(), "abs_outdir".into()),
            ("hop2".into(), "hop".into()),
            ("hop_up".into(), "dotdot/../../../..".into()),
            ("to_root".into(), "/".into()),
            ("to_run".into(), "/run".into()),
            ("to_self".into(), "/self".into()),
            ("to_proc".into(), "/proc".into()),
            ("to_state".into(), "/state".into()),
        ];
        for (name, target) in &links {
            let made = crate::symlink(target, dir.join(name));
            setup.push(json!({"area": area, "link": name, "target": target,
                "result": outcome(made, unit)}));
        }
        let escape_name = |what: &str, link: &str| {
            format!(
                "fsprobe-escape-{what}-{}-{link}",
                area.trim_start_matches('/').replace('/', "_")
            )
        };
        let mut record = |link: &str, op: &str, path: &Path, result: Value| {
            attempts.push(json!({
                "area": area, "link": link, "op": op,
                "path": path.to_string_lossy(), "result": result,
            }));
        };
        // reads first, so that the decoys are still as made
        for (link, _) in &links {
            let path = dir.join(link);
            record(
                link,
                "stat",
                &path,
                outcome(
                    fs::metadata(&path),
                    |m| json!({"dir": m.is_dir(), "len": m.len()}),
                ),
            );
            record(link, "read", &path, outcome(fs::read(&path), text));
            record(link, "open", &path, outcome(File::open(&path), unit));
            let child = path.join("secret");
            record(link, "read_child", &child, outcome(fs::read(&child), text));
            let inner = path.join("sub/inner.txt");
            record(link, "read_inner", &inner, outcome(fs::read(&inner), text));
            record(
                link,
                "list",
                &path,
                outcome(fs::read_dir(&path), |entries| {
                    let mut names: Vec<String> = entries
                        .filter_map(|e| e.ok())
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect();
                    names.sort();
                    json!(names)
                }),
            );
            record(
                link,
                "read_link",
                &path,
                outcome(fs::read_link(&path), |t| json!(t.to_string_lossy())),
            );
            let stolen = dir.join(escape_name("stolen", link));
            record(
                link,
                "hard_link_from",
                &child,
                outcome(
                    crate::hard_link(&child, &stolen).and_then(|_| fs::read(&stolen)),
                    text,
                ),
            );
        }
        // the links of /self, seen through /proc/<pid>/ (a generated, read-only view)
        if let (Ok(pid), Some(rest)) = (std::env::var("SAUSAGE_PID"), area.strip_prefix("/self")) {
            let view = format!("/proc/{pid}{rest}");
            for (link, _) in &links {
                let path = PathBuf::from(format!("{view}/{link}"));
                for (op, target) in [("read", path.clone()), ("read_child", path.join("secret"))] {
                    let result = outcome(fs::read(&target), text);
                    record(link, &format!("proc_{op}"), &target, result);
                }
                let child = path.join(escape_name("proc", link));
                record(
                    link,
                    "proc_write_child",
                    &child,
                    outcome(fs::write(&child, "escaped?"), unit),
                );
            }
        }
        // then changes (never through the links to /etc: the tests may run as root)
        for (link, _) in &links {
            if link.contains("etc") || link.contains("passwd") {
                continue;
            }
            // a write through these makes `run`, `self` or `proc` at the top of the
            // world folder: a test of its own
            let cross = ["to_run", "to_self", "to_proc"].contains(&link.as_str());
            let path = dir.join(link);
            let child = path.join(escape_name("write", link));
            record(
                link,
                "write_child",
                &child,
                outcome(fs::write(&child, "escaped?"), unit),
            );
            let sub = path.join(escape_name("mkdir", link));
            record(
                link,
                "mkdir_child",
                &sub,
                outcome(fs::create_dir(&sub), unit),
            );
            let local = dir.join(escape_name("tmp", link));
            let moved = path.join(escape_name("moved", link));
            record(
                link,
                "rename_into",
                &moved,
                outcome(
                    fs::write(&local, "moved?").and_then(|_| fs::rename(&local, &moved)),
                    unit,
                ),
            );
            let _ = fs::remove_file(&local);
            let hard = path.join(escape_name("hardlink", link));
            record(
                link,
                "hard_link_into",
                &hard,
                outcome(crate::hard_link(dir.join("local.txt"), &hard), unit),
            );
            let soft = path.join(escape_name("symlink", link));
            record(
                link,
                "symlink_into",
                &soft,
                outcome(crate::symlink("local.txt", &soft), unit),
            );
            if cross {
                continue;
            }
            record(
                link,
                "append",
                &path,
                outcome(
                    OpenOptions::new()
                        .append(true)
                        .open(&path)
                        .and_then(|mut f| f.write_all(b"+")),
                    unit,
                ),
            );
            record(
                link,
                "write",
                &path,
                outcome(fs::write(&path, "overwritten?"), unit),
            );
        }
        for (link, _) in &links {
            if link.contains("etc") || link.contains("passwd") {
                continue;
            }
            let path = dir.join(link);
            let child = path.join("secret");
            record(
                link,
                "remove_child",
                &child,
                outcome(fs::remove_file(&child), unit),
            );
            let inner = path.join("sub/inner.txt");
            record(
                link,
                "truncate_inner",
                &inner,
                outcome(
                    OpenOptions::new().write(true).truncate(true).open(&inner),
                    unit,
                ),
            );
        }
    }
    // `..` as written, from each mount, up past the world's root
    for path in [
        format!("/self/../../../..{outside}/secret"),
        format!("/run/../../..{outside}/secret"),
        format!("/proc/../../{from_root}/secret"),
        format!("/state/../../../{from_root}/secret"),
        format!("/run/x/../../../../..{outside}/secret"),
    ] {
        let path = PathBuf::from(path);
        let result = outcome(fs::read(&path), text);
        attempts.push(json!({"area": "/", "link": "", "op": "read_dotdot",
            "path": path.to_string_lossy(), "result": result}));
        let result = outcome(
            fs::write(path.with_file_name("fsprobe-escape-dotdot"), "escaped?"),
            unit,
        );
        attempts.push(json!({"area": "/", "link": "", "op": "write_dotdot",
            "path": path.with_file_name("fsprobe-escape-dotdot").to_string_lossy(),
            "result": result}));
    }
    json!({ "setup": setup, "attempts": attempts, "after": after_check() })
}

/// A plain write and read after the attempts: the process still works.
fn after_check() -> Value {
    let path = "/state/fsprobe-after.txt";
    outcome(
        fs::write(path, "still here").and_then(|_| fs::read(path)),
        text,
    )
}

/// Swaps `dir/d` between a folder and a symbolic link to `target` for `ms`.
fn flip(params: &Value) -> Value {
    let dir = PathBuf::from(str_param(params, "dir", "/state/race"));
    let target = str_param(params, "target", "/nonexistent");
    let ms = params["ms"].as_u64().unwrap_or(1000);
    let d = dir.join("d");
    let as_dir = dir.join("d.dir");
    let as_link = dir.join("d.lnk");
    // `host_link`: the link `d.lnk` was made on the host; only the folder is made here
    let host_link = params["host_link"].as_bool().unwrap_or(false);
    let made = fs::create_dir_all(&d).and_then(|_| {
        if host_link {
            Ok(())
        } else {
            crate::symlink(target, &as_link)
        }
    });
    if let Err(e) = made {
        return json!({"error": error_json(&e)});
    }
    let until = Instant::now() + Duration::from_millis(ms);
    let mut flips = 0u64;
    let mut errors = 0u64;
    while Instant::now() < until {
        let step = fs::rename(&d, &as_dir)
            .and_then(|_| fs::rename(&as_link, &d))
            .and_then(|_| fs::rename(&d, &as_link))
            .and_then(|_| fs::rename(&as_dir, &d));
        match step {
            Ok(()) => flips += 1,
            Err(_) => {
                errors += 1;
                if errors > 100 {
                    break;
                }
            }
        }
    }
    json!({"flips": flips, "errors": errors})
}

/// Writes and reads through `dir/d/` for `ms`, while another process flips it.
fn race(params: &Value) -> Value {
    let dir = PathBuf::from(str_param(params, "dir", "/state/race"));
    let ms = params["ms"].as_u64().unwrap_or(1000);
    let d = dir.join("d");
    let until = Instant::now() + Duration::from_millis(ms);
    let (mut attempts, mut written, mut read) = (0u64, 0u64, 0u64);
    let mut outside_reads = Vec::new();
    while Instant::now() < until {
        attempts += 1;
        let name = d.join(format!("fsprobe-escape-race-{attempts}"));
        if fs::write(&name, "raced").is_ok() {
            written += 1;
            let _ = fs::remove_file(&name);
        }
        if let Ok(bytes) = fs::read(d.join("secret")) {
            read += 1;
            let content = String::from_utf8_lossy(&bytes).into_owned();
            if !content.starts_with("DECOY") && outside_reads.len() < 5 {
                outside_reads.push(content);
            }
        }
    }
    json!({"attempts": attempts, "written": written, "read": read, "outside_reads": outside_reads})
}

// ---------------------------------------------------------------- names and paths

/// Odd names in each of `dirs`: each is written, read, listed, renamed and removed.
fn names(params: &Value) -> Value {
    let dirs: Vec<String> = params["dirs"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let mut names: Vec<(String, Vec<u8>)> = [
        "with space",
        " leading space",
        "trailing space ",
        "tab\tname",
        "new\nline",
        "carriage\rreturn",
        "ünïcödé-名前",
        "emoji-🦀",
        "-dash",
        ".hidden",
        "...",
        "back\\slash",
        "colon:name",
        "quote\"name",
        "star*?",
        "del\u{7f}",
        "ctrl\u{1}",
        "zero-width\u{200b}",
        "NFC-\u{e9}",
        "NFD-e\u{301}",
        "proc",
        "run",
        "self",
        "info.json",
    ]
    .iter()
    .map(|n| (n.escape_debug().to_string(), n.as_bytes().to_vec()))
    .collect();
    names.push(("ascii x255".into(), vec![b'x'; 255]));
    names.push(("ascii x256".into(), vec![b'x'; 256]));
    names.push((
        "3-byte x85 (255 bytes)".into(),
        "名".repeat(85).into_bytes(),
    ));
    names.push((
        "3-byte x86 (258 bytes)".into(),
        "名".repeat(86).into_bytes(),
    ));
    names.push((
        "4-byte x63 + abc (255 bytes)".into(),
        format!("{}abc", "🦀".repeat(63)).into_bytes(),
    ));
    names.push((
        "4-byte x64 (256 bytes)".into(),
        "🦀".repeat(64).into_bytes(),
    ));
    names.push(("NUL".into(), b"nul\0byte".to_vec()));
    // a name that is not UTF-8 cannot be a WIT string: the host traps (the
    // process ends), so these come last and only when asked for
    let invalid = params["invalid"].as_bool().unwrap_or(false);
    if invalid {
        names.push(("invalid utf-8 ff".into(), b"bad\xff".to_vec()));
    }
    let mut out = Vec::new();
    for dir in &dirs {
        let dir = PathBuf::from(dir);
        let made = fs::create_dir_all(&dir);
        if let Err(e) = made {
            out.push(json!({"dir": dir.to_string_lossy(), "error": error_json(&e)}));
            continue;
        }
        for (label, bytes) in &names {
            let name = os_str(bytes);
            let path = dir.join(name);
            let content = format!("content of {label}");
            let write = outcome(fs::write(&path, &content), unit);
            let read = outcome(fs::read(&path), text);
            let listed = fs::read_dir(&dir).map(|entries| {
                entries
                    .filter_map(|e| e.ok())
                    .filter(|e| e.file_name().as_encoded_bytes() == bytes.as_slice())
                    .count()
            });
            let listed = outcome(listed, |n| json!(n));
            let renamed = dir.join("renamed");
            let rename = outcome(
                fs::rename(&path, &renamed).and_then(|_| fs::rename(&renamed, &path)),
                unit,
            );
            let stat = outcome(fs::metadata(&path), |m| json!(m.len()));
            let remove = outcome(fs::remove_file(&path), unit);
            let mkdir = outcome(
                fs::create_dir(&path).and_then(|_| fs::remove_dir(&path)),
                unit,
            );
            out.push(json!({
                "dir": dir.to_string_lossy(), "name": label, "bytes": bytes.len(),
                "write": write, "read": read, "listed": listed, "rename": rename,
                "stat": stat, "remove": remove, "mkdir": mkdir,
            }));
        }
        let listing = outcome(fs::read_dir(&dir), |entries| {
            let mut names: Vec<String> = entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            json!(names)
        });
        out.push(json!({"dir": dir.to_string_lossy(), "listing": listing}));
    }
    json!({ "names": out, "after": after_check() })
}

/// A name of any bytes (on WASI, an `OsStr` is any bytes).
fn os_str(bytes: &[u8]) -> &std::ffi::OsStr {
    // SAFETY: on WASI the encoding of an OsStr is the bytes themselves.
    unsafe { std::ffi::OsStr::from_encoded_bytes_unchecked(bytes) }
}

/// Paths around 4095 bytes in each of `dirs`: nested folders of 200-byte names as
/// deep as they go, then the longest file path that can be written there (and the
/// error of one byte more); then very long paths.
fn long_paths(params: &Value) -> Value {
    let dirs: Vec<String> = params["dirs"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let mut out = Map::new();
    for base in &dirs {
        let mut report = Map::new();
        let component = "d".repeat(200);
        let mut dir = base.clone();
        report.insert("base".into(), outcome(fs::create_dir_all(&dir), unit));
        loop {
            let next = format!("{dir}/{component}");
            match fs::create_dir(&next) {
                Ok(()) => dir = next,
                Err(e) => {
                    report.insert(
                        "mkdir_fails".into(),
                        json!({"len": next.len(), "error": error_json(&e)}),
                    );
                    break;
                }
            }
        }
        report.insert("deepest_dir".into(), json!(dir.len()));
        // the longest whole path of a file that can be written
        let mut longest = Value::Null;
        let mut first_fail = Value::Null;
        for room in (1..=255usize).rev() {
            let path = format!("{dir}/{}", "f".repeat(room));
            match fs::write(&path, "deep").and_then(|_| fs::read(&path)) {
                Ok(_) => {
                    longest = json!(path.len());
                    break;
                }
                Err(e) => first_fail = json!({"len": path.len(), "error": error_json(&e)}),
            }
        }
        report.insert("longest_file".into(), longest);
        report.insert("one_more".into(), first_fail);
        // very long paths, of short components and of one long string
        let mut long = Map::new();
        for len in [4096usize, 5000, 70_000, 1_000_000] {
            let nested = format!("{base}/{}f", "a/".repeat(len / 2));
            long.insert(
                format!("write {len} nested"),
                outcome(fs::write(&nested, "x"), unit),
            );
            long.insert(
                format!("stat {len} nested"),
                outcome(fs::metadata(&nested), unit),
            );
            let flat = format!("{base}/{}", "b".repeat(len));
            long.insert(
                format!("write {len} flat"),
                outcome(fs::write(&flat, "x"), unit),
            );
            long.insert(format!("read {len} flat"), outcome(fs::read(&flat), text));
            long.insert(
                format!("mkdir {len} nested"),
                outcome(fs::create_dir_all(&nested), unit),
            );
        }
        report.insert("long".into(), json!(long));
        out.insert(base.clone(), json!(report));
    }
    out.insert("after".into(), after_check());
    json!(out)
}

// ---------------------------------------------------------------- open files

/// The preopen `/`, for raw `wasi:filesystem` calls.
fn root_descriptor() -> Descriptor {
    get_directories()
        .into_iter()
        .find(|(_, path)| path == "/")
        .map(|(d, _)| d)
        .expect("a preopen at /")
}

/// Opens files in `dir` until an error (or `max`), holds them while it calls
/// `call` (if given), then closes them and opens one more. With `raw`, it
/// uses `wasi:filesystem` directly, past wasi-libc's own table.
fn open_many(params: &Value, rpc: &mut Rpc) -> Value {
    let dir = str_param(params, "dir", "/state/many").to_string();
    let max = params["max"].as_u64().unwrap_or(5000) as usize;
    let raw = params["raw"].as_bool().unwrap_or(false);
    if let Err(e) = fs::create_dir_all(&dir) {
        return json!({"error": error_json(&e)});
    }
    let mut held_std: Vec<File> = Vec::new();
    let mut held_raw: Vec<Descriptor> = Vec::new();
    let mut error = Value::Null;
    if raw {
        let root = root_descriptor();
        let rel = dir.trim_start_matches('/');
        for i in 0..max {
            match root.open_at(
                PathFlags::empty(),
                &format!("{rel}/f{i}"),
                OpenFlags::CREATE,
                DescriptorFlags::READ | DescriptorFlags::WRITE,
            ) {
                Ok(d) => held_raw.push(d),
                Err(e) => {
                    error = json!({"code": wasi_error_name(e)});
                    break;
                }
            }
        }
    } else {
        for i in 0..max {
            match OpenOptions::new()
                .create(true)
                .truncate(false)
                .read(true)
                .write(true)
                .open(format!("{dir}/f{i}"))
            {
                Ok(f) => held_std.push(f),
                Err(e) => {
                    error = error_json(&e);
                    break;
                }
            }
        }
    }
    let opened = held_std.len() + held_raw.len();
    // while full: other file operations of this process
    let mut while_full = Map::new();
    while_full.insert(
        "stat".into(),
        outcome(fs::metadata(format!("{dir}/f0")), |m| json!(m.len())),
    );
    while_full.insert(
        "read_dir".into(),
        outcome(fs::read_dir(&dir), |e| json!(e.count())),
    );
    while_full.insert("read".into(), outcome(fs::read(format!("{dir}/f0")), text));
    if let Some(f) = held_std.first_mut() {
        while_full.insert("write_held".into(), outcome(f.write_all(b"held"), unit));
    }
    // let the host see this process idle before the next one starts, so that the
    // pool places it beside this one instead of growing
    std::thread::sleep(Duration::from_millis(
        params["pause_ms"].as_u64().unwrap_or(0),
    ));
    let nested = match params["call"].as_object() {
        Some(call) => rpc.call(
            call["method"].as_str().unwrap_or(""),
            call.get("params").unwrap_or(&json!({})),
        ),
        None => Value::Null,
    };
    drop(held_std);
    drop(held_raw);
    let after = fs::write(format!("{dir}/after"), "after close")
        .and_then(|_| fs::read(format!("{dir}/after")));
    json!({
        "opened": opened,
        "error": error,
        "while_full": while_full,
        "nested": nested,
        "after_close": outcome(after, text),
    })
}

/// Opens `count` files in `dir` at once (a second process beside `open_many`).
fn open_some(params: &Value) -> Value {
    let dir = str_param(params, "dir", "/state/some").to_string();
    let count = params["count"].as_u64().unwrap_or(10) as usize;
    let _ = fs::create_dir_all(&dir);
    let mut held = Vec::new();
    for i in 0..count {
        match File::create(format!("{dir}/g{i}")) {
            Ok(f) => held.push(f),
            Err(e) => {
                return json!({"opened": held.len(), "error": error_json(&e)});
            }
        }
    }
    json!({"opened": held.len(), "error": null})
}

// ---------------------------------------------------------------- full disk

/// Writes the pattern to the first `bytes` of `path` (made or cut) with raw
/// `wasi:filesystem` writes of 1 MiB, halved down to 512 bytes when the area is
/// full; returns the bytes written. (std's writes go in 4 KiB pieces, each a
/// round trip to the host's thread for `/run` and `/self`.)
fn prefill(path: &str, bytes: u64) -> Result<u64, String> {
    let file = root_descriptor()
        .open_at(
            PathFlags::empty(),
            path.trim_start_matches('/'),
            OpenFlags::CREATE | OpenFlags::TRUNCATE,
            DescriptorFlags::READ | DescriptorFlags::WRITE,
        )
        .map_err(|e| format!("open {path}: {}", e.name()))?;
    let mut at = 0u64;
    let mut chunk = 1u64 << 20;
    while at < bytes {
        let n = (bytes - at).min(chunk) as usize;
        let data: Vec<u8> = (0..n as u64).map(|i| pattern(at + i)).collect();
        match file.write(&data, at) {
            Ok(written) => at += written,
            Err(WasiError::InsufficientSpace) if chunk > 512 => chunk /= 2,
            Err(WasiError::InsufficientSpace) => break,
            Err(e) => return Err(format!("prefill {path} at {at}: {}", e.name())),
        }
    }
    Ok(at)
}

/// The byte at `offset` of the pattern that `fill` writes.
fn pattern(offset: u64) -> u8 {
    (offset % 251) as u8
}

/// Writes `path` in chunks of `chunk` bytes until an error; then checks what
/// was written, that a small file cannot be written either, and that space
/// comes back when the file is removed.
fn fill(params: &Value) -> Value {
    let path = PathBuf::from(str_param(params, "path", "/self/big"));
    let chunk = params["chunk"].as_u64().unwrap_or(1 << 20) as usize;
    let keep = str_param(params, "keep", "");
    let mut out = Map::new();
    if !keep.is_empty() {
        out.insert(
            "keep_written".into(),
            outcome(fs::write(keep, "earlier data"), unit),
        );
    }
    let started = Instant::now();
    let mut times = Map::new();
    let prefilled = match prefill(
        &path.to_string_lossy(),
        params["prefill"].as_u64().unwrap_or(0),
    ) {
        Ok(n) => n,
        Err(e) => return json!({"error": e}),
    };
    times.insert(
        "prefill".into(),
        json!(started.elapsed().as_millis() as u64),
    );
    let mut file = match OpenOptions::new().append(true).open(&path) {
        Ok(f) => f,
        Err(e) => return json!({"error": error_json(&e)}),
    };
    let mut written: u64 = prefilled;
    let mut error = Value::Null;
    let mut buffer = vec![0u8; chunk];
    for _ in 0..100_000 {
        for (i, b) in buffer.iter_mut().enumerate() {
            *b = pattern(written + i as u64);
        }
        match file.write(&buffer) {
            Ok(0) => {
                error = json!("wrote 0 bytes");
                break;
            }
            Ok(n) => written += n as u64,
            Err(e) => {
                error = error_json(&e);
                break;
            }
        }
    }
    times.insert(
        "written".into(),
        json!(started.elapsed().as_millis() as u64),
    );
    out.insert("written".into(), json!(written));
    out.insert("error".into(), error);
    out.insert("size".into(), outcome(file.metadata(), |m| json!(m.len())));
    out.insert("flush".into(), outcome(file.flush(), unit));
    drop(file);
    // what was written reads back
    let intact = File::open(&path).and_then(|mut f| {
        let mut all = Vec::new();
        f.read_to_end(&mut all)?;
        let bad = all
            .iter()
            .enumerate()
            .position(|(i, &b)| b != pattern(i as u64));
        Ok(json!({"len": all.len(), "first_bad": bad}))
    });
    out.insert("read_back".into(), outcome(intact, |v| v));
    times.insert(
        "read_back".into(),
        json!(started.elapsed().as_millis() as u64),
    );
    if !keep.is_empty() {
        out.insert("keep_read".into(), outcome(fs::read(keep), text));
    }
    let small = path.with_file_name("small-when-full");
    out.insert(
        "small_write".into(),
        outcome(fs::write(&small, vec![7u8; 4096]), unit),
    );
    out.insert(
        "empty_create".into(),
        outcome(File::create(path.with_file_name("empty-when-full")), unit),
    );
    out.insert(
        "mkdir".into(),
        outcome(fs::create_dir(path.with_file_name("dir-when-full")), unit),
    );
    // names and link targets count in the budget too: how far do links go?
    let link = |i: u64| path.with_file_name(format!("link-when-full-{i}"));
    let target = "t".repeat(4000);
    let mut link_bytes = 0u64;
    let mut link_error = Value::Null;
    let mut made = 0;
    for i in 0..params["links"].as_u64().unwrap_or(0) {
        match crate::symlink(&target, link(i)) {
            Ok(()) => {
                link_bytes += target.len() as u64;
                made += 1;
            }
            Err(e) => {
                link_error = error_json(&e);
                break;
            }
        }
    }
    times.insert("links".into(), json!(started.elapsed().as_millis() as u64));
    out.insert("link_bytes".into(), json!(link_bytes));
    out.insert("link_error".into(), link_error);
    // by name: a listing of a big folder in /run or /self is another test's matter
    for i in 0..made {
        let _ = fs::remove_file(link(i));
    }
    // space comes back
    out.insert("remove".into(), outcome(fs::remove_file(&path), unit));
    let again = fs::write(&small, vec![7u8; 4096]).and_then(|_| fs::read(&small));
    out.insert("after_remove".into(), outcome(again, |b| json!(b.len())));
    out.insert("after".into(), after_check());
    times.insert("end".into(), json!(started.elapsed().as_millis() as u64));
    out.insert("ms".into(), json!(times));
    json!(out)
}

/// Fills `path` to `fill` bytes, then writes `size` bytes at the end with one raw
/// `write` (pwrite): what the call returns, and how big the file is afterwards.
fn fill_raw(params: &Value) -> Value {
    let path = str_param(params, "path", "/self/raw");
    let fill = params["fill"].as_u64().unwrap_or(0);
    let size = params["size"].as_u64().unwrap_or(3 << 20);
    let root = root_descriptor();
    let file = match root.open_at(
        PathFlags::empty(),
        path.trim_start_matches('/'),
        OpenFlags::CREATE | OpenFlags::TRUNCATE,
        DescriptorFlags::READ | DescriptorFlags::WRITE,
    ) {
        Ok(f) => f,
        Err(e) => return json!({"open": wasi_error_name(e)}),
    };
    let mut at = 0u64;
    let chunk = vec![1u8; 1 << 20];
    let mut fill_error = Value::Null;
    while at < fill {
        let n = chunk.len().min((fill - at) as usize);
        match file.write(&chunk[..n], at) {
            Ok(w) => at += w,
            Err(e) => {
                fill_error = json!(wasi_error_name(e));
                break;
            }
        }
    }
    let before = file.stat().map(|s| s.size).unwrap_or(u64::MAX);
    let big = vec![2u8; size as usize];
    let result = match file.write(&big, at) {
        Ok(n) => json!({"ok": n}),
        Err(e) => json!({"err": wasi_error_name(e)}),
    };
    let after = file.stat().map(|s| s.size).unwrap_or(u64::MAX);
    json!({"filled": at, "fill_error": fill_error, "size_before": before,
        "write": result, "size_after": after})
}

/// Runs `ops` in order, each `{"op", "path", ...}`, and reports each outcome.
/// Ops: `symlink` (`target`), `write` (`text`), `read`, `stat`, `lstat`, `list`,
/// `mkdir`, `remove`, `rmdir`, `rename` (`to`), `link` (`to`, a hard link), `read_link`.
fn ops(params: &Value) -> Value {
    let mut results = Vec::new();
    for op in params["ops"].as_array().cloned().unwrap_or_default() {
        let path = PathBuf::from(str_param(&op, "path", ""));
        let result = match str_param(&op, "op", "") {
            "symlink" => outcome(crate::symlink(str_param(&op, "target", ""), &path), unit),
            "write" => outcome(fs::write(&path, str_param(&op, "text", "")), unit),
            "read" => outcome(fs::read(&path), text),
            "stat" => outcome(
                fs::metadata(&path),
                |m| json!({"dir": m.is_dir(), "len": m.len()}),
            ),
            "lstat" => outcome(
                fs::symlink_metadata(&path),
                |m| json!({"link": m.file_type().is_symlink(), "dir": m.is_dir()}),
            ),
            "list" => outcome(fs::read_dir(&path), |entries| {
                let mut names: Vec<String> = entries
                    .filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect();
                names.sort();
                json!(names)
            }),
            "mkdir" => outcome(fs::create_dir(&path), unit),
            "remove" => outcome(fs::remove_file(&path), unit),
            "rmdir" => outcome(fs::remove_dir(&path), unit),
            "rename" => outcome(fs::rename(&path, str_param(&op, "to", "")), unit),
            // wasi-libc's `link`: std's `hard_link` passes the new path as both paths on this target
            "link" => outcome(crate::hard_link(&path, str_param(&op, "to", "")), unit),
            "read_link" => outcome(fs::read_link(&path), |t| json!(t.to_string_lossy())),
            other => json!({"err": {"message": format!("no op {other}")}}),
        };
        results.push(result);
    }
    json!(results)
}

/// Writes `text` to `path` and reads it back.
fn write(params: &Value) -> Value {
    let path = str_param(params, "path", "/state/x");
    let content = str_param(params, "text", "");
    outcome(fs::write(path, content).and_then(|_| fs::read(path)), text)
}

// ---------------------------------------------------------------- deep and wide folders

/// `levels` folders nested in `base`, made one by one (`create_dir`), a file
/// written and read at the bottom, then all removed from the bottom up; with
/// `up`, the file is also read back through that many `..` from the bottom and
/// as many names down again. Reports what worked and the milliseconds each
/// phase took.
fn deep(params: &Value) -> Value {
    let base = str_param(params, "base", "/state/deep");
    let levels = params["levels"].as_u64().unwrap_or(1000) as usize;
    let name = str_param(params, "name", "d");
    let mut report = Map::new();
    let started = Instant::now();
    if let Err(e) = fs::create_dir_all(base) {
        return json!({"error": {"at": "base", "error": error_json(&e)}});
    }
    let mut dir = String::from(base);
    for level in 1..=levels {
        dir.push('/');
        dir.push_str(name);
        if let Err(e) = fs::create_dir(&dir) {
            return json!({"error": {"at": "mkdir", "level": level, "error": error_json(&e)}});
        }
    }
    report.insert(
        "mkdir_ms".into(),
        json!(started.elapsed().as_millis() as u64),
    );
    let file = format!("{dir}/bottom.txt");
    let started = Instant::now();
    match fs::write(&file, "bottom").and_then(|_| fs::read_to_string(&file)) {
        Ok(text) => report.insert("read".into(), json!(text)),
        Err(e) => return json!({"error": {"at": "write", "error": error_json(&e)}}),
    };
    report.insert(
        "write_ms".into(),
        json!(started.elapsed().as_millis() as u64),
    );
    if let Some(up) = params["up"].as_u64() {
        let started = Instant::now();
        let mut round = dir.clone();
        for _ in 0..up {
            round.push_str("/..");
        }
        for _ in 0..up {
            round.push('/');
            round.push_str(name);
        }
        round.push_str("/bottom.txt");
        report.insert(
            "through_dotdot".into(),
            outcome(fs::read_to_string(&round), |t| json!(t)),
        );
        report.insert(
            "dotdot_ms".into(),
            json!(started.elapsed().as_millis() as u64),
        );
    }
    let started = Instant::now();
    if let Err(e) = fs::remove_file(&file) {
        return json!({"error": {"at": "remove", "error": error_json(&e)}});
    }
    for level in (1..=levels).rev() {
        if let Err(e) = fs::remove_dir(&dir) {
            return json!({"error": {"at": "rmdir", "level": level, "error": error_json(&e)}});
        }
        dir.truncate(dir.len() - name.len() - 1);
    }
    report.insert(
        "remove_ms".into(),
        json!(started.elapsed().as_millis() as u64),
    );
    report.insert("levels".into(), json!(levels));
    json!(report)
}

/// `count` names made in `dir` (empty files, or with `"links": true` symbolic
/// links, one call each; none with `"make": false`, for a folder filled
/// beforehand), the folder listed, then removed with everything in it
/// (`remove_dir_all`, which lists it again). Reports the counts, whether the
/// folder is gone, and the milliseconds of each phase.
fn many(params: &Value) -> Value {
    let dir = PathBuf::from(str_param(params, "dir", "/run/many"));
    let make = params["make"].as_bool() != Some(false);
    let count = if make {
        params["count"].as_u64().unwrap_or(50_000)
    } else {
        0
    };
    let links = params["links"].as_bool() == Some(true);
    let started = Instant::now();
    if let Err(e) = fs::create_dir_all(&dir) {
        return json!({"error": {"at": "mkdir", "error": error_json(&e)}});
    }
    for i in 0..count {
        let path = dir.join(format!("name-{i:06}"));
        let made = if links {
            crate::symlink("target", &path)
        } else {
            File::create(&path).map(drop)
        };
        if let Err(e) = made {
            return json!({"error": {"at": "create", "index": i, "error": error_json(&e)}});
        }
    }
    let create_ms = started.elapsed().as_millis() as u64;
    let started = Instant::now();
    let listed = match fs::read_dir(&dir) {
        Ok(entries) => {
            let mut names = 0u64;
            let mut expected = 0u64;
            for entry in entries {
                match entry {
                    Ok(e) => {
                        names += 1;
                        if e.file_name().to_string_lossy().starts_with("name-") {
                            expected += 1;
                        }
                    }
                    Err(e) => return json!({"error": {"at": "entry", "error": error_json(&e)}}),
                }
            }
            json!({"names": names, "expected": expected})
        }
        Err(e) => return json!({"error": {"at": "list", "error": error_json(&e)}}),
    };
    let list_ms = started.elapsed().as_millis() as u64;
    let started = Instant::now();
    let removed = outcome(fs::remove_dir_all(&dir), unit);
    json!({
        "listed": listed,
        "removed": removed,
        "gone": !dir.exists(),
        "create_ms": create_ms,
        "list_ms": list_ms,
        "remove_ms": started.elapsed().as_millis() as u64,
    })
}

// ---------------------------------------------------------------- temporary files

/// The `tempfile` crate in `dir`: a named file persisted over `target` (an
/// atomic replace), an unnamed one (removed while open) read back, and a
/// folder removed with everything in it when dropped.
fn tempfiles(params: &Value) -> Value {
    use std::io::{Seek, SeekFrom};
    let dir = PathBuf::from(str_param(params, "dir", "/state"));
    let target = PathBuf::from(str_param(params, "target", "/state/final.txt"));
    let mut out = Map::new();
    // /self is the process's own: the folder is made here
    if let Err(e) = fs::create_dir_all(&dir) {
        return json!({"mkdir": error_json(&e)});
    }
    let named = tempfile::NamedTempFile::new_in(&dir).and_then(|mut f| {
        f.write_all(b"replaced whole")?;
        f.as_file().sync_all()?;
        f.persist(&target).map_err(|e| e.error)?;
        fs::read(&target)
    });
    out.insert("persisted".into(), outcome(named, text));
    let unnamed = tempfile::tempfile_in(&dir).and_then(|mut f| {
        f.write_all(b"scratch")?;
        f.seek(SeekFrom::Start(0))?;
        let mut back = String::new();
        f.read_to_string(&mut back)?;
        Ok(back)
    });
    out.insert("unnamed".into(), outcome(unnamed, |s| json!(s)));
    let folder = tempfile::tempdir_in(&dir).and_then(|d| {
        let path = d.path().to_path_buf();
        fs::write(path.join("inside.txt"), "x")?;
        d.close()?;
        Ok(path.exists())
    });
    out.insert("folder_left".into(), outcome(folder, |left| json!(left)));
    // nothing else is left in dir but the target
    let left: Vec<String> = fs::read_dir(&dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    out.insert("left".into(), json!(left));
    json!(out)
}

// ---------------------------------------------------------------- SQLite

/// SQLite (rusqlite, bundled C) at `db`: a table filled in a transaction, a
/// rollback, a second connection, and a reopen. With `fill`, a file is first
/// written beside it until the area is full, and the database must then fail
/// cleanly and still read.
fn sqlite(params: &Value) -> Value {
    let db = str_param(params, "db", "/state/fsprobe.db").to_string();
    let mut out = Map::new();
    out.insert("scenario".into(), result_json(sqlite_scenario(&db)));
    if let Some(fill_path) = params["fill"].as_str() {
        out.insert("full".into(), json!(sqlite_full(&db, fill_path)));
    }
    let dir = Path::new(&db).parent().unwrap_or(Path::new("/"));
    let mut left: Vec<String> = fs::read_dir(dir)
        .map(|e| {
            e.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    left.sort();
    out.insert("files".into(), json!(left));
    json!(out)
}

fn result_json<T: Into<Value>>(r: Result<T, String>) -> Value {
    match r {
        Ok(v) => json!({ "ok": v.into() }),
        Err(e) => json!({ "err": e }),
    }
}

fn sql<T>(what: &str, r: rusqlite::Result<T>) -> Result<T, String> {
    r.map_err(|e| format!("{what}: {e}"))
}

fn sqlite_scenario(db: &str) -> Result<String, String> {
    use rusqlite::{params, Connection};
    let mut conn = sql("open", Connection::open(db))?;
    sql(
        "create",
        conn.execute_batch("CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT, body BLOB);"),
    )?;
    let tx = sql("begin", conn.transaction())?;
    for i in 0..2000 {
        sql(
            "insert",
            tx.execute(
                "INSERT INTO notes (title, body) VALUES (?1, ?2)",
                params![format!("note {i}"), vec![(i % 251) as u8; 200]],
            ),
        )?;
    }
    sql("commit", tx.commit())?;
    // a rollback leaves nothing
    let tx = sql("begin 2", conn.transaction())?;
    sql("delete", tx.execute("DELETE FROM notes", []))?;
    sql("rollback", tx.rollback())?;
    // a second connection sees the first's commits
    let other = sql("open 2", Connection::open(db))?;
    sql(
        "insert 2",
        conn.execute("INSERT INTO notes (title) VALUES ('late')", []),
    )?;
    let count: i64 = sql(
        "count 2",
        other.query_row("SELECT count(*) FROM notes", [], |r| r.get(0)),
    )?;
    if count != 2001 {
        return Err(format!("second connection counts {count}, want 2001"));
    }
    drop(other);
    drop(conn);
    let conn = sql("reopen", Connection::open(db))?;
    let title: String = sql(
        "query",
        conn.query_row("SELECT title FROM notes WHERE id = 1234", [], |r| r.get(0)),
    )?;
    if title != "note 1233" {
        return Err(format!("title {title}"));
    }
    let check: String = sql(
        "integrity",
        conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)),
    )?;
    Ok(check)
}

/// Fills the area of `db` with `fill_path` (up to 64 MiB with raw writes, then
/// std writes until they fail: for `/self`), then inserts until SQLite fails.
fn sqlite_full(db: &str, fill_path: &str) -> Value {
    use rusqlite::Connection;
    let mut out = Map::new();
    let prefilled = match prefill(fill_path, 64 << 20) {
        Ok(n) => n,
        Err(e) => return json!({"error": e}),
    };
    let mut file = match OpenOptions::new().append(true).open(fill_path) {
        Ok(f) => f,
        Err(e) => return json!({"error": error_json(&e)}),
    };
    let chunk = vec![0u8; 1 << 20];
    let mut filled = prefilled;
    while file.write_all(&chunk).is_ok() {
        filled += chunk.len() as u64;
    }
    // the last bytes, in small writes
    let small = [0u8; 512];
    while file.write_all(&small).is_ok() {
        filled += small.len() as u64;
    }
    drop(file);
    out.insert("filled".into(), json!(filled));
    let conn = match Connection::open(db) {
        Ok(c) => c,
        Err(e) => return json!({"open": e.to_string()}),
    };
    let mut inserted = 0;
    let mut error = Value::Null;
    for i in 0..100_000 {
        let r = conn.execute(
            "INSERT INTO notes (title, body) VALUES (?1, ?2)",
            rusqlite::params![format!("full {i}"), vec![1u8; 4000]],
        );
        match r {
            Ok(_) => inserted += 1,
            Err(e) => {
                error = json!(e.to_string());
                break;
            }
        }
    }
    out.insert("inserted".into(), json!(inserted));
    out.insert("error".into(), error);
    let count: Result<i64, String> = sql(
        "count",
        conn.query_row("SELECT count(*) FROM notes", [], |r| r.get(0)),
    );
    out.insert("count".into(), result_json(count));
    let check: Result<String, String> = sql(
        "integrity",
        conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)),
    );
    out.insert("integrity".into(), result_json(check));
    drop(conn);
    out.insert(
        "remove_fill".into(),
        outcome(fs::remove_file(fill_path), unit),
    );
    let conn = Connection::open(db).and_then(|c| {
        c.execute("INSERT INTO notes (title) VALUES ('after')", [])?;
        c.query_row("SELECT count(*) FROM notes", [], |r| r.get::<_, i64>(0))
    });
    out.insert(
        "after_remove".into(),
        result_json(conn.map_err(|e| e.to_string())),
    );
    json!(out)
}
