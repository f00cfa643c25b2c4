//! [`call`] and [`Call`]: calls to plugins, to the core, and over endpoint
//! connections.

use crate::error::{Error, Result};
use crate::peer::{NotifyFn, Peer};
use crate::runtime;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::future::{Future, IntoFuture};
use std::marker::PhantomData;
use std::pin::Pin;
use std::rc::Rc;
use std::time::Duration;

/// Calls `method` with `params`: an untyped call. Await it for the result,
/// a JSON value.
///
/// `method` is `<plugin>.<method>` (a new process of the plugin answers it)
/// or `core.<method>` (PROTOCOL 3.2). `params` is anything that serializes to
/// a JSON object, or `()` for none. Before awaiting, [`Call::detach`] makes
/// the callee independent of this process, [`Call::on_notify`] receives its
/// progress notifications, and [`Call::returning`] gives a typed result.
///
/// A call to an imported plugin is easier through its generated module
/// ([`import!`](crate::import)), which has the types.
///
/// # Example
///
/// ```no_run
/// use sausage_plugin::{Result, call};
/// use serde_json::json;
///
/// async fn example() -> Result<()> {
///     let added = call("notes.add", json!({"text": "milk"})).await?;
///     eprintln!("{} notes", added["count"]);
///     let log = call("core.log", json!({"plugin": "notes", "limit": 5})).await?;
///     eprintln!("{log}");
///     Ok(())
/// }
/// ```
pub fn call(method: &str, params: impl Serialize) -> Call<Value> {
    Call::build(None, method, params)
}

/// The longest timeout of a call: what a JavaScript timer can wait (2^31 - 1 ms).
const MAX_TIMEOUT_MS: u64 = 2_147_483_647;

/// A call that has not been sent yet: set its options, then `.await` it.
///
/// Awaiting sends the request and waits for the answer: `Ok` with the result
/// (converted to `R`), or `Err` with the error object of the answer,
/// unchanged. If the process is stopping (stdin closed), the call fails at
/// once. A `Call` that is never awaited sends nothing.
///
/// # Example
///
/// ```no_run
/// use sausage_plugin::{Result, call};
/// use serde_json::json;
///
/// async fn start_server() -> Result<String> {
///     // www.start returns the process ID of the server; detached, the server
///     // does not end with this process.
///     call("www.start", json!({"port": 8080})).detach().returning::<String>().await
/// }
/// ```
#[must_use = "a call is sent when it is awaited"]
pub struct Call<R = Value> {
    via: Option<Rc<Peer>>,
    method: String,
    params: Result<Value>,
    detach: bool,
    timeout: Option<Duration>,
    on_notify: Option<NotifyFn>,
    result: PhantomData<fn() -> R>,
}

impl<R> Call<R> {
    pub(crate) fn build(via: Option<Rc<Peer>>, method: &str, params: impl Serialize) -> Self {
        let params = match serde_json::to_value(params) {
            Ok(Value::Null) => Ok(json!({})),
            Ok(object @ Value::Object(_)) => Ok(object),
            Ok(other) => Err(Error::invalid_params(format!(
                "the params of {method} must be a JSON object (params are by name), not {other}"
            ))),
            Err(e) => Err(Error::invalid_params(format!("the params of {method} do not serialize: {e}"))),
        };
        Call { via, method: method.to_owned(), params, detach: false, timeout: None, on_notify: None, result: PhantomData }
    }

    /// Starts the callee as a detached process: it does not end when this
    /// process ends, only by `core.stop`, `core.kill`, an upgrade, or the end
    /// of the host (PROTOCOL 3.4). The call still returns the callee's
    /// result. Sent as `core.call {"method", "params", "detach": true}`.
    ///
    /// Only for calls through the core, not over an endpoint connection.
    ///
    /// ```no_run
    /// # async fn f() -> sausage_plugin::Result<()> {
    /// let pid = sausage_plugin::call("www.start", serde_json::json!({"port": 8080})).detach().await?;
    /// # Ok(()) }
    /// ```
    pub fn detach(mut self) -> Self {
        self.detach = true;
        self
    }

    /// Bounds the call: when the callee has not answered within `limit`, the
    /// call fails with [`Error::DEADLINE`] (-32006), whatever the callee does.
    /// Through the core (PROTOCOL 3.4) the core answers for the callee and
    /// stops it (sent as `core.call {"method", "params", "timeout_ms"}`);
    /// over an endpoint connection the call is given up here and the other
    /// side is not told. A limit under a millisecond counts as one; one past
    /// about 24.8 days (2^31 - 1 ms) is refused with -32602.
    ///
    /// ```no_run
    /// # async fn f() -> sausage_plugin::Result<()> {
    /// use std::time::Duration;
    /// let built = sausage_plugin::call("cargo.build", serde_json::json!({"plugin": "notes"}))
    ///     .timeout(Duration::from_secs(600))
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = Some(limit);
        self
    }

    /// Receives the callee's progress notifications (`core.notify`, PROTOCOL
    /// 3.5): `f` gets the name and the params of each, until the answer
    /// arrives.
    ///
    /// ```no_run
    /// # async fn f() -> sausage_plugin::Result<()> {
    /// let answer = sausage_plugin::call("agent.chat", serde_json::json!({"text": "hi"}))
    ///     .on_notify(|name, params| eprintln!("{name}: {params}"))
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn on_notify(mut self, f: impl FnMut(&str, Value) + 'static) -> Self {
        self.on_notify = Some(Box::new(f));
        self
    }

    /// The same call with the result converted to `T` (with serde). A result
    /// that does not fit `T` is an error.
    ///
    /// ```no_run
    /// # async fn f() -> sausage_plugin::Result<()> {
    /// let notes: Vec<String> = sausage_plugin::call("notes.list", ()).returning().await?;
    /// # Ok(()) }
    /// ```
    pub fn returning<T>(self) -> Call<T> {
        Call {
            via: self.via,
            method: self.method,
            params: self.params,
            detach: self.detach,
            timeout: self.timeout,
            on_notify: self.on_notify,
            result: PhantomData,
        }
    }

    /// The method name.
    ///
    /// ```
    /// assert_eq!(sausage_plugin::call("notes.list", ()).method(), "notes.list");
    /// ```
    pub fn method(&self) -> &str {
        &self.method
    }

    async fn send(self) -> Result<Value> {
        let params = self.params?;
        let through_core = self.via.is_none();
        let peer = match self.via {
            Some(peer) => {
                if self.detach {
                    return Err(Error::invalid_params(format!(
                        "{}: detach applies to calls through the core, not over an endpoint connection",
                        self.method
                    )));
                }
                peer
            }
            None => runtime::core()?,
        };
        let timeout_ms = match self.timeout {
            None => None,
            Some(limit) => match u64::try_from(limit.as_millis()) {
                Ok(ms) if ms <= MAX_TIMEOUT_MS => Some(ms.max(1)),
                _ => {
                    return Err(Error::invalid_params(format!(
                        "{}: a timeout of {limit:?} is past the longest, {MAX_TIMEOUT_MS} ms (about 24.8 days)",
                        self.method
                    )));
                }
            },
        };
        if through_core && (self.detach || timeout_ms.is_some()) {
            let mut params = json!({"method": self.method, "params": params});
            if self.detach {
                params["detach"] = json!(true);
            }
            if let Some(ms) = timeout_ms {
                params["timeout_ms"] = json!(ms);
            }
            return peer.request("core.call", params, self.on_notify, None).await;
        }
        let answer = peer.request(&self.method, params, self.on_notify, None);
        let Some(ms) = timeout_ms else { return answer.await };
        // over an endpoint connection nobody else keeps the deadline
        let expired = async {
            wstd::task::sleep(wstd::time::Duration::from_millis(ms)).await;
            Err(Error::with_code(
                Error::DEADLINE,
                format!("{}: no answer within its timeout of {ms} ms; the call was given up", self.method),
            )
            .with_data(json!({"timeout_ms": ms})))
        };
        futures_lite::future::or(answer, expired).await
    }
}

impl<R: DeserializeOwned + 'static> IntoFuture for Call<R> {
    type Output = Result<R>;
    type IntoFuture = Pin<Box<dyn Future<Output = Result<R>>>>;

    fn into_future(self) -> Self::IntoFuture {
        let method = self.method.clone();
        Box::pin(async move {
            let value = self.send().await?;
            serde_json::from_value(value).map_err(|e| {
                Error::new(format!("the result of {method} does not fit {}: {e}", std::any::type_name::<R>()))
            })
        })
    }
}

impl<R> std::fmt::Debug for Call<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Call")
            .field("method", &self.method)
            .field("params", &self.params)
            .field("detach", &self.detach)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params_must_be_an_object() {
        assert_eq!(call("a.b", ()).params.unwrap(), json!({}));
        assert_eq!(call("a.b", json!({"x": 1})).params.unwrap(), json!({"x": 1}));
        assert_eq!(call("a.b", 5).params.unwrap_err().code(), Error::INVALID_PARAMS);
    }
}
