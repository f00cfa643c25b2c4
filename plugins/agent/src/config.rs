//! `/config/agent.yaml`: the model the agent talks to, and how. Read at each
//! `chat`, so an edit applies at the next message.

use serde_yaml_ng::{Mapping, Value};

/// Where the configuration lives.
pub const CONFIG_PATH: &str = "/config/agent.yaml";

/// The wire format of the model's API.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    /// `POST {base_url}/chat/completions` (OpenAI, OpenRouter, Ollama and most providers).
    OpenAi,
    /// `POST {base_url}/v1/messages` (Anthropic).
    Anthropic,
}

impl Api {
    /// The name used in `agent.yaml`.
    pub fn name(self) -> &'static str {
        match self {
            Api::OpenAi => "openai-chat-completions",
            Api::Anthropic => "anthropic-messages",
        }
    }
}

/// Where the key came from, so that an error names the right place to fix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeySource {
    /// `token` in agent.yaml.
    File,
    /// The host's variable named by `token_env`.
    Env(String),
    /// `allow_no_token: true` and no key.
    None,
}

/// A complete, checked configuration.
#[derive(Clone, Debug)]
pub struct Config {
    pub api: Api,
    /// Without a trailing `/`.
    pub base_url: String,
    pub model: String,
    pub token: Option<String>,
    pub key_source: KeySource,
    /// Model calls per turn.
    pub max_steps: u32,
    pub temperature: Option<f64>,
    /// The context window the agent keeps the conversation within.
    pub context_tokens: u64,
    /// The most tokens of one answer.
    pub max_tokens: u64,
    /// The longest wait for the first byte of an answer and between two bytes.
    pub timeout_seconds: u64,
    /// The longest wait for the answer of a tool's call (a plugin, `cargo.build`, an MCP tool):
    /// past it the core answers -32006 and stops the callee, and the model reads that.
    pub tool_timeout_seconds: u64,
    /// `mcp_servers` names servers: their tools are the model's too (from `mcp.tools`).
    pub mcp_servers: bool,
}

const FIELDS: &[&str] = &[
    "api",
    "base_url",
    "model",
    "token",
    "token_env",
    "allow_no_token",
    "max_steps",
    "temperature",
    "context_tokens",
    "max_tokens",
    "timeout_seconds",
    "tool_timeout_seconds",
    // read by the host's plugin `mcp`, which checks it; the agent only asks whether it is there
    "mcp_servers",
];

/// The default of `tool_timeout_seconds`: a first build on a new cache takes a minute or two.
pub const DEFAULT_TOOL_TIMEOUT_SECONDS: u64 = 900;

/// A configuration problem, in words that name the field and the file.
pub type Problem = String;

/// Reads and checks `/config/agent.yaml`.
pub fn load() -> Result<Config, Problem> {
    let text = match std::fs::read_to_string(CONFIG_PATH) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!(
                "the agent is not configured: {CONFIG_PATH} is missing. Create it with \
                 `sausage init` (it writes a commented template), then set api, base_url, model and token"
            ));
        }
        Err(e) => return Err(format!("cannot read {CONFIG_PATH}: {e}")),
    };
    parse(&text, |name| std::env::var(name).ok())
}

/// Checks the text of `agent.yaml`; `env` reads a variable of the process.
pub fn parse(text: &str, env: impl Fn(&str) -> Option<String>) -> Result<Config, Problem> {
    let value: Value = serde_yaml_ng::from_str(text)
        .map_err(|e| format!("{CONFIG_PATH} is not valid YAML: {e}. Fix the file"))?;
    let map = match value {
        Value::Null => Mapping::new(),
        Value::Mapping(map) => map,
        _ => return Err(format!("{CONFIG_PATH} must be a mapping of fields (api: ..., model: ...)")),
    };
    for key in map.keys() {
        let name = key.as_str().unwrap_or("");
        if !FIELDS.contains(&name) {
            return Err(format!(
                "{CONFIG_PATH} has an unknown field `{}`: the fields are {}",
                serde_yaml_ng::to_string(key).unwrap_or_default().trim(),
                FIELDS.join(", ")
            ));
        }
    }
    let fields = Fields { map: &map };
    let api = match fields.string("api")? {
        None => {
            return Err(format!(
                "the agent is not configured: {CONFIG_PATH} sets no `api`. Uncomment one of the \
                 examples in the file (api, base_url, model and token), or set api to \
                 openai-chat-completions or anthropic-messages"
            ));
        }
        Some(s) if s == "openai-chat-completions" => Api::OpenAi,
        Some(s) if s == "anthropic-messages" => Api::Anthropic,
        Some(other) => {
            return Err(format!(
                "`api` in {CONFIG_PATH} is `{other}`: it must be openai-chat-completions or anthropic-messages"
            ));
        }
    };
    let base_url = fields.required_string("base_url", match api {
        Api::OpenAi => "for example https://api.openai.com/v1 (with /v1)",
        Api::Anthropic => "for example https://api.anthropic.com (without /v1)",
    })?;
    let base_url = base_url.trim_end_matches('/').to_string();
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err(format!("`base_url` in {CONFIG_PATH} is `{base_url}`: it must start with http:// or https://"));
    }
    if api == Api::Anthropic && base_url.ends_with("/v1") {
        return Err(format!(
            "`base_url` in {CONFIG_PATH} ends with /v1, but for anthropic-messages it is given without it, \
             as the Anthropic SDK has it: {}",
            base_url.trim_end_matches("/v1")
        ));
    }
    let model = fields.required_string("model", "the model's name at that provider")?;
    let allow_no_token = fields.boolean("allow_no_token")?.unwrap_or(false);
    let token_env = fields.string("token_env")?;
    let file_token = fields.string("token")?.filter(|t| !t.is_empty());
    let (token, key_source) = match (&token_env, file_token) {
        (Some(_), Some(_)) => {
            return Err(format!("{CONFIG_PATH} sets both `token` and `token_env`: keep one of them"));
        }
        (Some(name), None) => match env(name) {
            Some(value) if !value.is_empty() => (Some(value), KeySource::Env(name.clone())),
            _ if allow_no_token => (None, KeySource::None),
            _ => {
                return Err(format!(
                    "`token_env` in {CONFIG_PATH} names the host's variable {name}, which is not set: \
                     start the host with {name} set to the key"
                ));
            }
        },
        (None, Some(token)) => (Some(token), KeySource::File),
        (None, None) if allow_no_token => (None, KeySource::None),
        (None, None) => {
            return Err(format!(
                "{CONFIG_PATH} sets no `token`: put in the API key (or `token_env: NAME` to take it from \
                 the host's variable NAME; `allow_no_token: true` for a local model without a key)"
            ));
        }
    };
    let max_steps = fields.integer("max_steps", 1, 10_000)?.unwrap_or(50) as u32;
    let temperature = fields.number("temperature", 0.0, 2.0)?;
    let context_tokens = fields.integer("context_tokens", 1_000, 100_000_000)?.unwrap_or(128_000);
    let max_tokens = fields.integer("max_tokens", 1, 10_000_000)?.unwrap_or(8_192);
    let timeout_seconds = fields.integer("timeout_seconds", 1, 86_400)?.unwrap_or(300);
    let tool_timeout_seconds = fields.integer("tool_timeout_seconds", 1, 86_400)?.unwrap_or(DEFAULT_TOOL_TIMEOUT_SECONDS);
    let mcp_servers = matches!(fields.get("mcp_servers"), Some(Value::Mapping(m)) if !m.is_empty());
    Ok(Config {
        api,
        base_url,
        model,
        token,
        key_source,
        max_steps,
        temperature,
        context_tokens,
        max_tokens,
        timeout_seconds,
        tool_timeout_seconds,
        mcp_servers,
    })
}

struct Fields<'a> {
    map: &'a Mapping,
}

impl Fields<'_> {
    fn get(&self, name: &str) -> Option<&Value> {
        self.map.get(name).filter(|v| !v.is_null())
    }

    fn string(&self, name: &str) -> Result<Option<String>, Problem> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.trim().to_string())),
            Some(other) => Err(format!("`{name}` in {CONFIG_PATH} must be a string, not {}", shown(other))),
        }
    }

    fn required_string(&self, name: &str, hint: &str) -> Result<String, Problem> {
        match self.string(name)? {
            Some(s) if !s.is_empty() => Ok(s),
            _ => Err(format!("{CONFIG_PATH} sets no `{name}`: set it ({hint})")),
        }
    }

    fn boolean(&self, name: &str) -> Result<Option<bool>, Problem> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(other) => Err(format!("`{name}` in {CONFIG_PATH} must be true or false, not {}", shown(other))),
        }
    }

    fn integer(&self, name: &str, min: u64, max: u64) -> Result<Option<u64>, Problem> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Number(n)) if n.as_u64().is_some_and(|n| (min..=max).contains(&n)) => Ok(n.as_u64()),
            Some(other) => Err(format!(
                "`{name}` in {CONFIG_PATH} must be a whole number from {min} to {max}, not {}",
                shown(other)
            )),
        }
    }

    fn number(&self, name: &str, min: f64, max: f64) -> Result<Option<f64>, Problem> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Number(n)) if n.as_f64().is_some_and(|n| n >= min && n <= max) => Ok(n.as_f64()),
            Some(other) => {
                Err(format!("`{name}` in {CONFIG_PATH} must be a number from {min} to {max}, not {}", shown(other)))
            }
        }
    }
}

fn shown(value: &Value) -> String {
    serde_yaml_ng::to_string(value).unwrap_or_default().trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn the_template_names_api() {
        let e = parse("# api: openai-chat-completions\n", no_env).unwrap_err();
        assert!(e.contains("sets no `api`"), "{e}");
        assert!(e.contains(CONFIG_PATH), "{e}");
    }

    #[test]
    fn each_missing_field_is_named() {
        let e = parse("api: openai-chat-completions\n", no_env).unwrap_err();
        assert!(e.contains("`base_url`"), "{e}");
        let e = parse("api: openai-chat-completions\nbase_url: http://x/v1\n", no_env).unwrap_err();
        assert!(e.contains("`model`"), "{e}");
        let e = parse("api: openai-chat-completions\nbase_url: http://x/v1\nmodel: m\n", no_env).unwrap_err();
        assert!(e.contains("`token`"), "{e}");
    }

    #[test]
    fn a_complete_file() {
        let c = parse(
            "api: anthropic-messages\nbase_url: https://api.anthropic.com/\nmodel: claude\ntoken: k\nmax_steps: 7\n",
            no_env,
        )
        .unwrap();
        assert_eq!(c.api, Api::Anthropic);
        assert_eq!(c.base_url, "https://api.anthropic.com");
        assert_eq!(c.max_steps, 7);
        assert_eq!(c.key_source, KeySource::File);
    }

    #[test]
    fn token_env_reads_the_variable() {
        let text = "api: openai-chat-completions\nbase_url: http://x/v1\nmodel: m\ntoken_env: KEY\n";
        let c = parse(text, |n| (n == "KEY").then(|| "secret".to_string())).unwrap();
        assert_eq!(c.token.as_deref(), Some("secret"));
        assert!(parse(text, no_env).unwrap_err().contains("KEY, which is not set"));
    }

    #[test]
    fn wrong_values_are_named() {
        let base = "api: openai-chat-completions\nbase_url: http://x/v1\nmodel: m\nallow_no_token: true\n";
        assert!(parse(&format!("{base}max_steps: 0\n"), no_env).unwrap_err().contains("`max_steps`"));
        assert!(parse(&format!("{base}temperature: hot\n"), no_env).unwrap_err().contains("`temperature`"));
        assert!(parse(&format!("{base}tokn: x\n"), no_env).unwrap_err().contains("unknown field `tokn`"));
        assert!(parse("api: anthropic-messages\nbase_url: https://a/v1\nmodel: m\ntoken: t\n", no_env)
            .unwrap_err()
            .contains("without it"));
        assert!(parse("api: gpt\n", no_env).unwrap_err().contains("`api`"));
        assert!(parse("api: [\n", no_env).unwrap_err().contains("not valid YAML"));
    }
}
