//! One JSON-RPC link: stdin and stdout (the core), an endpoint connection,
//! or the in-process core of a test. A peer keeps the calls in flight, routes
//! responses and `core.notify` notifications to them, and serves requests
//! with the interface it was given.

use crate::ctx::Ctx;
use crate::error::{Error, Result};
use crate::interface::Handler;
use crate::local::LocalCore;
use crate::runtime;
use crate::signal::Signal;
use futures_channel::oneshot;
use serde_json::{Value, json};
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::io::Write;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

/// Called with the name and params of each `core.notify` about a call.
pub(crate) type NotifyFn = Box<dyn FnMut(&str, Value)>;
/// Called with the answer of a call whose caller stopped waiting.
pub(crate) type AbandonFn = Box<dyn FnOnce(Result<Value>)>;

/// Where the messages of a peer go.
pub(crate) enum Link {
    /// stdout (and stdin, read by the runtime): the core.
    Stdio,
    /// An endpoint connection; a task writes the queued lines.
    Tcp(Rc<Outbox>),
    /// The in-process core of a test without a runner.
    Local(Rc<LocalCore>),
}

/// What a peer serves: the interface that answers its requests.
pub(crate) struct Server {
    pub(crate) handler: Rc<dyn Handler>,
    /// The endpoint interface name (answers `rpc.endpoint`), or `None` for stdin.
    pub(crate) endpoint: Option<&'static str>,
}

struct Pending {
    /// `None` once the caller stopped waiting.
    tx: Option<oneshot::Sender<Result<Value>>>,
    on_notify: Option<NotifyFn>,
    on_abandon: Option<AbandonFn>,
    method: String,
}

/// One JSON-RPC link and the calls in flight on it.
pub(crate) struct Peer {
    link: Link,
    next_id: Cell<u64>,
    pending: RefCell<HashMap<u64, Pending>>,
    closed: RefCell<Option<Error>>,
    server: Option<Server>,
    /// A name for messages on stderr.
    label: String,
}

impl Peer {
    pub(crate) fn new(link: Link, server: Option<Server>, label: impl Into<String>) -> Rc<Self> {
        Rc::new(Peer {
            link,
            next_id: Cell::new(1),
            pending: RefCell::new(HashMap::new()),
            closed: RefCell::new(None),
            server,
            label: label.into(),
        })
    }

    /// Whether this is the process's stdin and stdout.
    pub(crate) fn is_stdio(&self) -> bool {
        matches!(self.link, Link::Stdio)
    }

    /// Sends a request; the future resolves with the answer. When the future
    /// is dropped first, `on_abandon` gets the answer when it arrives.
    pub(crate) fn request(
        self: &Rc<Self>,
        method: &str,
        params: Value,
        on_notify: Option<NotifyFn>,
        on_abandon: Option<AbandonFn>,
    ) -> ResponseFuture {
        let (tx, rx) = oneshot::channel();
        if let Some(error) = self.closed.borrow().clone() {
            let _ = tx.send(Err(error));
            return ResponseFuture { peer: Rc::clone(self), id: 0, rx, finished: false };
        }
        let id = self.next_id.get();
        self.next_id.set(id + 1);
        self.pending
            .borrow_mut()
            .insert(id, Pending { tx: Some(tx), on_notify, on_abandon, method: method.to_owned() });
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        ResponseFuture { peer: Rc::clone(self), id, rx, finished: false }
    }

    /// Sends a notification (no answer).
    pub(crate) fn notify(self: &Rc<Self>, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Writes one message.
    pub(crate) fn send(self: &Rc<Self>, message: Value) {
        match &self.link {
            Link::Stdio => write_stdout(&message),
            Link::Tcp(outbox) => outbox.push(frame(&message)),
            Link::Local(core) => core.receive(self, message),
        }
    }

    /// Waits until every message sent so far has been written.
    pub(crate) async fn flushed(&self) {
        match &self.link {
            Link::Stdio => {
                let _ = std::io::stdout().flush();
            }
            Link::Tcp(outbox) => outbox.flushed().await,
            Link::Local(_) => {}
        }
    }

    /// Ends the link: the calls in flight fail with `error`, and so do new ones.
    pub(crate) fn close(&self, error: Error) {
        *self.closed.borrow_mut() = Some(error.clone());
        let pending = std::mem::take(&mut *self.pending.borrow_mut());
        for (_, call) in pending {
            if let Some(tx) = call.tx {
                let _ = tx.send(Err(error.clone()));
            }
        }
        if let Link::Tcp(outbox) = &self.link {
            outbox.close();
        }
    }

    /// Whether the link has ended.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.borrow().is_some()
    }

    /// Handles one line that arrived on the link.
    pub(crate) fn receive_line(self: &Rc<Self>, line: &[u8]) {
        let line = line.trim_ascii();
        if line.is_empty() {
            return;
        }
        match serde_json::from_slice::<Value>(line) {
            Ok(message) if message.is_object() => self.receive(message),
            Ok(_) => eprintln!("sausage-plugin: {}: ignored a line that is not a JSON-RPC message", self.label),
            Err(e) => eprintln!("sausage-plugin: {}: ignored a line that is not JSON ({e})", self.label),
        }
    }

    /// Handles one message that arrived on the link.
    pub(crate) fn receive(self: &Rc<Self>, message: Value) {
        let Value::Object(mut message) = message else { return };
        if let Some(Value::String(method)) = message.remove("method") {
            let params = message.remove("params").unwrap_or(Value::Null);
            match message.remove("id") {
                Some(id) => self.serve(Some(id), method, params),
                None if method == "core.notify" => self.route_notify(params),
                None => self.serve(None, method, params),
            }
            return;
        }
        let Some(id) = message.remove("id") else {
            eprintln!("sausage-plugin: {}: ignored a message without method and id", self.label);
            return;
        };
        let answer = match (message.remove("error"), message.remove("result")) {
            (Some(error), _) if !error.is_null() => Err(Error::from_json(&error)),
            (_, result) => Ok(result.unwrap_or(Value::Null)),
        };
        self.answer(&id, answer);
    }

    /// Gives an answer to the call with `id`.
    pub(crate) fn answer(self: &Rc<Self>, id: &Value, answer: Result<Value>) {
        let call = id.as_u64().and_then(|n| self.pending.borrow_mut().remove(&n));
        let Some(mut call) = call else {
            eprintln!("sausage-plugin: {}: dropped a response with the unknown or late id {id}", self.label);
            return;
        };
        let answer = match call.tx.take() {
            Some(tx) => match tx.send(answer) {
                Ok(()) => return,
                Err(answer) => answer,
            },
            None => answer,
        };
        match call.on_abandon.take() {
            Some(on_abandon) => on_abandon(answer),
            None => eprintln!(
                "sausage-plugin: {}: the response to {} (id {id}) arrived after its caller stopped waiting",
                self.label, call.method
            ),
        }
    }

    /// `core.notify {"call": id, "name", "params"}` about a call of this process.
    fn route_notify(self: &Rc<Self>, params: Value) {
        let Some(id) = params.get("call").and_then(Value::as_u64) else { return };
        let name = params.get("name").and_then(Value::as_str).unwrap_or("").to_owned();
        let inner = params.get("params").cloned().unwrap_or(Value::Null);
        let callback = self.pending.borrow_mut().get_mut(&id).and_then(|c| c.on_notify.take());
        if let Some(mut callback) = callback {
            callback(&name, inner);
            if let Some(call) = self.pending.borrow_mut().get_mut(&id)
                && call.tx.is_some()
                && call.on_notify.is_none()
            {
                call.on_notify = Some(callback);
            }
        }
    }

    /// Serves a request (with `id`) or a notification (without).
    fn serve(self: &Rc<Self>, id: Option<Value>, method: String, params: Value) {
        let Some(server) = &self.server else {
            if let Some(id) = id {
                let error = Error::with_code(
                    Error::METHOD_NOT_FOUND,
                    format!("{} serves no interface, so it has no method `{method}`", self.label),
                );
                self.send(response(id, Err(error)));
            }
            return;
        };
        let Some(rt) = runtime::current() else { return };
        if self.is_stdio() {
            rt.mark_started();
        }
        let peer = Rc::clone(self);
        let handler = Rc::clone(&server.handler);
        let endpoint = server.endpoint;
        runtime::spawn_task(&rt, true, async move {
            let ctx = Ctx::for_call(Rc::clone(&peer), id.clone());
            let result = dispatch(handler, endpoint, &method, params, ctx.clone()).await;
            match id {
                Some(id) => peer.send(response(id, result)),
                None => {
                    if let Err(e) = result {
                        eprintln!("sausage-plugin: the notification {method} failed: {e}");
                    }
                }
            }
            if ctx.exits_after_response() {
                peer.flushed().await;
                if let Some(rt) = runtime::current() {
                    rt.request_end();
                }
            }
        });
    }
}

async fn dispatch(
    handler: Rc<dyn Handler>,
    endpoint: Option<&'static str>,
    method: &str,
    params: Value,
    ctx: Ctx,
) -> Result<Value> {
    let params = match params {
        Value::Object(_) => params,
        Value::Null => json!({}),
        _ => {
            return Err(Error::invalid_params(format!(
                "the params of `{method}` must be an object: params are by name"
            )));
        }
    };
    match method {
        "rpc.discover" => return Ok(runtime::document()),
        "rpc.endpoint" => {
            return match endpoint {
                Some(interface) => Ok(json!({
                    "owner": crate::pid(),
                    "plugin": crate::plugin(),
                    "interface": interface,
                })),
                None => Err(Error::with_code(
                    Error::METHOD_NOT_FOUND,
                    "`rpc.endpoint` is answered on endpoint connections only",
                )),
            };
        }
        _ => {}
    }
    match Rc::clone(&handler).dispatch(method, params, ctx) {
        Some(future) => future.await,
        None if method == "rpc.retired" => Ok(Value::Null),
        None => {
            let methods = handler.method_names();
            let list = if methods.is_empty() {
                "it has no methods".to_owned()
            } else {
                format!("its methods are {}", methods.join(", "))
            };
            Err(Error::with_code(Error::METHOD_NOT_FOUND, format!("there is no method `{method}`: {list}")))
        }
    }
}

/// A response message.
pub(crate) fn response(id: Value, result: Result<Value>) -> Value {
    match result {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error.to_json()}),
    }
}

/// One message as bytes: a newline, the JSON, a newline (PROTOCOL 3.1).
pub(crate) fn frame(message: &Value) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(128);
    bytes.push(b'\n');
    serde_json::to_writer(&mut bytes, message).expect("a JSON value always serializes");
    bytes.push(b'\n');
    bytes
}

/// Writes one message to stdout in one write.
pub(crate) fn write_stdout(message: &Value) {
    let bytes = frame(message);
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    if let Err(e) = out.write_all(&bytes).and_then(|()| out.flush()) {
        eprintln!("sausage-plugin: cannot write a message to stdout: {e}");
    }
}

/// The answer to one call.
pub(crate) struct ResponseFuture {
    peer: Rc<Peer>,
    id: u64,
    rx: oneshot::Receiver<Result<Value>>,
    finished: bool,
}

impl Future for ResponseFuture {
    type Output = Result<Value>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match Pin::new(&mut self.rx).poll(cx) {
            Poll::Ready(answer) => {
                self.finished = true;
                // the sender went without an answer: the link ended (not a stop of this process,
                // which `close` reports with its own error)
                let label = &self.peer.label;
                Poll::Ready(answer.unwrap_or_else(|_| Err(Error::new(format!("{label}: the link ended without an answer")))))
            }
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Drop for ResponseFuture {
    fn drop(&mut self) {
        if !self.finished
            && let Some(call) = self.peer.pending.borrow_mut().get_mut(&self.id)
        {
            call.tx = None;
            call.on_notify = None;
        }
    }
}

/// Lines waiting to be written to a connection.
#[derive(Default)]
pub(crate) struct Outbox {
    queue: RefCell<VecDeque<Vec<u8>>>,
    writing: Cell<bool>,
    closed: Cell<bool>,
    signal: Signal,
}

impl Outbox {
    fn push(&self, bytes: Vec<u8>) {
        if self.closed.get() {
            return;
        }
        self.queue.borrow_mut().push_back(bytes);
        self.signal.notify();
    }

    fn close(&self) {
        self.closed.set(true);
        self.queue.borrow_mut().clear();
        self.signal.notify();
    }

    /// The next bytes to write, waiting for them; `None` when closed.
    pub(crate) async fn next(&self) -> Option<Vec<u8>> {
        self.writing.set(false);
        self.signal.notify();
        self.signal.wait_until(|| self.closed.get() || !self.queue.borrow().is_empty()).await;
        let next = self.queue.borrow_mut().pop_front();
        self.writing.set(next.is_some());
        next
    }

    async fn flushed(&self) {
        self.signal.wait_until(|| self.closed.get() || (self.queue.borrow().is_empty() && !self.writing.get())).await;
    }
}

/// Splits bytes into lines.
#[derive(Default)]
pub(crate) struct LineReader {
    partial: Vec<u8>,
}

impl LineReader {
    /// Adds bytes; returns the lines they complete (without the newline).
    pub(crate) fn push(&mut self, mut bytes: &[u8]) -> Vec<Vec<u8>> {
        let mut lines = Vec::new();
        while let Some(end) = bytes.iter().position(|&b| b == b'\n') {
            let mut line = std::mem::take(&mut self.partial);
            line.extend_from_slice(&bytes[..end]);
            lines.push(line);
            bytes = &bytes[end + 1..];
        }
        self.partial.extend_from_slice(bytes);
        lines
    }

    /// The last line when the input ended without a newline.
    pub(crate) fn finish(&mut self) -> Option<Vec<u8>> {
        let rest = std::mem::take(&mut self.partial);
        if rest.trim_ascii().is_empty() { None } else { Some(rest) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_have_a_newline_before_and_after() {
        assert_eq!(frame(&json!({"a": 1})), b"\n{\"a\":1}\n");
    }

    #[test]
    fn lines_split_across_chunks() {
        let mut reader = LineReader::default();
        assert!(reader.push(b"{\"a\"").is_empty());
        assert_eq!(
            reader.push(b":1}\n\n{\"b\":2}\n{"),
            vec![b"{\"a\":1}".to_vec(), b"".to_vec(), b"{\"b\":2}".to_vec()]
        );
        assert_eq!(reader.finish(), Some(b"{".to_vec()));
        assert_eq!(reader.finish(), None);
    }

    #[test]
    fn responses_carry_results_or_error_objects() {
        assert_eq!(response(json!(1), Ok(json!(2))), json!({"jsonrpc": "2.0", "id": 1, "result": 2}));
        let error = response(json!("a"), Err(Error::with_code(5, "five")));
        assert_eq!(error["error"], json!({"code": 5, "message": "five"}));
    }
}
