//! agent, version 1b, a compatible change of the consumer: it also imports
//! notes.list, and reads less of Added (count is optional to it).
fn main() {
    let doc = r##"{
      "openrpc": "1.2.6", "info": {"title": "agent", "version": "1b"},
      "methods": [{"name": "chat", "params": [], "result": {"name": "text", "schema": {"type": "string"}}}],
      "x-sausage-imports": {"notes": {"methods": [
        {"name": "add", "paramStructure": "by-name",
          "params": [{"name": "text", "required": true, "schema": {"type": "string", "examples": ["milk"]}}],
          "result": {"name": "Added", "schema": {"type": "object", "properties": {"count": {"type": "integer"}}}}},
        {"name": "list", "params": [],
          "result": {"name": "notes", "schema": {"type": "array", "items": {"type": "string"}}}}
      ]}}
    }"##;
    iface::serve(doc, |_, _| serde_json::json!("hello"));
}
