//! The tool `make_import`: a consumer's `imports/<provider>.json` made from the
//! provider's document, whole or cut to the methods the consumer uses, so that
//! no model copies a kilobyte of JSON by hand (PROTOCOL 10.1, 10.2).

use serde_json::Value;
use std::path::PathBuf;

/// Where the core serves a plugin's current `rpc.discover` document.
pub fn current_document(provider: &str) -> String {
    format!("/proc/core/plugins/{provider}/discover.json")
}

/// A plugin's name as a path part: letters, digits, `-` and `_`.
fn plugin_name<'a>(args: &'a Value, key: &str) -> Result<&'a str, String> {
    let name = args[key].as_str().ok_or_else(|| format!("`{key}` is missing or not a string"))?;
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
        return Err(format!("`{key}` must be a plugin's name (letters, digits, - and _), not {name:?}"));
    }
    Ok(name)
}

/// The import of `provider`'s `document`, cut to `methods` when given: the methods named, the
/// endpoint interfaces and schemas whole (the generator makes types only for what a method uses),
/// and without the provider's own imports, which are no part of what it offers.
pub fn cut(document: &Value, methods: Option<&[String]>) -> Result<Value, String> {
    let Some(all) = document["methods"].as_array() else {
        return Err("the document has no `methods` list: it is not an rpc.discover document".into());
    };
    let mut import = document.clone();
    if let Some(object) = import.as_object_mut() {
        object.remove("x-sausage-imports");
    }
    if let Some(names) = methods {
        let known: Vec<&str> = all.iter().filter_map(|m| m["name"].as_str()).collect();
        let unknown: Vec<&String> = names.iter().filter(|n| !known.contains(&n.as_str())).collect();
        if !unknown.is_empty() {
            return Err(format!(
                "the provider has no method {}: its methods are {}",
                unknown.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", "),
                known.join(", ")
            ));
        }
        let kept: Vec<Value> =
            all.iter().filter(|m| m["name"].as_str().is_some_and(|n| names.iter().any(|x| x == n))).cloned().collect();
        import["methods"] = Value::Array(kept);
    }
    Ok(import)
}

/// `make_import {plugin, provider, methods?, from?}`: writes
/// `/plugins/<plugin>/source/imports/<provider>.json`.
pub fn make_import(args: &Value) -> Result<(String, String), String> {
    let plugin = plugin_name(args, "plugin")?;
    let provider = plugin_name(args, "provider")?;
    let methods: Option<Vec<String>> = match &args["methods"] {
        Value::Null => None,
        Value::Array(items) => Some(
            items
                .iter()
                .map(|m| m.as_str().map(String::from).ok_or_else(|| format!("`methods` must be names, not {m}")))
                .collect::<Result<_, _>>()?,
        ),
        other => return Err(format!("`methods` must be a list of method names, not {other}")),
    };
    let from = match args["from"].as_str() {
        Some(path) => path.to_string(),
        None => current_document(provider),
    };
    let text = std::fs::read_to_string(&from).map_err(|e| {
        if args["from"].is_null() {
            format!(
                "cannot read {from} ({e}): is `{provider}` a plugin of this world? The plugins with a document are \
                 in /proc/core/plugins/"
            )
        } else {
            format!("cannot read {from}: {e}")
        }
    })?;
    let document: Value = serde_json::from_str(&text).map_err(|e| format!("{from} is not JSON: {e}"))?;
    let import = cut(&document, methods.as_deref())?;
    let crate_dir = PathBuf::from(format!("/plugins/{plugin}/source"));
    if !crate_dir.join("Cargo.toml").exists() {
        return Err(format!("{} has no Cargo.toml: `plugin` names the consumer, whose source is there", crate_dir.display()));
    }
    let path = crate_dir.join("imports").join(format!("{provider}.json"));
    std::fs::create_dir_all(crate_dir.join("imports")).map_err(|e| format!("cannot make {}/imports: {e}", crate_dir.display()))?;
    let out = serde_json::to_string_pretty(&import).unwrap_or_default() + "\n";
    sausage_plugin::write_atomic(&path, &out).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let names: Vec<&str> = import["methods"].as_array().into_iter().flatten().filter_map(|m| m["name"].as_str()).collect();
    let endpoints: Vec<&String> = import["x-sausage-endpoints"].as_object().map(|o| o.keys().collect()).unwrap_or_default();
    let mut content = format!(
        "wrote {} from {from}: the methods {}",
        path.display(),
        if names.is_empty() { "(none)".to_string() } else { names.join(", ") }
    );
    if !endpoints.is_empty() {
        content.push_str(&format!("; the endpoints {}", endpoints.iter().map(|e| e.as_str()).collect::<Vec<_>>().join(", ")));
    }
    content.push_str(&format!(
        ".\nUse it with sausage_plugin::import!(\"{provider}\"); the code it generates is \
         /proc/core/plugins/{provider}/client.rs (for the current document)."
    ));
    Ok((content, format!("imports/{provider}.json: {}", names.join(", "))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn document() -> Value {
        json!({
            "openrpc": "1.2.6",
            "info": {"title": "counter", "version": "0.1.0"},
            "methods": [
                {"name": "add", "params": [{"name": "by", "schema": {"type": "integer"}}], "result": {"name": "result", "schema": {"type": "integer"}}},
                {"name": "total", "params": [], "result": {"name": "result", "schema": {"$ref": "#/components/schemas/Total"}}},
            ],
            "components": {"schemas": {"Total": {"type": "object", "properties": {"n": {"type": "integer"}}}}},
            "x-sausage-imports": {"log": {"methods": []}},
        })
    }

    #[test]
    fn whole_or_cut_to_the_methods_named() {
        let whole = cut(&document(), None).unwrap();
        assert_eq!(whole["methods"].as_array().unwrap().len(), 2);
        assert!(whole.get("x-sausage-imports").is_none());
        let one = cut(&document(), Some(&["total".into()])).unwrap();
        assert_eq!(one["methods"][0]["name"], "total");
        assert_eq!(one["methods"].as_array().unwrap().len(), 1);
        assert!(one["components"]["schemas"]["Total"].is_object());
        let e = cut(&document(), Some(&["sub".into()])).unwrap_err();
        assert!(e.contains("no method `sub`: its methods are add, total"), "{e}");
        assert!(cut(&json!({"a": 1}), None).unwrap_err().contains("not an rpc.discover document"));
    }

    #[test]
    fn writes_the_consumers_import() {
        std::fs::create_dir_all("/plugins/dash/source").unwrap();
        std::fs::write("/plugins/dash/source/Cargo.toml", "[package]\n").unwrap();
        std::fs::create_dir_all("/built").unwrap();
        std::fs::write("/built/counter.json", document().to_string()).unwrap();
        let args = json!({"plugin": "dash", "provider": "counter", "methods": ["add"], "from": "/built/counter.json"});
        let (content, summary) = make_import(&args).unwrap();
        assert!(content.starts_with("wrote /plugins/dash/source/imports/counter.json from /built/counter.json: the methods add."), "{content}");
        assert_eq!(summary, "imports/counter.json: add");
        let written: Value = serde_json::from_str(&std::fs::read_to_string("/plugins/dash/source/imports/counter.json").unwrap()).unwrap();
        assert_eq!(written["methods"].as_array().unwrap().len(), 1);
        assert!(make_import(&json!({"plugin": "nope", "provider": "counter", "from": "/built/counter.json"})).unwrap_err().contains("no Cargo.toml"));
        assert!(make_import(&json!({"plugin": "dash", "provider": "../x"})).unwrap_err().contains("plugin's name"));
        assert!(make_import(&json!({"plugin": "dash", "provider": "ghost"})).unwrap_err().contains("/proc/core/plugins/ghost/discover.json"));
    }
}
