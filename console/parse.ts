/**
 * The console's input language: one line becomes one {@linkcode Command}.
 *
 * | Line | Command |
 * | --- | --- |
 * | `<plugin>.<method> [{json}]` | a call; params default to `{}` |
 * | `ps` | the running processes |
 * | `log [plugin\|pid] [-n N]` | the journal, newest last |
 * | `stop <pid>`, `kill <pid>` | `core.stop`, `core.kill` |
 * | `help` | the commands |
 * | `quit`, `exit` | leave the console |
 * | any other text | a message for the agent (`agent.chat`) |
 *
 * A word such as `help` or `stop` is a command only when the rest of the
 * line fits it: `help me write a plugin` goes to the agent.
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
  /** A message for the agent. */
  | { kind: "chat"; text: string }
  /** The process table. */
  | { kind: "ps" }
  /** Journal entries, optionally of one plugin or one process. */
  | { kind: "log"; plugin?: string; pid?: string; limit: number }
  /** `core.stop` or `core.kill` of a process (`pid` may be a unique prefix). */
  | { kind: "stop" | "kill"; pid: string }
  /** The list of commands. */
  | { kind: "help" }
  /** Leave the console. */
  | { kind: "quit" }
  /** A line that looks like a command but is wrong: nothing is sent. */
  | { kind: "invalid"; message: string; example: string };

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
      if (rest.length === 0) return { kind: first };
      break;
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
          example: `${first} probe-0197f3a2-7c1e-7d2b-9a41-5f0c2e8b1d34`,
        };
      }
      if (rest.length === 1) return { kind: first, pid: rest[0] };
      break;
    case "log": {
      const command = parseLog(rest);
      if (command) return command;
      break;
    }
  }
  return { kind: "chat", text };
}

function parseCall(method: string, paramsText: string): Command {
  if (paramsText === "") return { kind: "call", method, params: {} };
  const example = `${method} {"text": "milk"}`;
  let params: unknown;
  try {
    params = JSON.parse(paramsText);
  } catch (e) {
    return {
      kind: "invalid",
      message: `the params of ${method} are not JSON (${(e as Error).message}); ` +
        "params are a JSON object, with the names in double quotes",
      example,
    };
  }
  if (typeof params !== "object" || params === null || Array.isArray(params)) {
    return {
      kind: "invalid",
      message: `the params of ${method} must be a JSON object (params are by name), ` +
        `not ${describe(params)}`,
      example,
    };
  }
  return { kind: "call", method, params: params as Record<string, unknown> };
}

/** The `log` command; null when the words do not fit it (the line is then a chat message). */
function parseLog(args: string[]): Command | null {
  const example = "log probe -n 5";
  let limit = DEFAULT_LOG_LIMIT;
  let target: string | undefined;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "-n" || /^-n\d+$/.test(arg)) {
      const value = arg === "-n" ? args[++i] : arg.slice(2);
      const n = Number(value);
      if (value === undefined || !Number.isInteger(n) || n < 1 || n > MAX_LOG_LIMIT) {
        return {
          kind: "invalid",
          message: `-n takes a number of entries from 1 to ${MAX_LOG_LIMIT}`,
          example,
        };
      }
      limit = n;
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
