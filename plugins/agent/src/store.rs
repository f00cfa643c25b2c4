//! A durable session in `/state/agent/<session>/`, in the manner of a
//! journal and a snapshot:
//!
//! - `journal.jsonl`: one entry a line (`agent.step.v1`, `agent.op.v1`,
//!   `agent.op-result.v1`, `agent.context-reset.v1`, `agent.compaction.v1`),
//!   only ever appended;
//! - `state.json`: the model's context and the open operations, with a
//!   format version and the length of the journal it goes with.
//!
//! A commit appends its entries, then replaces `state.json` in one rename.
//! It returns once both survive a power cut: the journal's new bytes are
//! synced before `state.json` names them, and `state.json` is written with
//! the SDK's `write_atomic` (file, then folder, synced).
//! Entries past the length that `state.json` names were never committed (a
//! kill between the two steps, or in the middle of a write): the next open
//! cuts them off. So the entries and the state change together or not at all.

use crate::context::Message;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};

/// The format of `state.json` that this version writes.
pub const FORMAT: u64 = 1;

/// Where sessions live.
pub const SESSIONS_DIR: &str = "/state/agent";

/// An operation that started and has no result yet.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct OpenOp {
    pub op: u64,
    /// `model` or `tool`.
    pub kind: String,
    /// The tool's name, or the model's.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

/// The snapshot in `state.json`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct State {
    pub format: u64,
    /// The sequence number of the last committed entry.
    pub seq: u64,
    /// The bytes of `journal.jsonl` that are committed.
    pub journal_bytes: u64,
    pub context: Vec<Message>,
    #[serde(default)]
    pub open_ops: Vec<OpenOp>,
    #[serde(default)]
    pub next_op: u64,
}

impl State {
    fn fresh(seq: u64, journal_bytes: u64) -> State {
        State { format: FORMAT, seq, journal_bytes, context: vec![], open_ops: vec![], next_op: 1 }
    }
}

/// One journal entry.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Entry {
    pub seq: u64,
    pub time: String,
    pub kind: String,
    pub data: Value,
}

/// A session, opened for writing (hold its lock: see [`lock_path`]).
pub struct Session {
    pub name: String,
    dir: PathBuf,
    pub state: State,
    /// What the open repaired, for the journal of the host (stderr).
    pub recovered: Vec<String>,
    /// Entries that go with the next commit (see [`Session::stage`]).
    staged: Vec<(String, Value)>,
    /// Whether a commit waits for the disk (false only for the benchmark's baseline).
    durable: bool,
}

/// Session names: like plugin names.
pub fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(format!("the session name {name:?} is not valid: use a-z, 0-9, - and _, at most 64 characters"))
    }
}

/// The folder of a session.
pub fn dir_of(name: &str) -> PathBuf {
    Path::new(SESSIONS_DIR).join(name)
}

/// The path the agent locks while a turn of the session runs.
pub fn lock_path(name: &str) -> PathBuf {
    dir_of(name).join("journal.jsonl")
}

/// Now, as an ISO 8601 time in UTC with milliseconds.
pub fn now_iso() -> String {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    iso_time(since.as_millis() as u64)
}

/// Milliseconds since 1970 as an ISO 8601 time in UTC.
pub fn iso_time(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // civil date from days since 1970-01-01 (Howard Hinnant's algorithm)
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        ms % 1000
    )
}

impl Session {
    /// Opens a session (creating it), and repairs what a crash left: an
    /// uncommitted tail of the journal is cut off; a `state.json` of a newer
    /// format is kept under another name and never overwritten, and the
    /// session starts a fresh context with an `agent.context-reset.v1` entry.
    pub fn open(name: &str) -> std::io::Result<Session> {
        let dir = dir_of(name);
        if !dir.is_dir() {
            std::fs::create_dir_all(&dir)?;
            // a new session's folder is named in /state/agent: that name survives a power cut too
            sausage_plugin::sync_folder(SESSIONS_DIR)?;
        }
        let journal = dir.join("journal.jsonl");
        let journal_len = match std::fs::metadata(&journal) {
            Ok(m) => m.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => return Err(e),
        };
        let state_path = dir.join("state.json");
        let mut recovered = Vec::new();
        let mut reset: Option<String> = None;
        let mut state = match std::fs::read(&state_path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if journal_len > 0 {
                    let (seq, bytes) = scan(&journal)?;
                    reset = Some("its state.json was missing".into());
                    State::fresh(seq, bytes)
                } else {
                    State::fresh(0, 0)
                }
            }
            Err(e) => return Err(e),
            Ok(bytes) => {
                let format = serde_json::from_slice::<Value>(&bytes).ok().and_then(|v| v["format"].as_u64());
                match format {
                    Some(f) if f > FORMAT => {
                        let kept = unused_name(&dir, &format!("state.format-{f}"));
                        std::fs::rename(&state_path, &kept)?;
                        let (seq, bytes) = scan(&journal)?;
                        reset = Some(format!(
                            "its state has format {f}, newer than this agent's {FORMAT} (an older agent after a \
                             revert?); the state was kept as {} and not overwritten",
                            kept.display()
                        ));
                        State::fresh(seq, bytes)
                    }
                    _ => match migrate(&bytes) {
                        Ok(state) => state,
                        Err(why) => {
                            let kept = unused_name(&dir, "state.unreadable");
                            std::fs::rename(&state_path, &kept)?;
                            let (seq, bytes) = scan(&journal)?;
                            reset = Some(format!("its state could not be read ({why}); it was kept as {}", kept.display()));
                            State::fresh(seq, bytes)
                        }
                    },
                }
            }
        };
        if journal_len > state.journal_bytes {
            std::fs::OpenOptions::new().write(true).open(&journal)?.set_len(state.journal_bytes)?;
            recovered.push(format!(
                "session {name}: cut off {} bytes of the journal that were never committed",
                journal_len - state.journal_bytes
            ));
        } else if journal_len < state.journal_bytes {
            recovered.push(format!(
                "session {name}: the journal is shorter than its state says ({journal_len} < {} bytes)",
                state.journal_bytes
            ));
            state.journal_bytes = journal_len;
        }
        let mut session = Session { name: name.to_string(), dir, state, recovered, staged: vec![], durable: true };
        if let Some(why) = reset {
            session.recovered.push(format!("session {name}: a fresh context, because {why}"));
            session.commit(vec![("agent.context-reset.v1", json!({"reason": why}))])?;
        }
        Ok(session)
    }

    /// Keeps entries for the next commit. A turn stages what happened and
    /// commits before its next model or tool call, with no wait in between,
    /// so an entry is as durable as if it had been committed at once, for
    /// half the writes.
    pub fn stage(&mut self, entries: Vec<(&str, Value)>) {
        self.staged.extend(entries.into_iter().map(|(kind, data)| (kind.to_string(), data)));
    }

    /// Appends the staged entries and `entries`, and writes the state (its
    /// context as it is now), as one commit.
    pub fn commit(&mut self, entries: Vec<(&str, Value)>) -> std::io::Result<Vec<Entry>> {
        self.stage(entries);
        let entries = std::mem::take(&mut self.staged);
        let time = now_iso();
        let mut written = Vec::with_capacity(entries.len());
        let mut text = String::new();
        let mut seq = self.state.seq;
        for (kind, data) in entries {
            seq += 1;
            let entry = Entry { seq, time: time.clone(), kind, data };
            text.push_str(&serde_json::to_string(&entry)?);
            text.push('\n');
            written.push(entry);
        }
        if !text.is_empty() {
            let mut file =
                std::fs::OpenOptions::new().create(true).append(true).open(self.dir.join("journal.jsonl"))?;
            file.write_all(text.as_bytes())?;
            // on the disk before state.json names these bytes as committed
            if self.durable {
                file.sync_data()?;
            }
        }
        let mut next = self.state.clone();
        next.seq = seq;
        next.journal_bytes += text.len() as u64;
        let state = serde_json::to_vec(&next)?;
        if self.durable {
            sausage_plugin::write_atomic(self.dir.join("state.json"), state)?;
        } else {
            replace(&self.dir.join("state.json"), &state)?;
        }
        self.state = next;
        Ok(written)
    }

    /// A new operation: its number, and the entry that records it.
    pub fn begin_op(&mut self, kind: &str, name: &str, call_id: Option<&str>, detail: Value) -> (u64, Value) {
        let op = self.state.next_op.max(1);
        self.state.next_op = op + 1;
        self.state.open_ops.push(OpenOp {
            op,
            kind: kind.into(),
            name: name.into(),
            call_id: call_id.map(String::from),
        });
        let mut data = json!({"op": op, "type": kind, "name": name});
        if let Some(id) = call_id {
            data["call_id"] = json!(id);
        }
        if !detail.is_null() {
            data["detail"] = detail;
        }
        (op, data)
    }

    /// Ends an operation: the entry that records its result.
    pub fn end_op(&mut self, op: u64, status: &str, detail: Value) -> Value {
        self.state.open_ops.retain(|o| o.op != op);
        let mut data = json!({"op": op, "status": status});
        if !detail.is_null() {
            data["detail"] = detail;
        }
        data
    }

    /// The committed entries of a session, read without its lock.
    pub fn read_entries(name: &str) -> std::io::Result<Vec<Entry>> {
        let dir = dir_of(name);
        let bytes = match std::fs::read(dir.join("journal.jsonl")) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
            Err(e) => return Err(e),
        };
        let committed = std::fs::read(dir.join("state.json"))
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .and_then(|v| v["journal_bytes"].as_u64())
            .map_or(bytes.len(), |n| (n as usize).min(bytes.len()));
        Ok(bytes[..committed]
            .split(|b| *b == b'\n')
            .filter_map(|line| serde_json::from_slice::<Entry>(line).ok())
            .collect())
    }
}

/// Replaces a file in one rename, without waiting for the disk: what a
/// commit did before it was made durable, kept as the benchmark's baseline.
fn replace(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("state.json");
    let temporary = path.with_file_name(format!(".{name}.{}.tmp", sausage_plugin::pid()));
    let written = std::fs::write(&temporary, bytes).and_then(|()| std::fs::rename(&temporary, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

/// Reads a `state.json` of this format or an older one.
fn migrate(bytes: &[u8]) -> Result<State, String> {
    // Format 1 is the first; an older one would be converted here, field by field.
    serde_json::from_slice::<State>(bytes).map_err(|e| e.to_string())
}

/// The last sequence number and the length of the complete lines of a journal.
fn scan(journal: &Path) -> std::io::Result<(u64, u64)> {
    let bytes = match std::fs::read(journal) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((0, 0)),
        Err(e) => return Err(e),
    };
    let complete = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    let seq = bytes[..complete]
        .split(|b| *b == b'\n')
        .filter_map(|line| serde_json::from_slice::<Value>(line).ok())
        .filter_map(|v| v["seq"].as_u64())
        .max()
        .unwrap_or(0);
    Ok((seq, complete as u64))
}

fn unused_name(dir: &Path, stem: &str) -> PathBuf {
    let first = dir.join(format!("{stem}.json"));
    if !first.exists() {
        return first;
    }
    (2..).map(|n| dir.join(format!("{stem}.{n}.json"))).find(|p| !p.exists()).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_times() {
        assert_eq!(iso_time(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_time(1_764_582_245_123), "2025-12-01T09:44:05.123Z");
        assert_eq!(iso_time(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn an_uncommitted_tail_is_cut_off() {
        let mut s = Session::open("t1").unwrap();
        s.state.context.push(Message::User { text: "hi".into() });
        s.commit(vec![("agent.step.v1", json!({"role": "user", "text": "hi"}))]).unwrap();
        let committed = std::fs::metadata(lock_path("t1")).unwrap().len();
        // a kill between the append and the state, and a torn line
        let mut f = std::fs::OpenOptions::new().append(true).open(lock_path("t1")).unwrap();
        f.write_all(b"{\"seq\":2,\"time\":\"x\",\"kind\":\"agent.step.v1\",\"data\":{}}\n{\"seq\":3,").unwrap();
        let s = Session::open("t1").unwrap();
        assert_eq!(std::fs::metadata(lock_path("t1")).unwrap().len(), committed);
        assert_eq!(s.state.context.len(), 1);
        assert_eq!(s.recovered.len(), 1);
        assert_eq!(Session::read_entries("t1").unwrap().len(), 1);
    }

    #[test]
    fn a_newer_format_is_kept_and_not_overwritten() {
        let mut s = Session::open("t2").unwrap();
        s.commit(vec![("agent.step.v1", json!({"role": "user", "text": "hi"}))]).unwrap();
        let newer = r#"{"format": 99, "seq": 1, "journal_bytes": 10, "whatever": true}"#;
        std::fs::write(dir_of("t2").join("state.json"), newer).unwrap();
        let s = Session::open("t2").unwrap();
        assert_eq!(std::fs::read_to_string(dir_of("t2").join("state.format-99.json")).unwrap(), newer);
        assert!(s.state.context.is_empty());
        let entries = Session::read_entries("t2").unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[1].kind, "agent.context-reset.v1");
        assert_eq!(entries[1].seq, 2);
    }

    #[test]
    fn an_empty_state_after_a_power_loss_is_kept_aside() {
        let mut s = Session::open("t3").unwrap();
        s.state.context.push(Message::User { text: "hi".into() });
        s.commit(vec![("agent.step.v1", json!({"role": "user", "text": "hi"}))]).unwrap();
        std::fs::write(dir_of("t3").join("state.json"), b"").unwrap();
        let s = Session::open("t3").unwrap();
        assert!(s.state.context.is_empty());
        assert!(dir_of("t3").join("state.unreadable.json").exists());
        let kinds: Vec<String> = Session::read_entries("t3").unwrap().into_iter().map(|e| e.kind).collect();
        assert_eq!(kinds, ["agent.step.v1", "agent.context-reset.v1"]);
    }

    #[test]
    fn session_names() {
        assert!(check_name("default").is_ok());
        assert!(check_name("a-b_9").is_ok());
        assert!(check_name("../x").is_err());
        assert!(check_name("").is_err());
        assert!(check_name(&"a".repeat(65)).is_err());
    }
}

/// What durability costs, measured in the benchmark (`deno task bench --only durability`):
/// a session commit and the SDK's `write_atomic` of 8 KiB, each with and without its syncs,
/// interleaved so that both see the same disk. Writes the medians to `durability.json` in the
/// crate's folder (which `sausage test` gives the test at its own path).
#[cfg(test)]
mod durability_costs {
    use super::*;
    use std::time::Instant;

    fn median(mut v: Vec<f64>) -> f64 {
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    }

    fn time(f: impl FnOnce()) -> f64 {
        let t = Instant::now();
        f();
        t.elapsed().as_secs_f64() * 1000.0
    }

    #[test]
    #[ignore = "a benchmark: deno task bench --only durability runs it"]
    fn durability_costs() {
        let rounds = 200;
        let mut synced = Session::open("bench-synced").unwrap();
        let mut unsynced = Session::open("bench-unsynced").unwrap();
        unsynced.durable = false;
        let bytes = vec![b'x'; 8192];
        let dir = std::path::Path::new("/state/bench-files");
        std::fs::create_dir_all(dir).unwrap();
        let (mut commit_on, mut commit_off, mut write_on, mut write_off) = (vec![], vec![], vec![], vec![]);
        for i in 0..rounds {
            for s in [&mut synced, &mut unsynced] {
                s.state.context.push(Message::User { text: format!("message {i}") });
            }
            let step = || json!({"role": "user", "text": format!("message {i}")});
            commit_on.push(time(|| {
                synced.commit(vec![("agent.step.v1", step())]).unwrap();
            }));
            commit_off.push(time(|| {
                unsynced.commit(vec![("agent.step.v1", step())]).unwrap();
            }));
            write_on.push(time(|| sausage_plugin::write_atomic(dir.join("synced"), &bytes).unwrap()));
            write_off.push(time(|| replace(&dir.join("unsynced"), &bytes).unwrap()));
        }
        let medians = json!({
                "rounds": rounds,
                "commit_synced_ms": median(commit_on),
                "commit_unsynced_ms": median(commit_off),
                "write_atomic_synced_ms": median(write_on),
                "write_atomic_unsynced_ms": median(write_off),
        });
        let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("durability.json");
        std::fs::write(out, medians.to_string()).unwrap();
    }
}
