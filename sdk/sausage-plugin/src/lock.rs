//! [`lock`]: the locks of the core (PROTOCOL 6) as guards.

use crate::error::{Error, Result};
use crate::peer::Peer;
use crate::runtime;
use serde_json::{Value, json};
use std::future::{Future, IntoFuture};
use std::path::Path;
use std::pin::Pin;
use std::rc::Rc;

/// Takes the lock on `path` (`core.lock`, PROTOCOL 6). Await it for a
/// [`LockGuard`]; the lock is released when the guard drops.
///
/// Locks are advisory: the path is only a name, usually the file that the
/// lock protects. Each acquisition waits in a first-come, first-served queue
/// per path, also a second acquisition by the same process. The core releases
/// every lock of a process when it ends, also after a crash.
///
/// If the future is dropped while it waits (for example by a timeout), the
/// SDK releases the lock as soon as the core grants it.
///
/// # Example
///
/// ```no_run
/// use sausage_plugin::{Result, lock, state_dir, write_atomic};
///
/// async fn increment() -> Result<u64> {
///     let file = state_dir().join("counter");
///     let _guard = lock(&file).await?; // released at the end of the scope
///     let n: u64 = std::fs::read_to_string(&file).ok().and_then(|t| t.parse().ok()).unwrap_or(0) + 1;
///     write_atomic(&file, n.to_string())?;
///     Ok(n)
/// }
/// ```
pub fn lock(path: impl AsRef<Path>) -> Lock {
    Lock { path: path.as_ref().to_string_lossy().into_owned() }
}

/// An acquisition that has not been sent yet: `.await` it, or use
/// [`Lock::try_now`].
///
/// [`lock`] makes it. Nothing goes to the core until it is awaited: `.await`
/// sends `core.lock` and waits for the lock, and gives a [`LockGuard`].
///
/// # Example
///
/// ```
/// use sausage_plugin::{Lock, LockGuard, Result, lock};
///
/// /// Runs `f` while this process holds the lock of the notes file.
/// async fn with_notes_locked(f: impl FnOnce()) -> Result<()> {
///     let pending: Lock = lock("/state/notes/notes.json"); // nothing is sent yet
///     let _guard: LockGuard = pending.await?; // core.lock, and wait for the lock
///     f();
///     Ok(()) // the guard drops: core.unlock
/// }
///
/// assert_eq!(lock("/state/notes/notes.json").path(), "/state/notes/notes.json");
/// ```
#[must_use = "a lock is taken when it is awaited"]
#[derive(Debug)]
pub struct Lock {
    path: String,
}

impl Lock {
    /// Takes the lock only if it is free now (`"wait": false`): `Some(guard)`
    /// or `None`.
    ///
    /// ```no_run
    /// # async fn f() -> sausage_plugin::Result<()> {
    /// match sausage_plugin::lock("/state/backup/running").try_now().await? {
    ///     Some(_guard) => eprintln!("backing up"),
    ///     None => eprintln!("another backup runs"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_now(self) -> Result<Option<LockGuard>> {
        let peer = runtime::core()?;
        let answer = peer
            .request(
                "core.lock",
                json!({"path": self.path, "wait": false}),
                None,
                Some(release_if_held(&peer, &self.path)),
            )
            .await?;
        Ok(held(&answer).then(|| LockGuard { peer, path: self.path, kept: false }))
    }

    /// The path of the lock.
    ///
    /// ```
    /// assert_eq!(sausage_plugin::lock("/state/x").path(), "/state/x");
    /// ```
    pub fn path(&self) -> &str {
        &self.path
    }
}

impl IntoFuture for Lock {
    type Output = Result<LockGuard>;
    type IntoFuture = Pin<Box<dyn Future<Output = Result<LockGuard>>>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let peer = runtime::core()?;
            let answer = peer
                .request("core.lock", json!({"path": self.path}), None, Some(release_if_held(&peer, &self.path)))
                .await?;
            if !held(&answer) {
                return Err(Error::new(format!("core.lock did not grant {}: {answer}", self.path)));
            }
            Ok(LockGuard { peer, path: self.path, kept: false })
        })
    }
}

fn held(answer: &Value) -> bool {
    answer.get("held").and_then(Value::as_bool) == Some(true)
}

/// Releases a lock granted to an acquisition whose future was dropped.
fn release_if_held(peer: &Rc<Peer>, path: &str) -> Box<dyn FnOnce(Result<Value>)> {
    let peer = Rc::downgrade(peer);
    let path = path.to_owned();
    Box::new(move |answer| {
        if let (Ok(answer), Some(peer)) = (answer, peer.upgrade())
            && held(&answer)
        {
            peer.notify("core.unlock", json!({"path": path}));
        }
    })
}

/// A held lock. Dropping it releases the lock (`core.unlock`).
///
/// # Example
///
/// ```no_run
/// # async fn f() -> sausage_plugin::Result<()> {
/// let guard = sausage_plugin::lock("/state/notes/notes.json").await?;
/// assert_eq!(guard.path(), "/state/notes/notes.json");
/// drop(guard); // released here
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct LockGuard {
    peer: Rc<Peer>,
    path: String,
    kept: bool,
}

impl LockGuard {
    /// Keeps the lock until the process ends: the core releases it then.
    ///
    /// ```no_run
    /// # async fn f() -> sausage_plugin::Result<()> {
    /// // only one process at a time serves as the backup daemon
    /// sausage_plugin::lock("/state/backup/daemon").await?.keep();
    /// # Ok(()) }
    /// ```
    pub fn keep(mut self) {
        self.kept = true;
    }

    /// The path of the lock.
    ///
    /// ```no_run
    /// # async fn f() -> sausage_plugin::Result<()> {
    /// let guard = sausage_plugin::lock("/state/a").await?;
    /// eprintln!("holding {}", guard.path());
    /// # Ok(()) }
    /// ```
    pub fn path(&self) -> &str {
        &self.path
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if !self.kept {
            self.peer.notify("core.unlock", json!({"path": self.path}));
        }
    }
}

impl std::fmt::Debug for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Peer")
    }
}
