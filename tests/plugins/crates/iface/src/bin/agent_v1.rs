//! agent, version 1: imports notes.add(text) -> Added.
fn main() {
    let doc = format!(r##"{{
      "openrpc": "1.2.6", "info": {{"title": "agent", "version": "1"}},
      "methods": [{{"name": "chat", "params": [], "result": {{"name": "text", "schema": {{"type": "string"}}}}}}],
      "x-sausage-imports": {{"notes": {{"methods": [
        {{"name": "add", "paramStructure": "by-name",
          "params": [{{"name": "text", "required": true, "schema": {{"type": "string", "examples": ["milk"]}}}}],
          "result": {{"name": "Added", "schema": {{"$ref": "#/components/schemas/Added"}}}}}}
      ]}}}},
      "components": {{"schemas": {{"Added": {added}}}}}
    }}"##, added = iface::ADDED);
    iface::serve(&doc, |_, _| serde_json::json!("hello"));
}
