//! The `rpc.discover` document (PROTOCOL 10.1): OpenRPC 1.2 with JSON
//! Schema Draft 7, generated from the code.
//!
//! - Method docs: the first paragraph is the `summary`, the rest the
//!   `description`.
//! - Params are by name: one content descriptor per field of the params
//!   struct, and `x-sausage-params` points to the struct's schema.
//! - Params schemas describe what the plugin reads (schemars' deserialize
//!   contract), result schemas what it writes (the serialize contract). When
//!   one type has different schemas for the two, the written one is named
//!   `<Name>Output`.
//! - Shared schemas are in `components.schemas`. A `$ref` that has a
//!   `description` keeps it beside the `$ref` (Draft 7 ignores it; the
//!   `allOf` wrapper that would keep it is outside the schema subset).
//! - `x-sausage-endpoints`, `x-sausage-grace` and `x-sausage-imports` come
//!   from `#[rpc(...)]` and `import!`. Each entry of `x-sausage-imports` is a
//!   part of the provider's document (`methods`, `components`,
//!   `x-sausage-endpoints`); its `$ref`s point into its own `components`.

use crate::interface::Interface;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use schemars::transform::RemoveRefSiblings;
use schemars::{JsonSchema, Schema};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};

const DEFINITIONS: &str = "/components/schemas";
const REF_PREFIX: &str = "#/components/schemas/";

/// Collects the methods and schemas of a document.
#[doc(hidden)]
pub struct Describer {
    read: SchemaGenerator,
    written: SchemaGenerator,
}

fn settings() -> SchemaSettings {
    SchemaSettings::draft07().with(|s| {
        s.definitions_path = DEFINITIONS.into();
        s.meta_schema = None;
        s.transforms.retain(|t| !t.is::<RemoveRefSiblings>());
    })
}

impl Default for Describer {
    fn default() -> Self {
        Self::new()
    }
}

impl Describer {
    pub fn new() -> Self {
        Describer {
            read: settings().for_deserialize().into_generator(),
            written: settings().for_serialize().into_generator(),
        }
    }

    /// A method with the params struct `P` and the result `R`.
    pub fn method<P: JsonSchema, R: JsonSchema>(&mut self, name: &str, doc: &str) -> Value {
        let reference = self.read.subschema_for::<P>().to_value();
        let object = match reference.get("$ref").and_then(Value::as_str) {
            Some(r) => {
                r.strip_prefix(REF_PREFIX).and_then(|n| self.read.definitions().get(n)).cloned().unwrap_or(Value::Null)
            }
            None => reference.clone(),
        };
        let required: BTreeSet<&str> = object
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut params = Vec::new();
        if let Some(properties) = object.get("properties").and_then(Value::as_object) {
            for (field, schema) in properties {
                let mut schema = schema.clone();
                let description = schema.as_object_mut().and_then(|s| s.remove("description"));
                let mut descriptor = json!({
                    "name": field,
                    "required": required.contains(field.as_str()),
                    "schema": schema,
                });
                if let Some(description) = description {
                    descriptor["description"] = description;
                }
                params.push(descriptor);
            }
        }
        let mut method = self.method_without_params::<R>(name, doc);
        method["params"] = Value::Array(params);
        if reference.get("$ref").is_some() {
            method["x-sausage-params"] = reference;
        }
        method
    }

    /// A method without params, with the result `R`.
    pub fn method_without_params<R: JsonSchema>(&mut self, name: &str, doc: &str) -> Value {
        let result = self.written.subschema_for::<R>().to_value();
        let mut method = json!({"name": name});
        let (summary, description) = split_doc(doc);
        if let Some(summary) = summary {
            method["summary"] = Value::String(summary);
        }
        if let Some(description) = description {
            method["description"] = Value::String(description);
        }
        method["paramStructure"] = json!("by-name");
        method["params"] = json!([]);
        method["result"] = json!({"name": "result", "schema": result});
        method
    }

    /// The shared schemas, and the renames of written schemas that differ
    /// from the read schemas of the same name.
    fn finish(mut self) -> (Map<String, Value>, BTreeMap<String, String>) {
        let read = self.read.take_definitions(true);
        let written = self.written.take_definitions(true);
        let mut taken: BTreeSet<String> = read.keys().chain(written.keys()).cloned().collect();
        let mut renames = BTreeMap::new();
        loop {
            let mut changed = false;
            for (name, schema) in &written {
                if renames.contains_key(name) {
                    continue;
                }
                if let Some(read_schema) = read.get(name)
                    && &rename_refs(schema.clone(), &renames) != read_schema
                {
                    let mut new_name = format!("{name}Output");
                    let mut i = 2;
                    while taken.contains(&new_name) {
                        new_name = format!("{name}Output{i}");
                        i += 1;
                    }
                    taken.insert(new_name.clone());
                    renames.insert(name.clone(), new_name);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        let mut schemas = read;
        for (name, schema) in written {
            let target = renames.get(&name).cloned().unwrap_or(name);
            if !schemas.contains_key(&target) {
                schemas.insert(target, rename_refs(schema, &renames));
            }
        }
        (schemas, renames)
    }
}

/// Replaces `$ref`s to renamed schemas.
fn rename_refs(mut schema: Value, renames: &BTreeMap<String, String>) -> Value {
    if renames.is_empty() {
        return schema;
    }
    fn walk(value: &mut Value, renames: &BTreeMap<String, String>) {
        match value {
            Value::Object(object) => {
                if let Some(Value::String(reference)) = object.get_mut("$ref")
                    && let Some(new) = reference.strip_prefix(REF_PREFIX).and_then(|n| renames.get(n))
                {
                    *reference = format!("{REF_PREFIX}{new}");
                }
                for (_, child) in object.iter_mut() {
                    walk(child, renames);
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| walk(v, renames)),
            _ => {}
        }
    }
    walk(&mut schema, renames);
    schema
}

/// Splits docs into the summary (the first paragraph, on one line) and the rest.
pub(crate) fn split_doc(doc: &str) -> (Option<String>, Option<String>) {
    let doc = doc.trim();
    if doc.is_empty() {
        return (None, None);
    }
    let mut paragraphs = doc.splitn(2, "\n\n");
    let first = paragraphs.next().unwrap_or("");
    let summary = first.lines().map(str::trim).collect::<Vec<_>>().join(" ");
    let rest = paragraphs.next().map(str::trim).filter(|r| !r.is_empty()).map(str::to_owned);
    (Some(summary), rest)
}

/// A document registered by `import!`.
#[doc(hidden)]
pub struct ImportDoc {
    pub name: &'static str,
    pub json: &'static str,
}

inventory::collect!(ImportDoc);

/// The part of a provider's document that a consumer keeps.
fn import_part(json: &str) -> Value {
    let document: Value = serde_json::from_str(json).unwrap_or(Value::Null);
    let mut part = Map::new();
    for key in ["methods", "components", "x-sausage-endpoints"] {
        if let Some(value) = document.get(key) {
            part.insert(key.to_owned(), value.clone());
        }
    }
    Value::Object(part)
}

/// The `rpc.discover` document of the main interface `T`.
pub fn document<T: Interface>() -> Value {
    let info = T::__plugin();
    let mut describer = Describer::new();
    let mut methods = T::__describe(&mut describer);
    let mut endpoints = Vec::new();
    for endpoint in &info.endpoints {
        endpoints.push((endpoint, (endpoint.describe)(&mut describer)));
    }
    let (schemas, renames) = describer.finish();
    let rename_result = |method: &mut Value| {
        if let Some(schema) = method.get_mut("result").and_then(|r| r.get_mut("schema")) {
            *schema = rename_refs(schema.take(), &renames);
        }
    };
    methods.iter_mut().for_each(rename_result);

    let title = std::env::var("SAUSAGE_PLUGIN").unwrap_or_else(|_| info.name.to_owned());
    let mut document = json!({
        "openrpc": "1.2.6",
        "info": {"title": title, "version": info.version},
    });
    if !info.description.trim().is_empty() {
        document["info"]["description"] = Value::String(info.description.trim().to_owned());
    }
    document["methods"] = Value::Array(methods);
    document["components"] = json!({"schemas": schemas});
    if !endpoints.is_empty() {
        let mut all = Map::new();
        for (endpoint, mut methods) in endpoints {
            methods.iter_mut().for_each(rename_result);
            let mut entry = json!({"methods": methods});
            if !endpoint.description.trim().is_empty() {
                entry["description"] = Value::String(endpoint.description.trim().to_owned());
            }
            all.insert(endpoint.name.to_owned(), entry);
        }
        document["x-sausage-endpoints"] = Value::Object(all);
    }
    let mut imports = Map::new();
    for import in inventory::iter::<ImportDoc> {
        imports.insert(import.name.to_owned(), import_part(import.json));
    }
    if !imports.is_empty() {
        document["x-sausage-imports"] = Value::Object(imports);
    }
    if let Some(grace) = info.grace_seconds {
        document["x-sausage-grace"] = json!(grace);
    }
    document
}

/// The schema of a string enum made by `#[schema]`: `{"type": "string",
/// "enum": [...]}`, with the docs of the variants in the description (a
/// `oneOf` per variant would leave the schema subset).
#[doc(hidden)]
pub fn string_enum_schema(values: Vec<Value>, doc: &str, variant_docs: &[(&str, &str)]) -> Schema {
    let mut description = doc.trim().to_owned();
    let documented: Vec<String> = values
        .iter()
        .zip(variant_docs)
        .filter(|(_, (_, d))| !d.trim().is_empty())
        .map(|(value, (_, d))| format!("- {value}: {}", d.trim().lines().map(str::trim).collect::<Vec<_>>().join(" ")))
        .collect();
    if !documented.is_empty() {
        if !description.is_empty() {
            description.push_str("\n\n");
        }
        description.push_str(&documented.join("\n"));
    }
    let mut schema = json!({"type": "string", "enum": values});
    if !description.is_empty() {
        schema["description"] = Value::String(description);
    }
    Schema::try_from(schema).expect("an object is a schema")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docs_split_into_summary_and_description() {
        assert_eq!(split_doc(""), (None, None));
        assert_eq!(split_doc("One line."), (Some("One line.".into()), None));
        assert_eq!(
            split_doc("First\nparagraph.\n\nMore.\n\nAnd more."),
            (Some("First paragraph.".into()), Some("More.\n\nAnd more.".into()))
        );
    }

    #[test]
    fn renames_follow_refs() {
        let renames = BTreeMap::from([("A".to_owned(), "AOutput".to_owned())]);
        let schema =
            json!({"properties": {"a": {"$ref": "#/components/schemas/A"}, "b": {"$ref": "#/components/schemas/B"}}});
        assert_eq!(
            rename_refs(schema, &renames),
            json!({"properties": {"a": {"$ref": "#/components/schemas/AOutput"}, "b": {"$ref": "#/components/schemas/B"}}})
        );
    }

    #[test]
    fn imports_keep_methods_components_and_endpoints() {
        let part = import_part(
            r#"{"openrpc": "1.2.6", "info": {}, "methods": [], "components": {"schemas": {}}, "x-sausage-imports": {}}"#,
        );
        assert_eq!(part, json!({"methods": [], "components": {"schemas": {}}}));
    }
}
