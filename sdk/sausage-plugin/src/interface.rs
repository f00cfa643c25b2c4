//! The traits that `#[rpc]` implements, and the checks of the compile-time
//! rules.

use crate::ctx::Ctx;
use crate::discover::Describer;
use crate::error::{Error, Result};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;

/// A boxed future of this process (not `Send`: WASI has one thread).
pub type LocalFuture<T> = Pin<Box<dyn Future<Output = T>>>;

/// An interface: a type with an `#[rpc]` impl. [`run`](crate::run) serves
/// the main interface on stdin and stdout, and [`listen`](crate::listen)
/// serves an [`Endpoint`] interface on a TCP port.
///
/// Do not implement it by hand; write `#[rpc]` on an `impl` block. Its items
/// are hidden: they are the interface between the macro and the runtime.
///
/// # Example
///
/// ```
/// use sausage_plugin::{Interface, Result, rpc};
///
/// /// A plugin with one method.
/// struct Clock;
///
/// #[rpc]
/// impl Clock {
///     /// The seconds since 1970.
///     fn now(&self) -> Result<u64> {
///         Ok(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs())
///     }
/// }
///
/// fn serve<T: Interface>(_: T) {}
/// serve(Clock);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an interface",
    label = "this type has no #[rpc] impl",
    note = "write #[rpc] on an `impl {Self}` block with the methods"
)]
pub trait Interface: 'static {
    #[doc(hidden)]
    const __METHODS: &'static [&'static str];
    #[doc(hidden)]
    const __DOC: &'static str;
    #[doc(hidden)]
    fn __dispatch(self: Rc<Self>, method: &str, params: Value, ctx: Ctx) -> Option<LocalFuture<Result<Value>>>;
    #[doc(hidden)]
    fn __describe(describer: &mut Describer) -> Vec<Value>;
    #[doc(hidden)]
    fn __plugin() -> PluginInfo;
}

/// An endpoint interface of this plugin: declared on the main interface with
/// `#[rpc(endpoints(name = Type))]`, which implements this trait.
/// [`listen`](crate::listen) accepts only such types.
///
/// # Example
///
/// ```
/// use sausage_plugin::{Endpoint, Result, rpc};
///
/// /// The main interface.
/// struct Www;
///
/// #[rpc(endpoints(control = Control))]
/// impl Www {
///     /// Say hello.
///     fn hello(&self) -> Result<()> {
///         Ok(())
///     }
/// }
///
/// /// The control endpoint.
/// struct Control;
///
/// #[rpc]
/// impl Control {
///     /// Do nothing.
///     fn nothing(&self) -> Result<()> {
///         Ok(())
///     }
/// }
///
/// assert_eq!(Control::NAME, "control");
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an endpoint interface of this plugin",
    label = "not declared as an endpoint",
    note = "declare it on the main interface: #[rpc(endpoints(name = {Self}))]"
)]
pub trait Endpoint: Interface {
    /// The name of the interface in `x-sausage-endpoints` and in endpoint
    /// files: the `name` of `endpoints(name = Type)`.
    ///
    /// ```
    /// use sausage_plugin::{Endpoint, Result, rpc};
    ///
    /// /// A web server.
    /// struct Www;
    ///
    /// #[rpc(endpoints(control = Control))]
    /// impl Www {
    ///     /// Say hello.
    ///     fn hello(&self) -> Result<()> {
    ///         Ok(())
    ///     }
    /// }
    ///
    /// /// The control endpoint of a running server.
    /// struct Control;
    ///
    /// #[rpc]
    /// impl Control {
    ///     /// The number of answered requests.
    ///     fn stats(&self) -> Result<u64> {
    ///         Ok(0)
    ///     }
    /// }
    ///
    /// /// Where a process serves the endpoint `T` when it listens at `/self/<name>`.
    /// fn endpoint_file<T: Endpoint>(pid: &str) -> String {
    ///     format!("/proc/{pid}/{}", T::NAME)
    /// }
    ///
    /// assert_eq!(endpoint_file::<Control>("www-1"), "/proc/www-1/control");
    /// ```
    const NAME: &'static str;
}

/// What the main interface says about the plugin.
#[doc(hidden)]
pub struct PluginInfo {
    pub name: &'static str,
    pub version: &'static str,
    pub description: &'static str,
    pub grace_seconds: Option<u64>,
    pub endpoints: Vec<EndpointInfo>,
}

/// One declared endpoint interface.
#[doc(hidden)]
pub struct EndpointInfo {
    pub name: &'static str,
    pub description: &'static str,
    pub describe: fn(&mut Describer) -> Vec<Value>,
}

impl EndpointInfo {
    pub fn of<T: Endpoint>() -> Self {
        EndpointInfo { name: T::NAME, description: T::__DOC, describe: T::__describe }
    }
}

/// The object-safe side of [`Interface`], for the runtime.
pub(crate) trait Handler {
    fn dispatch(self: Rc<Self>, method: &str, params: Value, ctx: Ctx) -> Option<LocalFuture<Result<Value>>>;
    fn method_names(&self) -> &'static [&'static str];
}

impl<T: Interface> Handler for T {
    fn dispatch(self: Rc<Self>, method: &str, params: Value, ctx: Ctx) -> Option<LocalFuture<Result<Value>>> {
        T::__dispatch(self, method, params, ctx)
    }

    fn method_names(&self) -> &'static [&'static str] {
        T::__METHODS
    }
}

/// A type of the schema subset of PROTOCOL section 10.2: `bool`, the integer
/// types up to 64 bits (`u8`, `u16`, `u32`, `u64`, `usize`, `i8`, `i16`,
/// `i32`, `i64`, `isize`), `f32`, `f64`, `String`, `PathBuf` (a string in
/// JSON), `()`, `Vec<T>`, `Option<T>`, `Box<T>`, and the types with
/// `#[schema]` (structs with named fields, and enums of unit variants, which
/// are string enums).
///
/// `#[schema]` checks each field against it, and `#[rpc]` each result. Maps,
/// tuples, arrays, `char`, `u128` and `serde_json::Value` are outside: the
/// host's interface check could not decide about them.
///
/// # Example
///
/// ```
/// fn in_subset<T: sausage_plugin::SchemaType>() {}
/// in_subset::<Vec<Option<String>>>();
/// in_subset::<std::path::PathBuf>();
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is outside the schema subset of PROTOCOL 10.2",
    label = "not in the schema subset",
    note = "use bool, an integer type up to 64 bits, f32, f64, String, PathBuf, (), Vec<T>, Option<T>, Box<T>, or a #[schema] struct with named fields or #[schema] enum of unit variants"
)]
pub trait SchemaType: JsonSchema {}

macro_rules! schema_types {
    ($($t:ty),*) => { $(impl SchemaType for $t {})* };
}
schema_types!(bool, u8, u16, u32, u64, usize, i8, i16, i32, i64, isize, f32, f64, String, std::path::PathBuf, ());
impl<T: SchemaType> SchemaType for Vec<T> {}
impl<T: SchemaType> SchemaType for Option<T> {}
impl<T: SchemaType> SchemaType for Box<T> {}

/// A struct whose fields are the params of a method: `#[schema]` implements
/// it for structs with named fields.
///
/// # Example
///
/// ```
/// /// The params of `add`.
/// #[sausage_plugin::schema]
/// struct AddParams {
///     /// The text.
///     text: String,
/// }
///
/// fn params<P: sausage_plugin::ParamsStruct>() {}
/// params::<AddParams>();
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a params struct",
    label = "not a #[schema] struct with named fields",
    note = "the params of a method are one #[schema] struct with named fields: its fields are the params by name"
)]
pub trait ParamsStruct: SchemaType + DeserializeOwned {}

/// What a method of an `#[rpc]` impl returns: `Result<T>` (or `Result<T,
/// E>` with an `E` that converts into [`Error`]), where `T` is in the schema
/// subset.
///
/// # Example
///
/// ```
/// use sausage_plugin::MethodResult;
///
/// let answer: sausage_plugin::Result<Vec<u32>> = Ok(vec![1, 2]);
/// assert_eq!(answer.into_value().unwrap(), serde_json::json!([1, 2]));
/// ```
#[diagnostic::on_unimplemented(
    message = "a method of #[rpc] returns `Result<T>`, not `{Self}`",
    label = "not a `Result` of a type in the schema subset",
    note = "return sausage_plugin::Result<T>, where T is a #[schema] type or another type of the schema subset, for example Result<()> or Result<Vec<String>>"
)]
pub trait MethodResult {
    /// The type of a successful result: its schema is the `result` of the
    /// method in `rpc.discover`.
    ///
    /// ```
    /// use sausage_plugin::{MethodResult, schemars};
    ///
    /// /// The JSON Schema of what a method with the return type `R` answers.
    /// fn result_schema<R: MethodResult>() -> serde_json::Value {
    ///     schemars::schema_for!(R::Ok).to_value()
    /// }
    ///
    /// assert_eq!(result_schema::<sausage_plugin::Result<Vec<String>>>()["type"], "array");
    /// ```
    type Ok: SchemaType + Serialize;
    /// The result as JSON, or the error: what the answer to the call
    /// carries.
    ///
    /// ```
    /// use sausage_plugin::{Error, MethodResult, Result};
    ///
    /// let added: Result<u32> = Ok(3);
    /// assert_eq!(added.into_value().unwrap(), serde_json::json!(3));
    ///
    /// let failed: Result<u32> = Err(Error::new("the list is full"));
    /// assert_eq!(failed.into_value().unwrap_err().message(), "the list is full");
    /// ```
    fn into_value(self) -> Result<Value>;
}

impl<T: SchemaType + Serialize, E: Into<Error>> MethodResult for std::result::Result<T, E> {
    type Ok = T;

    fn into_value(self) -> Result<Value> {
        match self {
            Ok(value) => serde_json::to_value(value)
                .map_err(|e| Error::new(format!("the result does not serialize to JSON: {e}"))),
            Err(error) => Err(error.into()),
        }
    }
}

/// The params of `rpc.retired` (PROTOCOL 3.7): the hash of the version that
/// has retired. The `#[on_retired]` method may take them.
///
/// # Example
///
/// ```
/// let retired: sausage_plugin::Retired = serde_json::from_value(serde_json::json!({"previous": "ab12"})).unwrap();
/// assert_eq!(retired.previous, "ab12");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Retired {
    /// The sha256 of the older `plugin.wasm`, in hex.
    pub previous: String,
}

impl SchemaType for Retired {}
impl ParamsStruct for Retired {}
