//! One model call over `wasi:http`: the request, the streamed answer, and
//! retries with backoff on 429, 5xx and `overloaded`, but only while no
//! delta of that answer has been shown.

use crate::anthropic::{self, AnthropicDecoder};
use crate::config::{Api, Config, KeySource, CONFIG_PATH};
use crate::context::{Message, ToolCall};
use crate::openai::{self, OpenAiDecoder};
use crate::sse::{Event, Parser};
use sausage_plugin::wstd::http::{Body, BodyExt, Client, Request, error::ErrorCode};
use std::time::Duration;
use serde_json::Value;

/// A tool as the model sees it.
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// A JSON Schema of the arguments.
    pub parameters: Value,
}

/// A whole answer of the model.
#[derive(Debug, Clone)]
pub struct Reply {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub reasoning: Option<String>,
    pub thinking: Vec<Value>,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// `finish_reason` or `stop_reason`.
    pub stop: String,
}

/// Why a stream failed.
#[derive(Debug)]
pub struct StreamError {
    pub message: String,
    pub retryable: bool,
    pub retry_after: Option<Duration>,
}

impl StreamError {
    /// Something that is not the provider's format.
    pub fn garbage(message: String) -> StreamError {
        StreamError { message, retryable: false, retry_after: None }
    }

    /// A stream that ended before the answer did: worth another try.
    pub fn cut_off(message: &str) -> StreamError {
        StreamError { message: message.to_string(), retryable: true, retry_after: None }
    }

    /// An error object inside a stream (OpenRouter's `{"error": ...}`,
    /// Anthropic's `error` event).
    pub fn from_provider(error: &Value) -> StreamError {
        let message = error["message"].as_str().map(String::from).unwrap_or_else(|| error.to_string());
        let kind = error["type"].as_str().unwrap_or("");
        let code = error["code"].as_u64().or_else(|| error["code"].as_str().and_then(|c| c.parse().ok()));
        let retryable = matches!(kind, "overloaded_error" | "api_error" | "rate_limit_error" | "server_error")
            || code.is_some_and(|c| c == 429 || (500..600).contains(&c))
            || error["code"].as_str().is_some_and(|c| c == "rate_limit_exceeded" || c == "server_error");
        let label = if kind.is_empty() { String::new() } else { format!(" ({kind})") };
        StreamError { message: format!("the model sent an error{label}: {message}"), retryable, retry_after: None }
    }
}

/// The start of what a provider sent, for an error message.
pub fn excerpt(s: &str) -> String {
    if s.len() <= 200 { s.to_string() } else { format!("{}…", &s[..s.floor_char_boundary(200)]) }
}

/// Turns a provider's events into a [`Reply`].
pub trait Decoder {
    /// One event; the text deltas it holds go to `deltas`.
    fn event(&mut self, event: Event, deltas: &mut Vec<String>) -> Result<(), StreamError>;
    /// The end of the stream.
    fn finish(self: Box<Self>) -> Result<Reply, StreamError>;
}

/// Tries of one model call.
pub const MAX_ATTEMPTS: u32 = 5;
/// The most bytes of one answer.
pub const MAX_ANSWER_BYTES: usize = 16 << 20;
/// The longest wait that a `Retry-After` may ask for.
const MAX_RETRY_WAIT: Duration = Duration::from_secs(60);

/// What happened while an answer streamed, for the caller to show.
pub enum Progress<'a> {
    Delta(&'a str),
    Retry(String),
}

/// Calls the model with retries. The error is a sentence that names the
/// cause and what to change.
pub async fn complete(
    config: &Config,
    system: &str,
    tools: &[ToolSpec],
    context: &[Message],
    progress: &mut dyn FnMut(Progress),
) -> Result<(Reply, u32), String> {
    let body = match config.api {
        Api::OpenAi => openai::body(config, system, tools, context),
        Api::Anthropic => anthropic::body(config, system, tools, context),
    };
    let bytes = serde_json::to_vec(&body).map_err(|e| e.to_string())?;
    let mut attempt = 1;
    loop {
        let mut shown = false;
        let outcome = attempt_once(config, &bytes, &mut |d| {
            shown = true;
            progress(Progress::Delta(d));
        })
        .await;
        match outcome {
            Ok(reply) => return Ok((reply, attempt)),
            Err(e) if e.retryable && !shown && attempt < MAX_ATTEMPTS => {
                let wait = e.retry_after.unwrap_or_else(|| backoff(attempt));
                if wait > MAX_RETRY_WAIT {
                    return Err(format!(
                        "{}; the provider asks to wait {} s before the next try, so the agent gave up: send the \
                         message again later",
                        e.message,
                        wait.as_secs()
                    ));
                }
                progress(Progress::Retry(format!(
                    "{}; trying again in {:.1} s (try {} of {MAX_ATTEMPTS})",
                    e.message,
                    wait.as_secs_f64(),
                    attempt + 1
                )));
                sausage_plugin::wstd::task::sleep(wait.into()).await;
                attempt += 1;
            }
            Err(e) if attempt > 1 => return Err(format!("{} (after {attempt} tries)", e.message)),
            Err(e) => return Err(e.message),
        }
    }
}

/// 0.5 s, 1 s, 2 s, 4 s…, with a jitter of up to a quarter.
fn backoff(attempt: u32) -> Duration {
    let base = 500u64 << (attempt - 1).min(5);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().subsec_nanos();
    Duration::from_millis(base + (nanos as u64 % (base / 4 + 1)))
}

async fn attempt_once(config: &Config, body: &[u8], on_delta: &mut dyn FnMut(&str)) -> Result<Reply, StreamError> {
    let (url, headers, mut decoder): (String, Vec<(String, String)>, Box<dyn Decoder>) = match config.api {
        Api::OpenAi => (openai::url(config), openai::headers(config), Box::new(OpenAiDecoder::default())),
        Api::Anthropic => (anthropic::url(config), anthropic::headers(config), Box::new(AnthropicDecoder::default())),
    };
    let mut request = Request::post(&url).header("content-type", "application/json");
    for (name, value) in &headers {
        request = request.header(name.as_str(), value.as_str());
    }
    let request = request
        .body(Body::from(body.to_vec()))
        .map_err(|e| StreamError::garbage(format!("`base_url` in {CONFIG_PATH} does not make a valid URL ({url}): {e}")))?;
    let mut client = Client::new();
    let timeout = Duration::from_secs(config.timeout_seconds);
    client.set_connect_timeout(Duration::from_secs(30.min(config.timeout_seconds)));
    client.set_first_byte_timeout(timeout);
    client.set_between_bytes_timeout(timeout);
    let response = client.send(request).await.map_err(|e| unreachable(config, &url, &e))?;
    let status = response.status().as_u16();
    let retry_after = retry_after(response.headers());
    let content_type =
        response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    let mut body = response.into_body().into_boxed_body();
    if !(200..300).contains(&status) {
        let mut text = Vec::new();
        while let Some(Ok(frame)) = body.frame().await {
            if let Ok(data) = frame.into_data() {
                text.extend_from_slice(&data);
                if text.len() > 64 * 1024 {
                    break;
                }
            }
        }
        return Err(http_error(config, &url, status, &String::from_utf8_lossy(&text), retry_after));
    }
    let mut parser = Parser::default();
    let mut deltas = Vec::new();
    let mut total = 0usize;
    let mut events = 0usize;
    let mut head = Vec::new();
    // The between-bytes timeout is reset by any byte, keep-alive comments and pings included: a
    // server that only keeps the connection alive must still end the wait, so the same bound
    // applies to the time since the last event that carries content.
    let mut last_content = sausage_plugin::wstd::time::Instant::now();
    loop {
        if std::time::Duration::from(last_content.elapsed()) > timeout {
            return Err(StreamError::garbage(format!(
                "the model sent nothing but keep-alives for timeout_seconds ({} s), after {total} bytes: \
                 the turn gives up; raise timeout_seconds in {CONFIG_PATH} if the model needs longer to start",
                config.timeout_seconds
            )));
        }
        let frame = match body.frame().await {
            None => break,
            Some(Ok(frame)) => frame,
            Some(Err(e)) => {
                return Err(StreamError::cut_off(&format!(
                    "the model's stream broke off ({}), after {total} bytes",
                    describe(&e, config)
                )));
            }
        };
        let Ok(data) = frame.into_data() else { continue };
        total += data.len();
        if head.len() < 300 {
            head.extend_from_slice(&data[..data.len().min(300 - head.len())]);
        }
        if total > MAX_ANSWER_BYTES {
            return Err(StreamError::garbage(format!(
                "the model's answer passed {} MiB, so the agent stopped reading it",
                MAX_ANSWER_BYTES >> 20
            )));
        }
        for event in parser.push(&data) {
            events += 1;
            if event.event != "ping" && !event.data.trim().is_empty() {
                last_content = sausage_plugin::wstd::time::Instant::now();
            }
            decoder.event(event, &mut deltas)?;
            for d in deltas.drain(..) {
                on_delta(&d);
            }
        }
    }
    if let Some(event) = parser.finish() {
        events += 1;
        decoder.event(event, &mut deltas)?;
        for d in deltas.drain(..) {
            on_delta(&d);
        }
    }
    if events == 0 {
        return Err(StreamError::garbage(format!(
            "the model's answer is not an event stream (HTTP {status}, content-type {content_type:?}, {total} bytes): {}",
            String::from_utf8_lossy(&head)
        )));
    }
    decoder.finish()
}

/// `Retry-After` (seconds) or OpenAI's `retry-after-ms`.
fn retry_after(headers: &sausage_plugin::wstd::http::HeaderMap) -> Option<Duration> {
    let number = |name: &str| headers.get(name)?.to_str().ok()?.trim().parse::<f64>().ok().filter(|n| *n >= 0.0);
    number("retry-after-ms").map(|ms| Duration::from_secs_f64(ms / 1000.0)).or_else(|| number("retry-after").map(Duration::from_secs_f64))
}

/// The provider's own message in an error body, when it has one.
fn provider_message(text: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(text).ok();
    let message = parsed.as_ref().and_then(|v| {
        v["error"]["message"].as_str().or_else(|| v["message"].as_str()).or_else(|| v["error"].as_str()).map(String::from)
    });
    let message = message.unwrap_or_else(|| text.trim().chars().take(300).collect());
    if message.is_empty() { "no message".into() } else { message }
}

fn key_field(config: &Config) -> String {
    match &config.key_source {
        KeySource::File => format!("`token` in {CONFIG_PATH}"),
        KeySource::Env(name) => format!("the host's variable {name} (named by `token_env` in {CONFIG_PATH})"),
        KeySource::None => format!("{CONFIG_PATH}: it has no key (allow_no_token); set `token`"),
    }
}

/// Whether an error body is about the model named in the request, by the provider's own fields:
/// OpenAI's `code` `model_not_found` or `param` `model`; Anthropic's `not_found_error`, whose
/// message names the field first (`model: claude-…`). Never a word anywhere in the message: a
/// proxy's page or another error may mention a model.
fn about_model(text: &str) -> bool {
    let Ok(v) = serde_json::from_str::<Value>(text) else { return false };
    let e = &v["error"];
    e["code"] == "model_not_found"
        || e["param"] == "model"
        || (e["type"] == "not_found_error" && e["message"].as_str().is_some_and(|m| m.starts_with("model:")))
}

fn http_error(config: &Config, url: &str, status: u16, text: &str, retry_after: Option<Duration>) -> StreamError {
    let said = provider_message(text);
    let model = about_model(text);
    let (message, retryable) = match status {
        401 | 403 => (format!("the provider refused the key (HTTP {status}: {said}): check {}", key_field(config)), false),
        404 if model => (
            format!(
                "the provider has no model `{}` (HTTP 404: {said}): check `model` in {CONFIG_PATH}",
                config.model
            ),
            false,
        ),
        404 => (
            format!(
                "nothing at {url} (HTTP 404: {said}): check `base_url` in {CONFIG_PATH} ({})",
                match config.api {
                    Api::OpenAi => "for openai-chat-completions it usually ends with /v1",
                    Api::Anthropic => "for anthropic-messages it is given without /v1",
                }
            ),
            false,
        ),
        429 => (format!("the provider limits the rate (HTTP 429: {said})"), true),
        529 => (format!("the provider is overloaded (HTTP 529: {said})"), true),
        500..=599 => (format!("the provider failed (HTTP {status}: {said})"), true),
        400 if model => (
            format!("the provider refused the request (HTTP 400: {said}): check `model` in {CONFIG_PATH}"),
            false,
        ),
        _ => (format!("the provider refused the request (HTTP {status}: {said})"), false),
    };
    StreamError { message, retryable, retry_after: if retryable { retry_after } else { None } }
}

fn describe(e: &sausage_plugin::wstd::http::Error, config: &Config) -> String {
    match e.downcast_ref::<ErrorCode>() {
        Some(ErrorCode::ConnectionReadTimeout | ErrorCode::ConnectionTimeout | ErrorCode::HttpResponseTimeout) => {
            format!("no bytes for timeout_seconds ({} s)", config.timeout_seconds)
        }
        Some(code) => format!("{code:?}"),
        None => format!("{e:#}"),
    }
}

fn unreachable(config: &Config, url: &str, e: &sausage_plugin::wstd::http::Error) -> StreamError {
    let message = match e.downcast_ref::<ErrorCode>() {
        Some(ErrorCode::DnsError(_)) => {
            format!("cannot find the host of {url} (DNS): check `base_url` in {CONFIG_PATH}")
        }
        Some(ErrorCode::ConnectionRefused) => format!(
            "nothing answers at {url} (connection refused): check `base_url` in {CONFIG_PATH}, and that the model's \
             server runs"
        ),
        Some(ErrorCode::ConnectionTimeout | ErrorCode::ConnectionReadTimeout | ErrorCode::HttpResponseTimeout) => {
            format!(
                "the model at {url} did not answer within timeout_seconds ({} s): check `base_url` in {CONFIG_PATH}, \
                 or raise timeout_seconds",
                config.timeout_seconds
            )
        }
        _ => format!("cannot reach the model at {url} ({}): check `base_url` in {CONFIG_PATH}", describe(e, config)),
    };
    StreamError::garbage(message)
}
