//! [`Error`] and [`Result`]: a JSON-RPC error object that `?` can make from
//! any error.

use serde::Serialize;
use serde_json::{Value, json};
use std::fmt;

/// The result of a method, a call, or an SDK function.
///
/// # Example
///
/// ```
/// use sausage_plugin::{Error, Result};
///
/// fn half(n: u64) -> Result<u64> {
///     if n % 2 == 1 {
///         return Err(Error::invalid_params(format!("{n} is odd")));
///     }
///     Ok(n / 2)
/// }
/// assert_eq!(half(4).unwrap(), 2);
/// assert_eq!(half(3).unwrap_err().code(), -32602);
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A JSON-RPC error: a code, a message, and optional data.
///
/// A method that returns `Err(error)` answers with this error object. A call
/// that gets an error answer returns it unchanged, so an error passes through
/// a chain of plugins with its code.
///
/// `?` converts any [`std::error::Error`] (for example [`std::io::Error`] or
/// [`serde_json::Error`]) into an `Error` with the code [`Error::FAILED`] and
/// the error's text as the message. (So `Error` itself does not implement
/// `std::error::Error`, like `anyhow::Error`.)
///
/// # Example
///
/// ```
/// use sausage_plugin::Error;
///
/// let e = Error::new("the note is too long").with_data(serde_json::json!({"max": 100}));
/// assert_eq!(e.code(), Error::FAILED);
/// assert_eq!(e.message(), "the note is too long");
/// assert_eq!(e.data().unwrap()["max"], 100);
///
/// let io = std::fs::read("/no/such/file").unwrap_err();
/// let e: Error = io.into();
/// assert_eq!(e.code(), Error::FAILED);
/// ```
#[derive(Clone, PartialEq)]
pub struct Error {
    code: i64,
    message: String,
    data: Option<Value>,
    /// Made by this process's runtime because the core closed stdin: a typed
    /// fact that no text of a message, a file or a callee's answer can set.
    stopping: bool,
}

impl Error {
    /// The code of a method that failed (the JSON-RPC "server error" code):
    /// the code of [`Error::new`], and of each error that `?` converts.
    ///
    /// ```
    /// use sausage_plugin::Error;
    ///
    /// assert_eq!(Error::new("the disk is full").code(), Error::FAILED);
    /// let io: Error = std::io::Error::other("the disk is full").into();
    /// assert_eq!(io.code(), Error::FAILED);
    /// ```
    pub const FAILED: i64 = -32000;
    /// The params do not fit the method (JSON-RPC). The SDK answers it when
    /// the params do not deserialize; a method returns it with
    /// [`Error::invalid_params`] when a value is wrong.
    ///
    /// ```
    /// use sausage_plugin::Error;
    ///
    /// let e = Error::invalid_params("`port` must not be 0");
    /// assert_eq!(e.code(), Error::INVALID_PARAMS);
    /// ```
    pub const INVALID_PARAMS: i64 = -32602;
    /// The method does not exist (JSON-RPC): for example a method that an
    /// older version of the provider does not have yet.
    ///
    /// ```
    /// use sausage_plugin::{Error, Result, call};
    ///
    /// /// The number of notes, also from a version of notes without `count`.
    /// async fn count() -> Result<usize> {
    ///     match call("notes.count", ()).returning::<usize>().await {
    ///         Err(e) if e.code() == Error::METHOD_NOT_FOUND => {
    ///             Ok(call("notes.list", ()).returning::<Vec<String>>().await?.len())
    ///         }
    ///         other => other,
    ///     }
    /// }
    /// ```
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// There is no such plugin (PROTOCOL 3.9). A test gets it for every call
    /// to a plugin: a test has no other plugins.
    ///
    /// ```
    /// use sausage_plugin::{Error, Result, call};
    /// use serde_json::json;
    ///
    /// /// Sends a message to the mail plugin, if the world has one.
    /// async fn mail(text: &str) -> Result<bool> {
    ///     match call("mail.send", json!({"text": text})).await {
    ///         Ok(_) => Ok(true),
    ///         Err(e) if e.code() == Error::NO_SUCH_PLUGIN => Ok(false),
    ///         Err(e) => Err(e),
    ///     }
    /// }
    /// ```
    pub const NO_SUCH_PLUGIN: i64 = -32001;
    /// The process ended without an answer (PROTOCOL 3.9): the callee
    /// crashed, was stopped, or returned from `main` without answering.
    ///
    /// ```
    /// use sausage_plugin::{Error, Result, call};
    /// use serde_json::{Value, json};
    ///
    /// /// Renders a page; tries a second time if the renderer crashed.
    /// async fn render(page: &str) -> Result<Value> {
    ///     let params = json!({"page": page});
    ///     match call("render.page", &params).await {
    ///         Err(e) if e.code() == Error::PROCESS_ENDED => call("render.page", &params).await,
    ///         other => other,
    ///     }
    /// }
    /// ```
    pub const PROCESS_ENDED: i64 = -32002;
    /// The call's deadline passed before the callee answered (PROTOCOL 3.4):
    /// the core answered for it and stopped it. See [`Call::timeout`](crate::Call::timeout).
    ///
    /// ```
    /// use sausage_plugin::{Error, Result, call};
    /// use std::time::Duration;
    ///
    /// /// The weather, or `None` when the weather plugin takes longer than 2 s.
    /// async fn weather() -> Result<Option<String>> {
    ///     match call("weather.now", ()).timeout(Duration::from_secs(2)).returning::<String>().await {
    ///         Ok(text) => Ok(Some(text)),
    ///         Err(e) if e.code() == Error::DEADLINE => Ok(None),
    ///         Err(e) => Err(e),
    ///     }
    /// }
    /// ```
    pub const DEADLINE: i64 = -32006;

    /// An error with the code [`Error::FAILED`].
    ///
    /// ```
    /// let e = sausage_plugin::Error::new("no such note");
    /// assert_eq!(e.to_string(), "no such note");
    /// ```
    pub fn new(message: impl fmt::Display) -> Self {
        Error { code: Self::FAILED, message: message.to_string(), data: None, stopping: false }
    }

    /// An error with its own code. Application codes should be outside
    /// -32768 to -32000, which JSON-RPC reserves.
    ///
    /// ```
    /// let e = sausage_plugin::Error::with_code(404, "no such page");
    /// assert_eq!(e.code(), 404);
    /// ```
    pub fn with_code(code: i64, message: impl fmt::Display) -> Self {
        Error { code, message: message.to_string(), data: None, stopping: false }
    }

    /// An error with the code [`Error::INVALID_PARAMS`] (-32602).
    ///
    /// ```
    /// let e = sausage_plugin::Error::invalid_params("`port` must not be 0");
    /// assert_eq!(e.code(), -32602);
    /// ```
    pub fn invalid_params(message: impl fmt::Display) -> Self {
        Self::with_code(Self::INVALID_PARAMS, message)
    }

    /// Adds `data` to the error object (any value that serializes to JSON).
    ///
    /// ```
    /// let e = sausage_plugin::Error::new("busy").with_data(serde_json::json!({"retry_after": 5}));
    /// assert_eq!(e.data().unwrap()["retry_after"], 5);
    /// ```
    pub fn with_data(mut self, data: impl Serialize) -> Self {
        self.data = serde_json::to_value(data).ok();
        self
    }

    /// The code.
    ///
    /// ```
    /// assert_eq!(sausage_plugin::Error::new("x").code(), -32000);
    /// ```
    pub fn code(&self) -> i64 {
        self.code
    }

    /// The message.
    ///
    /// ```
    /// assert_eq!(sausage_plugin::Error::new("x").message(), "x");
    /// ```
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The data, if there is any.
    ///
    /// ```
    /// assert!(sausage_plugin::Error::new("x").data().is_none());
    /// ```
    pub fn data(&self) -> Option<&Value> {
        self.data.as_ref()
    }

    /// The error object of a JSON-RPC response.
    pub(crate) fn to_json(&self) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(data) = &self.data {
            error["data"] = data.clone();
        }
        error
    }

    /// Reads the error object of a JSON-RPC response.
    pub(crate) fn from_json(error: &Value) -> Self {
        Error {
            code: error.get("code").and_then(Value::as_i64).unwrap_or(Self::FAILED),
            message: error.get("message").and_then(Value::as_str).unwrap_or("an error without a message").to_owned(),
            data: error.get("data").cloned(),
            // an answer is text from another process: it can never say that this one stops
            stopping: false,
        }
    }

    /// Whether this process's own runtime made the error because the core
    /// closed stdin (PROTOCOL 3.6): the process is stopping, and no answer to
    /// any call can arrive. Decide on this, never on the message: an answer,
    /// a file or a log can contain any text, and an error that came from
    /// another process (or through JSON) is never `stopping`.
    ///
    /// ```
    /// use sausage_plugin::Error;
    ///
    /// let look_alike = Error::new("the process is stopping (stdin closed): no answer can arrive");
    /// assert!(!look_alike.is_stopping());
    /// ```
    pub fn is_stopping(&self) -> bool {
        self.stopping
    }

    /// The error of a call that cannot be answered because stdin has closed.
    pub(crate) fn stopping() -> Self {
        Error { stopping: true, ..Error::new("the process is stopping (stdin closed): no answer can arrive") }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Error({}): {}", self.code, self.message)?;
        if let Some(data) = &self.data {
            write!(f, " {data}")?;
        }
        Ok(())
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for Error {
    fn from(error: E) -> Self {
        let mut message = error.to_string();
        let mut source = error.source();
        while let Some(cause) = source {
            let text = cause.to_string();
            if !message.contains(&text) {
                message.push_str(": ");
                message.push_str(&text);
            }
            source = cause.source();
        }
        Error::new(message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_round_trip() {
        let e = Error::with_code(7, "seven").with_data(json!([1, 2]));
        let back = Error::from_json(&e.to_json());
        assert_eq!(back, e);
        assert_eq!(format!("{e:?}"), "Error(7): seven [1,2]");
    }

    #[test]
    fn from_std_errors() {
        let e: Error = serde_json::from_str::<u8>("x").unwrap_err().into();
        assert_eq!(e.code(), Error::FAILED);
        assert!(e.message().contains("expected value"));
    }

    #[test]
    fn stopping_is_a_fact_of_this_process_not_a_text() {
        let stop = Error::stopping();
        assert!(stop.is_stopping());
        // the same words through JSON (a callee's answer) or from a file are data, not a stop
        assert!(!Error::from_json(&stop.to_json()).is_stopping());
        assert!(!Error::new(stop.message()).is_stopping());
        assert!(!Error::from(std::io::Error::other(stop.message().to_owned())).is_stopping());
    }

    #[test]
    fn missing_fields_of_a_foreign_error() {
        let e = Error::from_json(&json!({}));
        assert_eq!(e.code(), Error::FAILED);
        assert_eq!(e.message(), "an error without a message");
    }
}
