/**
 * `sausage init`: a world made or completed, with the commented templates
 * of its configuration, the SDK and the agent the host ships. Never
 * overwrites a file but the host's own.
 *
 * @module
 */
import { join } from "node:path";
import { installSdk } from "./cargo/sdk.ts";
import { DEFAULT_LIMITS, LimitError, type Limits } from "./limits.ts";
import { installAgent } from "./shipped_agent.ts";
import { World } from "./world.ts";

const AGENT_TEMPLATE = `# The agent: the model it talks to, and how (PROTOCOL section 2).
#
# Uncomment ONE of the examples below and put in your key. Until the agent is
# configured, agent.chat names the field that is missing.
#
#   api       the wire format: openai-chat-completions (OpenAI, OpenRouter,
#             Ollama and most providers) or anthropic-messages (Anthropic)
#   base_url  as each SDK has it: with /v1 for openai-chat-completions,
#             without it for anthropic-messages
#   model     the model name at that provider
#   token     the API key
#   token_env NAME   instead of token: the key is the host's environment
#             variable NAME, which the host hands to the agent alone
#   allow_no_token: true   lets a local model run without a key

# OpenAI
# api: openai-chat-completions
# base_url: https://api.openai.com/v1
# model: gpt-4.1
# token: sk-...

# OpenRouter
# api: openai-chat-completions
# base_url: https://openrouter.ai/api/v1
# model: anthropic/claude-sonnet-4
# token: sk-or-...

# Anthropic
# api: anthropic-messages
# base_url: https://api.anthropic.com
# model: claude-sonnet-4-5
# token: sk-ant-...

# A local model with Ollama (no key)
# api: openai-chat-completions
# base_url: http://localhost:11434/v1
# model: qwen3-coder
# allow_no_token: true
`;

const BOOT_TEMPLATE =
  `# Services: calls the core makes at each start, in order (PROTOCOL section 8).
#
# Each service is a detached call with the parent "core". The core waits for
# its result (the service is ready) before it starts the next one, writes a
# failure to the journal and goes on, and starts a service again after an
# upgrade of its plugin.
#
# Example:
#
# - method: secrets.serve
#   params: {}
# - method: www.start
#   params:
#     port: 8080

[]
`;

/**
 * The commented `config/limits.yaml` that `sausage init` writes: every limit
 * of {@linkcode DEFAULT_LIMITS} with its default and what it counts, so the
 * file lists the limits of the host that wrote it. Parsed as it is, it gives
 * the defaults.
 *
 * @example
 * ```ts
 * limitsTemplate().includes("# processes: 1000"); // true
 * ```
 */
export function limitsTemplate(): string {
  const names = Object.keys(DEFAULT_LIMITS) as (keyof Limits)[];
  const settings = names.map((name) => `# ${name}: ${DEFAULT_LIMITS[name]}`);
  const width = Math.max(...settings.map((line) => line.length));
  const lines = names.map((name, i) => {
    const what = _limitWhat(name);
    return what === undefined ? settings[i] : `${settings[i].padEnd(width)}  # ${what}`;
  });
  return `# Limits of processes, calls and what they hold (PROTOCOL section 3.10), read
# when the host starts.
#
# Each line below is a limit at its default. To raise one, uncomment its line
# and change the number (a positive integer), then restart the host. An unknown
# name or a value that is not a positive integer is journaled, and the default
# applies.

${lines.join("\n")}
`;
}

/** What a limit counts, in the words of its refusal (core/limits.ts); undefined when they change shape. */
function _limitWhat(name: keyof Limits): string | undefined {
  const value = DEFAULT_LIMITS[name];
  const message = new LimitError(name, value, "m").message;
  const marker = `the limit ${name} (${value} `;
  const start = message.indexOf(marker);
  const end = message.indexOf(") is reached", start);
  if (start < 0 || end < 0) return undefined;
  return message.slice(start + marker.length, end);
}

/** What `sausage init` did. */
export interface InitReport {
  root: string;
  created: string[];
  kept: string[];
  /** What the person should know: why a part of the world was left as it is. */
  notes: string[];
}

/** Options of {@linkcode initWorld}. */
export interface InitOptions {
  /**
   * Install the agent the host ships in `plugins/agent/` (default false:
   * `sausage init` asks for it; tests make worlds without it). Host starts
   * then keep it at the host's version (see `shipped_agent.ts`).
   */
  installAgent?: boolean;
}

/**
 * Creates a world, or completes one: folders, commented configuration
 * templates (`config/agent.yaml`, `config/boot.yaml`, `config/limits.yaml`),
 * the SDK and (with `installAgent`) the agent. Never overwrites a file but
 * the host's own (the SDK, and the agent until it was changed).
 * Asks nothing, reads no variables.
 *
 * @example
 * ```ts
 * const report = await initWorld("/tmp/world", { installAgent: true });
 * for (const path of report.created) console.log(`created ${path}`);
 * ```
 */
export async function initWorld(root: string, options: InitOptions = {}): Promise<InitReport> {
  const world = new World(root);
  const report: InitReport = { root: world.root, created: [], kept: [], notes: [] };
  for (const dir of [world.root, world.pluginsDir, world.coreStateDir, world.configDir]) {
    await Deno.mkdir(dir, { recursive: true });
  }
  await world.check();
  const sdk = join(world.pluginDir("cargo"), "sdk");
  if (await installSdk(sdk) > 0) report.created.push(`${sdk}/ (the Rust SDK)`);
  if (options.installAgent) {
    const agent = await installAgent(world);
    const parts = [
      [agent.wasm, world.pluginWasm("agent"), "the agent"],
      [agent.source, `${join(world.pluginDir("agent"), "source")}/`, "the agent's source"],
    ] as const;
    for (const [part, path, what] of parts) {
      if (part === "installed") report.created.push(`${path} (${what})`);
      if (part === "changed") report.kept.push(path);
    }
    if (agent.note) report.notes.push(agent.note);
  }
  const templates = [
    [world.agentConfigPath, AGENT_TEMPLATE],
    [world.bootPath, BOOT_TEMPLATE],
    [world.limitsPath, limitsTemplate()],
  ];
  for (const [path, text] of templates) {
    try {
      await Deno.writeTextFile(path, text, { createNew: true });
      report.created.push(path);
    } catch (e) {
      if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
      report.kept.push(path);
    }
  }
  return report;
}
