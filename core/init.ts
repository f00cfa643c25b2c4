/**
 * `sausage init`: a world made or completed, with the commented templates
 * of its configuration, the SDK, the agent the host ships and (asked for)
 * the sources of the example plugins. Never overwrites a file but the
 * host's own.
 *
 * @module
 */
import { dirname, join } from "node:path";
import { installSdk } from "./cargo/sdk.ts";
import { EXAMPLE_PLUGINS as EXAMPLES, exampleCrate } from "./embedded.ts";
import { DEFAULT_LIMITS, LimitError, type Limits } from "./limits.ts";
import { installAgent, readAgentSource } from "./shipped_agent.ts";
import { World } from "./world.ts";
import { unignoredWorkTree } from "./work_tree.ts";

/** The example plugins the host ships (`plugins/<name>/` of the repository), in this order. */
export const EXAMPLE_PLUGINS: readonly string[] = EXAMPLES;

/** The line of an example's manifest that names the SDK. */
const SDK_DEPENDENCY = /^sausage-plugin\s*=.*$/m;

/** The comment above it in the repository, which a world's copy does not need. */
const SDK_COMMENT = /^#.*sausage-plugin.*\n(?=sausage-plugin\s*=)/m;

/**
 * An example's `Cargo.toml` as a world builds it: in the repository the SDK
 * is a path (`../../sdk/sausage-plugin`), which does not exist in a world;
 * there `sausage-plugin = "0.1"` is what `cargo.build` resolves to the
 * world's `/plugins/cargo/sdk/` (PROTOCOL section 11).
 *
 * @example
 * ```ts
 * const text = '[dependencies]\nsausage-plugin = { path = "../../sdk/sausage-plugin" }\n';
 * exampleManifest(text); // '[dependencies]\nsausage-plugin = "0.1"\n'
 * ```
 */
export function exampleManifest(text: string): string {
  if (!SDK_DEPENDENCY.test(text)) {
    throw new Error(
      'the example\'s Cargo.toml has no sausage-plugin dependency: add `sausage-plugin = "0.1"`',
    );
  }
  return text.replace(
    SDK_COMMENT,
    `# cargo.build resolves sausage-plugin = "0.1" to the world's SDK, /plugins/cargo/sdk/.\n`,
  ).replace(SDK_DEPENDENCY, `sausage-plugin = "0.1"`);
}

/**
 * Writes the source of each example to `plugins/<name>/source/`, unless
 * that folder exists (a world's own source is never overwritten).
 */
async function installExamples(world: World, report: InitReport): Promise<void> {
  for (const name of EXAMPLE_PLUGINS) {
    const dest = join(world.pluginDir(name), "source");
    const shown = `${dest}/`;
    try {
      await Deno.lstat(dest);
      report.kept.push(shown);
      report.notes.push(
        `the example ${name} was not installed: ${shown} exists (remove it to get the example)`,
      );
      continue;
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    const files = await readAgentSource(exampleCrate(name));
    const manifest = files.get("Cargo.toml");
    if (!manifest) {
      throw new Error(
        `the example ${name} is missing from this sausage (${exampleCrate(name)}Cargo.toml): ` +
          "run it from a checkout, or compile it with `deno task compile`",
      );
    }
    files.set(
      "Cargo.toml",
      new TextEncoder().encode(exampleManifest(new TextDecoder().decode(manifest))),
    );
    // written beside the folder, then renamed: a source is there whole or not at all
    const staging = join(world.pluginDir(name), `.sausage-example-${crypto.randomUUID()}`);
    try {
      for (const [path, bytes] of files) {
        const target = join(staging, ...path.split("/"));
        await Deno.mkdir(dirname(target), { recursive: true });
        await Deno.writeFile(target, bytes);
      }
      await Deno.rename(staging, dest);
    } finally {
      await Deno.remove(staging, { recursive: true }).catch(() => {});
    }
    report.created.push(`${shown} (the example ${name}: cargo.build {"plugin": "${name}"})`);
  }
}

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
  return `# Limits of processes, calls and what they hold (PROTOCOL section 3.10), and
# how much journal the world keeps (section 7), read when the host starts.
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
  /** What puts the world at risk, with the fix: a new world that git would commit. */
  warnings: string[];
}

/** Options of {@linkcode initWorld}. */
export interface InitOptions {
  /**
   * Install the agent the host ships in `plugins/agent/` (default false:
   * `sausage init` asks for it; tests make worlds without it). Host starts
   * then keep it at the host's version (see `shipped_agent.ts`).
   */
  installAgent?: boolean;
  /**
   * Install the sources of the example plugins ({@linkcode EXAMPLE_PLUGINS})
   * in `plugins/<name>/source/`, ready for `cargo.build` (default false).
   * A source folder that exists is kept as it is.
   */
  examples?: boolean;
}

/**
 * Creates a world, or completes one: folders, commented configuration
 * templates (`config/agent.yaml`, `config/boot.yaml`, `config/limits.yaml`),
 * the SDK, (with `installAgent`) the agent and (with `examples`) the
 * sources of the example plugins. Never overwrites a file but the host's
 * own (the SDK, and the agent until it was changed).
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
  const report: InitReport = {
    root: world.root,
    created: [],
    kept: [],
    notes: [],
    warnings: [],
  };
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
  if (options.examples) await installExamples(world, report);
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
  if (report.created.includes(world.agentConfigPath)) {
    const tree = await unignoredWorkTree(world.root);
    if (tree) {
      report.warnings.push(
        `the world ${world.root} is inside the git work tree ${tree}, which does not ignore it: ` +
          `its config/agent.yaml may hold an API key, one \`git add\` from a commit; make the ` +
          `world outside ${tree}, or add its folder to ${tree}/.gitignore`,
      );
    }
  }
  return report;
}
