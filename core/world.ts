/**
 * The world folder (PROTOCOL section 2): its layout, the checks before a
 * host runs it, `sausage init`, and the lock that keeps a second host out.
 *
 * @module
 */
import { join, resolve } from "node:path";
import { isPluginName } from "./names.ts";
import { installSdk } from "./cargo/sdk.ts";
import { installAgent } from "./shipped_agent.ts";
import { MOUNT_POINTS } from "../runtime/messages.ts";
import { HostFileSystem } from "../vfs/host.ts";
import { DEFAULT_LIMITS, LimitError, type Limits, LIMITS_FILE } from "./limits.ts";

export { MOUNT_POINTS };

/** Where links in a world led before the VFS had its own default prefix. */
export const FORMER_LINK_PREFIXES: readonly string[] = ["/.sausage-link/"];

/** Raised when a world cannot be run; the message names the cause and the fix. */
export class WorldError extends Error {
  override name = "WorldError";
}

/** The paths of a world. */
export class World {
  /** Absolute path of the world folder. */
  readonly root: string;

  constructor(root: string) {
    this.root = resolve(root);
  }

  get pluginsDir(): string {
    return join(this.root, "plugins");
  }
  get stateDir(): string {
    return join(this.root, "state");
  }
  get configDir(): string {
    return join(this.root, "config");
  }
  get coreStateDir(): string {
    return join(this.root, "state", "core");
  }
  get journalPath(): string {
    return join(this.coreStateDir, "journal.sqlite");
  }
  get bootPath(): string {
    return join(this.configDir, "boot.yaml");
  }
  get agentConfigPath(): string {
    return join(this.configDir, "agent.yaml");
  }
  get limitsPath(): string {
    return join(this.root, LIMITS_FILE);
  }

  /** The folder of a plugin. */
  pluginDir(name: string): string {
    return join(this.pluginsDir, name);
  }

  /** The current version of a plugin. */
  pluginWasm(name: string): string {
    return join(this.pluginsDir, name, "plugin.wasm");
  }

  /** Whether `plugins/<name>/plugin.wasm` exists (and the name is valid). */
  async hasPlugin(name: string): Promise<boolean> {
    if (!isPluginName(name)) return false;
    try {
      return (await Deno.stat(this.pluginWasm(name))).isFile;
    } catch {
      return false;
    }
  }

  /** Plugins with a `plugin.wasm`, sorted. */
  async plugins(): Promise<string[]> {
    const names: string[] = [];
    try {
      for await (const e of Deno.readDir(this.pluginsDir)) {
        if (e.isDirectory && await this.hasPlugin(e.name)) names.push(e.name);
      }
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    return names.sort();
  }

  /**
   * Checks that the folder can be run: it exists, and has none of the mount
   * point names at its top level. Then rewrites the symbolic links made on
   * the host so that the host cannot follow them (PROTOCOL section 4): a
   * process that renames one over a folder another process has just checked
   * must not lead that process out of the world.
   */
  async check(): Promise<void> {
    let info: Deno.FileInfo;
    try {
      info = await Deno.stat(this.root);
    } catch {
      throw new WorldError(
        `there is no world at ${this.root}: create one with \`sausage init ${this.root}\``,
      );
    }
    if (!info.isDirectory) throw new WorldError(`${this.root} is not a folder`);
    for (const name of MOUNT_POINTS) {
      try {
        await Deno.lstat(join(this.root, name));
      } catch {
        continue;
      }
      throw new WorldError(
        `the world ${this.root} contains "${name}", which is a mount point for every process ` +
          `(/proc, /run and /self). Rename or remove ${join(this.root, name)} and start again.`,
      );
    }
  }

  /**
   * Rewrites the links made on the host into the form the host cannot follow
   * (see `vfs/host.ts`); returns their paths in the world. Call it with the
   * world's lock held, before any process runs.
   */
  sealLinks(): string[] {
    try {
      return new HostFileSystem(this.root, { reserved: MOUNT_POINTS })
        .sealLinks(FORMER_LINK_PREFIXES);
    } catch (e) {
      throw new WorldError(
        `the symbolic links of the world ${this.root} cannot be made safe ` +
          `(${e instanceof Error ? e.message : e}); fix the permissions and start again`,
      );
    }
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
 * templates (`config/agent.yaml`, `config/boot.yaml`, `config/limits.yaml`), the SDK and (with `installAgent`) the agent. Never overwrites a
 * file but the host's own (the SDK, and the agent until it was changed).
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

/** Who holds a world. */
export interface HostInfo {
  pid: number;
  hostname: string;
  started: string;
  command: string;
}

/**
 * An exclusive lock on a world (`state/core/host.lock`, an OS file lock that
 * dies with its process), so that two hosts never run one world.
 */
export class HostLock {
  readonly #file: Deno.FsFile;
  /**
   * The run before this one when it did not stop cleanly (killed or crashed):
   * its holder's info, which only a clean release clears; else `null`.
   */
  readonly uncleanStop: HostInfo | null;

  private constructor(file: Deno.FsFile, uncleanStop: HostInfo | null) {
    this.#file = file;
    this.uncleanStop = uncleanStop;
  }

  /** Takes the lock, or throws a {@linkcode WorldError} that names the holder. */
  static async acquire(world: World): Promise<HostLock> {
    await Deno.mkdir(world.coreStateDir, { recursive: true });
    const path = join(world.coreStateDir, "host.lock");
    const file = await Deno.open(path, { read: true, write: true, create: true });
    if (!(await file.tryLock(true))) {
      file.close();
      let holder = "another process";
      try {
        const info = JSON.parse(await Deno.readTextFile(path)) as HostInfo;
        holder =
          `process ${info.pid} on ${info.hostname} (started ${info.started}: ${info.command})`;
      } catch {
        // the holder is still writing its info
      }
      throw new WorldError(
        `the world ${world.root} is already run by ${holder}. ` +
          "Stop that host first, or use `sausage call` against a world that no host runs.",
      );
    }
    // a clean release empties the file: what is left was written by a run that never released it
    let uncleanStop: HostInfo | null = null;
    const left = (await Deno.readTextFile(path)).trim();
    if (left !== "") {
      try {
        uncleanStop = JSON.parse(left) as HostInfo;
      } catch {
        uncleanStop = { pid: 0, hostname: "?", started: "?", command: "?" };
      }
    }
    const info: HostInfo = {
      pid: Deno.pid,
      hostname: Deno.hostname(),
      started: new Date().toISOString(),
      command: ["sausage", ...Deno.args].join(" "),
    };
    await file.truncate(0);
    await file.write(new TextEncoder().encode(JSON.stringify(info) + "\n"));
    return new HostLock(file, uncleanStop);
  }

  /** Releases the lock, and marks the run as stopped cleanly. */
  release(): void {
    try {
      try {
        this.#file.truncateSync(0);
      } catch {
        // the next start then says the stop was unclean, which errs on the safe side
      }
      this.#file.unlockSync();
    } finally {
      this.#file.close();
    }
  }
}
