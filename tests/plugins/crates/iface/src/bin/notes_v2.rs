//! notes, version 2, compatible: an optional `tag` param and a `total` result field.
fn main() {
    let doc = r#"{
      "openrpc": "1.2.6", "info": {"title": "notes", "version": "2"},
      "methods": [
        {"name": "add", "summary": "Add a note.", "paramStructure": "by-name",
          "params": [{"name": "text", "required": true, "schema": {"type": "string"}},
                     {"name": "tag", "required": false, "schema": {"type": "string"}}],
          "result": {"name": "Added", "schema": {"type": "object",
            "properties": {"count": {"type": "integer", "format": "uint64", "minimum": 0},
                           "total": {"type": "integer", "format": "uint64", "minimum": 0}},
            "required": ["count", "total"]}}},
        {"name": "list", "summary": "List the notes.", "params": [],
          "result": {"name": "notes", "schema": {"type": "array", "items": {"type": "string"}}}}
      ]
    }"#;
    iface::serve(doc, |m, _| if m == "add" { serde_json::json!({"count": 2, "total": 2}) } else { serde_json::json!([]) });
}
