//! `fsprobe`: checks that `std::fs` works under the host's `wasi:filesystem`.
//!
//! Usage: `fsprobe [ROOT]` (default `/`). Each check prints `ok NAME` or
//! `FAIL NAME: DETAIL`; the last line is `done PASSED FAILED`, and the exit
//! status is 1 when a check failed.
//!
//! In a world (`SAUSAGE_PID` is set) it is a plugin instead: it answers one
//! JSON-RPC request on stdin, see `world.rs`.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

mod world;

/// Where ROOT is inside its layer (`""` when ROOT is the root of a layer, such as `/`,
/// `/run` or `/self`): absolute link targets are resolved from the layer's root.
static PREFIX: OnceLock<String> = OnceLock::new();

fn prefix() -> &'static str {
    PREFIX.get().map(String::as_str).unwrap_or("")
}

type Check = Result<(), String>;

extern "C" {
    /// wasi-libc's `symlink` (`std::os::wasi::fs::symlink_path` is unstable).
    #[link_name = "symlink"]
    fn libc_symlink(target: *const std::ffi::c_char, path: *const std::ffi::c_char) -> i32;
    /// wasi-libc's `link`.
    #[link_name = "link"]
    fn libc_link(existing: *const std::ffi::c_char, new: *const std::ffi::c_char) -> i32;
}

/// Makes `new` a hard link to `existing` with wasi-libc's `link`.
fn hard_link(existing: impl AsRef<Path>, new: impl AsRef<Path>) -> std::io::Result<()> {
    let existing = std::ffi::CString::new(existing.as_ref().to_str().unwrap()).unwrap();
    let new = std::ffi::CString::new(new.as_ref().to_str().unwrap()).unwrap();
    if unsafe { libc_link(existing.as_ptr(), new.as_ptr()) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Makes a symbolic link at `path` whose content is `target`.
fn symlink(target: &str, path: impl AsRef<Path>) -> std::io::Result<()> {
    let target = std::ffi::CString::new(target).unwrap();
    let path = std::ffi::CString::new(path.as_ref().to_str().unwrap()).unwrap();
    if unsafe { libc_symlink(target.as_ptr(), path.as_ptr()) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Turns an I/O error into a failure message.
fn io<T>(what: &str, r: std::io::Result<T>) -> Result<T, String> {
    r.map_err(|e| format!("{what}: {e} ({:?})", e.kind()))
}

fn expect_eq<T: PartialEq + std::fmt::Debug>(what: &str, got: T, want: T) -> Check {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}: got {got:?}, want {want:?}"))
    }
}

/// Expects `ENOTEMPTY` (55 in WASI), which std reports as `Uncategorized` on this target.
fn expect_not_empty<T: std::fmt::Debug>(what: &str, r: std::io::Result<T>) -> Check {
    match r {
        Ok(v) => Err(format!("{what}: succeeded with {v:?}, want ENOTEMPTY")),
        Err(e) if e.kind() == ErrorKind::DirectoryNotEmpty || e.raw_os_error() == Some(55) => {
            Ok(())
        }
        Err(e) => Err(format!("{what}: {e} ({:?}), want ENOTEMPTY", e.kind())),
    }
}

/// Expects an error of `kind`.
fn expect_err<T: std::fmt::Debug>(what: &str, r: std::io::Result<T>, kind: ErrorKind) -> Check {
    match r {
        Ok(v) => Err(format!("{what}: succeeded with {v:?}, want {kind:?}")),
        Err(e) if e.kind() == kind => Ok(()),
        Err(e) => Err(format!("{what}: {e} ({:?}), want {kind:?}", e.kind())),
    }
}

fn files_and_folders(root: &Path) -> Check {
    let dir = root.join("fsprobe/a/b/c");
    io("create_dir_all", fs::create_dir_all(&dir))?;
    let file = dir.join("hello.txt");
    io("write", fs::write(&file, "hello, world"))?;
    expect_eq(
        "read_to_string",
        io("read", fs::read_to_string(&file))?,
        "hello, world".into(),
    )?;
    let meta = io("metadata", fs::metadata(&file))?;
    expect_eq("is_file", meta.is_file(), true)?;
    expect_eq("len", meta.len(), 12)?;
    expect_eq(
        "dir is_dir",
        io("metadata dir", fs::metadata(&dir))?.is_dir(),
        true,
    )?;
    expect_eq("exists", file.exists(), true)?;
    expect_eq("missing exists", dir.join("nope").exists(), false)?;
    Ok(())
}

fn append_and_positions(root: &Path) -> Check {
    let path = root.join("fsprobe/append.txt");
    io("write", fs::write(&path, "a"))?;
    let mut f = io("open append", OpenOptions::new().append(true).open(&path))?;
    io("append", f.write_all(b"bc"))?;
    drop(f);
    expect_eq(
        "appended",
        io("read", fs::read_to_string(&path))?,
        "abc".into(),
    )?;

    let mut f = io(
        "open rw",
        OpenOptions::new().read(true).write(true).open(&path),
    )?;
    io("seek", f.seek(SeekFrom::Start(10)))?;
    io("write at 10", f.write_all(b"Z"))?;
    io("seek start", f.seek(SeekFrom::Start(0)))?;
    let mut all = Vec::new();
    io("read_to_end", f.read_to_end(&mut all))?;
    expect_eq("sparse", all, b"abc\0\0\0\0\0\0\0Z".to_vec())?;
    io("set_len", f.set_len(2))?;
    expect_eq("truncated", io("metadata", f.metadata())?.len(), 2)?;
    io("set_len grow", f.set_len(5))?;
    expect_eq("grown", io("read", fs::read(&path))?, b"ab\0\0\0".to_vec())?;
    io("seek end", f.seek(SeekFrom::End(0)))?;
    io("write end", f.write_all(b"!"))?;
    io("sync_all", f.sync_all())?;
    io("sync_data", f.sync_data())?;
    expect_eq(
        "after end",
        io("read", fs::read(&path))?,
        b"ab\0\0\0!".to_vec(),
    )
}

fn listing(root: &Path) -> Check {
    let dir = root.join("fsprobe/list");
    io("mkdir", fs::create_dir(&dir))?;
    for i in 0..200 {
        io(
            "write",
            fs::write(dir.join(format!("f{i:03}")), i.to_string()),
        )?;
    }
    io("mkdir sub", fs::create_dir(dir.join("sub")))?;
    let mut names = Vec::new();
    for entry in io("read_dir", fs::read_dir(&dir))? {
        let entry = io("entry", entry)?;
        let ty = io("file_type", entry.file_type())?;
        names.push((entry.file_name().into_string().unwrap(), ty.is_dir()));
    }
    names.sort();
    expect_eq("count", names.len(), 201)?;
    expect_eq("first", names[0].clone(), ("f000".to_string(), false))?;
    expect_eq("sub", names[200].clone(), ("sub".to_string(), true))?;
    io("remove_dir_all", fs::remove_dir_all(&dir))?;
    expect_eq("removed", dir.exists(), false)
}

fn atomic_replace(root: &Path) -> Check {
    let target = root.join("fsprobe/config.json");
    io("write old", fs::write(&target, "{\"v\":1}"))?;
    let mut old = io("open old", File::open(&target))?;
    let tmp = root.join("fsprobe/.config.json.tmp");
    let mut f = io("create tmp", File::create(&tmp))?;
    io("write tmp", f.write_all(b"{\"v\":2}"))?;
    io("sync tmp", f.sync_all())?;
    drop(f);
    io("rename", fs::rename(&tmp, &target))?;
    expect_eq(
        "new content",
        io("read", fs::read_to_string(&target))?,
        "{\"v\":2}".into(),
    )?;
    let mut s = String::new();
    io("read old handle", old.read_to_string(&mut s))?;
    expect_eq("old handle keeps old file", s, "{\"v\":1}".into())?;
    expect_eq("tmp gone", tmp.exists(), false)?;
    // Renaming a folder over an empty folder works; over a non-empty one fails.
    io("mkdir x", fs::create_dir_all(root.join("fsprobe/rx/inner")))?;
    io("mkdir y", fs::create_dir(root.join("fsprobe/ry")))?;
    io(
        "rename dir",
        fs::rename(root.join("fsprobe/rx"), root.join("fsprobe/ry")),
    )?;
    expect_eq("moved", root.join("fsprobe/ry/inner").is_dir(), true)?;
    io("mkdir z", fs::create_dir_all(root.join("fsprobe/rz/inner")))?;
    expect_not_empty(
        "rename over non-empty",
        fs::rename(root.join("fsprobe/rz"), root.join("fsprobe/ry")),
    )
}

fn links(root: &Path) -> Check {
    let base = root.join("fsprobe/links");
    io("mkdir", fs::create_dir(&base))?;
    io("write", fs::write(base.join("target.txt"), "T"))?;
    io(
        "hard_link",
        hard_link(base.join("target.txt"), base.join("hard.txt")),
    )?;
    expect_eq(
        "hard content",
        io("read", fs::read_to_string(base.join("hard.txt")))?,
        "T".into(),
    )?;
    io("write via hard link", fs::write(base.join("hard.txt"), "U"))?;
    expect_eq(
        "shared",
        io("read", fs::read_to_string(base.join("target.txt")))?,
        "U".into(),
    )?;
    io(
        "copy",
        fs::copy(base.join("target.txt"), base.join("copy.txt")),
    )?;
    expect_eq(
        "copy",
        io("read", fs::read_to_string(base.join("copy.txt")))?,
        "U".into(),
    )
}

/// Links made on the host before the start, in `ROOT/pre/` (skipped when absent):
/// `target.txt` ("T"), `rel` -> `target.txt`, `abs` -> `PREFIX/pre/target.txt`,
/// `up` -> `../../../..`, `out` -> a host path outside the root, `loop` -> `loop`.
fn symlinks_read(root: &Path) -> Result<bool, String> {
    let pre = root.join("pre");
    if !pre.exists() {
        return Ok(false);
    }
    expect_eq(
        "read_link",
        io("read_link", fs::read_link(pre.join("rel")))?,
        PathBuf::from("target.txt"),
    )?;
    expect_eq(
        "through rel",
        io("read", fs::read_to_string(pre.join("rel")))?,
        "T".into(),
    )?;
    expect_eq(
        "through abs",
        io("read", fs::read_to_string(pre.join("abs")))?,
        "T".into(),
    )?;
    let lmeta = io("symlink_metadata", fs::symlink_metadata(pre.join("rel")))?;
    expect_eq("is_symlink", lmeta.file_type().is_symlink(), true)?;
    expect_eq(
        "metadata follows",
        io("metadata", fs::metadata(pre.join("rel")))?.is_file(),
        true,
    )?;
    // `..` in a target stays at the root.
    expect_eq(
        "up is the root",
        pre.join(format!("up{}/pre/target.txt", prefix())).exists(),
        true,
    )?;
    // An absolute host path is a path inside the root, where nothing is.
    expect_err("out", fs::read(pre.join("out")), ErrorKind::NotFound)?;
    match fs::read(pre.join("loop")) {
        Ok(_) => Err("reading a loop succeeded".into()),
        Err(e) if format!("{:?}", e.kind()) == "FilesystemLoop" => Ok(()),
        Err(e) => Err(format!("loop: {e} ({:?})", e.kind())),
    }?;
    let mut names: Vec<String> = io("read_dir", fs::read_dir(&pre))?
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    expect_eq(
        "listing",
        names.join(","),
        "abs,loop,out,rel,target.txt,up".to_string(),
    )?;
    Ok(true)
}

/// Links made by the guest (skipped where the host may not make links).
fn symlinks_make(root: &Path) -> Result<bool, String> {
    let base = root.join("fsprobe/made");
    io("mkdir", fs::create_dir(&base))?;
    io("write", fs::write(base.join("target.txt"), "T"))?;
    match symlink("target.txt", base.join("soft")) {
        Err(e) if e.kind() == ErrorKind::PermissionDenied && e.raw_os_error() == Some(63) => {
            return Ok(false);
        }
        r => io("symlink", r)?,
    }
    expect_eq(
        "read_link",
        io("read_link", fs::read_link(base.join("soft")))?,
        PathBuf::from("target.txt"),
    )?;
    expect_eq(
        "through link",
        io("read", fs::read_to_string(base.join("soft")))?,
        "T".into(),
    )?;
    io(
        "abs symlink",
        symlink(
            &format!("{}/fsprobe/made/target.txt", prefix()),
            base.join("abs"),
        ),
    )?;
    expect_eq(
        "through abs link",
        io("read", fs::read_to_string(base.join("abs")))?,
        "T".into(),
    )?;
    io("remove link", fs::remove_file(base.join("soft")))?;
    expect_eq("target kept", base.join("target.txt").exists(), true)?;
    io("loop a", symlink("loop-b", base.join("loop-a")))?;
    io("loop b", symlink("loop-a", base.join("loop-b")))?;
    match fs::read(base.join("loop-a")) {
        Ok(_) => Err("reading a loop succeeded".into()),
        Err(e) if format!("{:?}", e.kind()) == "FilesystemLoop" => Ok(true),
        Err(e) => Err(format!("loop: {e} ({:?})", e.kind())),
    }
}

fn errors(root: &Path) -> Check {
    let base = root.join("fsprobe");
    expect_err(
        "open missing",
        File::open(base.join("missing")),
        ErrorKind::NotFound,
    )?;
    expect_err(
        "create_dir existing",
        fs::create_dir(&base),
        ErrorKind::AlreadyExists,
    )?;
    io("write f", fs::write(base.join("plain"), "x"))?;
    expect_err(
        "read_dir on file",
        fs::read_dir(base.join("plain")),
        ErrorKind::NotADirectory,
    )?;
    expect_err(
        "file as folder",
        fs::write(base.join("plain/x"), "x"),
        ErrorKind::NotADirectory,
    )?;
    expect_not_empty("remove_dir non-empty", fs::remove_dir(base.join("a")))?;
    expect_err(
        "remove_file on dir",
        fs::remove_file(base.join("a")),
        ErrorKind::IsADirectory,
    )?;
    expect_err(
        "create_new existing",
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(base.join("plain")),
        ErrorKind::AlreadyExists,
    )?;
    expect_err(
        "long name",
        fs::write(base.join("n".repeat(300)), "x"),
        ErrorKind::InvalidFilename,
    )
}

fn no_escape(root: &Path) -> Check {
    // `..` at the root stays at the root.
    expect_err(
        "read outside",
        fs::read(root.join("../../../../etc/passwd")),
        ErrorKind::NotFound,
    )?;
    // Below the root, `..` goes up one folder: come back by the root's own name.
    let back = match root.file_name() {
        Some(name) => PathBuf::from("..").join(name),
        None => PathBuf::from(".."),
    };
    io(
        "write via ..",
        fs::write(root.join(back).join("fsprobe/dotdot.txt"), "in"),
    )?;
    expect_eq(
        "landed inside",
        io("read", fs::read_to_string(root.join("fsprobe/dotdot.txt")))?,
        "in".into(),
    )
}

fn times(root: &Path) -> Check {
    let path = root.join("fsprobe/times.txt");
    io("write", fs::write(&path, "t"))?;
    let f = io("open", OpenOptions::new().write(true).open(&path))?;
    let when = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
    io("set_modified", f.set_modified(when))?;
    expect_eq(
        "modified",
        io("modified", io("metadata", fs::metadata(&path))?.modified())?,
        when,
    )?;
    let now = SystemTime::now();
    io("set_modified now", f.set_modified(now))?;
    let got = io("modified", io("metadata", fs::metadata(&path))?.modified())?;
    let diff = now.duration_since(got).unwrap_or_else(|e| e.duration());
    if diff > Duration::from_secs(2) {
        return Err(format!("modified {got:?} is far from {now:?}"));
    }
    Ok(())
}

fn big_file(root: &Path) -> Check {
    let path = root.join("fsprobe/big.bin");
    let data: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
    io("write big", fs::write(&path, &data))?;
    let back = io("read big", fs::read(&path))?;
    expect_eq("big length", back.len(), data.len())?;
    if back != data {
        return Err("big content differs".into());
    }
    let mut f = io("open", File::open(&path))?;
    io("seek", f.seek(SeekFrom::Start(2_999_990)))?;
    let mut tail = Vec::new();
    io("read tail", f.read_to_end(&mut tail))?;
    expect_eq("tail", tail, data[2_999_990..].to_vec())
}

fn many_open(root: &Path) -> Check {
    let mut files = Vec::new();
    // wasi-libc's descriptor table fails the 125th open file with ENOMEM.
    for i in 0..100 {
        files.push(io(
            "create",
            File::create(root.join(format!("fsprobe/open{i}"))),
        )?);
    }
    for (i, f) in files.iter_mut().enumerate() {
        io("write", write!(f, "{i}"))?;
    }
    drop(files);
    expect_eq(
        "content",
        io("read", fs::read_to_string(root.join("fsprobe/open99")))?,
        "99".into(),
    )
}

/// The checks that need nothing made before the start.
const CHECKS: [(&str, fn(&Path) -> Check); 10] = [
    ("files_and_folders", files_and_folders),
    ("append_and_positions", append_and_positions),
    ("listing", listing),
    ("atomic_replace", atomic_replace),
    ("links", links),
    ("errors", errors),
    ("no_escape", no_escape),
    ("times", times),
    ("big_file", big_file),
    ("many_open", many_open),
];

/// The checks that may be skipped (`Ok(false)`).
const OPTIONAL: [(&str, fn(&Path) -> Result<bool, String>); 2] = [
    ("symlinks_read", symlinks_read),
    ("symlinks_make", symlinks_make),
];

/// Runs every check under `root`; each result is `Ok(true)`, `Ok(false)` (skipped) or the failure.
fn run_checks(root: &Path, mut report: impl FnMut(&str, Result<bool, String>)) {
    for (name, check) in CHECKS {
        report(name, check(root).map(|()| true));
    }
    for (name, check) in OPTIONAL {
        report(name, check(root));
    }
}

fn main() {
    if std::env::var_os("SAUSAGE_PID").is_some() {
        world::serve();
        return;
    }
    let root = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "/".into()));
    let (mut passed, mut failed) = (0, 0);
    run_checks(&root, |name, result| match result {
        Ok(true) => {
            passed += 1;
            println!("ok {name}");
        }
        Ok(false) => println!("skip {name}"),
        Err(e) => {
            failed += 1;
            println!("FAIL {name}: {e}");
        }
    });
    println!("done {passed} {failed}");
    if failed > 0 {
        std::process::exit(1);
    }
}
