/**
 * The console's input language: one line becomes one {@linkcode Command}.
 *
 * | Line | Command |
 * | --- | --- |
 * | `<plugin>.<method> [{json}]` | a call; params default to `{}` |
 * | `ps` | the running processes |
 * | `log [plugin\|pid] [-n N]` | the journal, newest last |
 * | `stop <pid>`, `kill <pid>` | `core.stop`, `core.kill` |
 * | `methods <plugin>` | the plugin's interfaces, from its `rpc.discover` document |
 * | `activate <plugin> <wasm> [--force]` | `core.activate` of one plugin |
 * | `activate <p1>=<wasm1> <p2>=<wasm2> … [--force]` | `core.activate` of several together |
 * | `revert <plugin> [--force]` | `core.revert` |
 * | `ls [-l] [path]`, `cat <path>` | the files as a process sees them |
 * | `sessions` | the agent's sessions |
 * | `history [session] [-n N]` | the steps of a session of the agent |
 * | `reset [session]` | the agent's session starts afresh |
 * | `graph` | the plugins and their imports, from `/proc/core/graph.json` |
 * | `help` | the commands |
 * | `quit`, `exit` | leave the console |
 * | any other text | a message for the agent (`agent.chat`) |
 *
 * A word such as `help` or `stop` is a command only when the rest of the
 * line fits it: `help me write a plugin` goes to the agent. A line whose
 * first word is a typo of a command (`psx`, `lg -n 5`) is not sent: it gets
 * "did you mean" ({@linkcode nearCommand}).
 *
 * @module
 */
import { pluginOfPid } from "../core/names.ts";

/** How many journal entries `log` shows without `-n`. */
export const DEFAULT_LOG_LIMIT = 20;
/** The largest `-n` of `log` (the journal's own limit). */
export const MAX_LOG_LIMIT = 10_000;
/** The method that gets every line that is not a command. */
export const CHAT_METHOD = "agent.chat";

/** What a line asks for. */
export type Command =
  /** Nothing: an empty line. */
  | { kind: "empty" }
  /** A call of `method` (`<plugin>.<method>`, also `core.<method>`). */
  | { kind: "call"; method: string; params: Record<string, unknown> }
  /** `call <endpoint file> <method> [params]`: a call to a process's endpoint (PROTOCOL 5). */
  | { kind: "endpoint"; path: string; method: string; params: Record<string, unknown> }
  /** A message for the agent. */
  | { kind: "chat"; text: string }
  /** The process table. */
  | { kind: "ps" }
  /** Journal entries, optionally of one plugin or one process. */
  | { kind: "log"; plugin?: string; pid?: string; limit: number }
  /** `core.stop` or `core.kill` of a process (`pid` may be a unique prefix). */
  | { kind: "stop" | "kill"; pid: string }
  /** The interfaces of a plugin. */
  | { kind: "methods"; plugin: string }
  /** `core.activate`; `pairs` when typed as `<plugin>=<wasm>` (sent as `plugins: [...]`). */
  | { kind: "activate"; items: ActivateItem[]; pairs: boolean; force: boolean }
  /** `core.revert`. */
  | { kind: "revert"; plugin: string; force: boolean }
  /** A folder listing (or one file), with sizes and times when `long`. */
  | { kind: "ls"; path: string; long: boolean }
  /** A file's content. */
  | { kind: "cat"; path: string }
  /** The agent's sessions. */
  | { kind: "sessions" }
  /** The last steps of a session of the agent (the default session when none is named). */
  | { kind: "history"; session?: string; limit: number }
  /** `agent.reset` of a session. */
  | { kind: "reset"; session?: string }
  /** The plugin graph. */
  | { kind: "graph" }
  /** The list of commands. */
  | { kind: "help" }
  /** Clear the terminal's screen (nothing is sent). */
  | { kind: "clear" }
  /** Leave the console. */
  | { kind: "quit" }
  /** A typo of a command: nothing is sent, the command is suggested. */
  | { kind: "suggest"; typed: string; command: string }
  /**
   * A line that looks like a command but is wrong: nothing is sent. `method`
   * is the method whose params were wrong: the console then makes the
   * example from its own params.
   */
  | { kind: "invalid"; message: string; example: string; method?: string };

/** One plugin of `activate`: its name and the new file, as a process sees it. */
export interface ActivateItem {
  plugin: string;
  wasm: string;
}

/** `<plugin>.<method>`: a plugin name, a dot, and a method name that does not end with a dot. */
const METHOD = /^[a-z0-9_-]+\.[A-Za-z0-9_][A-Za-z0-9_.\-]*$/;
const PLUGIN = /^[a-z0-9_-]+$/;

/** Whether `word` has the form of a method name `<plugin>.<method>`. */
export function isMethodName(word: string): boolean {
  return METHOD.test(word) && !word.endsWith(".");
}

/** Whether `word` has the form of a process ID `<plugin>-<uuidv7>`. */
export function isProcessId(word: string): boolean {
  return pluginOfPid(word) !== null;
}

/** Turns one line of input into a command. Pure: it sends nothing. */
export function parseLine(line: string): Command {
  const text = line.trim();
  if (text === "") return { kind: "empty" };
  const words = text.split(/\s+/);
  const first = words[0];
  if (isMethodName(first)) return parseCall(first, text.slice(first.length).trim());
  const rest = words.slice(1);
  switch (first) {
    case "ps":
    case "help":
    case "clear":
    case "sessions":
    case "graph":
      if (rest.length === 0) return { kind: first };
      break;
    case "reset":
      // `reset the counter to 0` is a message for the agent
      if (rest.length === 0) return { kind: "reset" };
      if (rest.length === 1 && PLUGIN.test(rest[0])) return { kind: "reset", session: rest[0] };
      break;
    case "history": {
      const command = parseHistory(rest);
      if (command) return command;
      break;
    }
    case "quit":
    case "exit":
      if (rest.length === 0) return { kind: "quit" };
      break;
    case "stop":
    case "kill":
      if (rest.length === 0) {
        return {
          kind: "invalid",
          message: `${first} needs a process ID (ps lists them)`,
          example: `${first} agent-0197f3a2-7c1e-7d2b-9a41-5f0c2e8b1d34`,
        };
      }
      if (rest.length === 1) return { kind: first, pid: rest[0] };
      break;
    case "log": {
      const command = parseLog(rest);
      if (command) return command;
      break;
    }
    case "methods": {
      const command = parseMethods(rest);
      if (command) return command;
      break;
    }
    case "activate": {
      const command = parseActivate(rest);
      if (command) return command;
      break;
    }
    case "revert": {
      const command = parseRevert(rest);
      if (command) return command;
      break;
    }
    case "ls": {
      const command = parseLs(rest);
      if (command) return command;
      break;
    }
    case "call": {
      const command = parseEndpointCall(rest, text);
      if (command) return command;
      break;
    }
    case "cat":
      if (rest.length === 0) {
        return {
          kind: "invalid",
          message: "cat needs the path of a file",
          example: "cat /proc/core/graph.json",
        };
      }
      if (rest.length === 1) return { kind: "cat", path: rest[0] };
      break;
  }
  const near = nearCommand(first);
  if (
    near !== null && (rest.length === 0 || parseLine([near, ...rest].join(" ")).kind !== "chat")
  ) {
    return { kind: "suggest", typed: first, command: near };
  }
  return { kind: "chat", text };
}

/** The words that are commands by themselves (`exit` is `quit`'s twin). */
export const COMMAND_NAMES = [
  "activate",
  "call",
  "cat",
  "clear",
  "exit",
  "graph",
  "help",
  "history",
  "kill",
  "log",
  "ls",
  "methods",
  "ps",
  "quit",
  "reset",
  "revert",
  "sessions",
  "stop",
] as const;

/**
 * The command that `word` is a typo of: one edit away (two for words of six
 * letters or more), an exchange of two neighbours counting as one edit, case
 * ignored. Null for a command itself and for words near none.
 *
 * @example
 * ```ts
 * nearCommand("psx"); // "ps"
 * nearCommand("hello"); // null
 * ```
 */
export function nearCommand(word: string): string | null {
  const w = word.toLowerCase();
  if (!/^[a-z]+$/.test(w) || (COMMAND_NAMES as readonly string[]).includes(word)) return null;
  const most = w.length >= 6 ? 2 : 1;
  let best: { command: string; distance: number } | null = null;
  for (const command of COMMAND_NAMES) {
    const distance = editDistance(w, command);
    if (distance <= most && (best === null || distance < best.distance)) {
      best = { command, distance };
    }
  }
  return best?.command ?? null;
}

/** Edits from `a` to `b`: insertions, deletions, substitutions and exchanges of neighbours. */
function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.length][b.length];
}

/** An endpoint's method: a plain name (`stats`), as the endpoint's interface names it. */
const ENDPOINT_METHOD = /^[A-Za-z_][A-Za-z0-9_.]*$/;

/** `call /proc/www-…/control stats {}`; null when the words are not that (a message, then). */
function parseEndpointCall(rest: string[], text: string): Command | null {
  const example = "call /proc/www-0197f3a2/control stats {}";
  if (rest.length === 0 || !rest[0].startsWith("/")) {
    return rest.length === 0
      ? { kind: "invalid", message: "call needs an endpoint file and a method", example }
      : null;
  }
  const [path, method] = rest;
  if (method === undefined || !ENDPOINT_METHOD.test(method)) {
    return {
      kind: "invalid",
      message:
        `call ${path} needs the method of the endpoint (its interface is in methods <plugin>)`,
      example,
    };
  }
  const paramsText = text.slice(
    text.indexOf(method, text.indexOf(path) + path.length) + method.length,
  )
    .trim();
  const parsed = parseCall(method, paramsText);
  if (parsed.kind !== "call") return { ...parsed, example: `call ${path} ${method} {}` } as Command;
  return { kind: "endpoint", path, method, params: parsed.params };
}

function parseCall(method: string, paramsText: string): Command {
  if (paramsText === "") return { kind: "call", method, params: {} };
  const example = `${method} {}`; // the console puts the method's own params in it
  let params: unknown;
  try {
    params = JSON.parse(paramsText);
  } catch (e) {
    return {
      kind: "invalid",
      message: `the params of ${method} are not JSON (${(e as Error).message}); ` +
        "params are a JSON object, with the names in double quotes",
      example,
      method,
    };
  }
  if (typeof params !== "object" || params === null || Array.isArray(params)) {
    return {
      kind: "invalid",
      message: `the params of ${method} must be a JSON object (params are by name), ` +
        `not ${describe(params)}`,
      example,
      method,
    };
  }
  return { kind: "call", method, params: params as Record<string, unknown> };
}

/** `-n N` or `-nN`: how many entries or steps to show. */
const COUNT_OPTION = /^-n(\d+)?$/;

/**
 * The number of the `-n` option at `args[i]` (undefined when it is not a
 * count from 1 to {@linkcode MAX_LOG_LIMIT}), and the index of its last word.
 */
function countOption(args: string[], i: number): { n: number | undefined; last: number } {
  const separate = args[i] === "-n";
  const value = separate ? args[i + 1] : args[i].slice(2);
  const n = Number(value);
  const valid = value !== undefined && Number.isInteger(n) && n >= 1 && n <= MAX_LOG_LIMIT;
  return { n: valid ? n : undefined, last: separate ? i + 1 : i };
}

/** How many steps `history` shows without `-n`. */
export const DEFAULT_HISTORY_LIMIT = 20;

/** `history [session] [-n N]`; null when the words do not fit it (a chat message). */
function parseHistory(args: string[]): Command | null {
  let limit = DEFAULT_HISTORY_LIMIT;
  let session: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (COUNT_OPTION.test(arg)) {
      const count = countOption(args, i);
      if (count.n === undefined) {
        return {
          kind: "invalid",
          message: `-n takes a number of steps from 1 to ${MAX_LOG_LIMIT}`,
          example: "history -n 5",
        };
      }
      limit = count.n;
      i = count.last;
    } else if (session === undefined && PLUGIN.test(arg)) {
      session = arg;
    } else {
      return null;
    }
  }
  return session === undefined ? { kind: "history", limit } : { kind: "history", session, limit };
}

/** The `log` command; null when the words do not fit it (the line is then a chat message). */
function parseLog(args: string[]): Command | null {
  const example = "log agent -n 5";
  let limit = DEFAULT_LOG_LIMIT;
  let target: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (COUNT_OPTION.test(arg)) {
      const count = countOption(args, i);
      if (count.n === undefined) {
        return {
          kind: "invalid",
          message: `-n takes a number of entries from 1 to ${MAX_LOG_LIMIT}`,
          example,
        };
      }
      limit = count.n;
      i = count.last;
    } else if (arg.startsWith("-")) {
      return { kind: "invalid", message: `log has no option ${arg}; it has -n N`, example };
    } else if (target === undefined) {
      target = arg;
    } else {
      return null;
    }
  }
  if (target === undefined) return { kind: "log", limit };
  if (isProcessId(target)) return { kind: "log", pid: target, limit };
  if (PLUGIN.test(target)) return { kind: "log", plugin: target, limit };
  return {
    kind: "invalid",
    message: `"${target}" is neither a plugin name (a-z, 0-9, - and _) ` +
      "nor a process ID <plugin>-<uuidv7>",
    example,
  };
}

/** A word that looks like an attempt at a plugin name: letters, digits, `-` and `_`. */
const NAME_LIKE = /^[A-Za-z0-9_-]+$/;

function pluginNameRule(name: string): string {
  return `"${name}" is not a plugin name: names use a-z, 0-9, - and _`;
}

/** `methods <plugin>`; null when the words do not fit it. */
function parseMethods(args: string[]): Command | null {
  const example = "methods notes";
  if (args.length === 0) {
    return { kind: "invalid", message: "methods needs a plugin name", example };
  }
  if (args.length !== 1 || !NAME_LIKE.test(args[0])) return null;
  if (!PLUGIN.test(args[0])) return { kind: "invalid", message: pluginNameRule(args[0]), example };
  return { kind: "methods", plugin: args[0] };
}

/** Splits `--force` from the other words; an unknown option is an error text. */
function forceFlag(args: string[], command: string): { rest: string[]; force: boolean } | string {
  const rest: string[] = [];
  let force = false;
  for (const arg of args) {
    if (arg === "--force") force = true;
    else if (arg.startsWith("-")) return `${command} has no option ${arg}; it has --force`;
    else rest.push(arg);
  }
  return { rest, force };
}

/** Whether a word looks like the path of a `.wasm` file. */
function isWasmPath(word: string): boolean {
  return word.includes("/") || word.endsWith(".wasm");
}

/** A problem with the path of a `.wasm` file, or null. */
function wasmPathProblem(path: string): string | null {
  if (path.startsWith("/")) return null;
  return `the file "${path}" must be given as a path in the world, which starts with /`;
}

/** `activate <plugin> <wasm>` or `activate <p1>=<wasm1> …`, with `--force`; null when the words do not fit. */
function parseActivate(args: string[]): Command | null {
  const example = "activate notes /state/cargo/builds/7/notes.wasm";
  const flags = forceFlag(args, "activate");
  if (typeof flags === "string") return { kind: "invalid", message: flags, example };
  const { rest, force } = flags;
  if (rest.length === 0) {
    return {
      kind: "invalid",
      message: "activate needs a plugin and its new .wasm file, or <plugin>=<wasm> pairs",
      example,
    };
  }
  const pairs = rest.filter((w) => w.includes("="));
  if (pairs.length > 0) {
    const pairExample = "activate notes=/state/builds/notes.wasm agent=/state/builds/agent.wasm";
    if (pairs.length !== rest.length) {
      return {
        kind: "invalid",
        message: "activate takes either <plugin> <wasm>, or only <plugin>=<wasm> pairs",
        example: pairExample,
      };
    }
    const items: ActivateItem[] = [];
    for (const pair of pairs) {
      const at = pair.indexOf("=");
      const plugin = pair.slice(0, at);
      const wasm = pair.slice(at + 1);
      if (!PLUGIN.test(plugin)) {
        return { kind: "invalid", message: pluginNameRule(plugin), example: pairExample };
      }
      const problem = wasm === ""
        ? `${plugin}= needs the path of a .wasm file`
        : wasmPathProblem(wasm);
      if (problem) return { kind: "invalid", message: problem, example: pairExample };
      if (items.some((i) => i.plugin === plugin)) {
        return { kind: "invalid", message: `${plugin} appears twice`, example: pairExample };
      }
      items.push({ plugin, wasm });
    }
    return { kind: "activate", items, pairs: true, force };
  }
  const [plugin, wasm] = rest;
  if (!NAME_LIKE.test(plugin) || rest.length > 2) return null;
  if (wasm === undefined) {
    if (!PLUGIN.test(plugin)) return null;
    return {
      kind: "invalid",
      message: `activate ${plugin} needs the new .wasm file, for example from cargo.build`,
      example,
    };
  }
  if (!isWasmPath(wasm)) return null;
  if (!PLUGIN.test(plugin)) return { kind: "invalid", message: pluginNameRule(plugin), example };
  const problem = wasmPathProblem(wasm);
  if (problem) return { kind: "invalid", message: problem, example };
  return { kind: "activate", items: [{ plugin, wasm }], pairs: false, force };
}

/** `revert <plugin> [--force]`; null when the words do not fit. */
function parseRevert(args: string[]): Command | null {
  const example = "revert notes";
  const flags = forceFlag(args, "revert");
  if (typeof flags === "string") return { kind: "invalid", message: flags, example };
  const { rest, force } = flags;
  if (rest.length === 0) {
    return { kind: "invalid", message: "revert needs a plugin name", example };
  }
  if (rest.length !== 1 || !NAME_LIKE.test(rest[0])) return null;
  if (!PLUGIN.test(rest[0])) return { kind: "invalid", message: pluginNameRule(rest[0]), example };
  return { kind: "revert", plugin: rest[0], force };
}

/** `ls [-l] [path]`; null when the words do not fit. */
function parseLs(args: string[]): Command | null {
  let long = false;
  const paths: string[] = [];
  for (const arg of args) {
    if (arg === "-l") long = true;
    else if (arg.startsWith("-") && arg.length > 1) {
      return {
        kind: "invalid",
        message: `ls has no option ${arg}; it has -l`,
        example: "ls -l /plugins",
      };
    } else paths.push(arg);
  }
  if (paths.length > 1) return null;
  return { kind: "ls", path: paths[0] ?? "/", long };
}

/** The params of `core.activate` for an `activate` command. */
export function activateParams(
  command: { items: readonly ActivateItem[]; pairs: boolean; force: boolean },
): Record<string, unknown> {
  const params: Record<string, unknown> = command.pairs
    ? { plugins: command.items.map((i) => ({ plugin: i.plugin, wasm: i.wasm })) }
    : { plugin: command.items[0].plugin, wasm: command.items[0].wasm };
  if (command.force) params.force = true;
  return params;
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return `a ${typeof value}`;
}

/** How a `stop` or `kill` argument names a running process. */
export type PidMatch =
  | { pid: string }
  | { ambiguous: string[] };

/**
 * The process that `text` names among `pids`: the exact ID, else the only
 * ID that starts with `text`. When nothing matches, `text` itself (the core
 * then says that there is no such process).
 */
export function resolvePid(text: string, pids: readonly string[]): PidMatch {
  if (pids.includes(text)) return { pid: text };
  const matches = pids.filter((p) => p.startsWith(text));
  if (matches.length === 1) return { pid: matches[0] };
  if (matches.length > 1) return { ambiguous: matches };
  return { pid: text };
}
