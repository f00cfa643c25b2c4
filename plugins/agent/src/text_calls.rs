//! Tool calls that a model wrote as text. A local model (Ollama, llama.cpp,
//! vLLM) whose chat template's parser misses a call sends it in the content
//! with `finish_reason: "stop"`; read as an answer, the turn would end with
//! the call shown to the person. The forms of the common templates:
//!
//! - Hermes and Qwen: `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`, one or more;
//! - Llama 3.x: `<|python_tag|>{"name": ..., "parameters": {...}}`, or such an object alone;
//! - Mistral: `[TOOL_CALLS][{"name": ..., "arguments": {...}}]`, or `[TOOL_CALLS]name[ARGS]{...}`;
//! - any model: a JSON object `{"name": <a known tool>, "arguments": {...}}` as the whole answer.
//!
//! Only a tool the model was given is a call, and never text inside a fenced
//! code block or a `<think>` block: an answer that shows such JSON stays an answer.

use serde_json::{Map, Value};

/// Tool calls found in an answer's text.
#[derive(Debug, PartialEq)]
pub struct TextCalls {
    /// Which form: `hermes`, `llama`, `mistral` or `json`.
    pub form: &'static str,
    /// Each call's tool and its arguments as JSON text.
    pub calls: Vec<(String, String)>,
    /// The text around the calls (trimmed), which stays the answer's text.
    pub prose: String,
}

/// The tool calls written in `text`, if it holds any of a tool in `known`;
/// `None` leaves the text an answer. All calls of a form must be whole and
/// name known tools, or none counts (a half-read call would run the wrong thing).
pub fn parse(text: &str, known: &[&str]) -> Option<TextCalls> {
    // what a model thought aloud is not what it did
    let start = text.rfind("</think>").map_or(0, |i| i + "</think>".len());
    let (thought, body) = text.split_at(start);
    let fences = fenced(body);
    let visible = |at: usize| !fences.iter().any(|(a, b)| (*a..*b).contains(&at));
    let found = hermes(body, known, &visible)
        .or_else(|| llama(body, known, &visible))
        .or_else(|| mistral(body, known, &visible))
        .or_else(|| bare(body, known))?;
    let (form, calls, prose) = found;
    let prose = format!("{thought}{prose}").trim().to_string();
    Some(TextCalls { form, calls, prose })
}

type Found = (&'static str, Vec<(String, String)>, String);

/// The byte ranges of fenced code blocks (``` or ~~~ lines); an open fence runs to the end.
fn fenced(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut open: Option<(usize, &str)> = None;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let marker = if trimmed.starts_with("```") {
            Some("```")
        } else if trimmed.starts_with("~~~") {
            Some("~~~")
        } else {
            None
        };
        match (open, marker) {
            (None, Some(m)) => open = Some((at, m)),
            (Some((from, m)), Some(n)) if m == n && trimmed.trim_end() == m => {
                out.push((from, at + line.len()));
                open = None;
            }
            _ => {}
        }
        at += line.len();
    }
    if let Some((from, _)) = open {
        out.push((from, text.len()));
    }
    out
}

/// One call from a JSON value: `{"name", "arguments" | "parameters"}`, or
/// OpenAI's `{"type": "function", "function": {...}}`. Arguments given as
/// JSON text are read; missing ones are `{}`.
fn call_of(value: &Value, known: &[&str]) -> Option<(String, String)> {
    let object = value.as_object()?;
    if let Some(function) = object.get("function").filter(|f| f.is_object()) {
        return call_of(function, known);
    }
    let name = object.get("name")?.as_str()?;
    if !known.contains(&name) {
        return None;
    }
    let arguments = match object.get("arguments").or_else(|| object.get("parameters")) {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(v @ Value::Object(_)) => v.clone(),
        Some(Value::String(s)) => serde_json::from_str::<Value>(s).ok().filter(Value::is_object)?,
        Some(_) => return None,
    };
    Some((name.to_string(), arguments.to_string()))
}

/// The JSON values at the start of `text`, each followed by nothing but
/// whitespace, `;` or `,`; with the bytes they took.
fn values(text: &str) -> (Vec<Value>, usize) {
    let mut out = Vec::new();
    let mut at = 0;
    loop {
        let rest = &text[at..];
        let skip = rest.len() - rest.trim_start_matches(|c: char| c.is_whitespace() || c == ';' || c == ',').len();
        let rest = &rest[skip..];
        if !rest.starts_with(['{', '[']) {
            return (out, at);
        }
        let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
        match stream.next() {
            Some(Ok(v)) => {
                out.push(v);
                at += skip + stream.byte_offset();
            }
            _ => return (out, at),
        }
    }
}

/// Calls from values: each an object, or an array of objects.
fn calls_of(values: &[Value], known: &[&str]) -> Option<Vec<(String, String)>> {
    let mut calls = Vec::new();
    for v in values {
        match v {
            Value::Array(items) if !items.is_empty() => {
                for item in items {
                    calls.push(call_of(item, known)?);
                }
            }
            v => calls.push(call_of(v, known)?),
        }
    }
    (!calls.is_empty()).then_some(calls)
}

fn hermes(text: &str, known: &[&str], visible: &dyn Fn(usize) -> bool) -> Option<Found> {
    const OPEN: &str = "<tool_call>";
    const CLOSE: &str = "</tool_call>";
    let mut calls = Vec::new();
    let mut prose = String::new();
    let mut at = 0;
    while let Some(found) = text[at..].find(OPEN).map(|i| at + i) {
        if !visible(found) {
            prose.push_str(&text[at..found + OPEN.len()]);
            at = found + OPEN.len();
            continue;
        }
        prose.push_str(&text[at..found]);
        let inside = found + OPEN.len();
        // a model may stop at the closing tag's token, so the last one may be missing
        let end = text[inside..].find(CLOSE).map_or(text.len(), |i| inside + i);
        let (vals, used) = values(&text[inside..end]);
        if !text[inside + used..end].trim().is_empty() {
            return None;
        }
        calls.extend(calls_of(&vals, known)?);
        at = (end + CLOSE.len()).min(text.len());
    }
    prose.push_str(&text[at..]);
    (!calls.is_empty()).then_some(("hermes", calls, prose))
}

fn llama(text: &str, known: &[&str], visible: &dyn Fn(usize) -> bool) -> Option<Found> {
    const TAG: &str = "<|python_tag|>";
    let found = text.find(TAG).filter(|&i| visible(i))?;
    let rest = &text[found + TAG.len()..];
    let (vals, used) = values(rest);
    let tail = rest[used..].trim();
    let tail = tail.trim_end_matches("<|eom_id|>").trim_end_matches("<|eot_id|>").trim();
    if !tail.is_empty() {
        return None;
    }
    Some(("llama", calls_of(&vals, known)?, text[..found].to_string()))
}

fn mistral(text: &str, known: &[&str], visible: &dyn Fn(usize) -> bool) -> Option<Found> {
    const TAG: &str = "[TOOL_CALLS]";
    const ARGS: &str = "[ARGS]";
    let first = text.find(TAG).filter(|&i| visible(i))?;
    let mut calls = Vec::new();
    for piece in text[first + TAG.len()..].split(TAG) {
        let piece = piece.trim().trim_end_matches("</s>").trim();
        // the newer template: `name[ARGS]{...}`
        if let Some((name, arguments)) = piece.split_once(ARGS).filter(|(n, _)| !n.trim_start().starts_with(['[', '{'])) {
            let (vals, used) = values(arguments);
            if vals.len() != 1 || !arguments[used..].trim().is_empty() {
                return None;
            }
            let value = serde_json::json!({"name": name.trim(), "arguments": vals[0]});
            calls.push(call_of(&value, known)?);
            continue;
        }
        let (vals, used) = values(piece);
        if !piece[used..].trim().is_empty() {
            return None;
        }
        calls.extend(calls_of(&vals, known)?);
    }
    (!calls.is_empty()).then_some(("mistral", calls, text[..first].to_string()))
}

/// The whole answer is one call object (or an array of them), with no key
/// but those of a call: `{"name": "read_file", "arguments": {...}}`.
fn bare(text: &str, known: &[&str]) -> Option<Found> {
    let (vals, used) = values(text);
    if vals.is_empty() || !text[used..].trim().is_empty() {
        return None;
    }
    fn only_call_keys(v: &Value) -> bool {
        let Some(o) = v.as_object() else { return false };
        if let Some(function) = o.get("function") {
            return o.keys().all(|k| matches!(k.as_str(), "function" | "id" | "type")) && only_call_keys(function);
        }
        o.contains_key("name")
            && (o.contains_key("arguments") || o.contains_key("parameters"))
            && o.keys().all(|k| matches!(k.as_str(), "name" | "arguments" | "parameters" | "id" | "type"))
    }
    let all = vals.iter().all(|v| match v {
        Value::Array(items) => items.iter().all(only_call_keys),
        v => only_call_keys(v),
    });
    if !all {
        return None;
    }
    Some(("json", calls_of(&vals, known)?, String::new()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KNOWN: &[&str] = &["read_file", "list_dir", "call"];

    fn calls(text: &str) -> Option<(&'static str, Vec<(String, String)>, String)> {
        parse(text, KNOWN).map(|t| (t.form, t.calls, t.prose))
    }

    fn one(name: &str, args: &str) -> Vec<(String, String)> {
        vec![(name.to_string(), args.to_string())]
    }

    #[test]
    fn hermes_and_qwen() {
        let text = "I will read it.\n<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"/a\"}}\n</tool_call>";
        assert_eq!(calls(text), Some(("hermes", one("read_file", r#"{"path":"/a"}"#), "I will read it.".into())));
        let two = "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"/a\"}}</tool_call>\n\
                   <tool_call>{\"name\": \"list_dir\", \"arguments\": \"{\\\"path\\\": \\\"/\\\"}\"}</tool_call>";
        let (_, found, prose) = calls(two).unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(found[1], ("list_dir".into(), r#"{"path":"/"}"#.into()));
        assert_eq!(prose, "");
        // the closing tag left out (a model stopped at its token)
        let open = "<tool_call>\n{\"name\": \"list_dir\", \"arguments\": {\"path\": \"/\"}}\n";
        assert_eq!(calls(open).unwrap().1, one("list_dir", r#"{"path":"/"}"#));
        // a thought before the call stays with the prose; a call inside the thought is not one
        let thought = "<think>maybe <tool_call>{\"name\": \"call\", \"arguments\": {}}</tool_call></think>\n\
                       <tool_call>{\"name\": \"list_dir\", \"arguments\": {\"path\": \"/\"}}</tool_call>";
        let (_, found, prose) = calls(thought).unwrap();
        assert_eq!(found, one("list_dir", r#"{"path":"/"}"#));
        assert!(prose.starts_with("<think>maybe"));
        assert_eq!(calls("<think><tool_call>{\"name\": \"call\", \"arguments\": {}}</tool_call></think>Done."), None);
    }

    #[test]
    fn llama() {
        let tagged = "<|python_tag|>{\"name\": \"read_file\", \"parameters\": {\"path\": \"/a\"}}<|eom_id|>";
        assert_eq!(calls(tagged), Some(("llama", one("read_file", r#"{"path":"/a"}"#), String::new())));
        let several = "<|python_tag|>{\"name\": \"read_file\", \"parameters\": {\"path\": \"/a\"}}; \
                       {\"name\": \"list_dir\", \"parameters\": {\"path\": \"/\"}}";
        assert_eq!(calls(several).unwrap().1.len(), 2);
        // the bare object, as Llama 3.1 and 3.3 write it
        let bare = "{\"name\": \"list_dir\", \"parameters\": {\"path\": \"/plugins\"}}";
        assert_eq!(calls(bare), Some(("json", one("list_dir", r#"{"path":"/plugins"}"#), String::new())));
    }

    #[test]
    fn mistral() {
        let list = "[TOOL_CALLS][{\"name\": \"read_file\", \"arguments\": {\"path\": \"/a\"}, \"id\": \"abcDEF123\"}, \
                    {\"name\": \"list_dir\", \"arguments\": {\"path\": \"/\"}}]</s>";
        let (form, found, _) = calls(list).unwrap();
        assert_eq!(form, "mistral");
        assert_eq!(found.len(), 2);
        let newer = "[TOOL_CALLS]read_file[ARGS]{\"path\": \"/a\"}[TOOL_CALLS]list_dir[ARGS]{\"path\": \"/\"}";
        let (_, found, _) = calls(newer).unwrap();
        assert_eq!(found, vec![("read_file".into(), r#"{"path":"/a"}"#.into()), ("list_dir".into(), r#"{"path":"/"}"#.into())]);
    }

    #[test]
    fn bare_objects() {
        let openai = "  {\"type\": \"function\", \"function\": {\"name\": \"call\", \"arguments\": {\"method\": \"x.y\"}}}\n";
        assert_eq!(calls(openai).unwrap().1, one("call", r#"{"method":"x.y"}"#));
        let array = "[{\"name\": \"read_file\", \"arguments\": {\"path\": \"/a\"}}]";
        assert_eq!(calls(array).unwrap().1.len(), 1);
    }

    #[test]
    fn ordinary_text_stays_text() {
        for text in [
            "The answer is 42.",
            "",
            // JSON shown in a fenced block, in any form
            "Call it like this:\n```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"/a\"}}\n```",
            "Use:\n```\n<tool_call>{\"name\": \"read_file\", \"arguments\": {}}</tool_call>\n```\nDone.",
            "~~~\n[TOOL_CALLS][{\"name\": \"read_file\", \"arguments\": {}}]\n~~~",
            // unknown tools
            "<tool_call>{\"name\": \"rm_rf\", \"arguments\": {}}</tool_call>",
            "{\"name\": \"delete_everything\", \"arguments\": {}}",
            "[TOOL_CALLS][{\"name\": \"nope\", \"arguments\": {}}]",
            // a JSON answer that names a tool among other data
            "{\"name\": \"read_file\", \"arguments\": {}, \"description\": \"reads a file\"}",
            "{\"name\": \"read_file\"}",
            // a call followed by more text is not the whole answer
            "{\"name\": \"read_file\", \"arguments\": {\"path\": \"/a\"}} and then more",
            // broken JSON in a tag
            "<tool_call>{\"name\": \"read_file\", \"arguments\": {\"path\": </tool_call>",
            // one good call and one unknown: none runs
            "<tool_call>{\"name\": \"read_file\", \"arguments\": {}}</tool_call><tool_call>{\"name\": \"x\", \"arguments\": {}}</tool_call>",
            // arguments that are not an object
            "{\"name\": \"read_file\", \"arguments\": [1, 2]}",
        ] {
            assert_eq!(calls(text), None, "{text}");
        }
    }
}
