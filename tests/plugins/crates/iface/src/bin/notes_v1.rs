//! notes, version 1: `add(text)` and `list()`.
fn main() {
    let doc = format!(r##"{{
      "openrpc": "1.2.6", "info": {{"title": "notes", "version": "1"}},
      "methods": [
        {{"name": "add", "summary": "Add a note.", "paramStructure": "by-name",
          "params": [{{"name": "text", "required": true, "schema": {{"type": "string", "examples": ["milk"]}}}}],
          "result": {{"name": "Added", "schema": {{"$ref": "#/components/schemas/Added"}}}}}},
        {{"name": "list", "summary": "List the notes.", "params": [],
          "result": {{"name": "notes", "schema": {{"type": "array", "items": {{"type": "string"}}}}}}}}
      ],
      "components": {{"schemas": {{"Added": {added}}}}}
    }}"##, added = iface::ADDED);
    iface::serve(&doc, |m, _| if m == "add" { serde_json::json!({"count": 1}) } else { serde_json::json!([]) });
}
