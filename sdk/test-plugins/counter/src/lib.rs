//! What both versions of the counter share: the endpoint's place, the answer
//! to a hit, and the two formats of the count. Version 1 keeps the count in
//! `count.txt` as text; version 2 in `count.json`, and moves the text into it
//! in `rpc.retired`.

use std::path::PathBuf;

use sausage_plugin::{Result, schema, serde_json, state_dir, write_atomic};

/// The endpoint file of the running service.
pub const ENDPOINT: &str = "/run/counter";

/// The answer to a hit.
#[schema]
pub struct Hit {
    /// The count after this hit.
    pub count: u64,
    /// The version of the counter that answered.
    pub version: u32,
}

/// Version 1's count: a number as text.
pub fn text_file() -> PathBuf {
    state_dir().join("count.txt")
}

/// Version 2's count: `{"count": n}`.
pub fn json_file() -> PathBuf {
    state_dir().join("count.json")
}

/// Version 1's count, if there is one.
pub fn read_text() -> Result<Option<u64>> {
    match std::fs::read_to_string(text_file()) {
        Ok(text) => Ok(Some(text.trim().parse().map_err(|e| sausage_plugin::Error::new(format!("count.txt: {e}")))?)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Writes version 1's count.
pub fn write_text(count: u64) -> Result<()> {
    Ok(write_atomic(text_file(), count.to_string())?)
}

/// Version 2's count, if there is one.
pub fn read_json() -> Result<Option<u64>> {
    match std::fs::read(json_file()) {
        Ok(bytes) => Ok(serde_json::from_slice::<serde_json::Value>(&bytes)?["count"].as_u64()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Writes version 2's count.
pub fn write_json(count: u64) -> Result<()> {
    Ok(write_atomic(json_file(), serde_json::to_vec(&serde_json::json!({ "count": count }))?)?)
}
