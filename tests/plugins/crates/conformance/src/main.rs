//! `conformance`: installed as the plugin `test`, its methods are the tools
//! `test_simple_text`, `test_error_handling` and `test_tool_with_progress`
//! that the official MCP conformance suite calls on a server.

use serde_json::{json, Value};
use std::io::BufRead;

use rawrpc::{next_message, reply, reply_error, send};

fn main() {
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let Some(request) = next_message(&mut lines) else {
        eprintln!("conformance: no request");
        return;
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    match request["method"].as_str().unwrap_or("") {
        "rpc.discover" => reply(&id, json!({
            "openrpc": "1.2.6",
            "info": {"title": "test", "version": "0.1.0"},
            "methods": [
                {"name": "simple_text", "summary": "A fixed sentence.", "params": [],
                 "result": {"name": "text", "schema": {"type": "string"}}},
                {"name": "error_handling", "summary": "Always fails.", "params": []},
                {"name": "tool_with_progress", "summary": "Reports progress 0, 50 and 100 of 100.",
                 "params": [], "result": {"name": "text", "schema": {"type": "string"}}},
            ]
        })),
        "simple_text" => reply(&id, json!("This is a simple text response for testing.")),
        "error_handling" => reply_error(&id, -32000, "This tool intentionally returns an error for testing"),
        "tool_with_progress" => {
            for (i, progress) in [0, 50, 100].into_iter().enumerate() {
                if i > 0 {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                send(&json!({"jsonrpc": "2.0", "method": "core.notify",
                    "params": {"name": "progress", "params": {"progress": progress, "total": 100}}}));
            }
            reply(&id, json!("Tool with progress executed"));
        }
        other => reply_error(&id, -32601, &format!("conformance has no method {other}")),
    }
}
