//! [`Ctx`]: what a method knows about the call it answers.

use crate::peer::Peer;
use serde::Serialize;
use serde_json::{Value, json};
use std::cell::{Cell, RefCell};
use std::rc::Rc;

/// The context of one call: an optional second argument of a method.
///
/// - [`Ctx::notify`] tells the caller about progress (`core.notify`,
///   PROTOCOL 3.5). On an endpoint connection, the notification goes over
///   the connection.
/// - [`Ctx::exit_after_response`] ends the process once the response is
///   written.
///
/// A method takes it as `ctx: &Ctx`, before or after its params. In a test,
/// make one with [`Ctx::new`]: it keeps what the method sent.
///
/// # Example
///
/// ```
/// use sausage_plugin::{Ctx, Result, rpc, schema};
///
/// /// A plugin that counts.
/// struct Counter;
///
/// /// The params of `count`.
/// #[schema]
/// struct CountParams {
///     /// Count from 1 to this number.
///     to: u32,
/// }
///
/// #[rpc]
/// impl Counter {
///     /// Count, and tell the caller about each number.
///     fn count(&self, ctx: &Ctx, CountParams { to }: CountParams) -> Result<u32> {
///         for n in 1..=to {
///             ctx.notify("number", serde_json::json!({"n": n}));
///         }
///         Ok(to)
///     }
/// }
///
/// let ctx = Ctx::new();
/// assert_eq!(Counter.count(&ctx, CountParams { to: 3 }).unwrap(), 3);
/// assert_eq!(ctx.notifications().len(), 3);
/// assert_eq!(ctx.notifications()[2], ("number".to_owned(), serde_json::json!({"n": 3})));
/// ```
#[derive(Clone)]
pub struct Ctx {
    inner: Rc<Inner>,
}

struct Inner {
    /// The link the call came on, and the request ID (`None` for a notification).
    call: Option<(Rc<Peer>, Option<Value>)>,
    exit: Cell<bool>,
    sent: RefCell<Vec<(String, Value)>>,
}

impl Ctx {
    /// A context outside a call, for tests: notifications are kept (see
    /// [`Ctx::notifications`]) and sent nowhere.
    ///
    /// ```
    /// let ctx = sausage_plugin::Ctx::new();
    /// ctx.notify("progress", serde_json::json!({"percent": 50}));
    /// assert_eq!(ctx.notifications()[0].0, "progress");
    /// ```
    pub fn new() -> Ctx {
        Ctx { inner: Rc::new(Inner { call: None, exit: Cell::new(false), sent: RefCell::new(Vec::new()) }) }
    }

    pub(crate) fn for_call(peer: Rc<Peer>, id: Option<Value>) -> Ctx {
        Ctx { inner: Rc::new(Inner { call: Some((peer, id)), exit: Cell::new(false), sent: RefCell::new(Vec::new()) }) }
    }

    /// Tells the caller about progress: the notification `core.notify
    /// {"name", "params"}`, which the core gives to the caller with the ID
    /// of its request (PROTOCOL 3.5). After the call has been answered, the
    /// core drops it.
    ///
    /// `params` is any value that serializes to JSON; a value that does not
    /// is sent as `null`.
    ///
    /// ```
    /// let ctx = sausage_plugin::Ctx::new();
    /// ctx.notify("text", "half done");
    /// assert_eq!(ctx.notifications()[0].1, "half done");
    /// ```
    pub fn notify(&self, name: &str, params: impl Serialize) {
        let params = serde_json::to_value(params).unwrap_or(Value::Null);
        let Some((peer, id)) = &self.inner.call else {
            self.inner.sent.borrow_mut().push((name.to_owned(), params));
            return;
        };
        if peer.is_stdio() {
            peer.notify("core.notify", json!({"name": name, "params": params}));
        } else if let Some(id) = id {
            peer.notify("core.notify", json!({"call": id, "name": name, "params": params}));
        }
    }

    /// Ends the process once the response to this call has been written,
    /// even if background tasks or endpoints still run. Use it for a `stop`
    /// method of a server.
    ///
    /// ```
    /// let ctx = sausage_plugin::Ctx::new();
    /// ctx.exit_after_response();
    /// assert!(ctx.exits_after_response());
    /// ```
    pub fn exit_after_response(&self) {
        self.inner.exit.set(true);
    }

    /// Whether [`Ctx::exit_after_response`] was called.
    ///
    /// ```
    /// assert!(!sausage_plugin::Ctx::new().exits_after_response());
    /// ```
    pub fn exits_after_response(&self) -> bool {
        self.inner.exit.get()
    }

    /// The notifications sent through a context made with [`Ctx::new`], oldest
    /// first. (The context of a real call sends them and keeps none.)
    ///
    /// ```
    /// let ctx = sausage_plugin::Ctx::new();
    /// assert!(ctx.notifications().is_empty());
    /// ```
    pub fn notifications(&self) -> Vec<(String, Value)> {
        self.inner.sent.borrow().clone()
    }
}

impl Default for Ctx {
    fn default() -> Self {
        Ctx::new()
    }
}

impl std::fmt::Debug for Ctx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let id = self.inner.call.as_ref().and_then(|(_, id)| id.clone());
        f.debug_struct("Ctx").field("call", &id).field("exit_after_response", &self.inner.exit.get()).finish()
    }
}
