//! A tiny raw JSON-RPC plugin whose interface is a fixed document.
//!
//! Each binary of this crate is one version of a plugin: it answers
//! `rpc.discover` with its document, and any method the document lists with
//! a fixed result.

use serde_json::{json, Value};
use std::io::{BufRead, Write};

/// Serves one request on stdin: `rpc.discover` gets `document`, a listed
/// method gets `answer(method, params)`.
pub fn serve(document: &str, answer: impl Fn(&str, &Value) -> Value) {
    let document: Value = serde_json::from_str(document).expect("a valid document");
    let stdin = std::io::stdin();
    let Some(Ok(line)) = stdin.lock().lines().find(|l| l.as_ref().map(|l| !l.trim().is_empty()).unwrap_or(true))
    else {
        return;
    };
    let request: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let method = request["method"].as_str().unwrap_or("");
    let listed = document["methods"].as_array().map(|m| m.iter().any(|x| x["name"] == method)).unwrap_or(false);
    let response = if method == "rpc.discover" {
        json!({"jsonrpc": "2.0", "id": id, "result": document})
    } else if listed {
        json!({"jsonrpc": "2.0", "id": id, "result": answer(method, &request["params"])})
    } else {
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": format!("no method {method}")}})
    };
    let mut out = std::io::stdout().lock();
    out.write_all(format!("\n{response}\n").as_bytes()).unwrap();
    out.flush().unwrap();
}

/// The schema of `Added` as notes writes it.
pub const ADDED: &str = r#"{"type": "object", "properties": {"count": {"type": "integer", "format": "uint64", "minimum": 0}}, "required": ["count"]}"#;
