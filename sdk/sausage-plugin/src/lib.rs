//! The SDK for Sausage plugins.
//!
//! A Sausage plugin is a `wasm32-wasip2` command that speaks JSON-RPC 2.0 on
//! stdin and stdout (the contract is `/proc/core/PROTOCOL.md`). Every call
//! starts a fresh process. This crate turns an `impl` block into such a
//! plugin: it reads the requests, calls the methods, writes the answers,
//! generates the `rpc.discover` document from the code and its docs, and
//! gives you calls to other plugins, locks, endpoints and background tasks.
//!
//! | Item | Purpose |
//! | --- | --- |
//! | [`#[rpc]`](rpc) | Makes an `impl` an interface. On the main interface: `#[rpc(endpoints(name = Type), grace_seconds = N)]`. |
//! | [`#[on_retired]`](on_retired) | Marks the method that answers `rpc.retired`. |
//! | [`#[schema]`](schema) | For each type that a method takes or returns: the serde and schemars derives, and the schema-subset check. |
//! | [`run(T)`](run) | In `main`: serves the main interface on stdin and stdout. |
//! | [`call(method, params)`](call) | An untyped call. Returns a JSON value. |
//! | [`.detach()`](Call::detach), [`.on_notify(f)`](Call::on_notify) | Options of a call. |
//! | [`Ctx`] | An optional argument of a method: [`ctx.notify(name, params)`](Ctx::notify), [`ctx.exit_after_response()`](Ctx::exit_after_response). |
//! | [`lock(path)`](lock) | A lock guard. [`.try_now()`](Lock::try_now) does not wait. [`.keep()`](LockGuard::keep) holds the lock until the process ends. |
//! | [`listen(path, value)`](listen), [`connect(path)`](connect) | Endpoints. |
//! | [`background(future)`](background) | Runs a task in this process. The process lives while a task runs. |
//! | [`import!("name")`](import) | Generates `mod name` from `imports/name.json`. |
//! | [`state_dir()`](state_dir), [`write_atomic(path, bytes)`](write_atomic), [`pid()`](pid) | Helpers. |
//! | [`#[sausage_plugin::test]`](test) | An async test. A plain `#[test]` also works. |
//!
//! # A plugin
//!
//! ```no_run
//! //! Notes: a list of short texts, stored in `/state/notes/notes.json`.
//!
//! use std::path::PathBuf;
//! use sausage_plugin::{Result, lock, rpc, schema, serde_json, state_dir, write_atomic};
//!
//! /// The notes plugin. It keeps no state in memory: each call reads the file.
//! struct Notes;
//!
//! /// The params of `add`.
//! #[schema]
//! struct AddParams {
//!     /// The text of the new note. It can contain newlines.
//!     text: String,
//! }
//!
//! /// The result of `add`.
//! #[schema]
//! struct Added {
//!     /// The number of notes after the call, with the new note.
//!     count: usize,
//! }
//!
//! #[rpc]
//! impl Notes {
//!     /// Add a note at the end of the list.
//!     ///
//!     /// Returns the number of notes after the call.
//!     async fn add(&self, AddParams { text }: AddParams) -> Result<Added> {
//!         let _lock = lock(file()).await?; // released on drop, or when the process ends
//!         let mut notes = load()?;
//!         notes.push(text);
//!         write_atomic(file(), serde_json::to_vec(&notes)?)?;
//!         Ok(Added { count: notes.len() })
//!     }
//!
//!     /// List all notes, the oldest first.
//!     fn list(&self) -> Result<Vec<String>> {
//!         load()
//!     }
//! }
//!
//! /// The file with the notes: a JSON list of strings.
//! fn file() -> PathBuf {
//!     state_dir().join("notes.json")
//! }
//!
//! /// Read all notes. A missing file means no notes.
//! fn load() -> Result<Vec<String>> {
//!     match std::fs::read(file()) {
//!         Ok(bytes) => Ok(serde_json::from_slice(&bytes)?),
//!         Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(vec![]),
//!         Err(e) => Err(e.into()),
//!     }
//! }
//!
//! fn main() {
//!     sausage_plugin::run(Notes);
//! }
//! ```
//!
//! # The rules the compiler enforces
//!
//! - A method takes `&self`, an optional `ctx: &Ctx`, and at most one params
//!   argument, and returns `Result<T>`.
//! - The params argument is a `#[schema]` struct with named fields. Its
//!   fields are the params of the method.
//! - Each method, each `#[schema]` type and each field has a doc comment.
//!   Other agents read these docs to use the interface: method docs become
//!   `summary` (the first paragraph) and `description` in OpenRPC, type and
//!   field docs become `description` in the JSON Schema.
//! - Every type a method takes or returns is in the schema subset of
//!   PROTOCOL section 10.2 (see [`SchemaType`]).
//!
//! Each rule has a compile error that names the item and says what to
//! write.
//!
//! # Logging
//!
//! Log with `eprintln!`: each line of stderr goes to the journal. stdout
//! belongs to the protocol (a stray `print!` does not break a message,
//! because each message starts on a new line, but the core discards it).
//!
//! # Async
//!
//! Methods may be `async`. The runtime is [`wstd`] (re-exported), which
//! runs on WASI 0.2 without threads: use its timers, TCP and HTTP, and
//! [`background`] instead of `wstd::runtime::spawn`.

#![warn(missing_docs)]

mod call;
mod ctx;
mod discover;
mod endpoint;
mod error;
mod fs;
mod interface;
mod local;
mod lock;
mod peer;
mod runtime;
mod signal;

pub use call::{Call, call};
pub use ctx::Ctx;
pub use endpoint::{CONNECT_WAIT, Connection, connect, listen};
pub use error::{Error, Result};
pub use fs::{pid, plugin, state_dir, sync_folder, write_atomic};
pub use interface::{Endpoint, Interface, MethodResult, ParamsStruct, Retired, SchemaType};
pub use lock::{Lock, LockGuard, lock};
pub use runtime::{TaskOutput, background, on_stop, run, stopping};

/// Makes an `impl` block an interface: its methods become JSON-RPC methods.
///
/// Each method takes `&self`, an optional `ctx: &`[`Ctx`], and at most one
/// params argument, a [`#[schema]`](schema) struct with named fields, and
/// returns [`Result<T>`](Result). Methods may be `async`. Each method needs
/// a doc comment: the first paragraph becomes the `summary` in
/// `rpc.discover`, the rest the `description`. Helper functions belong in
/// another `impl` block.
///
/// On the main interface (the one given to [`run`]):
///
/// - `endpoints(name = Type, ...)` declares endpoint interfaces, which
///   [`listen`] serves (`x-sausage-endpoints`). Each `Type` has its own
///   `#[rpc]` impl.
/// - `grace_seconds = N` declares the grace period after an upgrade
///   (`x-sausage-grace`, PROTOCOL 3.7).
///
/// # Example
///
/// ```
/// use sausage_plugin::{Ctx, Result, rpc, schema};
///
/// /// A calculator.
/// struct Calc;
///
/// /// The params of `add`.
/// #[schema]
/// struct AddParams {
///     /// The first number.
///     a: i64,
///     /// The second number.
///     b: i64,
/// }
///
/// #[rpc(grace_seconds = 10)]
/// impl Calc {
///     /// Add two numbers.
///     fn add(&self, AddParams { a, b }: AddParams) -> Result<i64> {
///         Ok(a + b)
///     }
///
///     /// Wait a moment, then answer 42.
///     ///
///     /// Tells the caller that it is thinking.
///     async fn answer(&self, ctx: &Ctx) -> Result<u32> {
///         ctx.notify("thinking", ());
///         Ok(42)
///     }
/// }
///
/// assert_eq!(Calc.add(AddParams { a: 1, b: 2 }).unwrap(), 3);
/// ```
pub use sausage_plugin_macros::rpc;

/// Marks the method of the main `#[rpc]` impl that answers `rpc.retired
/// {"previous": "<sha256>"}` (PROTOCOL 3.7): the core calls it once the last
/// process of an older version has ended. Migrate state here, or write a
/// marker that other new processes wait for. The result goes to the
/// journal.
///
/// The method takes `&self`, optionally `ctx: &Ctx` and [`Retired`], and
/// returns `Result<T>`. It is not a method of the interface. Without it,
/// `rpc.retired` answers `null`.
///
/// # Example
///
/// ```
/// use sausage_plugin::{Result, Retired, on_retired, rpc};
///
/// /// A plugin that migrates its state.
/// struct Notes;
///
/// #[rpc]
/// impl Notes {
///     /// Count the notes.
///     fn count(&self) -> Result<u64> {
///         Ok(0)
///     }
///
///     /// Move the notes of the old format to the new one.
///     #[on_retired]
///     fn migrate(&self, Retired { previous }: Retired) -> Result<String> {
///         Ok(format!("migrated from {previous}"))
///     }
/// }
/// ```
pub use sausage_plugin_macros::on_retired;

/// For each type that a method takes or returns: adds `Serialize`,
/// `Deserialize`, `JsonSchema`, `Debug`, `Clone` and `PartialEq` (the ones
/// not derived already), and checks the schema subset of PROTOCOL 10.2.
///
/// - A struct with named fields: each field's type must be in the subset
///   ([`SchemaType`]). It can be the params of a method.
/// - An enum of unit variants: a string enum. `#[serde(rename_all = ...)]`
///   and `#[serde(rename = ...)]` work; the docs of the variants go into the
///   description.
/// - The type and each field need a doc comment.
///
/// serde attributes such as `#[serde(default)]`,
/// `#[serde(skip_serializing_if = "Option::is_none")]` and renames work as
/// usual; the schemas follow them.
///
/// `#[schema(import)]` is what generated imports use: the same derives,
/// without the doc rule.
///
/// # Example
///
/// ```
/// use sausage_plugin::schema;
///
/// /// A note.
/// #[schema]
/// struct Note {
///     /// The text.
///     text: String,
///     /// Tags, in the order they were added.
///     #[serde(default)]
///     tags: Vec<String>,
///     /// How urgent it is.
///     priority: Option<Priority>,
/// }
///
/// /// How urgent a note is.
/// #[schema]
/// #[serde(rename_all = "lowercase")]
/// enum Priority {
///     /// Soon.
///     High,
///     /// Some time.
///     Low,
/// }
///
/// let note: Note = serde_json::from_value(serde_json::json!({"text": "milk", "priority": "high"})).unwrap();
/// assert_eq!(note.priority, Some(Priority::High));
/// ```
pub use sausage_plugin_macros::schema;

/// Generates `mod <name>` from `imports/<name>.json` (the provider's
/// `rpc.discover` document, copied from
/// `/proc/core/plugins/<name>/discover.json`).
///
/// The module has one function per method, which returns a [`Call`]; the
/// provider's types with their names and docs; and one module per endpoint
/// interface with `connect(path)`. `/proc/core/plugins/<name>/client.rs`
/// shows exactly this code. The items are private to the crate, so rustc
/// warns about each method you do not use: remove those from the JSON file,
/// so that fewer changes of the provider break your plugin.
///
/// The document also goes into this plugin's `rpc.discover`
/// (`x-sausage-imports`), for the host's interface check. Cargo rebuilds the
/// plugin when the file changes.
///
/// # Example
///
/// With the documents of the examples `notes` and `www` in `imports/`:
///
/// ```no_run
/// sausage_plugin::import!("notes"); // imports/notes.json
/// sausage_plugin::import!("www"); // imports/www.json, with its endpoint "control"
///
/// /// Add a note, then start a web server and return its number of answered requests.
/// async fn example() -> sausage_plugin::Result<u64> {
///     let added = notes::add(notes::AddParams { text: "milk".into() }).await?;
///     eprintln!("{} notes", added.count); // stderr goes to the journal
///     let pid = www::start(www::StartParams { port: 8080 }).detach().await?;
///     let control = www::control::connect(&format!("/proc/{pid}/control")).await?;
///     control.stats().await
/// }
/// ```
pub use sausage_plugin_macros::import;

/// An async test, like `#[tokio::test]`: the body runs on the plugin
/// runtime, so calls, locks and [`background`] work. A plain `#[test]` also
/// works for code that does not await.
///
/// Under the Sausage test runner, `core.*` calls go to the runner. Without
/// it (`SAUSAGE_PID` is not set), the test answers `core.lock`,
/// `core.unlock`, `core.notify` and `core.log` itself, and a call to a
/// plugin fails: a test has no other plugins.
///
/// # Example
///
/// ```
/// #[sausage_plugin::test]
/// async fn locks_can_be_taken_twice_in_a_row() {
///     drop(sausage_plugin::lock("/state/x").await.unwrap());
///     let again = sausage_plugin::lock("/state/x").try_now().await.unwrap();
///     assert!(again.is_some());
/// }
/// ```
pub use sausage_plugin_macros::test;

pub use schemars;
pub use serde;
pub use serde_json;
pub use wstd;

/// What the macros use. Not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use crate::discover::{Describer, ImportDoc, document, string_enum_schema};
    pub use crate::interface::{EndpointInfo, LocalFuture, PluginInfo};
    pub use crate::runtime::block_on_test;
    pub use inventory;
    pub use serde_json::Value;
    pub use std::rc::Rc;

    use crate::error::{Error, Result};
    use crate::interface::{MethodResult, ParamsStruct, SchemaType};

    /// Reads the params of `method`.
    pub fn params<P: ParamsStruct>(method: &str, params: Value) -> Result<P> {
        serde_json::from_value(params).map_err(|e| Error::invalid_params(format!("invalid params of `{method}`: {e}")))
    }

    /// The answer of a method.
    pub fn result<R: MethodResult>(result: R) -> Result<Value> {
        result.into_value()
    }

    pub fn assert_schema_type<T: SchemaType + ?Sized>() {}
}

/// Registers an imported document for `rpc.discover` (used by the code that
/// `import!` generates).
#[doc(hidden)]
#[macro_export]
macro_rules! __register_import {
    ($name:literal) => {
        $crate::__private::inventory::submit! {
            $crate::__private::ImportDoc {
                name: $name,
                json: ::core::include_str!(::core::concat!(::core::env!("CARGO_MANIFEST_DIR"), "/imports/", $name, ".json")),
            }
        }
    };
}
