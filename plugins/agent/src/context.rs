//! The model's context: the conversation in a form of the agent's own, which
//! each API module turns into its provider's messages.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One message of the conversation.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// The person's message.
    User { text: String },
    /// The model's answer: text and the tools it calls.
    Assistant {
        text: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
        /// `reasoning_content` of an OpenAI-compatible provider, sent back with tool calls.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reasoning: Option<String>,
        /// Anthropic's thinking blocks, byte for byte with their signatures.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        thinking: Vec<Value>,
        /// The API that produced `reasoning` and `thinking`: another API never sees them.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        api: String,
    },
    /// A tool's result.
    Tool { call_id: String, name: String, content: String, is_error: bool },
}

impl Message {
    /// An answer of the model that is text alone (what streamed before a turn was cut off).
    pub fn answer(text: String) -> Message {
        Message::Assistant { text, tool_calls: vec![], reasoning: None, thinking: vec![], api: String::new() }
    }
}

/// A tool call of the model.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments as the model wrote them (JSON text, perhaps invalid).
    pub arguments: String,
}

/// What a tool result says when its call never completed.
pub const NO_RESULT: &str = "This tool call has no result: it did not complete (the turn was cut off before it ran or \
                             while it ran). It was not repeated.";

/// Makes every tool call have exactly one result right after its message, as
/// providers require: a call without one gets [`NO_RESULT`]; a result without
/// a call is dropped. Returns how many messages it added or removed.
pub fn repair(messages: &mut Vec<Message>) -> usize {
    let mut out: Vec<Message> = Vec::with_capacity(messages.len());
    let mut changes = 0;
    let mut i = 0;
    while i < messages.len() {
        let message = messages[i].clone();
        i += 1;
        match &message {
            Message::Assistant { tool_calls, .. } if !tool_calls.is_empty() => {
                let calls = tool_calls.clone();
                out.push(message);
                let mut results: Vec<Message> = Vec::new();
                while let Some(Message::Tool { call_id, .. }) = messages.get(i) {
                    if calls.iter().any(|c| &c.id == call_id)
                        && !results.iter().any(|r| matches!(r, Message::Tool { call_id: id, .. } if id == call_id))
                    {
                        results.push(messages[i].clone());
                    } else {
                        changes += 1;
                    }
                    i += 1;
                }
                for call in &calls {
                    let found = results.iter().position(|r| matches!(r, Message::Tool { call_id, .. } if *call_id == call.id));
                    match found {
                        Some(at) => out.push(results.remove(at)),
                        None => {
                            changes += 1;
                            out.push(Message::Tool {
                                call_id: call.id.clone(),
                                name: call.name.clone(),
                                content: NO_RESULT.into(),
                                is_error: true,
                            });
                        }
                    }
                }
            }
            Message::Tool { .. } => changes += 1, // a result whose call is not right before it
            _ => out.push(message),
        }
    }
    *messages = out;
    changes
}

/// A rough count of tokens: about four bytes a token, as tokenizers give for
/// English and code.
pub fn estimate_tokens(messages: &[Message]) -> u64 {
    messages
        .iter()
        .map(|m| match m {
            Message::User { text } => text.len() + 16,
            Message::Assistant { text, tool_calls, reasoning, thinking, .. } => {
                text.len()
                    + tool_calls.iter().map(|c| c.name.len() + c.arguments.len() + 16).sum::<usize>()
                    + reasoning.as_ref().map_or(0, String::len)
                    + thinking.iter().map(|t| t.to_string().len()).sum::<usize>()
                    + 16
            }
            Message::Tool { content, .. } => content.len() + 16,
        } as u64)
        .sum::<u64>()
        / 4
}

/// What a compaction did.
#[derive(Debug, PartialEq)]
pub struct Compacted {
    pub results: usize,
    pub tokens_before: u64,
    pub tokens_after: u64,
    /// One line per compacted result: the tool and how large it was.
    pub summary: Vec<String>,
}

/// Results shorter than this stay as they are.
const KEEP_SHORT: usize = 600;

/// Replaces the content of older tool results with a short note, oldest
/// first, until the estimate is below `target` tokens. The tool results of
/// the last `keep_recent` messages stay whole, so the model keeps what it is
/// working on. Returns `None` when there was nothing to compact.
pub fn compact(messages: &mut [Message], target: u64, keep_recent: usize) -> Option<Compacted> {
    let before = estimate_tokens(messages);
    let mut summary = Vec::new();
    let end = messages.len().saturating_sub(keep_recent);
    let mut estimate = before;
    for message in messages[..end].iter_mut() {
        if estimate <= target {
            break;
        }
        if let Message::Tool { name, content, .. } = message {
            // a note is always shorter than KEEP_SHORT, so it is never compacted again; no text of a
            // result (which a file or a server chooses) decides it
            if content.len() <= KEEP_SHORT {
                continue;
            }
            let head = &content[..content.floor_char_boundary(300)];
            let note = format!(
                "[compacted to keep the conversation within context_tokens: the {} bytes of this {name} result \
                 are gone; it began: {head}…]",
                content.len()
            );
            summary.push(format!("{name}: {} bytes", content.len()));
            estimate = estimate.saturating_sub((content.len().saturating_sub(note.len()) / 4) as u64);
            *content = note;
        }
    }
    if summary.is_empty() {
        return None;
    }
    Some(Compacted { results: summary.len(), tokens_before: before, tokens_after: estimate_tokens(messages), summary })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str) -> ToolCall {
        ToolCall { id: id.into(), name: "read_file".into(), arguments: "{}".into() }
    }

    fn result(id: &str) -> Message {
        Message::Tool { call_id: id.into(), name: "read_file".into(), content: "x".into(), is_error: false }
    }

    fn assistant(calls: Vec<ToolCall>) -> Message {
        Message::Assistant { text: String::new(), tool_calls: calls, reasoning: None, thinking: vec![], api: String::new() }
    }

    #[test]
    fn a_dangling_call_gets_a_result() {
        let mut m = vec![Message::User { text: "hi".into() }, assistant(vec![call("a"), call("b")]), result("a")];
        assert_eq!(repair(&mut m), 1);
        assert_eq!(m.len(), 4);
        assert!(matches!(&m[3], Message::Tool { call_id, is_error: true, .. } if call_id == "b"));
    }

    #[test]
    fn an_orphan_result_is_dropped_and_order_follows_the_calls() {
        let mut m = vec![assistant(vec![call("a"), call("b")]), result("b"), result("a"), result("zz")];
        assert_eq!(repair(&mut m), 1);
        assert!(matches!(&m[1], Message::Tool { call_id, .. } if call_id == "a"));
        assert!(matches!(&m[2], Message::Tool { call_id, .. } if call_id == "b"));
        let mut again = m.clone();
        assert_eq!(repair(&mut again), 0);
        assert_eq!(again, m);
    }

    #[test]
    fn compaction_keeps_recent_results() {
        let big = "y".repeat(40_000);
        let mut m = vec![
            assistant(vec![call("a")]),
            Message::Tool { call_id: "a".into(), name: "read_file".into(), content: big.clone(), is_error: false },
            assistant(vec![call("b")]),
            Message::Tool { call_id: "b".into(), name: "read_file".into(), content: big.clone(), is_error: false },
        ];
        let done = compact(&mut m, 12_000, 2).unwrap();
        assert_eq!(done.results, 1);
        assert!(matches!(&m[1], Message::Tool { content, .. } if content.starts_with("[compacted")));
        assert!(matches!(&m[3], Message::Tool { content, .. } if content.len() == 40_000));
        assert!(compact(&mut m, 12_000, 2).is_none());
    }

    #[test]
    fn a_result_that_looks_like_a_note_is_compacted_and_a_note_never_again() {
        // a file or a server may begin its text with the note's words: only the length decides
        let look_alike = format!("[compacted {}", "é".repeat(30_000));
        let long_name = "mcp__server__".to_string() + &"t".repeat(51);
        let mut m = vec![
            assistant(vec![call("a")]),
            Message::Tool { call_id: "a".into(), name: long_name, content: look_alike, is_error: false },
        ];
        assert_eq!(compact(&mut m, 100, 0).unwrap().results, 1);
        let Message::Tool { content, .. } = &m[1] else { unreachable!() };
        assert!(content.len() <= KEEP_SHORT, "a note of {} bytes", content.len());
        assert!(compact(&mut m, 0, 0).is_none());
    }
}
