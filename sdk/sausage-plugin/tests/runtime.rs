//! The runtime in a test process, under the test runner (`sausage test`
//! as cargo's runner: `cargo test --target wasm32-wasip2 -p sausage-plugin`).
//! The runner sets `SAUSAGE_PID` and answers `core.lock`, `core.unlock`,
//! `core.notify` and `core.log`. Without the runner the test answers them
//! itself: `tests/local_core.rs`.
#![cfg(target_arch = "wasm32")]

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::Duration;

use sausage_plugin::wstd::future::FutureExt as _;
use sausage_plugin::wstd::task::sleep;
use sausage_plugin::{Error, background, call, lock, serde_json::json, state_dir, write_atomic};

fn ms(n: u64) -> sausage_plugin::wstd::time::Duration {
    Duration::from_millis(n).into()
}

#[sausage_plugin::test]
async fn a_held_lock_is_not_free_until_its_guard_drops() {
    let guard = lock("/state/a").await.unwrap();
    assert_eq!(guard.path(), "/state/a");
    assert!(lock("/state/a").try_now().await.unwrap().is_none());
    assert!(lock("/state/b").try_now().await.unwrap().is_some());
    drop(guard);
    assert!(lock("/state/a").try_now().await.unwrap().is_some());
}

#[sausage_plugin::test]
async fn waiting_acquisitions_get_the_lock_in_order() {
    let order = Rc::new(RefCell::new(Vec::new()));
    let first = lock("/state/q").await.unwrap();
    let waiter = |n: u32| {
        let order = order.clone();
        async move {
            let _guard = lock("/state/q").await.unwrap();
            order.borrow_mut().push(n);
            sleep(ms(5)).await;
        }
    };
    let release = async {
        sleep(ms(20)).await;
        order.borrow_mut().push(0);
        drop(first);
    };
    futures_lite::future::zip(release, futures_lite::future::zip(waiter(1), waiter(2))).await;
    assert_eq!(*order.borrow(), [0, 1, 2]);
}

#[sausage_plugin::test]
async fn a_lock_granted_to_a_dropped_acquisition_is_released() {
    let holder = lock("/state/x").await.unwrap();
    // this acquisition gives up before the lock is free
    let gave_up = lock("/state/x").into_future().timeout(ms(10)).await;
    assert!(gave_up.is_err());
    drop(holder); // the core grants the lock to the dropped acquisition; the SDK releases it
    let again = lock("/state/x").into_future().timeout(ms(1000)).await;
    assert!(again.is_ok(), "the lock of the dropped acquisition was not released");
}

#[sausage_plugin::test]
async fn kept_locks_stay_held() {
    lock("/state/kept").await.unwrap().keep();
    assert!(lock("/state/kept").try_now().await.unwrap().is_none());
}

#[sausage_plugin::test]
async fn a_test_has_no_other_plugins() {
    let error = call("notes.add", json!({"text": "milk"})).await.unwrap_err();
    assert_eq!(error.code(), Error::NO_SUCH_PLUGIN);
    assert!(error.message().contains("notes.add"), "{error:?}");
    let detached = call("notes.add", json!({"text": "milk"})).detach().await.unwrap_err();
    assert_eq!(detached.code(), Error::NO_SUCH_PLUGIN);
    let unknown = call("core.nothing", ()).await.unwrap_err();
    assert_eq!(unknown.code(), Error::METHOD_NOT_FOUND);
}

#[sausage_plugin::test]
async fn the_core_answers_log_and_notify() {
    assert_eq!(call("core.log", json!({"limit": 5})).await.unwrap(), json!({"entries": []}));
    assert_eq!(call("core.notify", json!({"name": "x"})).await.unwrap(), json!({}));
}

#[sausage_plugin::test]
async fn lock_params_are_checked_as_the_core_does() {
    for (method, params) in [("core.lock", json!({"path": ""})), ("core.unlock", json!({}))] {
        let error = call(method, params).await.unwrap_err();
        assert_eq!(error.code(), Error::INVALID_PARAMS, "{method}");
        assert_eq!(error.message(), format!("{method} needs \"path\", a non-empty string"));
    }
}

#[sausage_plugin::test]
async fn params_must_be_an_object() {
    let error = call("core.log", vec![1, 2]).await.unwrap_err();
    assert_eq!(error.code(), Error::INVALID_PARAMS);
}

#[sausage_plugin::test]
async fn results_convert_to_the_expected_type() {
    let entries: Vec<u32> = call("core.log", ()).returning::<serde_entries::Log>().await.unwrap().entries;
    assert!(entries.is_empty());
    let wrong = call("core.log", ()).returning::<String>().await.unwrap_err();
    assert!(wrong.message().contains("does not fit"), "{wrong:?}");
}

mod serde_entries {
    #[derive(sausage_plugin::serde::Deserialize)]
    #[serde(crate = "sausage_plugin::serde")]
    pub struct Log {
        pub entries: Vec<u32>,
    }
}

#[sausage_plugin::test]
async fn background_tasks_run_beside_the_test() {
    let done = Rc::new(Cell::new(false));
    let flag = done.clone();
    background(async move {
        sleep(ms(10)).await;
        flag.set(true);
    });
    assert!(!done.get());
    sleep(ms(50)).await;
    assert!(done.get());
}

#[sausage_plugin::test]
async fn a_failing_background_task_is_reported_not_fatal() {
    background(async { Err::<(), _>(Error::new("on purpose")) });
    sleep(ms(10)).await;
}

#[test]
fn state_dir_and_write_atomic_work_in_the_test_world() {
    let file = state_dir().join("data.json");
    assert!(file.starts_with("/state"));
    write_atomic(&file, b"[1]").unwrap();
    write_atomic(&file, b"[1,2]").unwrap();
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "[1,2]");
    let leftovers: Vec<_> = std::fs::read_dir(state_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    write_atomic("/state/deep/er/file", "x").unwrap();
    assert_eq!(std::fs::read_to_string("/state/deep/er/file").unwrap(), "x");
}

#[test]
fn sync_folder_syncs_a_folder_through_wasi_filesystem() {
    // std's File::sync_all refuses a folder under WASI (EBADF); this one reaches the host's fsync
    sausage_plugin::sync_folder(state_dir()).unwrap();
    sausage_plugin::sync_folder("/").unwrap();
    sausage_plugin::sync_folder("/state/").unwrap();
    let missing = sausage_plugin::sync_folder("/state/no/such/folder").unwrap_err();
    assert_eq!(missing.kind(), std::io::ErrorKind::NotFound, "{missing}");
    std::fs::write("/state/a-file", "x").unwrap();
    let file = sausage_plugin::sync_folder("/state/a-file").unwrap_err();
    assert_eq!(file.kind(), std::io::ErrorKind::NotADirectory, "{file}");
}

#[test]
fn the_world_of_a_test_is_empty_and_its_own() {
    // each test runs in its own instance with its own temporary world
    assert!(!std::path::Path::new("/state/data.json").exists());
    std::fs::write("/marker", "x").unwrap();
}

#[test]
fn the_package_folder_is_at_its_host_path() {
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    assert!(std::fs::read_to_string(manifest).unwrap().contains("sausage-plugin"));
}
