//! notes, version 3, breaking: `add` takes `body` instead of `text`.
fn main() {
    let doc = format!(r#"{{
      "openrpc": "1.2.6", "info": {{"title": "notes", "version": "3"}},
      "methods": [
        {{"name": "add", "summary": "Add a note.", "paramStructure": "by-name",
          "params": [{{"name": "body", "required": true, "schema": {{"type": "string"}}}}],
          "result": {{"name": "Added", "schema": {added}}}}}
      ]
    }}"#, added = iface::ADDED);
    iface::serve(&doc, |_, _| serde_json::json!({"count": 3}));
}
