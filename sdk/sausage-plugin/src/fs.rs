//! Helpers: [`state_dir`], [`write_atomic`], [`sync_folder`], [`pid`] and [`plugin`].

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
/// It returns once the write survives a power cut, not only a kill: the
/// file's bytes are synced before the rename, and the folder after it
/// ([`sync_folder`]). That costs about a millisecond on a quiet disk.
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
        // the bytes reach the disk before the name does: a power cut leaves the old file or this one
        file.sync_all()?;
        drop(file);
        std::fs::rename(&temporary, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written?;
    sync_folder(&dir)
}

/// Writes a folder's entries through to the disk (`fsync` of the folder),
/// so that a file created, renamed or removed in it stays so after a power
/// cut. A killed process needs none of this: the kernel keeps its writes.
///
/// `std::fs::File::sync_all` cannot do it for a folder under WASI (the
/// preview 1 layer that `std` goes through refuses a folder with `EBADF`),
/// so this opens the folder through `wasi:filesystem` and syncs that
/// descriptor, which the host turns into an `fsync` of the real folder.
///
/// # Example
///
/// ```no_run
/// # fn f() -> std::io::Result<()> {
/// let dir = sausage_plugin::state_dir();
/// std::fs::rename(dir.join("new.json"), dir.join("current.json"))?;
/// sausage_plugin::sync_folder(&dir)?;
/// # Ok(()) }
/// ```
pub fn sync_folder(dir: impl AsRef<Path>) -> std::io::Result<()> {
    sync_folder_at(dir.as_ref())
}

#[cfg(all(target_os = "wasi", target_env = "p2"))]
fn sync_folder_at(dir: &Path) -> std::io::Result<()> {
    use wasip2::filesystem::{preopens, types};
    let absolute = if dir.is_absolute() { dir.to_path_buf() } else { std::env::current_dir()?.join(dir) };
    let text = absolute.to_str().ok_or_else(|| {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{} is not UTF-8", absolute.display()))
    })?;
    let folders = preopens::get_directories();
    // the given folder that holds `dir` most closely, and the rest of the path in it
    let (root, rest) = folders
        .iter()
        .filter_map(|(descriptor, guest)| within(text, guest).map(|rest| (descriptor, rest)))
        .min_by_key(|(_, rest)| rest.len())
        .ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("{text} is in no folder this process was given"),
            )
        })?;
    let folder = root
        .open_at(
            types::PathFlags::SYMLINK_FOLLOW,
            if rest.is_empty() { "." } else { rest },
            types::OpenFlags::DIRECTORY,
            types::DescriptorFlags::READ,
        )
        .map_err(|e| io_error(e, "open", text))?;
    folder.sync().map_err(|e| io_error(e, "fsync", text))
}

#[cfg(not(all(target_os = "wasi", target_env = "p2")))]
fn sync_folder_at(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

/// The rest of `path` below the folder `guest` (without a leading `/`), if
/// `path` is in it.
#[cfg(any(test, all(target_os = "wasi", target_env = "p2")))]
fn within<'a>(path: &'a str, guest: &str) -> Option<&'a str> {
    let guest = guest.trim_end_matches('/');
    let rest = path.strip_prefix(guest)?;
    if !rest.is_empty() && !rest.starts_with('/') {
        return None; // `/statex` is not in `/state`
    }
    Some(rest.trim_matches('/'))
}

#[cfg(all(target_os = "wasi", target_env = "p2"))]
fn io_error(code: wasip2::filesystem::types::ErrorCode, syscall: &str, path: &str) -> std::io::Error {
    use std::io::ErrorKind;
    use wasip2::filesystem::types::ErrorCode as C;
    let kind = match code {
        C::NoEntry => ErrorKind::NotFound,
        C::Access | C::NotPermitted => ErrorKind::PermissionDenied,
        C::NotDirectory => ErrorKind::NotADirectory,
        C::InsufficientSpace | C::Quota => ErrorKind::StorageFull,
        C::ReadOnly => ErrorKind::ReadOnlyFilesystem,
        C::Unsupported => ErrorKind::Unsupported,
        _ => ErrorKind::Other,
    };
    std::io::Error::new(kind, format!("{syscall} {path}: {code:?}"))
}

#[cfg(test)]
mod tests {
    use super::within;

    #[test]
    fn a_path_is_within_its_folder_only_on_a_boundary() {
        assert_eq!(within("/state/agent/x", "/"), Some("state/agent/x"));
        assert_eq!(within("/state/agent", "/state"), Some("agent"));
        assert_eq!(within("/state", "/state/"), Some(""));
        assert_eq!(within("/statex/a", "/state"), None);
        assert_eq!(within("/", "/"), Some(""));
    }
}
