//! Helpers: [`state_dir`], [`write_atomic`], [`pid`] and [`plugin`].

use std::cell::Cell;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The name of this plugin: `SAUSAGE_PLUGIN` (set by the core), else
/// `CARGO_PKG_NAME` (set by cargo for tests), else `plugin`.
///
/// # Example
///
/// ```
/// let name = sausage_plugin::plugin();
/// assert!(!name.is_empty());
/// ```
pub fn plugin() -> String {
    std::env::var("SAUSAGE_PLUGIN").or_else(|_| std::env::var("CARGO_PKG_NAME")).unwrap_or_else(|_| "plugin".to_owned())
}

/// The ID of this process, `<plugin>-<uuidv7>` (`SAUSAGE_PID`, set by the
/// core). Outside a world, for example in a test without the runner, it is
/// `<plugin>-00000000-0000-0000-0000-000000000000`.
///
/// # Example
///
/// ```
/// let pid = sausage_plugin::pid();
/// assert!(pid.starts_with(&sausage_plugin::plugin()));
/// ```
pub fn pid() -> String {
    std::env::var("SAUSAGE_PID").unwrap_or_else(|_| format!("{}-00000000-0000-0000-0000-000000000000", plugin()))
}

/// The folder for this plugin's persistent state, `/state/<plugin>`,
/// created if it is missing (PROTOCOL 2).
///
/// Processes of old and new versions share it: keep its format compatible,
/// or migrate it in the `#[on_retired]` method.
///
/// # Example
///
/// ```no_run
/// let notes = sausage_plugin::state_dir().join("notes.json");
/// ```
pub fn state_dir() -> PathBuf {
    let dir = Path::new("/state").join(plugin());
    let _ = std::fs::create_dir_all(&dir);
    dir
}

thread_local! {
    static COUNTER: Cell<u64> = const { Cell::new(0) };
}

/// Writes `bytes` to `path` in one atomic step: a temporary file in the same
/// folder, then a rename. A reader sees the old content or the new one,
/// never a part. Creates the parent folders.
///
/// # Example
///
/// ```no_run
/// # fn f() -> sausage_plugin::Result<()> {
/// let file = sausage_plugin::state_dir().join("notes.json");
/// sausage_plugin::write_atomic(&file, serde_json::to_vec(&["milk"])?)?;
/// # Ok(()) }
/// ```
pub fn write_atomic(path: impl AsRef<Path>, bytes: impl AsRef<[u8]>) -> std::io::Result<()> {
    let path = path.as_ref();
    let name = path.file_name().ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{} names no file", path.display()))
    })?;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&dir)?;
    let n = COUNTER.with(|c| {
        c.set(c.get() + 1);
        c.get()
    });
    let pid = pid();
    let unique = pid.rsplit('-').next().unwrap_or("0");
    let temporary = dir.join(format!(".{}.{unique}.{n}.tmp", name.to_string_lossy()));
    let written = (|| {
        let mut file = std::fs::File::create(&temporary)?;
        file.write_all(bytes.as_ref())?;
        let _ = file.sync_all();
        drop(file);
        std::fs::rename(&temporary, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}
