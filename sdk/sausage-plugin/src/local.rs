//! The in-process core of a test that runs without the Sausage test runner
//! (`SAUSAGE_PID` is not set): it answers `core.lock`, `core.unlock`,
//! `core.notify` and `core.log` like the runner does, and refuses calls to
//! plugins, because a test has no other plugins.

use crate::error::{Error, Result};
use crate::peer::Peer;
use serde_json::{Value, json};
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

#[derive(Default)]
struct LocalLock {
    held: bool,
    /// The IDs of the waiting `core.lock` requests, first come first served.
    waiting: VecDeque<Value>,
}

/// The locks of one test.
#[derive(Default)]
pub(crate) struct LocalCore {
    locks: RefCell<HashMap<String, LocalLock>>,
}

impl LocalCore {
    pub(crate) fn new() -> Rc<Self> {
        Rc::new(LocalCore::default())
    }

    /// Handles a message the test process sent to "the core".
    pub(crate) fn receive(&self, peer: &Rc<Peer>, message: Value) {
        let method = message.get("method").and_then(Value::as_str).unwrap_or("").to_owned();
        let id = message.get("id").cloned();
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        let answer = self.handle(peer, &method, &params, id.as_ref());
        if let (Some(id), Some(answer)) = (id, answer) {
            peer.answer(&id, answer);
        }
    }

    /// The answer, or `None` when it comes later (a waiting lock).
    fn handle(&self, peer: &Rc<Peer>, method: &str, params: &Value, id: Option<&Value>) -> Option<Result<Value>> {
        let path = || -> Result<String> {
            match params.get("path").and_then(Value::as_str) {
                Some(path) if !path.is_empty() => Ok(path.to_owned()),
                _ => Err(Error::invalid_params(format!("{method} needs \"path\", a non-empty string"))),
            }
        };
        match method {
            "core.lock" => {
                let path = match path() {
                    Ok(path) => path,
                    Err(e) => return Some(Err(e)),
                };
                let wait = params.get("wait").and_then(Value::as_bool).unwrap_or(true);
                let mut locks = self.locks.borrow_mut();
                let lock = locks.entry(path).or_default();
                if !lock.held {
                    lock.held = true;
                    Some(Ok(json!({"held": true})))
                } else if !wait {
                    Some(Ok(json!({"held": false})))
                } else {
                    if let Some(id) = id {
                        lock.waiting.push_back(id.clone());
                    }
                    None
                }
            }
            "core.unlock" => {
                let path = match path() {
                    Ok(path) => path,
                    Err(e) => return Some(Err(e)),
                };
                let granted = {
                    let mut locks = self.locks.borrow_mut();
                    match locks.get_mut(&path) {
                        Some(lock) => {
                            let next = lock.waiting.pop_front();
                            if next.is_none() {
                                locks.remove(&path);
                            }
                            next
                        }
                        None => None,
                    }
                };
                if let Some(next) = granted {
                    peer.answer(&next, Ok(json!({"held": true})));
                }
                Some(Ok(json!({})))
            }
            "core.notify" => Some(Ok(json!({}))),
            "core.log" => Some(Ok(json!({"entries": []}))),
            "core.call" => Some(Err(no_plugins(params.get("method").and_then(Value::as_str).unwrap_or("a plugin")))),
            // as the test runner answers them
            "core.stop" | "core.kill" | "core.activate" | "core.revert" | "core.exit" => Some(Err(Error::with_code(
                Error::NO_SUCH_PLUGIN,
                format!("{method} does nothing in a test: a test has no other plugins or processes"),
            ))),
            core if core.starts_with("core.") => Some(Err(Error::with_code(
                Error::METHOD_NOT_FOUND,
                format!("a test answers only core.lock, core.unlock, core.notify and core.log, not {core}"),
            ))),
            other => Some(Err(no_plugins(other))),
        }
    }
}

fn no_plugins(method: &str) -> Error {
    Error::with_code(Error::NO_SUCH_PLUGIN, format!("a test has no other plugins, so {method} cannot be called here"))
}
