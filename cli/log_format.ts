/**
 * `--log-format json`: the host's own lines on stderr as one JSON object a
 * line, `{"time", "level", "event", "message", "fields"}`, for a log
 * collector (a container's, systemd's). Plugins' output stays in the
 * journal, as always.
 *
 * The lines are the ones the text format prints: what `console.error`
 * gets is turned into objects, so every command keeps one way to print.
 *
 * @module
 */
import pc from "picocolors";

/** The formats of `--log-format`. */
export const LOG_FORMATS = ["text", "json"] as const;

/** One of {@linkcode LOG_FORMATS}. */
export type LogFormat = typeof LOG_FORMATS[number];

/** The level of a line. */
export type LogLevel = "info" | "warn" | "error";

/** One line of `--log-format json`. */
export interface LogRecord {
  /** ISO 8601, UTC. */
  time: string;
  level: LogLevel;
  /** What happened, such as `host.started`; `note` for the rest. */
  event: string;
  /** The line as the text format says it, without `sausage:`. */
  message: string;
  fields: Record<string, string>;
}

/** The known lines: their event, and the fields read from them. */
const EVENTS: { pattern: RegExp; event: string; level?: LogLevel; fields?: string[] }[] = [
  { pattern: /^running (.+) \(headless\)/, event: "host.started", fields: ["world"] },
  { pattern: /^reach it with .* (\S+)$/, event: "control.listening", fields: ["world"] },
  { pattern: /^stopping(?: \((.+)\))?/, event: "host.stopping", fields: ["why"] },
  { pattern: /^the web page is at (\S+)/, event: "web.listening", fields: ["url"] },
  { pattern: /^services not started: /, event: "services.failed", level: "error" },
  { pattern: /^the journal /, event: "journal.trouble", level: "warn" },
  { pattern: /^warning: /, event: "note", level: "warn" },
];

const ERROR_MARK = "\u0000error\u0000";
const WARN_MARK = "\u0000warn\u0000";
// deno-lint-ignore no-control-regex
const ANSI = /\x1b\[[0-9;]*m/g;

/**
 * The record of one line the text format would print; `now` for tests.
 * `continuing` is the record of the message's first line, for its later
 * lines: those carry what a plugin or a file said, so their words never
 * decide the event; they keep the first line's.
 */
export function toRecord(
  line: string,
  now: Date = new Date(),
  continuing?: LogRecord,
): LogRecord {
  let level: LogLevel = "info";
  if (line.includes(ERROR_MARK)) level = "error";
  else if (line.includes(WARN_MARK)) level = "warn";
  const text = line.replaceAll(ERROR_MARK, "").replaceAll(WARN_MARK, "").replace(ANSI, "")
    .replace(/^sausage(?: [a-z]+)?:\s*/, "");
  let event = level === "error" ? "error" : "note";
  const fields: Record<string, string> = {};
  if (continuing !== undefined) {
    return {
      time: now.toISOString(),
      level: continuing.level,
      event: continuing.event,
      message: text,
      fields,
    };
  }
  for (const known of EVENTS) {
    const m = text.match(known.pattern);
    if (!m) continue;
    event = known.event;
    if (known.level && level === "info") level = known.level;
    (known.fields ?? []).forEach((name, i) => {
      if (m[i + 1] !== undefined) fields[name] = m[i + 1];
    });
    break;
  }
  return { time: now.toISOString(), level, event, message: text, fields };
}

let installed: LogFormat = "text";

/**
 * Switches stderr to `format`. For `json`, `console.error` and
 * `console.warn` print records, and picocolors' red and yellow mark a
 * line's level (the text format shows an error's `sausage:` in red) in
 * place of colouring it.
 */
export function setLogFormat(format: LogFormat): void {
  if (format === installed || format === "text") return;
  installed = format;
  const colors = pc as unknown as Record<string, unknown>;
  for (const [name, value] of Object.entries(colors)) {
    if (typeof value !== "function" || name === "createColors") continue;
    colors[name] = name === "red"
      ? (s: unknown) => `${ERROR_MARK}${s}`
      : name === "yellow"
      ? (s: unknown) => `${WARN_MARK}${s}`
      : (s: unknown) => `${s}`;
  }
  const write = (...args: unknown[]) => {
    const text = args.map((a) => typeof a === "string" ? a : Deno.inspect(a)).join(" ");
    const level = text.includes(ERROR_MARK)
      ? ERROR_MARK
      : text.includes(WARN_MARK)
      ? WARN_MARK
      : "";
    const lines = text.split("\n").filter((l) => l.trim() !== "");
    // the continuation lines of one message keep its level
    const now = new Date();
    const first = lines.length > 0 ? toRecord(level + lines[0], now) : undefined;
    const out = lines.map((l, i) =>
      JSON.stringify(i === 0 ? first : toRecord(level + l, now, first))
    ).join("\n");
    if (!out) return;
    const bytes = new TextEncoder().encode(out + "\n");
    for (let at = 0; at < bytes.length;) at += Deno.stderr.writeSync(bytes.subarray(at));
  };
  console.error = write;
  console.warn = write;
}

/** The format in use. */
export function logFormat(): LogFormat {
  return installed;
}
