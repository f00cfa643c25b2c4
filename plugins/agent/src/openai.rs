//! OpenAI chat completions (`POST {base_url}/chat/completions`, streamed),
//! the format of OpenAI, OpenRouter, Ollama and most providers.

use crate::config::{Api, Config};
use crate::context::{Message, ToolCall};
use crate::model::{Decoder, Reply, StreamError, ToolSpec, excerpt};
use crate::sse::Event;
use serde_json::{Value, json};

/// The URL of a request.
pub fn url(config: &Config) -> String {
    format!("{}/chat/completions", config.base_url)
}

/// The headers of a request, besides `content-type`.
pub fn headers(config: &Config) -> Vec<(String, String)> {
    let mut headers = vec![("accept".to_string(), "text/event-stream".to_string())];
    if let Some(token) = &config.token {
        headers.push(("authorization".into(), format!("Bearer {token}")));
    }
    headers
}

/// The body of a streamed request.
pub fn body(config: &Config, system: &str, tools: &[ToolSpec], context: &[Message]) -> Value {
    let mut messages = vec![json!({"role": "system", "content": system})];
    for message in context {
        match message {
            Message::User { text } => messages.push(json!({"role": "user", "content": text})),
            Message::Assistant { text, tool_calls, reasoning, api, .. } => {
                if text.is_empty() && tool_calls.is_empty() {
                    continue;
                }
                let mut m = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
                if !tool_calls.is_empty() {
                    m["tool_calls"] = tool_calls
                        .iter()
                        .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
                        .collect();
                }
                // providers that think before a tool call (DeepSeek, Kimi) want their reasoning back
                if let (Some(r), true) = (reasoning, api == Api::OpenAi.name()) {
                    m["reasoning_content"] = json!(r);
                }
                messages.push(m);
            }
            Message::Tool { call_id, content, .. } => {
                messages.push(json!({"role": "tool", "tool_call_id": call_id, "content": content}))
            }
        }
    }
    let mut body = json!({
        "model": config.model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !tools.is_empty() {
        body["tools"] = tools
            .iter()
            .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}))
            .collect();
    }
    if let Some(t) = config.temperature {
        body["temperature"] = json!(t);
    }
    body
}

#[derive(Default)]
struct PartialCall {
    index: Option<u64>,
    id: String,
    name: String,
    arguments: String,
}

/// Turns the stream's chunks into a reply.
#[derive(Default)]
pub struct OpenAiDecoder {
    text: String,
    reasoning: String,
    calls: Vec<PartialCall>,
    finish_reason: Option<String>,
    input_tokens: u64,
    output_tokens: u64,
    done: bool,
}

impl OpenAiDecoder {
    /// Adds one `tool_calls` delta. The `id` and name come only in a call's
    /// first delta; `index` says which call a fragment belongs to, but some
    /// providers leave it out or repeat index 0 for each whole call (Ollama).
    fn tool_delta(&mut self, delta: &Value) {
        let index = delta["index"].as_u64();
        let id = delta["id"].as_str().filter(|s| !s.is_empty());
        let name = delta["function"]["name"].as_str().filter(|s| !s.is_empty());
        let at = match index {
            Some(i) => match self.calls.iter().rposition(|c| c.index == Some(i)) {
                Some(at) if id.is_none_or(|id| self.calls[at].id.is_empty() || self.calls[at].id == id) => Some(at),
                _ => None,
            },
            None => match self.calls.last() {
                Some(last) if id.is_none_or(|id| last.id.is_empty() || last.id == id)
                    && (name.is_none() || last.name.is_empty()) =>
                {
                    Some(self.calls.len() - 1)
                }
                _ => None,
            },
        };
        let at = at.unwrap_or_else(|| {
            self.calls.push(PartialCall { index, ..Default::default() });
            self.calls.len() - 1
        });
        let call = &mut self.calls[at];
        if let (Some(id), true) = (id, call.id.is_empty()) {
            call.id = id.to_string();
        }
        if let (Some(name), true) = (name, call.name.is_empty()) {
            call.name = name.to_string();
        }
        match &delta["function"]["arguments"] {
            Value::String(s) => call.arguments.push_str(s),
            Value::Null => {}
            other => call.arguments.push_str(&other.to_string()), // an object instead of its text
        }
    }
}

impl Decoder for OpenAiDecoder {
    fn event(&mut self, event: Event, deltas: &mut Vec<String>) -> Result<(), StreamError> {
        let data = event.data.trim();
        if data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| {
            StreamError::garbage(format!("the model sent a line that is not JSON ({e}): {}", excerpt(data)))
        })?;
        if let Some(error) = chunk.get("error").filter(|e| !e.is_null()) {
            return Err(StreamError::from_provider(error));
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.input_tokens = usage["prompt_tokens"].as_u64().unwrap_or(self.input_tokens);
            self.output_tokens = usage["completion_tokens"].as_u64().unwrap_or(self.output_tokens);
        }
        let Some(choices) = chunk["choices"].as_array() else {
            return Ok(());
        };
        for choice in choices {
            let delta = &choice["delta"];
            if let Some(text) = delta["content"].as_str().filter(|t| !t.is_empty()) {
                self.text.push_str(text);
                deltas.push(text.to_string());
            }
            for key in ["reasoning_content", "reasoning"] {
                if let Some(r) = delta[key].as_str() {
                    self.reasoning.push_str(r);
                }
            }
            if let Some(calls) = delta["tool_calls"].as_array() {
                for call in calls {
                    self.tool_delta(call);
                }
            }
            if let Some(reason) = choice["finish_reason"].as_str() {
                self.finish_reason = Some(reason.to_string());
            }
        }
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<Reply, StreamError> {
        let Some(stop) = self.finish_reason else {
            return Err(StreamError::cut_off(if self.done {
                "the model's stream ended without a finish_reason"
            } else {
                "the model's stream ended before it was finished (no finish_reason)"
            }));
        };
        let tool_calls = self
            .calls
            .into_iter()
            .enumerate()
            .map(|(i, c)| ToolCall {
                id: if c.id.is_empty() { format!("call_{i}") } else { c.id },
                name: c.name,
                arguments: c.arguments,
            })
            .collect();
        Ok(Reply {
            text: self.text,
            tool_calls,
            reasoning: (!self.reasoning.is_empty()).then_some(self.reasoning),
            thinking: vec![],
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            stop,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(lines: &[&str]) -> Result<Reply, StreamError> {
        let mut d = Box::new(OpenAiDecoder::default());
        let mut deltas = vec![];
        for line in lines {
            d.event(Event { event: String::new(), data: line.to_string() }, &mut deltas)?;
        }
        d.finish()
    }

    #[test]
    fn tool_calls_by_index() {
        let r = decode(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"read_file","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"list_dir","arguments":"{\"pa"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"th\":1}"}}]},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7}}"#,
            "[DONE]",
        ])
        .unwrap();
        assert_eq!(r.tool_calls.len(), 2);
        assert_eq!(r.tool_calls[0].arguments, "{}");
        assert_eq!(r.tool_calls[1].arguments, "{\"path\":1}");
        assert_eq!((r.input_tokens, r.output_tokens), (5, 7));
    }

    #[test]
    fn repeated_or_missing_index() {
        let r = decode(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"x","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"b","function":{"name":"y","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}"#,
        ])
        .unwrap();
        assert_eq!(r.tool_calls.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["x", "y"]);
        let r = decode(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"x","arguments":"{\"a\""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":":1}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"b","function":{"name":"y","arguments":{"b":2}}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
        ])
        .unwrap();
        assert_eq!(r.tool_calls[0].arguments, "{\"a\":1}");
        assert_eq!(r.tool_calls[1].arguments, "{\"b\":2}");
    }

    #[test]
    fn cut_off_and_errors() {
        let e = decode(&[r#"{"choices":[{"delta":{"content":"hi"}}]}"#, "[DONE]"]).unwrap_err();
        assert!(e.message.contains("finish_reason"), "{}", e.message);
        let e = decode(&[r#"{"error":{"message":"upstream failed","code":502}}"#]).unwrap_err();
        assert!(e.message.contains("upstream failed"));
        assert!(e.retryable);
        let e = decode(&["not json"]).unwrap_err();
        assert!(e.message.contains("not JSON"));
    }
}
