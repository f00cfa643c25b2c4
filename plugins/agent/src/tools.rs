//! The model's tools. A tool never fails the turn: its error is a result
//! that the model reads and can act on.

use crate::config::Config;
use crate::model::ToolSpec;
use crate::pages::{self, PAGE_BYTES};
use sausage_plugin::Ctx;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The most bytes of a result that go to the model.
pub const MAX_RESULT: usize = 64 * 1024;

/// What a tool gave back.
#[derive(Debug)]
pub struct Outcome {
    pub ok: bool,
    /// For the model.
    pub content: String,
    /// One short line for a person.
    pub summary: String,
}

fn ok(content: String, summary: String) -> Outcome {
    Outcome { ok: true, content: clip(content), summary }
}

fn fail(message: String) -> Outcome {
    Outcome { ok: false, summary: first_line(&message), content: clip(message) }
}

/// The tools, with their schemas.
pub fn specs() -> Vec<ToolSpec> {
    let path = json!({"type": "string", "description": "An absolute path in the world, for example /plugins/notes/source/src/main.rs"});
    vec![
        ToolSpec {
            name: "call".into(),
            description: "Call a method: `<plugin>.<method>` starts a process of that plugin, `core.<method>` is the core \
                          API, `cargo.build` builds a plugin. Returns the result as JSON, or the error with its data \
                          (for a failed build: the compiler's output).".into(),
            parameters: json!({"type": "object", "properties": {
                "method": {"type": "string", "description": "For example notes.add, cargo.build or core.activate"},
                "params": {"type": "object", "description": "The params, by name (default {})"},
                "detach": {"type": "boolean", "description": "Start a process that outlives this turn (a server); default false"},
                "timeout_seconds": {"type": "number", "description": "A deadline for this call, kept by the core: past it the \
                                    call fails with -32006 and its process is stopped. Default and most: tool_timeout_seconds \
                                    of /config/agent.yaml (900)"},
            }, "required": ["method"]}),
        },
        ToolSpec {
            name: "read_file".into(),
            description: "Read a text file. A long file comes in pages of whole lines, each ending with the `offset` of \
                          the next page; a long Markdown file's first page starts with its contents (the line of each \
                          section).".into(),
            parameters: json!({"type": "object", "properties": {
                "path": path,
                "offset": {"type": "integer", "minimum": 1, "description": "The first line to read, from 1 (default 1)"},
                "limit": {"type": "integer", "minimum": 1, "description": "How many lines (default 2000)"},
            }, "required": ["path"]}),
        },
        ToolSpec {
            name: "write_file".into(),
            description: "Write a whole file (its folders are made). Replaces the file in one step.".into(),
            parameters: json!({"type": "object", "properties": {
                "path": path,
                "content": {"type": "string", "description": "The whole new content"},
            }, "required": ["path", "content"]}),
        },
        ToolSpec {
            name: "edit_file".into(),
            description: "Replace an exact piece of a file: `old_text` must occur exactly once (or set replace_all), \
                          whitespace included. Read the file first.".into(),
            parameters: json!({"type": "object", "properties": {
                "path": path,
                "old_text": {"type": "string", "description": "The text to replace, exactly as it is in the file"},
                "new_text": {"type": "string", "description": "The text to put in its place"},
                "replace_all": {"type": "boolean", "description": "Replace every occurrence (default false)"},
            }, "required": ["path", "old_text", "new_text"]}),
        },
        ToolSpec {
            name: "list_dir".into(),
            description: "List a folder: names, with / after folders and the size of files. A long list comes in \
                          pages, each ending with the `offset` of the next.".into(),
            parameters: json!({"type": "object", "properties": {
                "path": path,
                "offset": {"type": "integer", "minimum": 1, "description": "The first entry to list, from 1 (default 1)"},
            }, "required": ["path"]}),
        },
        ToolSpec {
            name: "copy".into(),
            description: "Copy a file, or a folder with everything in it (except target/ folders of builds), to a new \
                          place; the folders of `to` are made.".into(),
            parameters: json!({"type": "object", "properties": {
                "from": path,
                "to": {"type": "string", "description": "The path of the copy itself (not a folder to put it in); it must \
                       not exist yet, unless `replace` is set for a file"},
                "replace": {"type": "boolean", "description": "Replace the file at `to` if there is one (default false)"},
            }, "required": ["from", "to"]}),
        },
        ToolSpec {
            name: "make_import".into(),
            description: "Make a plugin's import of another plugin: writes /plugins/<plugin>/source/imports/<provider>.json \
                          from the provider's current document (/proc/core/plugins/<provider>/discover.json), or from \
                          `from`, cut to the `methods` named if given. Then write sausage_plugin::import!(\"<provider>\").".into(),
            parameters: json!({"type": "object", "properties": {
                "plugin": {"type": "string", "description": "The plugin that imports (the consumer)"},
                "provider": {"type": "string", "description": "The plugin it imports"},
                "methods": {"type": "array", "items": {"type": "string"}, "description": "Only these methods of the provider \
                            (default all): fewer methods, fewer changes of the provider that break the consumer"},
                "from": {"type": "string", "description": "Another rpc.discover document to make it from, for example a \
                         built version of the provider not activated yet (default its current document)"},
            }, "required": ["plugin", "provider"]}),
        },
        ToolSpec {
            name: "search".into(),
            description: "Search text files for a regular expression (Rust regex syntax). Returns `path:line: text` \
                          for each match, 200 a page, with the number of matches and the `offset` of the next page. \
                          Skips /proc, target/ and hidden folders.".into(),
            parameters: json!({"type": "object", "properties": {
                "pattern": {"type": "string", "description": "A regular expression, for example `fn main` or `grace_seconds`"},
                "path": {"type": "string", "description": "A file or folder to search (default /)"},
                "glob": {"type": "string", "description": "Only names that match, for example *.rs (default all)"},
                "offset": {"type": "integer", "minimum": 1, "description": "The first match to show, from 1 (default 1)"},
            }, "required": ["pattern"]}),
        },
    ]
}

/// A short form of a call's arguments for a person: `path`, `method` or the first string.
pub fn short_arguments(name: &str, arguments: &str) -> String {
    let Ok(Value::Object(args)) = serde_json::from_str::<Value>(arguments) else {
        return clip_line(arguments, 80);
    };
    let pick = |key: &str| args.get(key).and_then(Value::as_str).map(String::from);
    let shown = match name {
        "call" => pick("method").map(|m| match args.get("params") {
            Some(p) if p.as_object().is_some_and(|o| !o.is_empty()) => format!("{m} {}", clip_line(&p.to_string(), 60)),
            _ => m,
        }),
        "copy" => Some(format!("{} → {}", pick("from").unwrap_or_default(), pick("to").unwrap_or_default())),
        "make_import" => Some(format!("{} imports {}", pick("plugin").unwrap_or_default(), pick("provider").unwrap_or_default())),
        "search" => pick("pattern").map(|p| format!("{p:?} in {}", pick("path").unwrap_or("/".into()))),
        _ => pick("path"),
    };
    clip_line(&shown.unwrap_or_else(|| Value::Object(args.clone()).to_string()), 100)
}

/// The tools of the world's external MCP servers (`mcp.tools`), named
/// `mcp__<server>__<tool>` for the model, and the server and tool each goes to.
#[derive(Default)]
pub struct McpTools {
    pub specs: Vec<ToolSpec>,
    routes: HashMap<String, (String, String)>,
    /// What `mcp.tools` said of the servers it could not list, for the system prompt.
    pub problems: Vec<String>,
}

/// The prefix of an MCP server's tool: `mcp__files__read_file`.
pub const MCP_PREFIX: &str = "mcp__";

impl McpTools {
    /// Lists the tools now (the host starts the servers it must), waiting at most `timeout`.
    pub async fn load(timeout: Duration) -> McpTools {
        let mut tools = McpTools::default();
        let listed = match sausage_plugin::call("mcp.tools", json!({})).timeout(timeout).await {
            Ok(v) => v,
            Err(e) => {
                tools.problems.push(format!("mcp.tools failed: {}", e.message()));
                return tools;
            }
        };
        for p in listed["problems"].as_array().into_iter().flatten() {
            tools.problems.push(p.as_str().unwrap_or_default().to_string());
        }
        for t in listed["tools"].as_array().into_iter().flatten() {
            let (Some(server), Some(tool)) = (t["server"].as_str(), t["name"].as_str()) else { continue };
            // providers allow [a-zA-Z0-9_-]{1,64} in a tool's name
            let clean: String = tool.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
            let name: String = format!("{MCP_PREFIX}{server}__{clean}").chars().take(64).collect();
            if tools.routes.contains_key(&name) {
                tools.problems.push(format!(
                    "the tool `{tool}` of the MCP server `{server}` is left out: as a tool name of the model \
                     it is {name}, which another of its tools already is (names keep a-z, 0-9, _ and -, at most 64)"
                ));
                continue;
            }
            let description = format!(
                "{} (the tool `{tool}` of the MCP server `{server}`)",
                t["description"].as_str().unwrap_or("").trim()
            );
            let mut parameters = t["inputSchema"].clone();
            if !parameters.is_object() {
                parameters = json!({"type": "object", "properties": {}});
            }
            tools.routes.insert(name.clone(), (server.to_string(), tool.to_string()));
            tools.specs.push(ToolSpec { name, description: description.trim_start().into(), parameters });
        }
        tools
    }
}

/// Runs a tool. `ctx` gets the progress of a called process; a call waits at
/// most `tool_timeout_seconds` of `config`.
pub async fn run(name: &str, arguments: &str, ctx: &Ctx, config: &Config, mcp: &McpTools) -> Outcome {
    let timeout = Duration::from_secs(config.tool_timeout_seconds);
    let args: Value = match serde_json::from_str(arguments) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => return fail(format!("the arguments of {name} must be a JSON object, not {arguments}")),
        Err(e) => {
            return fail(format!(
                "the arguments of {name} are not valid JSON ({e}); send them again as one JSON object: {}",
                clip_line(arguments, 200)
            ));
        }
    };
    if let Some((server, tool)) = mcp.routes.get(name) {
        let params = json!({"method": "mcp.call", "params": {"server": server, "tool": tool, "arguments": args}});
        return match call_value(&params, ctx, timeout).await {
            Ok((_, result)) => mcp_outcome(result),
            Err(failed) => failed,
        };
    }
    let result = match name {
        "call" => {
            return match call_value(&args, ctx, timeout).await {
                Ok((method, result)) => call_outcome(&method, result),
                Err(failed) => failed,
            };
        }
        "read_file" => read_file(&args),
        "write_file" => write_file(&args),
        "edit_file" => edit_file(&args),
        "list_dir" => list_dir(&args),
        "copy" => copy(&args),
        "make_import" => crate::imports::make_import(&args).map(|(content, summary)| ok(content, summary)),
        "search" => search(&args),
        other => Err(format!(
            "there is no tool `{other}`: the tools are {}",
            specs().iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(", ")
        )),
    };
    match result {
        Ok(outcome) => outcome,
        Err(message) => fail(message),
    }
}

fn string_arg<'a>(args: &'a Value, key: &str) -> Result<&'a str, String> {
    args[key].as_str().ok_or_else(|| format!("`{key}` is missing or not a string"))
}

fn path_arg(args: &Value, key: &str) -> Result<PathBuf, String> {
    let p = string_arg(args, key)?;
    if p.is_empty() {
        return Err(format!("`{key}` is empty"));
    }
    Ok(if p.starts_with('/') { PathBuf::from(p) } else { Path::new("/").join(p) })
}

fn io_error(action: &str, path: &Path, e: std::io::Error) -> String {
    format!("cannot {action} {}: {e}", path.display())
}

/// Makes the call of the `call` tool: the method and its result, or the failure as the model reads it.
async fn call_value(args: &Value, ctx: &Ctx, timeout: Duration) -> Result<(String, Value), Outcome> {
    let Some(method) = args["method"].as_str().filter(|m| !m.is_empty()) else {
        return Err(fail("`method` is missing: give `<plugin>.<method>`, for example notes.list".into()));
    };
    let params = match &args["params"] {
        Value::Null => json!({}),
        p @ Value::Object(_) => p.clone(),
        // models often send the object as its JSON text
        Value::String(text) if serde_json::from_str::<Value>(text).is_ok_and(|v| v.is_object()) => {
            serde_json::from_str(text).unwrap_or_default()
        }
        other => return Err(fail(format!("`params` must be a JSON object (params are by name), not {other}"))),
    };
    let timeout = match &args["timeout_seconds"] {
        Value::Null => timeout,
        Value::Number(n) if n.as_f64().is_some_and(|s| s > 0.0 && s.is_finite()) => {
            timeout.min(Duration::from_secs_f64(n.as_f64().unwrap_or_default()).max(Duration::from_millis(1)))
        }
        other => {
            return Err(fail(format!("`timeout_seconds` must be a positive number of seconds, not {other}")));
        }
    };
    let forward = ctx.clone();
    let callee = method.to_string();
    let mut request = sausage_plugin::call(method, params).timeout(timeout).on_notify(move |name, params| {
        forward.notify("progress", json!({"method": callee, "name": name, "params": params}));
    });
    if args["detach"].as_bool() == Some(true) {
        request = request.detach();
    }
    match request.await {
        Ok(result) => Ok((method.to_string(), result)),
        Err(e) => {
            let mut text = format!("error {}: {}", e.code(), e.message());
            if let Some(data) = e.data() {
                // the output of a failed build is text: show it as text, not as an escaped string
                if let Some(output) = data.get("output").and_then(Value::as_str) {
                    let mut rest = data.clone();
                    rest.as_object_mut().map(|o| o.remove("output"));
                    text.push_str(&format!("\ndata: {rest}\noutput:\n{output}"));
                } else {
                    text.push_str(&format!("\ndata: {}", serde_json::to_string_pretty(data).unwrap_or_default()));
                }
            }
            Err(fail(paged_result(text, &format!("{method}'s error"))))
        }
    }
}

/// A call's result as the model reads it, with a summary line chosen by the method called: a
/// build's tests, an activation's new versions; any other result by its start.
fn call_outcome(method: &str, result: Value) -> Outcome {
    let text = serde_json::to_string_pretty(&result).unwrap_or_default();
    let summary = match (method, &result) {
        ("cargo.build", Value::Object(o)) if o.contains_key("tests") => {
            format!("ok, {} tests passed", o["tests"]["passed"].as_u64().unwrap_or(0))
        }
        // core.activate and core.revert answer with the new documents by plugin, and a
        // `$report` of what the new versions remove and warn of
        ("core.activate" | "core.revert", Value::Object(o)) => {
            let active: Vec<_> = o.keys().filter(|k| !k.starts_with('$')).cloned().collect();
            let removed: Vec<String> = o
                .get("$report")
                .and_then(|r| r["removed"].as_object())
                .map(|r| r.values().flat_map(|v| v.as_array().cloned().unwrap_or_default()))
                .into_iter()
                .flatten()
                .filter_map(|m| m.as_str().map(String::from))
                .collect();
            let mut line = format!("ok, active: {}", active.join(", "));
            if !removed.is_empty() {
                line.push_str(&format!("; removed {}", removed.join(", ")));
            }
            line
        }
        _ => format!("ok, {}", clip_line(&result.to_string(), 60)),
    };
    ok(paged_result(text, &format!("{method}'s result")), summary)
}

/// An MCP result as the model reads it: the text of its content, and its structured content.
/// (The whole result, not its text cut to `MAX_RESULT`: a cut JSON text would not parse.)
fn mcp_outcome(result: Value) -> Outcome {
    let mut text: Vec<String> = result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| match c["type"].as_str() {
            Some("text") => c["text"].as_str().unwrap_or_default().to_string(),
            Some(other) => format!("[{other} content]"),
            None => c.to_string(),
        })
        .collect();
    if let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null()) {
        text.push(format!("structuredContent: {structured}"));
    }
    let content = paged_result(text.join("\n"), "MCP tool's result");
    let summary = format!("ok, {}", clip_line(&content, 60));
    ok(content, summary)
}

fn read_file(args: &Value) -> Result<Outcome, String> {
    let path = path_arg(args, "path")?;
    let bytes = std::fs::read(&path).map_err(|e| io_error("read", &path, e))?;
    let Ok(text) = String::from_utf8(bytes) else {
        let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        return Err(format!("{} is a binary file of {len} bytes; it cannot be shown as text", path.display()));
    };
    let offset = args["offset"].as_u64().unwrap_or(1).max(1) as usize;
    let limit = args["limit"].as_u64().unwrap_or(2000).max(1) as usize;
    let whole = pages::page(&text, offset, limit, PAGE_BYTES);
    if !whole.more() {
        return Ok(ok(whole.text.clone(), whole.range()));
    }
    // a long document's first page starts with its contents, so that the model reads what it needs
    let markdown = path.extension().is_some_and(|e| e == "md");
    let head = if markdown && args["offset"].is_null() { pages::contents(&text, whole.total) } else { String::new() };
    let page = pages::page(&text, offset, limit, PAGE_BYTES.saturating_sub(head.len()));
    let summary = page.range();
    Ok(ok(head + &pages::with_next(&page, "read_file"), summary))
}

fn write_file(args: &Value) -> Result<Outcome, String> {
    let path = path_arg(args, "path")?;
    // a JSON file given as an object instead of its text
    let structured;
    let content = match &args["content"] {
        Value::String(text) => text.as_str(),
        v @ (Value::Object(_) | Value::Array(_)) => {
            structured = serde_json::to_string_pretty(v).unwrap_or_default() + "\n";
            structured.as_str()
        }
        _ => return Err("`content` is missing or not a string".into()),
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| io_error("make the folder", parent, e))?;
    }
    sausage_plugin::write_atomic(&path, content).map_err(|e| io_error("write", &path, e))?;
    Ok(ok(format!("wrote {} bytes to {}", content.len(), path.display()), format!("{} bytes", content.len())))
}

fn edit_file(args: &Value) -> Result<Outcome, String> {
    let path = path_arg(args, "path")?;
    let old = string_arg(args, "old_text")?;
    let new = string_arg(args, "new_text")?;
    if old.is_empty() {
        return Err("`old_text` is empty: to write a whole file, use write_file".into());
    }
    let text = std::fs::read_to_string(&path).map_err(|e| io_error("read", &path, e))?;
    let count = text.matches(old).count();
    let all = args["replace_all"].as_bool() == Some(true);
    if count == 0 {
        return Err(format!(
            "`old_text` does not occur in {} (it must match exactly, whitespace and indentation included): read \
             the file and copy the text from it",
            path.display()
        ));
    }
    if count > 1 && !all {
        return Err(format!(
            "`old_text` occurs {count} times in {}: add lines around it so that it is unique, or set replace_all",
            path.display()
        ));
    }
    let edited = if all { text.replace(old, new) } else { text.replacen(old, new, 1) };
    sausage_plugin::write_atomic(&path, &edited).map_err(|e| io_error("write", &path, e))?;
    let n = if all { count } else { 1 };
    Ok(ok(format!("replaced {n} occurrence(s) in {}", path.display()), format!("{n} replaced")))
}

fn list_dir(args: &Value) -> Result<Outcome, String> {
    let path = path_arg(args, "path")?;
    let mut entries: Vec<String> = Vec::new();
    for entry in std::fs::read_dir(&path).map_err(|e| io_error("list", &path, e))? {
        let entry = entry.map_err(|e| io_error("list", &path, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let kind = entry.file_type().ok();
        entries.push(match kind {
            Some(k) if k.is_dir() => format!("{name}/"),
            Some(k) if k.is_symlink() => match std::fs::read_link(entry.path()) {
                Ok(target) => format!("{name} -> {}", target.display()),
                Err(_) => format!("{name} (a link)"),
            },
            _ => format!("{name} ({} bytes)", entry.metadata().map(|m| m.len()).unwrap_or(0)),
        });
    }
    entries.sort();
    let n = entries.len();
    if n == 0 {
        return Ok(ok("(empty)".into(), "0 entries".into()));
    }
    let offset = args["offset"].as_u64().unwrap_or(1).max(1) as usize;
    let page = pages::page(&(entries.join("\n") + "\n"), offset, 1000, PAGE_BYTES);
    let text = pages::with_next(&page, "list_dir").replacen(&format!("lines {}-", page.first), &format!("entries {}-", page.first), 1);
    Ok(ok(text.trim_end().to_string(), format!("{n} entries")))
}

fn copy(args: &Value) -> Result<Outcome, String> {
    let from = path_arg(args, "from")?;
    let to = path_arg(args, "to")?;
    let meta = std::fs::metadata(&from).map_err(|e| io_error("read", &from, e))?;
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(|e| io_error("make the folder", parent, e))?;
    }
    if meta.is_file() {
        let replace = args["replace"].as_bool() == Some(true);
        match std::fs::symlink_metadata(&to) {
            Ok(m) if m.is_dir() => {
                return Err(format!("{} is a folder: `to` is the path of the copy itself, folder and name", to.display()));
            }
            Ok(_) if !replace => {
                return Err(format!("{} exists already: set replace to replace it, or copy to a new name", to.display()));
            }
            _ => {}
        }
        let bytes = std::fs::read(&from).map_err(|e| io_error("read", &from, e))?;
        sausage_plugin::write_atomic(&to, &bytes).map_err(|e| io_error("write", &to, e))?;
        return Ok(ok(format!("copied {} ({} bytes) to {}", from.display(), bytes.len(), to.display()), format!("{} bytes", bytes.len())));
    }
    if to.starts_with(&from) {
        return Err(format!("cannot copy {} into itself ({})", from.display(), to.display()));
    }
    if std::fs::symlink_metadata(&to).is_ok() {
        return Err(format!("{} exists already: copy the folder to a new name, or remove it first", to.display()));
    }
    fn copy_folder(from: &Path, to: &Path, count: &mut usize) -> Result<(), String> {
        std::fs::create_dir_all(to).map_err(|e| io_error("make", to, e))?;
        for entry in std::fs::read_dir(from).map_err(|e| io_error("list", from, e))? {
            let entry = entry.map_err(|e| io_error("list", from, e))?;
            let name = entry.file_name();
            let (a, b) = (entry.path(), to.join(&name));
            let kind = entry.file_type().map_err(|e| io_error("read", &a, e))?;
            if kind.is_dir() {
                if name != "target" {
                    copy_folder(&a, &b, count)?;
                }
            } else if kind.is_file() {
                std::fs::copy(&a, &b).map_err(|e| io_error("copy", &a, e))?;
                *count += 1;
            }
        }
        Ok(())
    }
    let mut count = 0;
    copy_folder(&from, &to, &mut count)?;
    Ok(ok(format!("copied {count} files from {} to {}", from.display(), to.display()), format!("{count} files")))
}

/// The most matches of a search page; matches are counted up to [`SEARCH_COUNT`].
const SEARCH_PAGE: usize = 200;
const SEARCH_COUNT: usize = 10_000;

/// The matches of a search: those of the page asked for, and how many there are.
struct Hits {
    regex: regex_lite::Regex,
    glob: Option<regex_lite::Regex>,
    /// The first match to show, from 1.
    from: usize,
    shown: Vec<String>,
    bytes: usize,
    /// Whether the page is full (by matches or bytes).
    full: bool,
    count: usize,
    files: usize,
}

impl Hits {
    fn walk(&mut self, path: &Path) {
        if self.count >= SEARCH_COUNT {
            return;
        }
        let Ok(meta) = std::fs::metadata(path) else { return };
        if meta.is_dir() {
            let Ok(entries) = std::fs::read_dir(path) else { return };
            let mut names: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).collect();
            names.sort();
            for child in names {
                let name = child.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                let skip = name.starts_with('.')
                    || name == "target"
                    || (path == Path::new("/") && (name == "proc" || name == "self"));
                if !skip {
                    self.walk(&child);
                }
            }
            return;
        }
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if meta.len() > 1 << 20 || self.glob.as_ref().is_some_and(|g| !g.is_match(&name)) {
            return;
        }
        let Ok(text) = std::fs::read_to_string(path) else { return };
        self.files += 1;
        for (n, line) in text.lines().enumerate() {
            if !self.regex.is_match(line) {
                continue;
            }
            self.count += 1;
            if self.count >= self.from && !self.full {
                let hit = format!("{}:{}: {}", path.display(), n + 1, clip_line(line.trim_end(), 300));
                if self.shown.len() >= SEARCH_PAGE || self.bytes + hit.len() > PAGE_BYTES - 200 {
                    self.full = true;
                } else {
                    self.bytes += hit.len() + 1;
                    self.shown.push(hit);
                }
            }
            if self.count >= SEARCH_COUNT {
                return;
            }
        }
    }
}

fn search(args: &Value) -> Result<Outcome, String> {
    let pattern = string_arg(args, "pattern")?;
    let regex = regex_lite::Regex::new(pattern).map_err(|e| format!("`pattern` is not a valid regular expression: {e}"))?;
    let root = if args["path"].is_string() { path_arg(args, "path")? } else { PathBuf::from("/") };
    let glob = args["glob"].as_str().map(glob_regex).transpose()?;
    let from = args["offset"].as_u64().unwrap_or(1).max(1) as usize;
    let mut hits = Hits { regex, glob, from, shown: vec![], bytes: 0, full: false, count: 0, files: 0 };
    hits.walk(&root);
    let count = if hits.count >= SEARCH_COUNT { format!("more than {SEARCH_COUNT}") } else { hits.count.to_string() };
    if hits.shown.is_empty() {
        let text = if hits.count == 0 {
            format!("no match in {} files under {}", hits.files, root.display())
        } else {
            format!("no match from offset {from}: there are {count} matches")
        };
        return Ok(ok(text, format!("{count} matches")));
    }
    let last = from + hits.shown.len() - 1;
    let mut text = hits.shown.join("\n");
    if last < hits.count {
        text.push_str(&format!(
            "\n[matches {from}-{last} of {count} shown; the next page: search with offset {}, or narrow the pattern, \
             path or glob]",
            last + 1
        ));
    }
    Ok(ok(text, format!("{count} matches")))
}

/// `*.rs` as a regular expression over a file name.
fn glob_regex(glob: &str) -> Result<regex_lite::Regex, String> {
    let mut re = String::from("^");
    for c in glob.chars() {
        match c {
            '*' => re.push_str(".*"),
            '?' => re.push('.'),
            c => re.push_str(&regex_lite::escape(&c.to_string())),
        }
    }
    re.push('$');
    regex_lite::Regex::new(&re).map_err(|e| format!("`glob` is not valid: {e}"))
}

/// Where results longer than a page are kept whole for `read_file` (a hidden folder: no session's
/// name, and no search, meets it); the newest [`RESULTS_KEPT`] stay.
pub const RESULTS_DIR: &str = "/state/agent/.results";
const RESULTS_KEPT: usize = 32;

/// A result that fits a page as it is; a longer one as its first page of whole lines, with the
/// file that holds it whole and the offset to read on from (a result cut in its middle, JSON most
/// of all, would mislead the model).
fn paged_result(text: String, what: &str) -> String {
    if text.len() <= PAGE_BYTES {
        return text;
    }
    let path = match save_result(&text) {
        Ok(path) => path,
        Err(e) => return format!("{}\n[this {what} is {} bytes and could not be kept: {e}]", clip(text.clone()), text.len()),
    };
    let page = pages::page(&text, 1, usize::MAX, PAGE_BYTES - 400);
    let mut out = page.text.clone();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&format!(
        "[{what} is {} bytes, {} lines; lines 1-{} shown. It is kept whole in {path}: the next page is read_file \
         of {path} with offset {}]\n",
        text.len(),
        page.total,
        page.last,
        page.last + 1
    ));
    out
}

/// Saves a long result in [`RESULTS_DIR`] and removes the oldest beyond [`RESULTS_KEPT`].
fn save_result(text: &str) -> std::io::Result<String> {
    std::fs::create_dir_all(RESULTS_DIR)?;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let path = format!("{RESULTS_DIR}/{}-{:09}.txt", now.as_secs(), now.subsec_nanos());
    sausage_plugin::write_atomic(&path, text)?;
    let mut kept: Vec<PathBuf> = std::fs::read_dir(RESULTS_DIR)?.filter_map(|e| e.ok()).map(|e| e.path()).collect();
    kept.sort();
    for old in kept.iter().rev().skip(RESULTS_KEPT) {
        let _ = std::fs::remove_file(old);
    }
    Ok(path)
}

fn clip(mut text: String) -> String {
    if text.len() > MAX_RESULT {
        let cut = text.floor_char_boundary(MAX_RESULT - 100);
        let dropped = text.len() - cut;
        text.truncate(cut);
        text.push_str(&format!("\n[… {dropped} more bytes not shown]"));
    }
    text
}

fn first_line(text: &str) -> String {
    clip_line(text.lines().next().unwrap_or(""), 120)
}

/// One line of at most `max` characters.
pub fn clip_line(text: &str, max: usize) -> String {
    let line: String = text.replace('\n', " ");
    if line.chars().count() <= max { line } else { format!("{}…", line.chars().take(max).collect::<String>()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_arguments_for_people() {
        assert_eq!(short_arguments("read_file", r#"{"path": "/a/b"}"#), "/a/b");
        assert_eq!(short_arguments("call", r#"{"method": "cargo.build", "params": {"plugin": "x"}}"#), r#"cargo.build {"plugin":"x"}"#);
        assert_eq!(short_arguments("call", "{bad"), "{bad");
    }

    #[test]
    fn files_edits_and_search() {
        let w = |path: &str, content: &str| write_file(&json!({"path": path, "content": content})).unwrap();
        w("/t/a.rs", "fn main() {}\nfn main() {}\n");
        assert!(edit_file(&json!({"path": "/t/a.rs", "old_text": "fn main", "new_text": "x"})).unwrap_err().contains("2 times"));
        assert!(edit_file(&json!({"path": "/t/a.rs", "old_text": "nope", "new_text": "x"})).unwrap_err().contains("does not occur"));
        edit_file(&json!({"path": "/t/a.rs", "old_text": "fn main", "new_text": "fn go", "replace_all": true})).unwrap();
        assert_eq!(std::fs::read_to_string("/t/a.rs").unwrap(), "fn go() {}\nfn go() {}\n");
        let found = search(&json!({"pattern": "go\\(", "path": "/t", "glob": "*.rs"})).unwrap();
        assert!(found.content.contains("/t/a.rs:2: fn go() {}"), "{}", found.content);
        let listed = list_dir(&json!({"path": "/t"})).unwrap();
        assert!(listed.content.contains("a.rs (22 bytes)"));
        copy(&json!({"from": "/t", "to": "/u"})).unwrap();
        assert!(copy(&json!({"from": "/t", "to": "/u"})).unwrap_err().contains("exists"));
        assert!(copy(&json!({"from": "/t", "to": "/t/inner"})).unwrap_err().contains("into itself"));
        copy(&json!({"from": "/t/a.rs", "to": "/v/w/b.rs"})).unwrap();
        assert_eq!(std::fs::read_to_string("/v/w/b.rs").unwrap(), "fn go() {}\nfn go() {}\n");
        assert!(copy(&json!({"from": "/t/a.rs", "to": "/v/w/b.rs"})).unwrap_err().contains("set replace"));
        assert!(copy(&json!({"from": "/t/a.rs", "to": "/v/w"})).unwrap_err().contains("is a folder"));
        std::fs::write("/t/c.rs", "c").unwrap();
        copy(&json!({"from": "/t/c.rs", "to": "/v/w/b.rs", "replace": true})).unwrap();
        assert_eq!(std::fs::read_to_string("/v/w/b.rs").unwrap(), "c");
        let read = read_file(&json!({"path": "/u/a.rs", "offset": 2, "limit": 1})).unwrap();
        assert_eq!(read.content, "fn go() {}\n");
        write_file(&json!({"path": "/t/x.json", "content": {"a": 1}})).unwrap();
        assert_eq!(std::fs::read_to_string("/t/x.json").unwrap(), "{\n  \"a\": 1\n}\n");
        std::fs::write("/t/no-newline.txt", "one\ntwo").unwrap();
        assert_eq!(read_file(&json!({"path": "/t/no-newline.txt"})).unwrap().content, "one\ntwo");
    }

    /// Reads every page of a long file the way a model would: by the offset each page names.
    #[test]
    fn a_long_file_comes_in_pages_that_say_where_to_go_on() {
        let mut doc = String::from("# Guide\n");
        for section in 1..=40 {
            doc.push_str(&format!("## {section}. Section\n"));
            for line in 0..40 {
                doc.push_str(&format!("Section {section}, line {line}: {}\n", "words ".repeat(4)));
            }
        }
        let total = doc.lines().count();
        write_file(&json!({"path": "/long/guide.md", "content": doc})).unwrap();
        let first = read_file(&json!({"path": "/long/guide.md"})).unwrap();
        assert!(first.content.starts_with(&format!("[contents of this {total}-line file")), "{}", &first.content[..200]);
        assert!(first.content.contains("   43  ## 2. Section\n"));
        assert!(first.content.len() <= MAX_RESULT);
        let (mut read, mut offset, mut pages) = (String::new(), None::<usize>, 0);
        loop {
            let args = match offset {
                None => json!({"path": "/long/guide.md"}),
                Some(o) => json!({"path": "/long/guide.md", "offset": o}),
            };
            let page = read_file(&args).unwrap();
            assert!(page.summary.ends_with(&format!("of {total}")), "{}", page.summary);
            pages += 1;
            let body = page.content.split("[the file from line 1:]\n").last().unwrap();
            let Some(at) = body.rfind("\n[lines ") else {
                read.push_str(body);
                break;
            };
            read.push_str(&body[..at + 1]);
            let next: usize = body[at..].split("with offset ").nth(1).unwrap().trim_end_matches("]\n").parse().unwrap();
            assert_eq!(next, read.lines().count() + 1, "the offset is the next line of the whole file");
            offset = Some(next);
        }
        assert_eq!(read, doc);
        assert!(pages >= 3, "{pages} pages");
        // an offset given: no contents, the page from there
        let later = read_file(&json!({"path": "/long/guide.md", "offset": 43, "limit": 1})).unwrap();
        assert_eq!(later.content, format!("## 2. Section\n[lines 43-43 of {total} shown; the next page: read_file with offset 44]\n"));
    }

    #[test]
    fn long_lists_searches_and_results_say_how_to_go_on() {
        std::fs::create_dir_all("/many").unwrap();
        for i in 0..1500 {
            std::fs::write(format!("/many/f{i:04}.txt"), "needle\n").unwrap();
        }
        let listed = list_dir(&json!({"path": "/many"})).unwrap();
        assert!(listed.content.ends_with("[entries 1-1000 of 1500 shown; the next page: list_dir with offset 1001]"), "{}", &listed.content[listed.content.len() - 200..]);
        let rest = list_dir(&json!({"path": "/many", "offset": 1001})).unwrap();
        assert!(rest.content.starts_with("f1000.txt (7 bytes)\n") && rest.content.ends_with("f1499.txt (7 bytes)"));
        let found = search(&json!({"pattern": "needle", "path": "/many"})).unwrap();
        assert!(found.content.ends_with("[matches 1-200 of 1500 shown; the next page: search with offset 201, or narrow the pattern, path or glob]"));
        assert_eq!(found.summary, "1500 matches");
        let last = search(&json!({"pattern": "needle", "path": "/many", "offset": 1401})).unwrap();
        assert!(last.content.starts_with("/many/f1400.txt:1: needle") && last.content.ends_with("/many/f1499.txt:1: needle"));
        // a long call result: its first page, kept whole for read_file
        let result = json!({"items": (0..3000).map(|i| format!("item {i}")).collect::<Vec<_>>()});
        let outcome = call_outcome("big.list", result.clone());
        let text = serde_json::to_string_pretty(&result).unwrap();
        let note = outcome.content.lines().last().unwrap();
        assert!(note.starts_with(&format!("[big.list's result is {} bytes, 3004 lines; lines 1-", text.len())), "{note}");
        let path = note.split("kept whole in ").nth(1).unwrap().split(':').next().unwrap();
        assert_eq!(std::fs::read_to_string(path).unwrap(), text);
        assert!(text.starts_with(outcome.content.trim_end_matches(&format!("{note}\n"))));
    }
}
