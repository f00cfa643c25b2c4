//! Notes: a list of short texts, stored in `/state/notes/notes.json`.
//!
//! Each call runs in its own process, so two calls can run at the same time.
//! `add` takes a lock on the file, so that no note gets lost.

use std::path::PathBuf;

use sausage_plugin::{Result, lock, rpc, schema, serde_json, state_dir, write_atomic};

/// The notes plugin. It keeps no state in memory: each call reads the file.
struct Notes;

/// The params of `add`.
#[schema]
struct AddParams {
    /// The text of the new note. It can contain newlines.
    text: String,
}

/// The result of `add`.
#[schema]
struct Added {
    /// The number of notes after the call, with the new note.
    count: usize,
}

#[rpc]
impl Notes {
    /// Add a note at the end of the list.
    ///
    /// Returns the number of notes after the call.
    async fn add(&self, AddParams { text }: AddParams) -> Result<Added> {
        let _lock = lock(file()).await?; // released on drop, or when the process ends
        let mut notes = load()?;
        notes.push(text);
        write_atomic(file(), serde_json::to_vec(&notes)?)?;
        Ok(Added { count: notes.len() })
    }

    /// List all notes, the oldest first.
    fn list(&self) -> Result<Vec<String>> {
        load() // no lock: write_atomic replaces the file in one step
    }
}

/// The file with the notes: a JSON list of strings.
fn file() -> PathBuf {
    state_dir().join("notes.json")
}

/// Read all notes. A missing file means no notes.
fn load() -> Result<Vec<String>> {
    match std::fs::read(file()) {
        Ok(bytes) => Ok(serde_json::from_slice(&bytes)?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(vec![]),
        Err(e) => Err(e.into()),
    }
}

fn main() {
    sausage_plugin::run(Notes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[sausage_plugin::test]
    async fn add_appends_and_counts() {
        assert_eq!(Notes.add(AddParams { text: "milk".into() }).await.unwrap().count, 1);
        assert_eq!(Notes.add(AddParams { text: "eggs".into() }).await.unwrap().count, 2);
        assert_eq!(Notes.list().unwrap(), ["milk", "eggs"]);
    }

    #[test]
    fn list_is_empty_without_a_file() {
        assert!(Notes.list().unwrap().is_empty());
    }
}
