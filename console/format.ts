/**
 * What the console prints: results, errors, notifications, the process
 * table, journal entries and the help. Every function is pure and returns
 * text without a final newline; colours come from a {@linkcode Style}.
 *
 * @module
 */
import pc from "picocolors";
import type { ErrorObject } from "../core/jsonrpc.ts";
import type { Entry } from "../core/journal.ts";
import { DEFAULT_LOG_LIMIT } from "./parse.ts";

/** The colours the console uses; each is the identity when colours are off. */
export interface Style {
  red(text: string): string;
  green(text: string): string;
  cyan(text: string): string;
  dim(text: string): string;
  bold(text: string): string;
}

/** A {@linkcode Style} with colours on or off. */
export function makeStyle(colors: boolean): Style {
  const c = pc.createColors(colors);
  return { red: c.red, green: c.green, cyan: c.cyan, dim: c.dim, bold: c.bold };
}

/** A style without colours. */
export const PLAIN: Style = makeStyle(false);

/** Indents every line of `text` by `spaces`. */
export function indent(text: string, spaces = 2): string {
  const pad = " ".repeat(spaces);
  return text.split("\n").map((line) => line === "" ? line : pad + line).join("\n");
}

/** Shortens `text` to at most `max` characters, with an ellipsis. */
export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** The longest label, and the longest params text in a notification line. */
const MAX_LABEL = 60;
const MAX_NOTIFICATION = 300;

/** The label of a call: the line that started it, shortened. */
export function callLabel(line: string): string {
  return truncate(line.trim().replace(/\s+/g, " "), MAX_LABEL);
}

function labelLine(label: string, style: Style): string {
  return style.bold(`${label} →`);
}

/** Options of {@linkcode formatResult} and {@linkcode formatError}. */
export interface BlockOptions {
  /** The call this answers: shown before it when several calls are in flight. */
  label?: string;
  style?: Style;
}

/**
 * A result: pretty JSON indented by two spaces. Strings of several lines
 * (build and test output, compiler messages) are shown as text after the
 * JSON, under their path, with the colours they carry (none without colours).
 *
 * @example
 * ```ts
 * formatResult({ wasm: "/state/b/1/notes.wasm", tests: { output: "running 2 tests\nok" } });
 * // the JSON with "tests.output": "(text below)", then "tests.output:" and its two lines
 * ```
 */
export function formatResult(value: unknown, options: BlockOptions = {}): string {
  const style = options.style ?? PLAIN;
  const body = formatValue(value, style);
  return options.label === undefined ? body : `${labelLine(options.label, style)}\n${body}`;
}

/** Below this many characters, a string stays in the JSON even with a newline. */
const SHORT_TEXT = 60;

/** A value as indented JSON, its long texts of several lines after it as text. */
function formatValue(value: unknown, style: Style): string {
  const texts: [string, string][] = [];
  const shown = extractTexts(value ?? null, "", texts);
  if (texts.length === 1 && texts[0][0] === "") return indent(showText(texts[0][1], style));
  const parts = [indent(JSON.stringify(shown, null, 2) ?? "null")];
  for (const [path, text] of texts) {
    parts.push(`${indent(style.dim(`${path}:`))}\n${indent(showText(text, style), 4)}`);
  }
  return parts.join("\n");
}

/** A copy of `value` in which each long text of several lines is replaced by a pointer below. */
function extractTexts(value: unknown, path: string, texts: [string, string][]): unknown {
  if (typeof value === "string") {
    if (!value.includes("\n") || value.length < SHORT_TEXT) return value;
    texts.push([path, value]);
    return "(text below)";
  }
  if (Array.isArray(value)) return value.map((v, i) => extractTexts(v, `${path}[${i}]`, texts));
  if (typeof value === "object" && value !== null) {
    return Object.fromEntries(
      Object.entries(value).map((
        [k, v],
      ) => [k, extractTexts(v, path === "" ? k : `${path}.${k}`, texts)]),
    );
  }
  return value;
}

/** A text as the terminal shows it: its own colours kept only when the console has colours. */
function showText(text: string, style: Style): string {
  const colored = style.bold("x") !== "x";
  // deno-lint-ignore no-control-regex
  const escapes = /\x1b\[[0-9;]*[A-Za-z]/g;
  const plain = !escapes.test(text);
  const shown = colored ? (plain ? cargoColours(text, style) : text) : text.replace(escapes, "");
  return shown.replace(/\r\n/g, "\n").replace(/\n+$/, "") + (colored ? "\x1b[0m" : "");
}

/**
 * cargo's and rustc's colours on a text that has none: the output of
 * `cargo.build` is kept plain for the model, MCP clients and the journal,
 * and coloured here as a terminal would show it.
 *
 * @example
 * ```ts
 * import { makeStyle } from "./format.ts";
 * cargoColours("error[E0425]: cannot find value `x`\n  --> src/main.rs:3:5", makeStyle(true));
 * ```
 */
export function cargoColours(text: string, style: Style): string {
  return text.split("\n").map((line) => {
    const head = /^(error(?:\[E\d+\])?|warning)(:.*)$/.exec(line);
    if (head) {
      const paint = head[1] === "warning" ? style.cyan : style.red;
      return style.bold(paint(head[1])) + style.bold(head[2]);
    }
    if (/^\s*(-->|\d* \|)/.test(line)) return style.cyan(line);
    if (/^test .* \.\.\. ok$|^test result: ok\./.test(line)) return style.green(line);
    if (/ \.\.\. FAILED$|^test result: FAILED/.test(line)) return style.red(line);
    if (/^\s+(Compiling|Finished|Running)\b/.test(line)) return style.bold(style.green(line));
    return line;
  }).join("\n");
}

/** A text (the agent's answer): indented by two spaces. */
export function formatText(text: string, options: BlockOptions = {}): string {
  const style = options.style ?? PLAIN;
  const body = indent(text);
  return options.label === undefined ? body : `${labelLine(options.label, style)}\n${body}`;
}

/** Options of {@linkcode formatError}. */
export interface ErrorOptions extends BlockOptions {
  /** One more line of advice, after the error. */
  hint?: string;
}

/** The code a process that ended without an answer gets (PROTOCOL 3.9). */
const PROCESS_ENDED = -32002;
/** The code of a rejected activation: its message is written for people. */
const ACTIVATION_REJECTED = -32003;

/**
 * An error object: `error <code>: <message>` in red, more lines of the
 * message below it; for -32002 the last journal lines of the process
 * (`data.log`); for -32003 the message alone (its `data` repeats it); other
 * `data` as text or JSON.
 */
export function formatError(error: ErrorObject, options: ErrorOptions = {}): string {
  const style = options.style ?? PLAIN;
  const lines: string[] = [];
  if (options.label !== undefined) lines.push(labelLine(options.label, style));
  const [first, ...more] = String(error.message).replace(/\n+$/, "").split("\n");
  lines.push(indent(style.red(`error ${error.code}: ${first}`)));
  if (more.length > 0) lines.push(indent(more.join("\n"), 4));
  const data = error.data as Record<string, unknown> | undefined;
  if (error.code === ACTIVATION_REJECTED) {
    // the message says everything, with a counterexample for each problem
  } else if (error.code === PROCESS_ENDED && data && Array.isArray(data.log)) {
    if (data.log.length > 0) {
      lines.push(indent(style.dim("last lines of its log:")));
      for (const line of data.log) lines.push(indent(String(line), 4));
    }
  } else if (typeof error.data === "string") {
    lines.push(indent(error.data.replace(/\n$/, ""), 4));
  } else if (error.data !== undefined && error.data !== null) {
    lines.push(indent(formatValue(error.data, style), 2));
  }
  if (options.hint !== undefined) lines.push(indent(style.dim(`hint: ${options.hint}`)));
  return lines.join("\n");
}

/** A line that was not sent: what is wrong, and an example of the right form. */
export function formatUsage(message: string, example: string, style: Style = PLAIN): string {
  return `${indent(style.red(message))}\n${indent(style.dim(`for example: ${example}`))}`;
}

/** A `core.notify` of a running call: dimmed, on one line. */
export function formatNotification(
  name: string,
  params: unknown,
  options: BlockOptions = {},
): string {
  const style = options.style ?? PLAIN;
  const prefix = options.label === undefined ? "" : `${options.label}: `;
  const isEmpty = params === undefined || params === null ||
    (typeof params === "object" && Object.keys(params).length === 0);
  const text = isEmpty ? name : `${name} ${JSON.stringify(params)}`;
  return indent(style.dim(`· ${prefix}${truncate(text, MAX_NOTIFICATION)}`));
}

/** A step of the agent (`step` notification of `agent.chat`). */
interface AgentStep {
  role?: string;
  text?: string;
  blocks?: string[];
  tools?: string[];
  args?: string;
  ok?: boolean;
}

/**
 * One short dimmed line for a step of the agent: a tool call with its
 * arguments, and its result (`▸ cargo.build notes … ok, 2 tests passed`);
 * a retry or a compaction as a note. Errors are red.
 *
 * @example
 * ```ts
 * formatStep({ role: "tool", text: "12 lines", blocks: ["toolResponse"], tools: ["read_file"], args: "/a", ok: true });
 * // "  ▸ read_file /a … 12 lines"
 * ```
 */
export function formatStep(params: unknown, options: BlockOptions = {}): string {
  const style = options.style ?? PLAIN;
  const step = (params ?? {}) as AgentStep;
  const blocks = step.blocks ?? [];
  const prefix = options.label === undefined ? "" : `${options.label}: `;
  const tool = step.tools?.[0] ?? "";
  const args = step.args ? ` ${step.args}` : "";
  let line: string;
  if (blocks.includes("toolRequest")) line = `▸ ${tool}${args}`;
  else if (blocks.includes("toolResponse")) line = `▸ ${tool}${args} … ${step.text ?? ""}`;
  else line = step.text ?? "";
  const text = truncate(`${prefix}${line}`, MAX_NOTIFICATION);
  const failed = step.ok === false || step.role === "error";
  return indent(failed ? style.red(text) : style.dim(text));
}

/** A notification that belongs to no call: its method and params, dimmed. */
export function formatUnsolicited(method: string, params: unknown, style: Style = PLAIN): string {
  return formatNotification(method, params, { style });
}

/** A table: a header row and aligned columns (the last column is not padded). */
export function formatTable(headers: string[], rows: string[][], style: Style = PLAIN): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => i === cells.length - 1 ? c : c.padEnd(widths[i])).join("  ").trimEnd();
  return [style.bold(line(headers)), ...rows.map(line)].map((l) => indent(l)).join("\n");
}

/** A duration, short: `12s`, `3m05s`, `2h03m`, `4d02h`. */
export function formatAge(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  const pad = (n: number) => String(n).padStart(2, "0");
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${pad(s % 60)}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h${pad(Math.floor(s / 60) % 60)}m`;
  return `${Math.floor(s / 86400)}d${pad(Math.floor(s / 3600) % 24)}h`;
}

/** One row of `ps`. */
export interface ProcessRow {
  pid: string;
  plugin: string;
  method: string;
  state: string;
  /** `console`, `core`, a process ID, or null for a detached process. */
  parent: string | null;
  startedAt: Date;
}

/** The `ps` table: pid, plugin.method, state, parent, age. */
export function formatProcesses(rows: ProcessRow[], now: Date, style: Style = PLAIN): string {
  if (rows.length === 0) return indent(style.dim("no processes"));
  return formatTable(
    ["PID", "CALL", "STATE", "PARENT", "AGE"],
    rows.map((p) => [
      p.pid,
      `${p.plugin}.${p.method}`,
      p.state,
      p.parent ?? "detached",
      formatAge(now.getTime() - p.startedAt.getTime()),
    ]),
    style,
  );
}

/** Options of {@linkcode formatLog}. */
export interface LogOptions {
  /** Show the process of each entry (off when all are of one process). */
  showPid?: boolean;
  /** Entries of another day than this show their date. */
  now?: Date;
  style?: Style;
}

/** A time of day `HH:MM:SS.mmm` in local time, with the date when it is not `now`'s day. */
export function formatClock(time: Date, now: Date = new Date()): string {
  const pad = (n: number, w = 2) => String(n).padStart(w, "0");
  const clock = `${pad(time.getHours())}:${pad(time.getMinutes())}:${pad(time.getSeconds())}.` +
    pad(time.getMilliseconds(), 3);
  const sameDay = time.getFullYear() === now.getFullYear() &&
    time.getMonth() === now.getMonth() && time.getDate() === now.getDate();
  if (sameDay) return clock;
  return `${time.getFullYear()}-${pad(time.getMonth() + 1)}-${pad(time.getDate())} ${clock}`;
}

/**
 * Journal entries, oldest first: time, process (or `core` for the host's
 * own events), stream, line. The core's events are dimmed.
 */
export function formatLog(entries: Entry[], options: LogOptions = {}): string {
  const style = options.style ?? PLAIN;
  if (entries.length === 0) return indent(style.dim("no journal entries"));
  const showPid = options.showPid ?? true;
  const now = options.now ?? new Date();
  const who = entries.map((e) => e.pid ?? "core");
  const width = Math.max(...who.map((w) => w.length));
  return entries.map((e, i) => {
    const head = [formatClock(new Date(e.time), now)];
    if (showPid) head.push(who[i].padEnd(width));
    head.push(e.stream.padEnd(6));
    const text = `${head.join("  ")}  ${e.line}`;
    return indent(e.stream === "core" ? style.dim(text) : text);
  }).join("\n");
}

/** A step of `agent.history`. */
export interface HistoryStep {
  time: string;
  role: string;
  text: string;
  blocks: string[];
  tools: string[];
  args?: string;
  ok?: boolean;
  input_tokens?: number;
  output_tokens?: number;
  ms?: number;
}

/**
 * The steps of a conversation, oldest first: the person's messages after
 * `>`, the agent's answers as text, tool steps as short dimmed lines, and
 * the tokens and time of each turn.
 *
 * @example
 * ```ts
 * formatHistory([{ time: "2026-12-01T10:00:00Z", role: "user", text: "hi", blocks: ["text"], tools: [] }]);
 * ```
 */
export function formatHistory(steps: HistoryStep[], options: LogOptions = {}): string {
  const style = options.style ?? PLAIN;
  if (steps.length === 0) return indent(style.dim("no steps yet: type a message for the agent"));
  const now = options.now ?? new Date();
  return steps.map((step) => {
    const clock = style.dim(formatClock(new Date(step.time), now));
    if (step.role === "user") return indent(`${clock}  ${style.bold(`> ${step.text}`)}`);
    if (step.blocks.includes("toolRequest")) return "";
    if (step.blocks.includes("toolResponse") || step.role === "error" || step.role === "notice") {
      return `${indent(clock)}${formatStep(step, { style })}`;
    }
    const usage = step.ms === undefined ? "" : style.dim(
      ` (${step.input_tokens ?? 0} + ${step.output_tokens ?? 0} tokens, ${
        (step.ms / 1000).toFixed(1)
      } s)`,
    );
    return `${indent(clock)}\n${indent(step.text, 4)}${usage}`;
  }).filter((line) => line !== "").join("\n");
}

/** One command of the help: its form, what it does, and an example. */
export interface HelpEntry {
  form: string;
  does: string;
  example: string;
}

/** Every command of the console. */
export const HELP: readonly HelpEntry[] = [
  {
    form: "<plugin>.<method> [{json}]",
    does: "call a method; params are a JSON object, {} when left out",
    example: 'cargo.build {"plugin": "notes"}',
  },
  {
    form: "core.<method> [{json}]",
    does: "call the core (PROTOCOL section 9): call, stop, kill, lock, log, exit, …",
    example: 'core.log {"grep": "panic", "limit": 5}',
  },
  {
    form: "ps",
    does: "the running processes: pid, call, state, parent, age",
    example: "ps",
  },
  {
    form: "log [plugin|pid] [-n N]",
    does: `the journal, newest last (${DEFAULT_LOG_LIMIT} entries unless -n)`,
    example: "log agent -n 5",
  },
  {
    form: "stop <pid>",
    does: "stop a process: its stdin closes, and it is killed after 5 s",
    example: "stop agent-0197f3a2 (a unique start of the ID is enough)",
  },
  {
    form: "kill <pid>",
    does: "kill a process at once",
    example: "kill agent-0197f3a2",
  },
  {
    form: "methods <plugin>",
    does: "a plugin's methods: params, results, docs; its endpoints and imports",
    example: "methods notes",
  },
  {
    form: "activate <plugin> <wasm>",
    does: "make a .wasm the plugin's version if all imports fit; --force: no checks",
    example: "activate notes /state/cargo/builds/7/notes.wasm",
  },
  {
    form: "activate <p>=<wasm> …",
    does: "activate several plugins together, checked as a set",
    example: "activate notes=/state/b/notes.wasm agent=/state/b/agent.wasm",
  },
  {
    form: "revert <plugin> [--force]",
    does: "go back to the version before (plugin.prev.wasm)",
    example: "revert notes",
  },
  {
    form: "ls [-l] [path]",
    does: "a folder as a process sees it (world, /proc, /run); -l: sizes, times",
    example: "ls /proc/core",
  },
  {
    form: "call <endpoint file> <method> [params]",
    does: "call the endpoint a running process serves (PROTOCOL section 5)",
    example: "call /run/secrets names {}",
  },
  {
    form: "cat <path>",
    does: "a file as a process sees it",
    example: "cat /proc/core/graph.json",
  },
  {
    form: "sessions",
    does: "the agent's conversations: name, steps, first message",
    example: "sessions",
  },
  {
    form: "history [session] [-n N]",
    does: "the last steps of a conversation with the agent (default session, 20 steps)",
    example: "history -n 5",
  },
  {
    form: "reset [session]",
    does: "the agent forgets a conversation (its history stays)",
    example: "reset",
  },
  {
    form: "graph",
    does: "the plugins and what each imports; broken and missing imports in red",
    example: "graph",
  },
  { form: "help", does: "this list", example: "help" },
  { form: "clear", does: "clear the screen (nothing goes to the agent)", example: "clear" },
  {
    form: "quit, exit, Ctrl-D",
    does: "leave the console; the host stops every process",
    example: "quit",
  },
  {
    form: "any other text",
    does: "a message for the agent (agent.chat)",
    example: "write a plugin that keeps a shopping list",
  },
];

/** The help: each command, what it does, and an example. */
export function formatHelp(style: Style = PLAIN): string {
  const width = Math.max(...HELP.map((h) => h.form.length));
  const lines = HELP.map((h) => {
    const line = `${style.bold(h.form.padEnd(width))}  ${h.does}`;
    return `${line}\n${" ".repeat(width + 2)}${style.dim(`e.g. ${h.example}`)}`;
  });
  lines.push(
    style.dim(
      "Calls run side by side: the prompt stays usable, and each result is printed when it " +
        "arrives.\nTab completes commands, plugins, methods, process IDs and paths; Ctrl-R " +
        "searches the history.\nCtrl-C clears the line; on an empty line it stops the calls and " +
        "the agent's turn that run from this\nconsole; twice on an empty line with nothing " +
        "running, it leaves. Long output goes through $PAGER (less -FRX).",
    ),
  );
  return indent(lines.join("\n"));
}
