//! The in-process core of a test that runs without the Sausage test runner
//! (`src/local.rs`). Without `SAUSAGE_PID`, `#[sausage_plugin::test]`
//! answers `core.lock`, `core.unlock`, `core.notify` and `core.log` in the
//! process, and refuses calls to plugins: a test has no other plugins.
//!
//! `sausage test` sets `SAUSAGE_PID` and answers these calls itself
//! (`tests/runtime.rs`), so there these tests are ignored. They run without
//! the runner, all in one instance, with `sausage run` (Sausage's `wasmtime
//! run`) as cargo's runner:
//!
//! ```sh
//! CARGO_TARGET_WASM32_WASIP2_RUNNER="sausage run" \
//!   cargo test --target wasm32-wasip2 -p sausage-plugin --test local_core -- --ignored
//! ```
//!
//! `sdk/cargo_test.ts` runs them so.
#![cfg(target_arch = "wasm32")]

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use sausage_plugin::wstd::future::FutureExt as _;
use sausage_plugin::wstd::task::sleep;
use sausage_plugin::{Error, background, call, lock, pid, plugin, serde_json::json};

sausage_plugin::import!("notes"); // imports/notes.json, the example's document

fn ms(n: u64) -> sausage_plugin::wstd::time::Duration {
    Duration::from_millis(n).into()
}

/// Fails at once under the test runner, whose answers these tests do not
/// describe.
fn without_runner() {
    assert!(
        std::env::var_os("SAUSAGE_PID").is_none(),
        "SAUSAGE_PID is set, so the test runner answers, not the test's own core: \
         run these tests with `sausage run` as the runner (see tests/local_core.rs)"
    );
}

#[sausage_plugin::test]
#[ignore = "without the test runner only: `sausage run` as the runner, and --ignored"]
async fn the_test_answers_core_lock_and_core_unlock_itself() {
    without_runner();
    let guard = lock("/state/a").await.unwrap();
    assert!(lock("/state/a").try_now().await.unwrap().is_none());
    assert!(lock("/state/b").try_now().await.unwrap().is_some());
    drop(guard); // core.unlock
    assert!(lock("/state/a").try_now().await.unwrap().is_some());
    // the messages themselves, as the guards send them
    assert_eq!(call("core.lock", json!({"path": "/x", "wait": false})).await.unwrap(), json!({"held": true}));
    assert_eq!(call("core.lock", json!({"path": "/x", "wait": false})).await.unwrap(), json!({"held": false}));
    assert_eq!(call("core.unlock", json!({"path": "/x"})).await.unwrap(), json!({}));
    assert_eq!(call("core.lock", json!({"path": "/x"})).await.unwrap(), json!({"held": true}));
    // unlocking a lock that is not held changes nothing
    assert_eq!(call("core.unlock", json!({"path": "/never"})).await.unwrap(), json!({}));
}

#[sausage_plugin::test]
#[ignore = "without the test runner only: `sausage run` as the runner, and --ignored"]
async fn waiting_acquisitions_get_the_lock_in_order() {
    without_runner();
    let order = Rc::new(RefCell::new(Vec::new()));
    let first = lock("/state/q").await.unwrap();
    for n in 1..=3 {
        let order = order.clone();
        background(async move {
            let _guard = lock("/state/q").await.unwrap();
            order.borrow_mut().push(n);
            sleep(ms(5)).await;
        });
    }
    sleep(ms(20)).await;
    assert!(order.borrow().is_empty(), "a waiter got a held lock");
    drop(first);
    sleep(ms(100)).await;
    assert_eq!(*order.borrow(), [1, 2, 3]);
    assert!(lock("/state/q").try_now().await.unwrap().is_some(), "the last waiter did not release it");
}

#[sausage_plugin::test]
#[ignore = "without the test runner only: `sausage run` as the runner, and --ignored"]
async fn a_lock_granted_to_a_dropped_acquisition_is_released() {
    without_runner();
    let holder = lock("/state/x").await.unwrap();
    let gave_up = lock("/state/x").into_future().timeout(ms(10)).await;
    assert!(gave_up.is_err());
    drop(holder); // the core grants the lock to the dropped acquisition; the SDK releases it
    let again = lock("/state/x").into_future().timeout(ms(1000)).await;
    assert!(again.is_ok(), "the lock of the dropped acquisition was not released");
}

#[sausage_plugin::test]
#[ignore = "without the test runner only: `sausage run` as the runner, and --ignored"]
async fn lock_params_are_checked() {
    without_runner();
    for (method, params) in [("core.lock", json!({"path": ""})), ("core.unlock", json!({}))] {
        let error = call(method, params).await.unwrap_err();
        assert_eq!(error.code(), Error::INVALID_PARAMS, "{method}");
        assert_eq!(error.message(), format!("{method} needs \"path\", a non-empty string"));
    }
}

#[sausage_plugin::test]
#[ignore = "without the test runner only: `sausage run` as the runner, and --ignored"]
async fn the_test_answers_core_notify_and_core_log() {
    without_runner();
    let notified = call("core.notify", json!({"name": "step", "params": {"i": 1}})).await.unwrap();
    assert_eq!(notified, json!({}));
    assert_eq!(call("core.log", json!({"limit": 5})).await.unwrap(), json!({"entries": []}));
}

#[sausage_plugin::test]
#[ignore = "without the test runner only: `sausage run` as the runner, and --ignored"]
async fn calls_to_plugins_are_refused_and_say_why() {
    without_runner();
    let refused = "a test has no other plugins, so notes.add cannot be called here";
    let error = call("notes.add", json!({"text": "milk"})).await.unwrap_err();
    assert_eq!((error.code(), error.message()), (Error::NO_SUCH_PLUGIN, refused));
    // a detached call goes through core.call, which names the method too
    let error = call("notes.add", json!({"text": "milk"})).detach().await.unwrap_err();
    assert_eq!((error.code(), error.message()), (Error::NO_SUCH_PLUGIN, refused));
    // the calls of a generated import fail the same way
    let error = notes::add(notes::AddParams { text: "milk".into() }).await.unwrap_err();
    assert_eq!((error.code(), error.message()), (Error::NO_SUCH_PLUGIN, refused));
    let error = notes::list().await.unwrap_err();
    assert_eq!(error.message(), "a test has no other plugins, so notes.list cannot be called here");
    // the core methods about processes and plugins: nothing to act on
    for method in ["core.stop", "core.kill", "core.activate", "core.revert", "core.exit"] {
        let error = call(method, json!({"pid": "notes-1"})).await.unwrap_err();
        assert_eq!(error.code(), Error::NO_SUCH_PLUGIN, "{method}");
        assert_eq!(
            error.message(),
            format!("{method} does nothing in a test: a test has no other plugins or processes")
        );
    }
    // other core methods do not exist here
    let error = call("core.nothing", ()).await.unwrap_err();
    assert_eq!(error.code(), Error::METHOD_NOT_FOUND);
    assert_eq!(
        error.message(),
        "a test answers only core.lock, core.unlock, core.notify and core.log, not core.nothing"
    );
}

#[test]
#[ignore = "without the test runner only: `sausage run` as the runner, and --ignored"]
fn each_async_test_has_a_core_of_its_own() {
    without_runner();
    // what #[sausage_plugin::test] expands to, twice in one process: the
    // second test does not see the lock the first one kept
    sausage_plugin::__private::block_on_test(async {
        lock("/state/kept").await.unwrap().keep();
        assert!(lock("/state/kept").try_now().await.unwrap().is_none());
    });
    sausage_plugin::__private::block_on_test(async {
        assert!(lock("/state/kept").try_now().await.unwrap().is_some());
    });
}

#[test]
#[ignore = "without the test runner only: `sausage run` as the runner, and --ignored"]
fn outside_a_world_the_pid_is_a_placeholder() {
    without_runner();
    assert_eq!(pid(), format!("{}-00000000-0000-0000-0000-000000000000", plugin()));
}
