//! The `rpc.discover` document that `#[rpc]` and `#[schema]` generate, on
//! the host target: its shape, the schemas of what a plugin reads and
//! writes, endpoints, grace, imports, and generated imports that compile.

use sausage_plugin::serde_json::{Value, json};
use sausage_plugin::{Ctx, Result, Retired, on_retired, rpc, schema};

/// The main interface of the test.
struct Shop;

/// The params of `order`.
#[schema]
struct OrderParams {
    /// What to order.
    item: String,
    /// How many; 1 when missing.
    #[serde(default = "one")]
    count: u32,
    /// A note for the shop.
    note: Option<String>,
    /// How to ship it.
    shipping: Shipping,
}

fn one() -> u32 {
    1
}

/// How to ship an order.
#[schema]
#[serde(rename_all = "kebab-case")]
enum Shipping {
    /// Pick it up.
    PickUp,
    /// Send it by post.
    ByPost,
}

/// An order as the shop keeps it.
#[schema]
struct Order {
    /// The number of the order.
    number: u64,
    /// The comment, if there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    comment: Option<String>,
}

/// The params of `amend`.
#[schema]
struct AmendParams {
    /// The order as it should be.
    order: Order,
}

#[rpc(endpoints(till = Till), grace_seconds = 90)]
impl Shop {
    /// Order something.
    ///
    /// Tells the caller about each step. Fails when the item is sold out.
    async fn order(&self, ctx: &Ctx, params: OrderParams) -> Result<Order> {
        ctx.notify("ordered", &params.item);
        Ok(Order { number: 1, comment: params.note })
    }

    /// Change an order.
    fn amend(&self, AmendParams { order }: AmendParams) -> Result<Order> {
        Ok(order)
    }

    /// Nothing to report.
    fn ping(&self) -> Result<()> {
        Ok(())
    }

    /// Migrate the orders.
    #[on_retired]
    fn migrate(&self, Retired { previous }: Retired) -> Result<String> {
        Ok(previous)
    }
}

/// A till (the docs of a struct outside the crate root are out of reach of `#[rpc]`).
struct Till;

/// The till of a running shop.
#[rpc]
impl Till {
    /// The money in the till, in cents.
    fn total(&self) -> Result<i64> {
        Ok(0)
    }
}

sausage_plugin::import!("notes");
sausage_plugin::import!("www");
sausage_plugin::import!("odd");

fn document() -> Value {
    sausage_plugin::__private::document::<Shop>()
}

fn method<'a>(document: &'a Value, name: &str) -> &'a Value {
    document["methods"].as_array().unwrap().iter().find(|m| m["name"] == name).unwrap()
}

#[test]
fn the_document_is_openrpc_with_info_from_the_package() {
    let d = document();
    assert_eq!(d["openrpc"], "1.2.6");
    assert_eq!(d["info"]["title"], "ui-tests");
    assert_eq!(d["info"]["version"], "0.1.0");
    let names: Vec<&str> = d["methods"].as_array().unwrap().iter().map(|m| m["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["order", "amend", "ping"], "rpc.retired is not a method of the interface");
    assert_eq!(d["x-sausage-grace"], 90);
}

#[test]
fn method_docs_become_summary_and_description() {
    let d = document();
    let order = method(&d, "order");
    assert_eq!(order["summary"], "Order something.");
    assert_eq!(order["description"], "Tells the caller about each step. Fails when the item is sold out.");
    assert_eq!(method(&d, "ping").get("description"), None);
}

#[test]
fn params_are_by_name_in_field_order_with_their_docs() {
    let d = document();
    let order = method(&d, "order");
    assert_eq!(order["paramStructure"], "by-name");
    assert_eq!(order["x-sausage-params"], json!({"$ref": "#/components/schemas/OrderParams"}));
    let params = order["params"].as_array().unwrap();
    let names: Vec<&str> = params.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["item", "count", "note", "shipping"]);
    assert_eq!(
        params[0],
        json!({"name": "item", "required": true, "schema": {"type": "string"}, "description": "What to order."})
    );
    // what the plugin reads: `count` has a default and `note` is an Option, so neither is required
    assert_eq!(params[1]["required"], false);
    assert_eq!(params[2]["required"], false);
    assert_eq!(params[2]["schema"]["type"], json!(["string", "null"]));
    assert_eq!(params[3]["schema"], json!({"$ref": "#/components/schemas/Shipping"}));
    assert_eq!(method(&d, "ping")["params"], json!([]));
    assert_eq!(method(&d, "ping").get("x-sausage-params"), None);
}

#[test]
fn string_enums_stay_in_the_subset() {
    let d = document();
    assert_eq!(
        d["components"]["schemas"]["Shipping"],
        json!({
            "type": "string",
            "enum": ["pick-up", "by-post"],
            "description": "How to ship an order.\n\n- \"pick-up\": Pick it up.\n- \"by-post\": Send it by post."
        })
    );
}

#[test]
fn results_describe_what_the_plugin_writes() {
    let d = document();
    let schemas = &d["components"]["schemas"];
    // `Order` is read (in `amend`) and written (by `order`): `comment` may be
    // missing when written, and missing or null when read
    assert_eq!(method(&d, "amend")["result"]["schema"], json!({"$ref": "#/components/schemas/Order"}));
    assert_eq!(schemas["Order"]["required"], json!(["number"]));
    assert_eq!(schemas["AmendParams"]["properties"]["order"]["$ref"], "#/components/schemas/Order");
    assert_eq!(method(&d, "ping")["result"], json!({"name": "result", "schema": {"type": "null"}}));
    assert_eq!(schemas["Order"]["properties"]["number"]["minimum"], 0);
}

#[test]
fn a_type_written_differently_than_read_gets_a_second_schema() {
    let d = document();
    let schemas = &d["components"]["schemas"];
    // `OrderParams` is only read; but a written `Order` with a field that
    // has skip_serializing_if differs from the read one only in `required`:
    // here both are the same, so there is no `OrderOutput`.
    assert!(schemas.get("OrderOutput").is_none(), "{schemas:#}");
    for (name, schema) in schemas.as_object().unwrap() {
        assert!(schema.get("description").is_some(), "{name} has no description");
    }
}

#[test]
fn endpoints_are_declared_with_their_methods_and_docs() {
    let d = document();
    let till = &d["x-sausage-endpoints"]["till"];
    assert_eq!(till["description"], "The till of a running shop.");
    assert_eq!(till["methods"][0]["name"], "total");
    assert_eq!(till["methods"][0]["result"]["schema"]["format"], "int64");
    assert_eq!(<Till as sausage_plugin::Endpoint>::NAME, "till");
}

#[test]
fn imports_are_part_of_the_document() {
    let d = document();
    let imports = d["x-sausage-imports"].as_object().unwrap();
    let mut names: Vec<&String> = imports.keys().collect();
    names.sort();
    assert_eq!(names, ["notes", "odd", "www"]);
    assert_eq!(imports["notes"]["methods"][0]["name"], "add");
    assert!(imports["www"]["x-sausage-endpoints"]["control"].is_object());
    assert!(imports["notes"].get("info").is_none());
}

#[test]
fn generated_imports_have_the_providers_types_and_calls() {
    let params = notes::AddParams { text: "milk".into() };
    let call = notes::add(params.clone());
    assert_eq!(call.method(), "notes.add");
    assert_eq!(notes::list().method(), "notes.list");
    let added: notes::Added = sausage_plugin::serde_json::from_value(json!({"count": 3})).unwrap();
    assert_eq!(added.count, 3);
    assert_eq!(www::start(www::StartParams { port: 8080 }).detach().method(), "www.start");
    let _connect = www::control::connect("/proc/x/control");
    let _methods = (www::control::Client::stats, www::control::Client::stop);
}

/// Two types with the same name in two modules.
mod a {
    /// A thing of a.
    #[sausage_plugin::schema]
    pub struct Thing {
        /// x.
        pub x: u32,
    }
}

mod b {
    /// A thing of b.
    #[sausage_plugin::schema]
    pub struct Thing {
        /// y.
        pub y: String,
    }
}

/// Uses both things.
struct Things;

/// The params of `both`.
#[schema]
struct BothParams {
    /// From a.
    a: a::Thing,
    /// From b.
    b: b::Thing,
}

/// Something that is written with a default field, and read without it.
#[schema]
struct Counter {
    /// The value.
    #[serde(default)]
    value: u32,
}

/// The params of `bump`.
#[schema]
struct BumpParams {
    /// The counter to bump.
    counter: Counter,
}

#[rpc]
impl Things {
    /// Both things.
    fn both(&self, params: BothParams) -> Result<b::Thing> {
        Ok(params.b)
    }

    /// Bump a counter.
    fn bump(&self, BumpParams { counter }: BumpParams) -> Result<Counter> {
        Ok(Counter { value: counter.value + 1 })
    }
}

#[test]
fn schemas_with_the_same_name_are_told_apart() {
    let d = sausage_plugin::__private::document::<Things>();
    let schemas = d["components"]["schemas"].as_object().unwrap();
    assert!(schemas.contains_key("Thing") && schemas.contains_key("Thing2"), "{schemas:?}");
}

#[test]
fn a_written_schema_that_differs_is_named_output() {
    let d = sausage_plugin::__private::document::<Things>();
    let schemas = &d["components"]["schemas"];
    // read: `value` may be missing; written: it is always there
    assert_eq!(schemas["Counter"].get("required"), None);
    assert_eq!(schemas["CounterOutput"]["required"], json!(["value"]));
    assert_eq!(method(&d, "bump")["result"]["schema"]["$ref"], "#/components/schemas/CounterOutput");
    assert_eq!(schemas["BumpParams"]["properties"]["counter"]["$ref"], "#/components/schemas/Counter");
}

#[test]
fn generated_imports_compile_for_names_and_schemas_that_are_not_rust() {
    let params = odd::GetThingParams {
        content_type: "text/plain".into(),
        r#type: odd::GetThingParamsType::SelfValue,
        max_items: None,
        self_: true,
    };
    let value = sausage_plugin::serde_json::to_value(&params).unwrap();
    assert_eq!(value, json!({"content-type": "text/plain", "type": "self", "self": true}));
    let thing: odd::MyThing =
        sausage_plugin::serde_json::from_value(json!({"2fa": true, "finish": "gloss", "String": {"s": null}})).unwrap();
    assert!(thing._2fa && thing.finish == odd::Finish::Gloss && thing.string.is_some() && thing.tags.is_none());
    let node: odd::Node =
        sausage_plugin::serde_json::from_value(json!({"children": [{"children": []}], "next": {"children": []}}))
            .unwrap();
    assert_eq!(node.children.len(), 1);
    assert!(node.next.is_some());
    assert_eq!(odd::get_thing(params).method(), "odd.get-thing");
    let _ =
        (odd::tree(), odd::stat(), odd::fire(), odd::my_endpoint::connect("/run/odd"), odd::my_endpoint::Client::poke);
    let _unused: Option<odd::StatResultOwner> = None;
}

/// Names files.
struct Files;

/// The params of `open`.
#[schema]
struct OpenParams {
    /// The file to open.
    path: std::path::PathBuf,
    /// Other files to open with it.
    #[serde(default)]
    more: Vec<std::path::PathBuf>,
}

#[rpc]
impl Files {
    /// Open files, and return the first one.
    fn open(&self, OpenParams { path, .. }: OpenParams) -> Result<std::path::PathBuf> {
        Ok(path)
    }
}

#[test]
fn paths_are_strings() {
    let d = sausage_plugin::__private::document::<Files>();
    let open = method(&d, "open");
    assert_eq!(open["params"][0]["schema"], json!({"type": "string"}));
    assert_eq!(open["params"][1]["schema"]["items"], json!({"type": "string"}));
    assert_eq!(open["result"]["schema"], json!({"type": "string"}));
    let read: OpenParams = sausage_plugin::serde_json::from_value(json!({"path": "/state/a"})).unwrap();
    assert_eq!(read.path, std::path::Path::new("/state/a"));
}
