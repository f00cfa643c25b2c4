//! The agent: a person talks to it, and it grows the world with its tools.
//!
//! It talks to a model (`/config/agent.yaml`: OpenAI chat completions or
//! Anthropic messages, streamed over `wasi:http`), reads and writes the
//! world's files, calls plugins, builds them with `cargo.build` and
//! activates them with `core.activate`. Each session is durable in
//! `/state/agent/<session>/`: every step is journaled as it happens, and a
//! turn cut off by a crash, a kill or a Stop is closed at the next message.

mod anthropic;
mod config;
mod context;
mod imports;
mod model;
mod openai;
mod pages;
mod prompt;
mod sse;
mod store;
mod text_calls;
mod tools;
mod turn;

use sausage_plugin::{Ctx, Error, Result, lock, rpc, schema};
use store::Session;

/// The most bytes of steps that one `history` answer holds.
const HISTORY_BYTES: usize = 8 << 20;

/// The agent. Each call is a fresh process; the conversations are files.
struct Agent;

/// The params of `chat`.
#[schema]
struct ChatParams {
    /// The person's message.
    text: String,
    /// The session: a-z, 0-9, - and _ (default `default`). Each session is a conversation of its own.
    session: Option<String>,
}

/// A session to read or reset.
#[schema]
struct SessionParams {
    /// The session (default `default`).
    session: Option<String>,
}

/// The params of `history`.
#[schema]
struct HistoryParams {
    /// The session (default `default`).
    session: Option<String>,
    /// Only the last this many steps (default all).
    limit: Option<u32>,
}

/// One step of a conversation: a message of the person, the model or a tool.
#[schema]
struct Step {
    /// The step's number in the session's journal.
    seq: u64,
    /// When it was journaled (ISO 8601, UTC).
    time: String,
    /// `user`, `assistant`, `tool`, or `error` for a failed or stopped turn; `notice` for a fresh context.
    role: String,
    /// The text of the message (for a tool result: a short summary).
    text: String,
    /// What the message holds: `text`, `toolRequest`, `toolResponse`, `error`, `cancelled`, `compaction`, `context-reset`.
    blocks: Vec<String>,
    /// The tools that the message calls or answers.
    tools: Vec<String>,
    /// The arguments of a tool call, short.
    #[serde(skip_serializing_if = "Option::is_none")]
    args: Option<String>,
    /// Whether a tool call succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    ok: Option<bool>,
    /// The turn's input tokens (on its final step).
    #[serde(skip_serializing_if = "Option::is_none")]
    input_tokens: Option<u64>,
    /// The turn's output tokens (on its final step).
    #[serde(skip_serializing_if = "Option::is_none")]
    output_tokens: Option<u64>,
    /// The turn's time in milliseconds (on its final step).
    #[serde(skip_serializing_if = "Option::is_none")]
    ms: Option<u64>,
}

/// A session and how far it has come.
#[schema]
struct SessionInfo {
    /// Its name.
    session: String,
    /// The number of steps.
    steps: u64,
    /// The person's first message, short.
    title: String,
    /// The time of the last step (ISO 8601), empty when it has none.
    updated: String,
}

/// The result of `reset`.
#[schema]
struct ResetDone {
    /// The session that starts afresh.
    session: String,
}

fn session_name(given: Option<String>) -> Result<String> {
    let name = given.unwrap_or_else(|| "default".into());
    store::check_name(&name).map_err(Error::invalid_params)?;
    Ok(name)
}

fn io(e: std::io::Error) -> Error {
    Error::new(format!("cannot read or write the session in {}: {e}", store::SESSIONS_DIR))
}

fn step_of(entry: &store::Entry) -> Option<Step> {
    let d = &entry.data;
    let strings = |key: &str| -> Vec<String> {
        d[key].as_array().map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect()).unwrap_or_default()
    };
    match entry.kind.as_str() {
        "agent.step.v1" => Some(Step {
            seq: entry.seq,
            time: entry.time.clone(),
            role: d["role"].as_str().unwrap_or("").into(),
            text: d["text"].as_str().unwrap_or("").into(),
            blocks: strings("blocks"),
            tools: strings("tools"),
            args: d["args"].as_str().map(String::from),
            ok: d["ok"].as_bool(),
            input_tokens: d["input_tokens"].as_u64(),
            output_tokens: d["output_tokens"].as_u64(),
            ms: d["ms"].as_u64(),
        }),
        "agent.context-reset.v1" => Some(Step {
            seq: entry.seq,
            time: entry.time.clone(),
            role: "notice".into(),
            text: format!("A fresh context: {}", d["reason"].as_str().unwrap_or("reset")),
            blocks: vec!["context-reset".into()],
            tools: vec![],
            args: None,
            ok: None,
            input_tokens: None,
            output_tokens: None,
            ms: None,
        }),
        _ => None,
    }
}

#[rpc(grace_seconds = 600)]
impl Agent {
    /// Answer a person's message; the result is the model's final text.
    ///
    /// While it works, the caller gets `core.notify` named `text` with each
    /// streamed delta (`{"session", "text"}`), and `step` for each tool call
    /// and result (`{"session", "role", "text", "blocks", "tools", "args",
    /// "ok"}`). A second message to the same session waits until the first
    /// turn ends. The configuration is read from `/config/agent.yaml` at each
    /// message. Stop a turn with `core.stop` of this process: it is journaled
    /// as cancelled, with what was streamed so far.
    async fn chat(&self, ctx: &Ctx, ChatParams { text, session }: ChatParams) -> Result<String> {
        let name = session_name(session)?;
        if text.trim().is_empty() {
            return Err(Error::invalid_params("`text` is empty: send the person's message"));
        }
        let config = config::load().map_err(Error::new)?;
        std::fs::create_dir_all(store::dir_of(&name)).map_err(io)?;
        let _lock = lock(store::lock_path(&name)).await?;
        let mut session = Session::open(&name).map_err(io)?;
        for note in session.recovered.drain(..) {
            eprintln!("agent: {note}");
        }
        let closed = turn::close_interrupted(&mut session).map_err(io)?;
        if closed > 0 {
            eprintln!("agent: session {name}: closed {closed} operations that a previous process left open");
        }
        turn::run(ctx, &config, session, text).await
    }

    /// The steps of a session, oldest first: the person's messages, the
    /// model's answers, the tool calls and their results.
    fn history(&self, HistoryParams { session, limit }: HistoryParams) -> Result<Vec<Step>> {
        let name = session_name(session)?;
        let mut steps: Vec<Step> = Session::read_entries(&name).map_err(io)?.iter().filter_map(step_of).collect();
        if let Some(limit) = limit {
            let keep = steps.len().saturating_sub(limit as usize);
            steps.drain(..keep);
        }
        // the newest steps that fit in one answer, each text at most 64 KiB
        let mut budget = HISTORY_BYTES;
        let mut first = steps.len();
        for (i, step) in steps.iter_mut().enumerate().rev() {
            step.text = turn::clip_text(&step.text, 64 * 1024);
            let size = step.text.len() + 256;
            if size > budget {
                break;
            }
            budget -= size;
            first = i;
        }
        steps.drain(..first);
        Ok(steps)
    }

    /// The sessions, by name.
    fn sessions(&self) -> Result<Vec<SessionInfo>> {
        let mut out = Vec::new();
        let entries = match std::fs::read_dir(store::SESSIONS_DIR) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
            Err(e) => return Err(io(e)),
        };
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| store::check_name(n).is_ok())
            .collect();
        names.sort();
        for name in names {
            let entries = Session::read_entries(&name).map_err(io)?;
            let steps: Vec<&store::Entry> = entries.iter().filter(|e| e.kind == "agent.step.v1").collect();
            let title = steps
                .iter()
                .find(|e| e.data["role"] == "user")
                .and_then(|e| e.data["text"].as_str())
                .map(|t| tools::clip_line(t, 80))
                .unwrap_or_default();
            out.push(SessionInfo {
                session: name,
                steps: steps.len() as u64,
                title,
                updated: entries.last().map(|e| e.time.clone()).unwrap_or_default(),
            });
        }
        Ok(out)
    }

    /// Start a session afresh: the model forgets the conversation. The
    /// history stays, with a note where the fresh context began. Waits for a
    /// turn of the session that runs.
    async fn reset(&self, SessionParams { session }: SessionParams) -> Result<ResetDone> {
        let name = session_name(session)?;
        std::fs::create_dir_all(store::dir_of(&name)).map_err(io)?;
        let _lock = lock(store::lock_path(&name)).await?;
        let mut s = Session::open(&name).map_err(io)?;
        turn::close_interrupted(&mut s).map_err(io)?;
        s.state.context.clear();
        s.commit(vec![("agent.context-reset.v1", serde_json::json!({"reason": "agent.reset"}))]).map_err(io)?;
        Ok(ResetDone { session: name })
    }
}

fn main() {
    sausage_plugin::run(Agent);
}
