//! The generator of imported interfaces.
//!
//! A plugin that uses another plugin copies that plugin's `rpc.discover`
//! document to `imports/<name>.json` and writes `sausage_plugin::import!("<name>")`.
//! The macro calls [`generate`], and so does the host when it serves
//! `/proc/core/plugins/<name>/client.rs`: both show exactly the same code.
//!
//! The generated module has:
//!
//! - one function per method, which returns a [`Call`] (await it, or set
//!   `.detach()` or `.on_notify(f)` first),
//! - one type per schema in `components.schemas` that a method uses, with the
//!   provider's name and docs, and `#[sausage_plugin::schema(import)]` (the
//!   serde and schemars derives, without the doc rule),
//! - one module per endpoint interface (`x-sausage-endpoints`), with
//!   `connect(path)` and a `Client` that has one method per endpoint method,
//! - `sausage_plugin::__register_import!`, which puts the document into the
//!   plugin's own `rpc.discover` (`x-sausage-imports`).
//!
//! The items are `pub(crate)`, so rustc warns about each method the plugin
//! does not use.
//!
//! [`Call`]: https://docs.rs/sausage-plugin/latest/sausage_plugin/struct.Call.html
//!
//! # Example
//!
//! ```
//! let document = r#"{
//!   "openrpc": "1.2.6",
//!   "info": {"title": "notes", "version": "0.1.0"},
//!   "methods": [{
//!     "name": "list",
//!     "summary": "List all notes, the oldest first.",
//!     "params": [],
//!     "result": {"name": "result", "schema": {"type": "array", "items": {"type": "string"}}}
//!   }]
//! }"#;
//! let code = sausage_plugin_codegen::generate(document, "notes").unwrap();
//! assert!(code.contains("pub(crate) fn list() -> ::sausage_plugin::Call<Vec<String>>"));
//! ```
//!
//! # Schemas
//!
//! The generator maps the schema subset of PROTOCOL section 10.2 to Rust:
//!
//! | Schema | Rust |
//! | --- | --- |
//! | `{"type": "string"}` | `String` |
//! | `{"type": "string", "enum": [...]}` | an enum with one unit variant per value |
//! | `{"type": "integer"}` | `u8` … `u64`, `usize`, `i8` … `i64`, `isize`, after `format` or the range |
//! | `{"type": "number"}` | `f64` |
//! | `{"type": "boolean"}` | `bool` |
//! | `{"type": "null"}` | `()` |
//! | `{"type": "array", "items": T}` | `Vec<T>` |
//! | `{"type": "object", "properties": ...}` | a struct; a field that is not `required` is an `Option` |
//! | `{"type": [T, "null"]}`, `{"anyOf": [T, {"type": "null"}]}` | `Option<T>` |
//! | `{"$ref": "#/components/schemas/Name"}` | the type `Name` |
//!
//! Anything else becomes `serde_json::Value` (an object with only
//! `additionalProperties` becomes a `BTreeMap<String, T>`): it compiles, and
//! the host's interface check reports the construct.

use serde_json::{Map, Value};
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::fmt::Write as _;

/// Why a document cannot be turned into a module: what [`generate`] returns
/// for a document that is not an `rpc.discover` document, or a provider
/// name that is not a plugin name. It displays as its message.
///
/// # Example
///
/// ```
/// let error = sausage_plugin_codegen::generate("[1, 2]", "notes").unwrap_err();
/// assert_eq!(error.to_string(), "the document of `notes` is not a JSON object");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    message: String,
}

impl Error {
    fn new(message: impl Into<String>) -> Self {
        Error { message: message.into() }
    }

    /// The explanation, in words.
    ///
    /// ```
    /// let error = sausage_plugin_codegen::generate("{}", "Notes").unwrap_err();
    /// assert!(error.message().starts_with("`Notes` is not a plugin name"), "{error}");
    /// ```
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// Generates the Rust module `mod <provider_name>` from an `rpc.discover`
/// document (OpenRPC 1.2, as Sausage plugins describe themselves).
///
/// `provider_name` is the plugin's name in the world (`a-z`, `0-9`, `-`,
/// `_`); the module takes it with `-` replaced by `_`, and calls go to
/// `<provider_name>.<method>`.
///
/// # Errors
///
/// The document is not JSON, is not an object with a `methods` list, a
/// method has no name, or the provider name is not a plugin name.
///
/// # Example
///
/// ```
/// let document = r#"{"openrpc": "1.2.6", "info": {"title": "x", "version": "1"}, "methods": []}"#;
/// let code = sausage_plugin_codegen::generate(document, "my-tool").unwrap();
/// assert!(code.contains("mod my_tool {"));
/// ```
pub fn generate(document_json: &str, provider_name: &str) -> Result<String, Error> {
    check_plugin_name(provider_name)?;
    let document: Value = serde_json::from_str(document_json)
        .map_err(|e| Error::new(format!("the document of `{provider_name}` is not JSON: {e}")))?;
    let Some(document) = document.as_object() else {
        return Err(Error::new(format!("the document of `{provider_name}` is not a JSON object")));
    };
    let empty = Map::new();
    let schemas =
        document.get("components").and_then(|c| c.get("schemas")).and_then(Value::as_object).unwrap_or(&empty);
    let mut generator = Generator {
        provider: provider_name,
        schemas,
        defs: Vec::new(),
        by_ref: HashMap::new(),
        used_names: BTreeSet::new(),
    };

    let methods = method_list(document.get("methods"), provider_name, "methods")?;
    let mut main = Vec::new();
    for method in methods {
        main.push(generator.method(method, "")?);
    }
    let mut endpoints = Vec::new();
    if let Some(eps) = document.get("x-sausage-endpoints") {
        let Some(eps) = eps.as_object() else {
            return Err(Error::new(format!("`x-sausage-endpoints` of `{provider_name}` is not an object")));
        };
        for (name, endpoint) in eps {
            let methods =
                method_list(endpoint.get("methods"), provider_name, &format!("x-sausage-endpoints.{name}.methods"))?;
            let mut generated = Vec::new();
            for method in methods {
                generated.push(generator.method(method, name)?);
            }
            let doc = endpoint.get("description").and_then(Value::as_str).map(str::to_owned);
            endpoints.push((name.clone(), doc, generated));
        }
    }

    let mut out = String::new();
    let title_doc = document
        .get("info")
        .and_then(|i| i.get("description"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| format!("The interface of the plugin `{provider_name}`."));
    push_doc(&mut out, "", &title_doc);
    out.push_str("///\n");
    let _ = writeln!(
        out,
        "/// Generated by `sausage_plugin::import!(\"{provider_name}\")` from `imports/{provider_name}.json`."
    );
    let _ = writeln!(out, "mod {} {{", module_ident(provider_name));
    let mut first = true;
    for method in &main {
        if !first {
            out.push('\n');
        }
        first = false;
        method.write_function(&mut out, "    ", provider_name);
    }
    for def in &generator.defs {
        if !first {
            out.push('\n');
        }
        first = false;
        def.write(&mut out, "    ");
    }
    for (name, doc, methods) in &endpoints {
        if !first {
            out.push('\n');
        }
        first = false;
        write_endpoint(&mut out, provider_name, name, doc.as_deref(), methods);
    }
    if !first {
        out.push('\n');
    }
    let _ = writeln!(out, "    ::sausage_plugin::__register_import!(\"{provider_name}\");");
    out.push_str("}\n");
    Ok(out)
}

fn check_plugin_name(name: &str) -> Result<(), Error> {
    let valid = !name.is_empty()
        && name.len() <= 64
        && name != "core"
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    if valid {
        Ok(())
    } else {
        Err(Error::new(format!(
            "`{name}` is not a plugin name: use a-z, 0-9, `-` and `_` (at most 64), and not `core`"
        )))
    }
}

fn method_list<'a>(methods: Option<&'a Value>, provider: &str, place: &str) -> Result<&'a Vec<Value>, Error> {
    match methods {
        Some(Value::Array(list)) => Ok(list),
        Some(_) => Err(Error::new(format!("`{place}` in the document of `{provider}` is not a list"))),
        None => Err(Error::new(format!("the document of `{provider}` has no `{place}`"))),
    }
}

/// One generated method: a function (main interface) or a client method (endpoint).
struct Method {
    json_name: String,
    rust_name: String,
    doc: String,
    params: Option<String>,
    result: String,
}

impl Method {
    fn write_function(&self, out: &mut String, indent: &str, provider: &str) {
        push_doc(out, indent, &self.doc);
        let full = format!("{provider}.{}", self.json_name);
        match &self.params {
            Some(params) => {
                let _ = writeln!(
                    out,
                    "{indent}pub(crate) fn {}(params: {params}) -> ::sausage_plugin::Call<{}> {{",
                    self.rust_name, self.result
                );
                let _ = writeln!(out, "{indent}    ::sausage_plugin::call({}, params).returning()", quote(&full));
            }
            None => {
                let _ = writeln!(
                    out,
                    "{indent}pub(crate) fn {}() -> ::sausage_plugin::Call<{}> {{",
                    self.rust_name, self.result
                );
                let _ = writeln!(out, "{indent}    ::sausage_plugin::call({}, ()).returning()", quote(&full));
            }
        }
        let _ = writeln!(out, "{indent}}}");
    }

    fn write_client_method(&self, out: &mut String, indent: &str) {
        push_doc(out, indent, &self.doc);
        match &self.params {
            Some(params) => {
                let _ = writeln!(
                    out,
                    "{indent}pub(crate) fn {}(&self, params: {params}) -> ::sausage_plugin::Call<{}> {{",
                    self.rust_name, self.result
                );
                let _ =
                    writeln!(out, "{indent}    self.connection.call({}, params).returning()", quote(&self.json_name));
            }
            None => {
                let _ = writeln!(
                    out,
                    "{indent}pub(crate) fn {}(&self) -> ::sausage_plugin::Call<{}> {{",
                    self.rust_name, self.result
                );
                let _ = writeln!(out, "{indent}    self.connection.call({}, ()).returning()", quote(&self.json_name));
            }
        }
        let _ = writeln!(out, "{indent}}}");
    }
}

fn write_endpoint(out: &mut String, provider: &str, name: &str, doc: Option<&str>, methods: &[Method]) {
    let module = field_ident(name);
    let doc = doc.map(str::to_owned).unwrap_or_else(|| format!("The endpoint interface `{name}` of `{provider}`."));
    push_doc(out, "    ", &doc);
    let _ = writeln!(out, "    pub(crate) mod {module} {{");
    out.push_str("        #[allow(unused_imports)]\n        use super::*;\n\n");
    push_doc(
        out,
        "        ",
        &format!(
            "Connects to the `{name}` endpoint whose endpoint file is at `path`.\n\n\
             Waits a short time when the file does not exist yet, and checks with\n\
             `rpc.endpoint` that the process behind the address is the one the file names."
        ),
    );
    let _ = writeln!(out, "        pub(crate) async fn connect(path: &str) -> ::sausage_plugin::Result<Client> {{");
    let _ = writeln!(out, "            let connection = ::sausage_plugin::connect(path).await?;");
    let _ = writeln!(out, "            connection.check_interface({})?;", quote(name));
    out.push_str("            Ok(Client { connection })\n        }\n\n");
    push_doc(out, "        ", &format!("A connection to a `{name}` endpoint of `{provider}`."));
    out.push_str("        pub(crate) struct Client {\n");
    out.push_str(
        "            #[allow(dead_code)]\n            connection: ::sausage_plugin::Connection,\n        }\n\n",
    );
    out.push_str("        impl Client {\n");
    let mut first = true;
    for method in methods {
        if !first {
            out.push('\n');
        }
        first = false;
        method.write_client_method(out, "            ");
    }
    out.push_str("        }\n    }\n");
}

enum TypeDef {
    Struct { name: String, doc: Option<String>, fields: Vec<Field> },
    Enum { name: String, doc: Option<String>, variants: Vec<Variant> },
    Alias { name: String, doc: Option<String>, ty: String },
}

struct Field {
    json: String,
    rust: String,
    ty: String,
    doc: Option<String>,
    required: bool,
}

struct Variant {
    json: String,
    rust: String,
    doc: Option<String>,
}

impl TypeDef {
    fn write(&self, out: &mut String, indent: &str) {
        match self {
            TypeDef::Struct { name, doc, fields } => {
                if let Some(doc) = doc {
                    push_doc(out, indent, doc);
                }
                let _ = writeln!(out, "{indent}#[::sausage_plugin::schema(import)]");
                if fields.is_empty() {
                    let _ = writeln!(out, "{indent}pub(crate) struct {name} {{}}");
                    return;
                }
                let _ = writeln!(out, "{indent}pub(crate) struct {name} {{");
                for field in fields {
                    if let Some(doc) = &field.doc {
                        push_doc(out, &format!("{indent}    "), doc);
                    }
                    let mut serde = Vec::new();
                    if unraw(&field.rust) != field.json {
                        serde.push(format!("rename = {}", quote(&field.json)));
                    }
                    if !field.required {
                        serde.push("default".to_owned());
                        serde.push("skip_serializing_if = \"Option::is_none\"".to_owned());
                    }
                    if !serde.is_empty() {
                        let _ = writeln!(out, "{indent}    #[serde({})]", serde.join(", "));
                    }
                    let _ = writeln!(out, "{indent}    pub(crate) {}: {},", field.rust, field.ty);
                }
                let _ = writeln!(out, "{indent}}}");
            }
            TypeDef::Enum { name, doc, variants } => {
                if let Some(doc) = doc {
                    push_doc(out, indent, doc);
                }
                let _ = writeln!(out, "{indent}#[::sausage_plugin::schema(import)]");
                let _ = writeln!(out, "{indent}pub(crate) enum {name} {{");
                for variant in variants {
                    if let Some(doc) = &variant.doc {
                        push_doc(out, &format!("{indent}    "), doc);
                    }
                    if variant.rust != variant.json {
                        let _ = writeln!(out, "{indent}    #[serde(rename = {})]", quote(&variant.json));
                    }
                    let _ = writeln!(out, "{indent}    {},", variant.rust);
                }
                let _ = writeln!(out, "{indent}}}");
            }
            TypeDef::Alias { name, doc, ty } => {
                if let Some(doc) = doc {
                    push_doc(out, indent, doc);
                }
                let _ = writeln!(out, "{indent}pub(crate) type {name} = {ty};");
            }
        }
    }
}

/// Type names that would shadow what generated code uses.
const RESERVED_TYPE_NAMES: &[&str] = &[
    "String",
    "Vec",
    "Option",
    "Box",
    "Result",
    "Value",
    "Map",
    "BTreeMap",
    "Call",
    "Client",
    "Connection",
    "Error",
    "Ok",
    "Err",
    "Some",
    "None",
    "Self",
];

struct Generator<'a> {
    provider: &'a str,
    schemas: &'a Map<String, Value>,
    defs: Vec<TypeDef>,
    /// Schema name in `components.schemas` → Rust type name.
    by_ref: HashMap<String, String>,
    used_names: BTreeSet<String>,
}

impl Generator<'_> {
    fn method(&mut self, method: &Value, endpoint: &str) -> Result<Method, Error> {
        let place = if endpoint.is_empty() {
            format!("`{}`", self.provider)
        } else {
            format!("the endpoint `{endpoint}` of `{}`", self.provider)
        };
        let Some(name) = method.get("name").and_then(Value::as_str) else {
            return Err(Error::new(format!("a method of {place} has no name")));
        };
        let camel = type_ident_base(name);
        let mut doc = String::new();
        if let Some(summary) = method.get("summary").and_then(Value::as_str) {
            doc.push_str(summary.trim());
        }
        if let Some(description) = method.get("description").and_then(Value::as_str) {
            if !doc.is_empty() {
                doc.push_str("\n\n");
            }
            doc.push_str(description.trim());
        }
        if doc.is_empty() {
            doc = format!("Calls `{name}`.");
        }

        let params = if let Some(reference) =
            method.get("x-sausage-params").and_then(|p| p.get("$ref")).and_then(Value::as_str)
        {
            Some(self.reference(reference)?)
        } else {
            let list = method.get("params").and_then(Value::as_array).cloned().unwrap_or_default();
            if list.is_empty() {
                None
            } else {
                let type_name = self.unique_name(&format!("{camel}Params"));
                let mut fields = Vec::new();
                let mut rust_names = BTreeSet::new();
                for param in &list {
                    let Some(param_name) = param.get("name").and_then(Value::as_str) else {
                        return Err(Error::new(format!("a param of `{name}` in {place} has no name")));
                    };
                    let schema = param.get("schema").cloned().unwrap_or(Value::Bool(true));
                    let hint = format!("{type_name}{}", type_ident_base(param_name));
                    let ty = self.ty(&schema, &hint)?;
                    let required = param.get("required").and_then(Value::as_bool).unwrap_or(false);
                    let doc = param
                        .get("description")
                        .or_else(|| schema.get("description"))
                        .and_then(Value::as_str)
                        .map(str::to_owned);
                    let rust = unique_in(&mut rust_names, field_ident(param_name));
                    fields.push(Field {
                        json: param_name.to_owned(),
                        rust,
                        ty: if required { ty } else { optional(ty) },
                        doc,
                        required,
                    });
                }
                self.defs.push(TypeDef::Struct {
                    name: type_name.clone(),
                    doc: Some(format!("The params of `{name}`.")),
                    fields,
                });
                Some(type_name)
            }
        };
        let result = match method.get("result").and_then(|r| r.get("schema")) {
            Some(schema) => self.ty(schema, &format!("{camel}Result"))?,
            None => "::sausage_plugin::serde_json::Value".to_owned(),
        };
        Ok(Method { json_name: name.to_owned(), rust_name: field_ident(name), doc, params, result })
    }

    fn unique_name(&mut self, base: &str) -> String {
        let mut base = base.to_owned();
        if RESERVED_TYPE_NAMES.contains(&base.as_str()) {
            base.push_str("Schema");
        }
        unique_in(&mut self.used_names, base)
    }

    /// The Rust type of `#/components/schemas/<name>`, generated on first use.
    fn reference(&mut self, reference: &str) -> Result<String, Error> {
        let Some(name) = reference.strip_prefix("#/components/schemas/") else {
            return Err(Error::new(format!(
                "the $ref `{reference}` in the document of `{}` does not point to #/components/schemas/",
                self.provider
            )));
        };
        let name = name.replace("~1", "/").replace("~0", "~");
        if let Some(rust) = self.by_ref.get(&name) {
            return Ok(rust.clone());
        }
        let Some(schema) = self.schemas.get(&name) else {
            return Err(Error::new(format!(
                "the document of `{}` has no schema `{name}` in components.schemas",
                self.provider
            )));
        };
        let rust = self.unique_name(&type_ident_base(&name));
        self.by_ref.insert(name.clone(), rust.clone());
        self.define(&rust, schema)?;
        Ok(rust)
    }

    /// Adds the definition of a named type for `schema`.
    fn define(&mut self, name: &str, schema: &Value) -> Result<(), Error> {
        let doc = schema.get("description").and_then(Value::as_str).map(str::to_owned);
        if let Some(fields) = self.object_fields(schema, name)? {
            self.defs.push(TypeDef::Struct { name: name.to_owned(), doc, fields });
        } else if let Some(variants) = string_enum(schema) {
            self.defs.push(TypeDef::Enum { name: name.to_owned(), doc, variants });
        } else {
            let ty = self.ty(schema, &format!("{name}Value"))?;
            self.defs.push(TypeDef::Alias { name: name.to_owned(), doc, ty });
        }
        Ok(())
    }

    /// The fields when `schema` is an object with `properties`.
    fn object_fields(&mut self, schema: &Value, owner: &str) -> Result<Option<Vec<Field>>, Error> {
        let Some(object) = schema.as_object() else { return Ok(None) };
        let is_object = match object.get("type") {
            Some(Value::String(t)) => t == "object",
            None => object.contains_key("properties"),
            _ => false,
        };
        if !is_object {
            return Ok(None);
        }
        let Some(properties) = object.get("properties").and_then(Value::as_object) else {
            if object.get("additionalProperties").is_some_and(|a| a.is_object() || a == &Value::Bool(true)) {
                return Ok(None);
            }
            return Ok(Some(Vec::new()));
        };
        let required: BTreeSet<&str> = object
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut fields = Vec::new();
        let mut rust_names = BTreeSet::new();
        for (json, property) in properties {
            let hint = format!("{owner}{}", type_ident_base(json));
            let mut ty = self.ty(property, &hint)?;
            if ty == owner {
                ty = format!("Box<{ty}>");
            } else if ty == format!("Option<{owner}>") {
                ty = format!("Option<Box<{owner}>>");
            }
            let is_required = required.contains(json.as_str());
            fields.push(Field {
                json: json.clone(),
                rust: unique_in(&mut rust_names, field_ident(json)),
                ty: if is_required { ty } else { optional(ty) },
                doc: property.get("description").and_then(Value::as_str).map(str::to_owned),
                required: is_required,
            });
        }
        Ok(Some(fields))
    }

    /// The Rust type of a schema; inline objects and enums become types named `hint`.
    fn ty(&mut self, schema: &Value, hint: &str) -> Result<String, Error> {
        const ANY: &str = "::sausage_plugin::serde_json::Value";
        let object = match schema {
            Value::Object(o) => o,
            _ => return Ok(ANY.to_owned()),
        };
        if let Some(reference) = object.get("$ref").and_then(Value::as_str) {
            return self.reference(reference);
        }
        if let Some(Value::Array(all)) = object.get("allOf") {
            if all.len() == 1 && !object.contains_key("properties") {
                return self.ty(&all[0], hint);
            }
            return Ok(ANY.to_owned());
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(members)) = object.get(key) {
                let non_null: Vec<&Value> = members.iter().filter(|m| !is_null_schema(m)).collect();
                if non_null.len() == 1 && non_null.len() < members.len() {
                    let inner = self.ty(non_null[0], hint)?;
                    return Ok(optional(inner));
                }
                if string_enum(schema).is_some() {
                    return self.inline_enum(schema, hint);
                }
                return Ok(ANY.to_owned());
            }
        }
        if object.contains_key("enum") {
            if let Some(values) = object.get("enum").and_then(Value::as_array)
                && values.iter().any(Value::is_null)
                && string_enum(schema).is_some()
            {
                let inner = self.inline_enum(schema, hint)?;
                return Ok(optional(inner));
            }
            if string_enum(schema).is_some() {
                return self.inline_enum(schema, hint);
            }
            return Ok(ANY.to_owned());
        }
        if object.get("const").is_some_and(Value::is_string) {
            return Ok("String".to_owned());
        }
        let types: Vec<&str> = match object.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ => {
                if object.contains_key("properties") {
                    vec!["object"]
                } else {
                    return Ok(ANY.to_owned());
                }
            }
        };
        let non_null: Vec<&str> = types.iter().copied().filter(|t| *t != "null").collect();
        if non_null.len() == 1 && types.len() == 2 {
            let mut single = object.clone();
            single.insert("type".into(), Value::String(non_null[0].to_owned()));
            let inner = self.ty(&Value::Object(single), hint)?;
            return Ok(optional(inner));
        }
        if types.len() != 1 {
            return Ok(ANY.to_owned());
        }
        Ok(match types[0] {
            "string" => "String".to_owned(),
            "integer" => integer_type(object).to_owned(),
            "number" => "f64".to_owned(),
            "boolean" => "bool".to_owned(),
            "null" => "()".to_owned(),
            "array" => match object.get("items") {
                Some(items) if items.is_object() => {
                    let item = self.ty(items, &format!("{hint}Item"))?;
                    format!("Vec<{item}>")
                }
                _ => format!("Vec<{ANY}>"),
            },
            "object" => {
                if object.contains_key("properties") {
                    let name = self.unique_name(hint);
                    let fields = self.object_fields(schema, &name)?.unwrap_or_default();
                    let doc = object.get("description").and_then(Value::as_str).map(str::to_owned);
                    self.defs.push(TypeDef::Struct { name: name.clone(), doc, fields });
                    name
                } else {
                    match object.get("additionalProperties") {
                        Some(values @ Value::Object(_)) => {
                            let value = self.ty(values, &format!("{hint}Value"))?;
                            format!("::std::collections::BTreeMap<String, {value}>")
                        }
                        _ => format!("::sausage_plugin::serde_json::Map<String, {ANY}>"),
                    }
                }
            }
            _ => ANY.to_owned(),
        })
    }

    fn inline_enum(&mut self, schema: &Value, hint: &str) -> Result<String, Error> {
        let variants = string_enum(schema).unwrap_or_default();
        let name = self.unique_name(hint);
        let doc = schema.get("description").and_then(Value::as_str).map(str::to_owned);
        self.defs.push(TypeDef::Enum { name: name.clone(), doc, variants });
        Ok(name)
    }
}

fn is_null_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null") || schema.get("const").is_some_and(Value::is_null)
}

/// The variants when `schema` is a string enum: `enum`, or `oneOf`/`anyOf` of `const`s.
fn string_enum(schema: &Value) -> Option<Vec<Variant>> {
    let object = schema.as_object()?;
    let mut values: Vec<(String, Option<String>)> = Vec::new();
    if let Some(list) = object.get("enum").and_then(Value::as_array) {
        for v in list {
            match v {
                Value::String(s) => values.push((s.clone(), None)),
                Value::Null => {}
                _ => return None,
            }
        }
    } else {
        let members = object.get("oneOf").or_else(|| object.get("anyOf"))?.as_array()?;
        for member in members {
            let doc = member.get("description").and_then(Value::as_str).map(str::to_owned);
            if let Some(Value::String(s)) = member.get("const") {
                values.push((s.clone(), doc));
            } else if let Some(list) = member.get("enum").and_then(Value::as_array) {
                for v in list {
                    values.push((v.as_str()?.to_owned(), doc.clone()));
                }
            } else {
                return None;
            }
        }
    }
    if values.is_empty() {
        return None;
    }
    let mut used = BTreeSet::new();
    Some(
        values
            .into_iter()
            .map(|(json, doc)| {
                let base = type_ident_base(&json);
                let base = if base == "Self" { "SelfValue".to_owned() } else { base };
                Variant { rust: unique_in(&mut used, base), json, doc }
            })
            .collect(),
    )
}

fn integer_type(object: &Map<String, Value>) -> &'static str {
    match object.get("format").and_then(Value::as_str) {
        Some("uint8") => return "u8",
        Some("uint16") => return "u16",
        Some("uint32") => return "u32",
        Some("uint64") => return "u64",
        Some("uint") => return "usize",
        Some("int8") => return "i8",
        Some("int16") => return "i16",
        Some("int32") => return "i32",
        Some("int64") => return "i64",
        Some("int") => return "isize",
        _ => {}
    }
    let min = object.get("minimum").and_then(Value::as_f64);
    let max = object.get("maximum").and_then(Value::as_f64);
    match (min, max) {
        (Some(min), Some(max)) if min >= 0.0 => {
            if max <= u8::MAX as f64 {
                "u8"
            } else if max <= u16::MAX as f64 {
                "u16"
            } else if max <= u32::MAX as f64 {
                "u32"
            } else {
                "u64"
            }
        }
        (Some(min), None) if min >= 0.0 => "u64",
        (Some(min), Some(max)) => {
            if min >= i8::MIN as f64 && max <= i8::MAX as f64 {
                "i8"
            } else if min >= i16::MIN as f64 && max <= i16::MAX as f64 {
                "i16"
            } else if min >= i32::MIN as f64 && max <= i32::MAX as f64 {
                "i32"
            } else {
                "i64"
            }
        }
        _ => "i64",
    }
}

fn optional(ty: String) -> String {
    if ty.starts_with("Option<") { ty } else { format!("Option<{ty}>") }
}

fn unique_in(used: &mut BTreeSet<String>, base: String) -> String {
    if used.insert(base.clone()) {
        return base;
    }
    for i in 2.. {
        let candidate = format!("{base}{i}");
        if used.insert(candidate.clone()) {
            return candidate;
        }
    }
    unreachable!()
}

/// Rust keywords (strict and reserved) of edition 2024.
const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern", "false", "fn",
    "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub", "ref", "return", "self",
    "Self", "static", "struct", "super", "trait", "true", "type", "unsafe", "use", "where", "while", "abstract",
    "become", "box", "do", "final", "macro", "override", "priv", "typeof", "unsized", "virtual", "yield", "try",
    "union",
];

/// A snake_case identifier for a JSON name (a field, a method, a module).
fn field_ident(json: &str) -> String {
    let mut out = String::new();
    let mut previous_lower = false;
    for c in json.chars() {
        if c.is_ascii_uppercase() {
            if previous_lower {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
            previous_lower = false;
        } else if c.is_ascii_alphanumeric() {
            out.push(c);
            previous_lower = c.is_ascii_lowercase() || c.is_ascii_digit();
        } else {
            if !out.ends_with('_') {
                out.push('_');
            }
            previous_lower = false;
        }
    }
    let trimmed = out.trim_matches('_');
    let mut out = if trimmed.is_empty() { "field".to_owned() } else { trimmed.to_owned() };
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    match out.as_str() {
        "self" | "super" | "crate" | "_" => format!("{out}_"),
        kw if KEYWORDS.contains(&kw) => format!("r#{out}"),
        _ => out,
    }
}

fn module_ident(provider: &str) -> String {
    let name = provider.replace('-', "_");
    match name.as_str() {
        "self" | "super" | "crate" | "_" => format!("{name}_"),
        kw if KEYWORDS.contains(&kw) => format!("r#{name}"),
        _ if name.starts_with(|c: char| c.is_ascii_digit()) => format!("_{name}"),
        _ => name,
    }
}

/// A CamelCase type name for a JSON name, kept as it is when it already is one.
fn type_ident_base(json: &str) -> String {
    let valid = json.starts_with(|c: char| c.is_ascii_uppercase())
        && json.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    let mut out = if valid {
        json.to_owned()
    } else {
        let mut out = String::new();
        let mut upper = true;
        for c in json.chars() {
            if c.is_ascii_alphanumeric() {
                if upper {
                    out.push(c.to_ascii_uppercase());
                } else {
                    out.push(c);
                }
                upper = false;
            } else {
                upper = true;
            }
        }
        out
    };
    if out.is_empty() {
        out = "Empty".to_owned();
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'T');
    }
    out
}

fn unraw(ident: &str) -> &str {
    ident.strip_prefix("r#").unwrap_or(ident)
}

/// A Rust string literal.
fn quote(text: &str) -> String {
    format!("{text:?}")
}

fn push_doc(out: &mut String, indent: &str, doc: &str) {
    for line in doc.trim().lines() {
        let line = line.trim_end();
        if line.is_empty() {
            let _ = writeln!(out, "{indent}///");
        } else {
            let _ = writeln!(out, "{indent}/// {line}");
        }
    }
}

#[cfg(test)]
mod tests;
