//! Anthropic messages (`POST {base_url}/v1/messages`, streamed).

use crate::config::{Api, Config};
use crate::context::{Message, ToolCall};
use crate::model::{Decoder, Reply, StreamError, ToolSpec, excerpt};
use crate::sse::Event;
use serde_json::{Value, json};

/// The version of the API this module speaks.
const VERSION: &str = "2023-06-01";

/// The URL of a request.
pub fn url(config: &Config) -> String {
    format!("{}/v1/messages", config.base_url)
}

/// The headers of a request, besides `content-type`.
pub fn headers(config: &Config) -> Vec<(String, String)> {
    let mut headers = vec![
        ("accept".to_string(), "text/event-stream".to_string()),
        ("anthropic-version".to_string(), VERSION.to_string()),
    ];
    if let Some(token) = &config.token {
        headers.push(("x-api-key".into(), token.clone()));
    }
    headers
}

/// The arguments of a tool call as the object `tool_use` needs (`{}` when
/// they are not a JSON object: the tool's result then says why).
pub fn input_of(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => json!({}),
    }
}

/// The body of a streamed request. Tool results go together in the user
/// message after the call; consecutive messages of one role are merged.
pub fn body(config: &Config, system: &str, tools: &[ToolSpec], context: &[Message]) -> Value {
    let mut messages: Vec<Value> = Vec::new();
    let mut push = |role: &str, blocks: Vec<Value>| {
        if blocks.is_empty() {
            return;
        }
        if let Some(last) = messages.last_mut().filter(|m| m["role"] == role) {
            last["content"].as_array_mut().unwrap().extend(blocks);
        } else {
            messages.push(json!({"role": role, "content": blocks}));
        }
    };
    for message in context {
        match message {
            Message::User { text } => push("user", vec![json!({"type": "text", "text": text})]),
            Message::Assistant { text, tool_calls, thinking, api, .. } => {
                let mut blocks = Vec::new();
                if api == Api::Anthropic.name() {
                    blocks.extend(thinking.iter().cloned()); // as received, with their signatures
                }
                if !text.is_empty() {
                    blocks.push(json!({"type": "text", "text": text}));
                }
                for call in tool_calls {
                    blocks.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input_of(&call.arguments)}));
                }
                if blocks.iter().all(|b| b["type"] == "thinking" || b["type"] == "redacted_thinking") {
                    continue; // nothing but thinking: the API refuses it as a message of its own
                }
                push("assistant", blocks);
            }
            Message::Tool { call_id, content, is_error, .. } => push(
                "user",
                vec![json!({"type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": is_error})],
            ),
        }
    }
    let mut body = json!({
        "model": config.model,
        "max_tokens": config.max_tokens,
        "system": system,
        "messages": messages,
        "stream": true,
    });
    if !tools.is_empty() {
        body["tools"] = tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
    }
    if let Some(t) = config.temperature {
        body["temperature"] = json!(t);
    }
    body
}

enum Block {
    Text,
    Tool { id: String, name: String, json: String },
    Thinking { thinking: String, signature: String },
    Redacted(Value),
    Other,
}

/// Turns the stream's events into a reply.
#[derive(Default)]
pub struct AnthropicDecoder {
    text: String,
    blocks: Vec<(u64, Block)>,
    tool_calls: Vec<ToolCall>,
    thinking: Vec<Value>,
    stop: Option<String>,
    input_tokens: u64,
    output_tokens: u64,
    stopped: bool,
}

impl AnthropicDecoder {
    fn block(&mut self, index: u64) -> Option<&mut Block> {
        self.blocks.iter_mut().find(|(i, _)| *i == index).map(|(_, b)| b)
    }

    fn close(&mut self, index: u64) -> Result<(), StreamError> {
        let Some(at) = self.blocks.iter().position(|(i, _)| *i == index) else {
            return Ok(());
        };
        match self.blocks.remove(at).1 {
            Block::Tool { id, name, json } => {
                // parsed at the end of the block; no input at all is {}
                let arguments = if json.trim().is_empty() { "{}".to_string() } else { json };
                self.tool_calls.push(ToolCall { id, name, arguments });
            }
            Block::Thinking { thinking, signature } => {
                self.thinking.push(json!({"type": "thinking", "thinking": thinking, "signature": signature}))
            }
            Block::Redacted(block) => self.thinking.push(block),
            Block::Text | Block::Other => {}
        }
        Ok(())
    }
}

impl Decoder for AnthropicDecoder {
    fn event(&mut self, event: Event, deltas: &mut Vec<String>) -> Result<(), StreamError> {
        if event.data.trim().is_empty() {
            return Ok(());
        }
        let data: Value = serde_json::from_str(&event.data).map_err(|e| {
            StreamError::garbage(format!("the model sent an event that is not JSON ({e}): {}", excerpt(&event.data)))
        })?;
        let kind = data["type"].as_str().unwrap_or(event.event.as_str()).to_string();
        let index = data["index"].as_u64().unwrap_or(0);
        match kind.as_str() {
            "message_start" => {
                let usage = &data["message"]["usage"];
                self.input_tokens = ["input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"]
                    .iter()
                    .filter_map(|k| usage[k].as_u64())
                    .sum();
                self.output_tokens = usage["output_tokens"].as_u64().unwrap_or(0);
            }
            "content_block_start" => {
                let block = &data["content_block"];
                let b = match block["type"].as_str() {
                    Some("text") => {
                        if let Some(t) = block["text"].as_str().filter(|t| !t.is_empty()) {
                            self.text.push_str(t);
                            deltas.push(t.to_string());
                        }
                        Block::Text
                    }
                    Some("tool_use") => {
                        let given = block["input"].as_object().filter(|o| !o.is_empty());
                        Block::Tool {
                            id: block["id"].as_str().unwrap_or_default().to_string(),
                            name: block["name"].as_str().unwrap_or_default().to_string(),
                            json: given.map(|o| Value::Object(o.clone()).to_string()).unwrap_or_default(),
                        }
                    }
                    Some("thinking") => Block::Thinking {
                        thinking: block["thinking"].as_str().unwrap_or_default().to_string(),
                        signature: block["signature"].as_str().unwrap_or_default().to_string(),
                    },
                    Some("redacted_thinking") => Block::Redacted(block.clone()),
                    _ => Block::Other,
                };
                self.blocks.push((index, b));
            }
            "content_block_delta" => {
                let delta = &data["delta"];
                let mut shown = None;
                match (self.block(index), delta["type"].as_str()) {
                    (Some(Block::Text), Some("text_delta")) => shown = delta["text"].as_str().map(String::from),
                    (Some(Block::Tool { json, .. }), Some("input_json_delta")) => {
                        json.push_str(delta["partial_json"].as_str().unwrap_or(""))
                    }
                    (Some(Block::Thinking { thinking, .. }), Some("thinking_delta")) => {
                        thinking.push_str(delta["thinking"].as_str().unwrap_or(""))
                    }
                    (Some(Block::Thinking { signature, .. }), Some("signature_delta")) => {
                        signature.push_str(delta["signature"].as_str().unwrap_or(""))
                    }
                    _ => {}
                }
                if let Some(t) = shown.filter(|t| !t.is_empty()) {
                    self.text.push_str(&t);
                    deltas.push(t);
                }
            }
            "content_block_stop" => self.close(index)?,
            "message_delta" => {
                if let Some(reason) = data["delta"]["stop_reason"].as_str() {
                    self.stop = Some(reason.to_string());
                }
                if let Some(n) = data["usage"]["output_tokens"].as_u64() {
                    self.output_tokens = n;
                }
            }
            "message_stop" => self.stopped = true,
            "error" => return Err(StreamError::from_provider(&data["error"])),
            _ => {} // ping, and events added later
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<Reply, StreamError> {
        let open: Vec<u64> = self.blocks.iter().map(|(i, _)| *i).collect();
        let (Some(stop), true) = (self.stop.clone(), self.stopped) else {
            return Err(StreamError::cut_off("the model's stream ended before message_stop"));
        };
        for index in open {
            self.close(index)?;
        }
        Ok(Reply {
            text: self.text,
            tool_calls: self.tool_calls,
            reasoning: None,
            thinking: self.thinking,
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            stop,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(events: &[&str]) -> Result<Reply, StreamError> {
        let mut d = Box::new(AnthropicDecoder::default());
        let mut deltas = vec![];
        for data in events {
            d.event(Event { event: String::new(), data: data.to_string() }, &mut deltas)?;
        }
        d.finish()
    }

    #[test]
    fn tool_use_and_thinking() {
        let r = decode(&[
            r#"{"type":"message_start","message":{"usage":{"input_tokens":10,"output_tokens":1}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"c2ln"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t1","name":"list_dir","input":{}}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"path\":"}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"/\"}"}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"t2","name":"list_dir","input":{}}}"#,
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":""}}"#,
            r#"{"type":"content_block_stop","index":2}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":30}}"#,
            r#"{"type":"message_stop"}"#,
        ])
        .unwrap();
        assert_eq!(r.tool_calls[0].arguments, "{\"path\":\"/\"}");
        assert_eq!(r.tool_calls[1].arguments, "{}");
        assert_eq!(r.thinking[0], json!({"type": "thinking", "thinking": "hmm", "signature": "c2ln"}));
        assert_eq!((r.input_tokens, r.output_tokens), (10, 30));
    }

    #[test]
    fn tool_results_go_together() {
        let config = crate::config::parse(
            "api: anthropic-messages\nbase_url: http://x\nmodel: m\nallow_no_token: true\n",
            |_| None,
        )
        .unwrap();
        let call = |id: &str| ToolCall { id: id.into(), name: "n".into(), arguments: "{}".into() };
        let result = |id: &str| Message::Tool { call_id: id.into(), name: "n".into(), content: "ok".into(), is_error: false };
        let context = vec![
            Message::User { text: "hi".into() },
            Message::Assistant { text: String::new(), tool_calls: vec![call("a"), call("b")], reasoning: None, thinking: vec![], api: String::new() },
            result("a"),
            result("b"),
            Message::User { text: "again".into() },
        ];
        let b = body(&config, "sys", &[], &context);
        let messages = b["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 3);
        assert_eq!(messages[2]["content"].as_array().unwrap().len(), 3);
        assert_eq!(messages[2]["content"][0]["type"], "tool_result");
    }

    #[test]
    fn thinking_goes_back_only_to_the_api_that_made_it() {
        let config = crate::config::parse(
            "api: anthropic-messages\nbase_url: http://x\nmodel: m\nallow_no_token: true\n",
            |_| None,
        )
        .unwrap();
        let thinking = vec![json!({"type": "thinking", "thinking": "t", "signature": "s"})];
        let answer = |api: &str| Message::Assistant {
            text: "hi".into(),
            tool_calls: vec![],
            reasoning: None,
            thinking: thinking.clone(),
            api: api.into(),
        };
        let context = vec![Message::User { text: "q".into() }, answer("anthropic-messages")];
        let kept = body(&config, "sys", &[], &context);
        assert_eq!(kept["messages"][1]["content"][0], thinking[0]);
        let context = vec![Message::User { text: "q".into() }, answer("openai-chat-completions")];
        let dropped = body(&config, "sys", &[], &context);
        assert_eq!(dropped["messages"][1]["content"], json!([{"type": "text", "text": "hi"}]));
    }

    #[test]
    fn overloaded_and_cut_off() {
        let e = decode(&[r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#]).unwrap_err();
        assert!(e.retryable);
        let e = decode(&[r#"{"type":"message_start","message":{"usage":{}}}"#]).unwrap_err();
        assert!(e.message.contains("message_stop"));
    }
}
