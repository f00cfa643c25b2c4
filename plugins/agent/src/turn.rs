//! One turn of a conversation: the person's message, then model calls and
//! tool calls until the model answers without a tool, each step committed
//! to the session as it happens.

use crate::config::Config;
use crate::context::{self, Message};
use crate::model::{self, Progress};
use crate::store::{self, Session};
use crate::tools;
use sausage_plugin::{Ctx, Error, Result};
use serde_json::{Value, json};
use std::cell::RefCell;
use std::rc::Rc;

/// The same tool call with the same arguments this many times in a row ends the turn.
pub const LOOP_LIMIT: usize = 3;

/// What the person is told about a tool call that never completed.
pub const UNRESOLVED: &str = "This tool call did not complete: the agent's process ended while it ran (the host \
                              stopped, or the agent was killed or upgraded). It was not repeated, and its effects, \
                              if any, are unknown: check the world before you try it again.";

/// A turn in progress, shared with the stop hook.
pub struct Turn {
    pub session: Session,
    /// The text of the model's answer streamed so far.
    partial: String,
    model_op: Option<u64>,
    done: bool,
    ctx: Ctx,
}

thread_local! {
    static ACTIVE: RefCell<Option<Rc<RefCell<Turn>>>> = const { RefCell::new(None) };
    static HOOKED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn io(e: std::io::Error) -> Error {
    Error::new(format!("cannot write the session in {}: {e}", store::SESSIONS_DIR))
}

/// The most bytes of text a step keeps (an answer of the model can be far
/// longer; the journal and the history stay usable).
pub const MAX_STEP_TEXT: usize = 256 * 1024;

/// A step entry's data.
fn step(role: &str, text: &str, blocks: &[&str]) -> Value {
    json!({"role": role, "text": clip_text(text, MAX_STEP_TEXT), "blocks": blocks})
}

/// At most `max` bytes of `text`, with a note of what was cut.
pub fn clip_text(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let cut = text.floor_char_boundary(max);
    format!("{}\n[… {} more bytes not kept]", &text[..cut], text.len() - cut)
}

fn notify_step(ctx: &Ctx, session: &str, data: &Value) {
    let mut params = data.clone();
    params["session"] = json!(session);
    ctx.notify("step", params);
}

/// Closes the operations that a crash or kill left open: a model call as
/// cancelled (it may run again), a tool call as unresolved (never repeated;
/// the model is told). Returns how many it closed.
pub fn close_interrupted(session: &mut Session) -> std::io::Result<usize> {
    let open = std::mem::take(&mut session.state.open_ops);
    session.state.open_ops = open.clone();
    if open.is_empty() {
        return Ok(0);
    }
    let mut entries = Vec::new();
    for op in &open {
        if op.kind == "tool" {
            entries.push(("agent.op-result.v1", session.end_op(op.op, "unresolved", json!({"reason": UNRESOLVED}))));
            if let Some(id) = &op.call_id {
                session.state.context.push(Message::Tool {
                    call_id: id.clone(),
                    name: op.name.clone(),
                    content: UNRESOLVED.into(),
                    is_error: true,
                });
            }
            let mut s = step("tool", &format!("{}: did not complete; not repeated", op.name), &["toolResponse", "error"]);
            s["tools"] = json!([op.name]);
            s["ok"] = json!(false);
            entries.push(("agent.step.v1", s));
        } else {
            let reason = "the agent's process ended while the model answered; the call may run again";
            entries.push(("agent.op-result.v1", session.end_op(op.op, "cancelled", json!({"reason": reason}))));
            entries.push(("agent.step.v1", step("error", "The previous turn was cut off while the model answered.", &["error"])));
        }
    }
    context::repair(&mut session.state.context);
    session.commit(entries)?;
    Ok(open.len())
}

/// Ends the turn as cancelled (a person's Stop): the open operations are
/// journaled as cancelled, and what was streamed so far is kept.
fn cancel(turn: &Rc<RefCell<Turn>>) {
    let Ok(mut t) = turn.try_borrow_mut() else { return };
    if t.done {
        return;
    }
    t.done = true;
    let reason = "stopped by the caller (core.stop)";
    let mut entries = Vec::new();
    let partial = std::mem::take(&mut t.partial);
    for op in t.session.state.open_ops.clone() {
        entries.push(("agent.op-result.v1", t.session.end_op(op.op, "cancelled", json!({"reason": reason}))));
        if op.kind == "model" && !partial.is_empty() {
            t.session.state.context.push(Message::answer(clip_text(&partial, crate::tools::MAX_RESULT)));
            entries.push(("agent.step.v1", step("assistant", &partial, &["text", "cancelled"])));
        }
        if let (Some(id), "tool") = (&op.call_id, op.kind.as_str()) {
            t.session.state.context.push(Message::Tool {
                call_id: id.clone(),
                name: op.name.clone(),
                content: "The person stopped the turn while this tool ran; its effects, if any, are unknown.".into(),
                is_error: true,
            });
        }
    }
    context::repair(&mut t.session.state.context);
    let stopped = step("error", "Stopped: the turn was cancelled.", &["error", "cancelled"]);
    notify_step(&t.ctx, &t.session.name.clone(), &stopped);
    entries.push(("agent.step.v1", stopped));
    if let Err(e) = t.session.commit(entries) {
        eprintln!("agent: cannot journal the cancelled turn: {e}");
    }
}

/// Runs one turn; the result is the model's final text.
pub async fn run(ctx: &Ctx, config: &Config, session: Session, text: String) -> Result<String> {
    let started = sausage_plugin::wstd::time::Instant::now();
    let name = session.name.clone();
    let turn = Rc::new(RefCell::new(Turn { session, partial: String::new(), model_op: None, done: false, ctx: ctx.clone() }));
    {
        let mut t = turn.borrow_mut();
        t.session.state.context.push(Message::User { text: text.clone() });
        t.session.stage(vec![("agent.step.v1", step("user", &text, &["text"]))]); // committed with the model call
    }
    ACTIVE.with(|a| *a.borrow_mut() = Some(Rc::clone(&turn)));
    if !HOOKED.with(|h| h.replace(true)) {
        sausage_plugin::on_stop(|| async {
            if let Some(turn) = ACTIVE.with(|a| a.borrow_mut().take()) {
                cancel(&turn);
            }
        });
    }
    let result = steps(ctx, config, &turn, &name, started).await;
    ACTIVE.with(|a| a.borrow_mut().take());
    turn.borrow_mut().done = true;
    result
}

async fn steps(
    ctx: &Ctx,
    config: &Config,
    turn: &Rc<RefCell<Turn>>,
    name: &str,
    started: sausage_plugin::wstd::time::Instant,
) -> Result<String> {
    // the tools of external MCP servers are listed once a turn, so an edit of agent.yaml applies at the next message
    let mut mcp = if config.mcp_servers { tools::McpTools::load(std::time::Duration::from_secs(config.tool_timeout_seconds)).await } else { tools::McpTools::default() };
    let mut system = crate::prompt::system(name);
    if !mcp.specs.is_empty() || !mcp.problems.is_empty() {
        system.push_str(&crate::prompt::mcp(mcp.specs.len(), &mcp.problems));
    }
    let mut specs = tools::specs();
    specs.append(&mut mcp.specs);
    let overhead = (system.len() + specs.iter().map(|s| s.description.len() + s.parameters.to_string().len()).sum::<usize>()) as u64 / 4;
    let (mut input_tokens, mut output_tokens, mut model_calls) = (0u64, 0u64, 0u32);
    let mut last_call: Option<(String, Value)> = None;
    let mut repeats = 0usize;
    loop {
        if model_calls >= config.max_steps {
            let text = format!(
                "Stopped: this turn reached max_steps ({} model calls) before the model finished. Send another \
                 message to go on, or raise max_steps in /config/agent.yaml.",
                config.max_steps
            );
            return finish(turn, &text, &["text", "max-steps"], (input_tokens, output_tokens, model_calls), config, started);
        }
        model_calls += 1;
        let context_now = {
            let mut t = turn.borrow_mut();
            let mut entries = Vec::new();
            let repaired = context::repair(&mut t.session.state.context);
            if repaired > 0 {
                eprintln!("agent: repaired {repaired} dangling tool calls or results before the model call");
            }
            let estimate = context::estimate_tokens(&t.session.state.context) + overhead;
            if estimate > config.context_tokens * 8 / 10 {
                let target = (config.context_tokens / 2).saturating_sub(overhead);
                if let Some(done) = context::compact(&mut t.session.state.context, target, 4) {
                    let text = format!(
                        "Compacted {} older tool results to stay within context_tokens ({}): about {} → {} tokens ({}).",
                        done.results,
                        config.context_tokens,
                        done.tokens_before + overhead,
                        done.tokens_after + overhead,
                        done.summary.join(", ")
                    );
                    let s = step("assistant", &text, &["compaction"]);
                    notify_step(ctx, name, &s);
                    entries.push(("agent.compaction.v1", json!({"results": done.results, "tokens_before": done.tokens_before, "tokens_after": done.tokens_after})));
                    entries.push(("agent.step.v1", s));
                }
            }
            let (op, data) = t.session.begin_op("model", &config.model.clone(), None, json!({"api": config.api.name()}));
            entries.push(("agent.op.v1", data));
            t.session.commit(entries).map_err(io)?;
            t.model_op = Some(op);
            t.partial.clear();
            t.session.state.context.clone()
        };
        let outcome = model::complete(config, &system, &specs, &context_now, &mut |p| match p {
            Progress::Delta(d) => {
                if let Ok(mut t) = turn.try_borrow_mut() {
                    t.partial.push_str(d);
                }
                ctx.notify("text", json!({"session": name, "text": d}));
            }
            Progress::Retry(message) => {
                eprintln!("agent: {message}");
                notify_step(ctx, name, &step("assistant", &message, &["retry"]));
            }
        })
        .await;
        let mut t = turn.borrow_mut();
        if t.done {
            return Err(Error::new("the turn was stopped"));
        }
        let op = t.model_op.take().unwrap_or(0);
        let partial = std::mem::take(&mut t.partial);
        let (mut reply, attempts) = match outcome {
            Ok(r) => r,
            Err(message) => {
                let mut entries = vec![("agent.op-result.v1", t.session.end_op(op, "error", json!({"message": message})))];
                if !partial.is_empty() {
                    t.session.state.context.push(Message::answer(clip_text(&partial, crate::tools::MAX_RESULT)));
                    entries.push(("agent.step.v1", step("assistant", &partial, &["text", "error"])));
                }
                let mut s = step("error", &message, &["error"]);
                s["ms"] = json!(started.elapsed().as_millis() as u64);
                entries.push(("agent.step.v1", s));
                t.session.commit(entries).map_err(io)?;
                return Err(Error::new(format!("agent: {message}")));
            }
        };
        input_tokens += reply.input_tokens;
        output_tokens += reply.output_tokens;
        let mut detail =
            json!({"attempts": attempts, "input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens, "stop": reply.stop});
        if let Some(form) = calls_in_text(&mut reply, &specs, op) {
            detail["text_calls"] = json!(form);
        }
        let result = t.session.end_op(op, "ok", detail);
        t.session.state.context.push(Message::Assistant {
            text: reply.text.clone(),
            tool_calls: reply.tool_calls.clone(),
            reasoning: reply.reasoning.clone(),
            thinking: reply.thinking.clone(),
            api: config.api.name().into(),
        });
        if reply.tool_calls.is_empty() {
            t.session.stage(vec![("agent.op-result.v1", result)]); // committed with the final step
            drop(t);
            return finish(turn, &reply.text, &["text"], (input_tokens, output_tokens, model_calls), config, started);
        }
        let mut entries = vec![("agent.op-result.v1", result)];
        if !reply.text.is_empty() {
            let s = step("assistant", &reply.text, &["text"]);
            notify_step(ctx, name, &s);
            entries.push(("agent.step.v1", s));
        }
        t.session.stage(entries); // committed with the first tool call
        drop(t);
        for (i, call) in reply.tool_calls.iter().enumerate() {
            let parsed: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::String(call.arguments.clone()));
            let key = (call.name.clone(), parsed);
            repeats = if last_call.as_ref() == Some(&key) { repeats + 1 } else { 1 };
            last_call = Some(key);
            if repeats >= LOOP_LIMIT {
                let text = format!(
                    "Stopped: the model called {} with the same arguments {LOOP_LIMIT} times in a row, so the turn \
                     ended here. Say what to do differently, or send another message to go on.",
                    call.name
                );
                let mut t = turn.borrow_mut();
                for skipped in &reply.tool_calls[i..] {
                    t.session.state.context.push(Message::Tool {
                        call_id: skipped.id.clone(),
                        name: skipped.name.clone(),
                        content: format!("Not run: the same call {LOOP_LIMIT} times in a row ended the turn."),
                        is_error: true,
                    });
                }
                drop(t);
                return finish(turn, &text, &["text", "loop"], (input_tokens, output_tokens, model_calls), config, started);
            }
            let short = tools::short_arguments(&call.name, &call.arguments);
            {
                let mut t = turn.borrow_mut();
                let (_, op_data) = t.session.begin_op("tool", &call.name, Some(&call.id), json!({"arguments": call.arguments}));
                let mut s = step("assistant", "", &["toolRequest"]);
                s["tools"] = json!([call.name]);
                s["args"] = json!(short);
                notify_step(ctx, name, &s);
                t.session.commit(vec![("agent.op.v1", op_data), ("agent.step.v1", s)]).map_err(io)?;
            }
            let outcome = tools::run(&call.name, &call.arguments, ctx, config, &mcp).await;
            // a typed fact of this process's runtime, never the result's text: a file or an
            // answer may contain any words (a read of the SDK's error.rs once hung the turn)
            if sausage_plugin::stopping() {
                cancel(turn);
                return Err(Error::new("the turn was stopped: the agent's process is stopping"));
            }
            let mut t = turn.borrow_mut();
            if t.done {
                return Err(Error::new("the turn was stopped"));
            }
            let op = t.session.state.open_ops.iter().find(|o| o.call_id.as_deref() == Some(&call.id)).map_or(0, |o| o.op);
            let status = if outcome.ok { "ok" } else { "error" };
            let result = t.session.end_op(op, status, json!({"summary": outcome.summary}));
            t.session.state.context.push(Message::Tool {
                call_id: call.id.clone(),
                name: call.name.clone(),
                content: outcome.content.clone(),
                is_error: !outcome.ok,
            });
            let blocks: &[&str] = if outcome.ok { &["toolResponse"] } else { &["toolResponse", "error"] };
            let mut s = step("tool", &outcome.summary, blocks);
            s["tools"] = json!([call.name]);
            s["args"] = json!(short);
            s["ok"] = json!(outcome.ok);
            notify_step(ctx, name, &s);
            // committed with the next tool or model call, or the final step
            t.session.stage(vec![("agent.op-result.v1", result), ("agent.step.v1", s)]);
        }
    }
}

/// Makes the tool calls that an answer wrote as text (a local model whose template's parser
/// missed them) the answer's calls, with the text around them as its text; returns their form.
/// From then on they are calls like any other: journaled as such, and sent back to the model in
/// its provider's form, as an assistant message with tool calls and their results.
fn calls_in_text(reply: &mut model::Reply, specs: &[model::ToolSpec], op: u64) -> Option<&'static str> {
    // a stop for length cut the answer: what looks like a call may be half of one
    if !reply.tool_calls.is_empty() || !matches!(reply.stop.as_str(), "stop" | "end_turn" | "stop_sequence") {
        return None;
    }
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    let found = crate::text_calls::parse(&reply.text, &names)?;
    reply.tool_calls = found
        .calls
        .into_iter()
        .enumerate()
        // nine letters and digits: the one form of ID that every provider takes back (Mistral's rule)
        .map(|(i, (name, arguments))| context::ToolCall { id: format!("t{:05}{:03}", op % 100_000, i % 1000), name, arguments })
        .collect();
    reply.text = found.prose;
    Some(found.form)
}

/// The final step, with the turn's usage and time.
fn finish(
    turn: &Rc<RefCell<Turn>>,
    text: &str,
    blocks: &[&str],
    (input_tokens, output_tokens, model_calls): (u64, u64, u32),
    config: &Config,
    started: sausage_plugin::wstd::time::Instant,
) -> Result<String> {
    let mut t = turn.borrow_mut();
    let mut s = step("assistant", text, blocks);
    s["input_tokens"] = json!(input_tokens);
    s["output_tokens"] = json!(output_tokens);
    s["model_calls"] = json!(model_calls);
    s["ms"] = json!(started.elapsed().as_millis() as u64);
    s["model"] = json!(config.model);
    s["done"] = json!(true);
    context::repair(&mut t.session.state.context);
    t.session.commit(vec![("agent.step.v1", s)]).map_err(io)?;
    t.done = true;
    Ok(text.to_string())
}
