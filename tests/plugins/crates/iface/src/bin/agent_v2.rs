//! agent, version 2: imports notes.add(body) -> Added, for notes version 3.
fn main() {
    let doc = format!(r#"{{
      "openrpc": "1.2.6", "info": {{"title": "agent", "version": "2"}},
      "methods": [{{"name": "chat", "params": [], "result": {{"name": "text", "schema": {{"type": "string"}}}}}}],
      "x-sausage-imports": {{"notes": {{"methods": [
        {{"name": "add", "paramStructure": "by-name",
          "params": [{{"name": "body", "required": true, "schema": {{"type": "string"}}}}],
          "result": {{"name": "Added", "schema": {added}}}}}
      ]}}}}
    }}"#, added = iface::ADDED);
    iface::serve(&doc, |_, _| serde_json::json!("hello"));
}
