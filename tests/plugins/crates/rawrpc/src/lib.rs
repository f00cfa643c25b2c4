//! JSON-RPC on stdin and stdout for the raw test plugins (`probe`,
//! `fsbench`, `netprobe`), which speak the protocol without the SDK.

use serde_json::{json, Value};
use std::io::Write;

/// Writes one message in one write, with a newline before it (PROTOCOL 3.1).
pub fn send(message: &Value) {
    let mut out = std::io::stdout().lock();
    let text = format!("\n{message}\n");
    out.write_all(text.as_bytes()).unwrap();
    out.flush().unwrap();
}

/// Answers request `id` with `result`.
pub fn reply(id: &Value, result: Value) {
    send(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
}

/// Answers request `id` with an error.
pub fn reply_error(id: &Value, code: i64, message: &str) {
    send(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}));
}

/// Reads the next JSON-RPC message from stdin; `None` at EOF. A line that is
/// not JSON is noted on stderr (under the program's name) and skipped.
pub fn next_message(lines: &mut impl Iterator<Item = std::io::Result<String>>) -> Option<Value> {
    for line in lines {
        let line = line.ok()?;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(&line) {
            Ok(v) => return Some(v),
            Err(e) => eprintln!("{}: unreadable line on stdin: {e}", program()),
        }
    }
    None
}

/// The plugin's name, for its notes on stderr.
fn program() -> String {
    std::env::var("SAUSAGE_PLUGIN").unwrap_or_else(|_| {
        let arg0 = std::env::args().next().unwrap_or_default();
        arg0.rsplit('/').next().unwrap_or("plugin").trim_end_matches(".wasm").to_owned()
    })
}
