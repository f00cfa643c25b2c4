/**
 * The journal: the central log of a world, in `state/core/journal.sqlite`
 * (PROTOCOL section 7). Only the core writes it.
 *
 * Each entry has a UUIDv7 (it sorts by time), the process, the plugin, the
 * stream (`stderr` for what a process logs, `core` for the core's events)
 * and the line. Writes are batched into one transaction per event-loop turn;
 * a failed write (a full disk) keeps the entries in memory and retries, so a
 * bad moment loses nothing that was already journaled.
 *
 * @module
 */
import { DatabaseSync, type StatementSync } from "node:sqlite";
import { RE2JS } from "re2js";
import { uuidv7 } from "uuidv7";
import {
  DEFAULT_LIMIT,
  MAX_ANSWER_BYTES,
  MAX_GREP_LENGTH,
  MAX_LIMIT,
  MAX_QUERY_MS,
} from "../protocol/limits.ts";
export { DEFAULT_LIMIT, MAX_ANSWER_BYTES, MAX_GREP_LENGTH, MAX_LIMIT, MAX_QUERY_MS };

/** Where an entry came from. */
export type Stream = "stderr" | "core";

/** One journal entry. */
export interface Entry {
  /** UUIDv7: sorts by time. */
  id: string;
  /** ISO 8601 time. */
  time: string;
  /** The process, or null for an event of the core itself. */
  pid: string | null;
  /** The plugin, or null for an event of the core itself. */
  plugin: string | null;
  stream: Stream;
  line: string;
}

/** Filters of `core.log` (all optional). */
export interface LogQuery {
  plugin?: string;
  pid?: string;
  /** Entries at or after: an ISO 8601 time, milliseconds since 1970, or an entry ID. */
  since?: string | number;
  /** Entries before: like `since`. */
  until?: string | number;
  /**
   * A regular expression the line must match: JavaScript's syntax without
   * lookahead and backreferences, matched in linear time (RE2).
   */
  grep?: string;
  /** The most recent `limit` entries (default 100, at most 10000), oldest first. */
  limit?: number;
}

/** What an entry counts beyond its line (its ID, time, process and keys). */
export const ENTRY_OVERHEAD_BYTES = 200;

/** Why an answer has fewer entries than the query asked for (PROTOCOL section 7). */
export interface LogCut {
  /** `size`: older entries did not fit; `time`: older entries were not searched. */
  reason: "size" | "time";
  /** Query again with this as `until` (and the same filters) for the entries before. */
  until: string;
}

/** The answer of a query: entries oldest first, and `cut` when it stopped early. */
export interface LogAnswer {
  entries: Entry[];
  cut?: LogCut;
}
/** Entries kept in memory while the database cannot be written. */
const MAX_UNWRITTEN = 100_000;
/** Lines of each running process kept in memory, for -32002 and `/proc/<pid>/log`. */
export const TAIL_LINES = 20;

/** Raised for a query with a bad filter; the message names it. */
export class QueryError extends Error {
  override name = "QueryError";
}

const SCHEMA = `
CREATE TABLE IF NOT EXISTS entries (
  id TEXT PRIMARY KEY,
  time INTEGER NOT NULL,
  pid TEXT,
  plugin TEXT,
  stream TEXT NOT NULL,
  line TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS entries_by_pid ON entries (pid, id);
CREATE INDEX IF NOT EXISTS entries_by_plugin ON entries (plugin, id);
`;

interface Row {
  id: string;
  time: number;
  pid: string | null;
  plugin: string | null;
  stream: string;
  line: string;
}

/** The journal of one world. */
export class Journal {
  readonly path: string;
  readonly #db: DatabaseSync;
  readonly #insert: StatementSync;
  #buffer: Row[] = [];
  #flushQueued = false;
  #failing: string | null = null;
  #closed = false;
  #retry: ReturnType<typeof setTimeout> | undefined;
  readonly #tails = new Map<string, string[]>();
  readonly #followers = new Set<(entry: Entry) => void>();
  /** Told when writing starts to fail or works again (the host prints it). */
  onTrouble?: (message: string) => void;

  readonly #maxQueryMs: number;
  readonly #maxAnswerBytes: number;

  /**
   * Opens (or creates) the journal; a write waits up to `busyTimeoutMs` for
   * a lock. The bounds of a query can be lowered (for tests).
   */
  constructor(
    path: string,
    options: {
      busyTimeoutMs?: number;
      maxQueryMs?: number;
      maxAnswerBytes?: number;
      onTrouble?: (message: string) => void;
      /** SQLite's `synchronous` (DECISIONS, "Power loss and a full disk"): NORMAL unless measured. */
      synchronous?: "NORMAL" | "FULL";
    } = {},
  ) {
    this.path = path;
    this.onTrouble = options.onTrouble;
    this.#maxQueryMs = options.maxQueryMs ?? MAX_QUERY_MS;
    this.#maxAnswerBytes = options.maxAnswerBytes ?? MAX_ANSWER_BYTES;
    this.#db = new DatabaseSync(path);
    // WAL and NORMAL: a power cut may lose the last entries, never the database's consistency;
    // FULL would put an fsync on the host's thread at every turn of its event loop
    this.#db.exec(
      `PRAGMA journal_mode = WAL; PRAGMA synchronous = ${
        options.synchronous === "FULL" ? "FULL" : "NORMAL"
      };`,
    );
    this.#db.exec(`PRAGMA busy_timeout = ${Math.floor(options.busyTimeoutMs ?? 5000)};`);
    this.#db.exec(SCHEMA);
    this.#insert = this.#db.prepare(
      "INSERT INTO entries (id, time, pid, plugin, stream, line) VALUES (?, ?, ?, ?, ?, ?)",
    );
  }

  /** Adds an entry; it reaches the database at the end of this event-loop turn. */
  append(pid: string | null, plugin: string | null, stream: Stream, line: string): string {
    const id = uuidv7();
    if (this.#closed) return id; // after the host stopped: nothing more is journaled
    // the time is the ID's own millisecond, so that `since` an entry's time includes it
    const time = parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
    const row = { id, time, pid, plugin, stream, line };
    this.#buffer.push(row);
    if (this.#followers.size > 0) this.#tell(toEntry(row));
    if (pid !== null) {
      const tail = this.#tails.get(pid);
      if (tail) {
        tail.push(line);
        if (tail.length > TAIL_LINES) tail.shift();
      }
    }
    if (this.#buffer.length > MAX_UNWRITTEN) {
      this.#buffer.splice(0, this.#buffer.length - MAX_UNWRITTEN);
    }
    this.#scheduleFlush();
    return id;
  }

  /** An event of the core about a process (or about the core when `pid` is null). */
  event(pid: string | null, plugin: string | null, line: string): void {
    this.append(pid, plugin, "core", line);
  }

  /**
   * Calls `listener` with each entry from now on, as it is made (before it
   * reaches the database); the function it returns stops that.
   *
   * @example
   * ```ts
   * const journal = new Journal(":memory:");
   * const stop = journal.follow((e) => console.log(e.line));
   * journal.event(null, null, "hello"); // prints hello
   * stop();
   * journal.close();
   * ```
   */
  follow(listener: (entry: Entry) => void): () => void {
    this.#followers.add(listener);
    return () => this.#followers.delete(listener);
  }

  #tell(entry: Entry): void {
    for (const listener of this.#followers) {
      try {
        listener(entry);
      } catch {
        // a follower's failure is its own: the journal goes on
      }
    }
  }

  /** Starts keeping the last lines of a running process in memory. */
  track(pid: string): void {
    this.#tails.set(pid, []);
  }

  /** The last lines of a process (kept while it runs and until `untrack`). */
  tail(pid: string): string[] {
    return [...(this.#tails.get(pid) ?? [])];
  }

  /** Forgets the in-memory lines of an ended process. */
  untrack(pid: string): void {
    this.#tails.delete(pid);
  }

  /** The entries kept in memory because the database cannot be written (a full disk): 0 when it can. */
  get unwritten(): number {
    return this.#failing === null ? 0 : this.#buffer.length;
  }

  /** Writes buffered entries now. Returns false when the database cannot be written. */
  flush(): boolean {
    this.#flushQueued = false;
    if (this.#closed) return true;
    if (this.#buffer.length === 0) return true;
    const rows = this.#buffer;
    try {
      this.#db.exec("BEGIN");
      for (const r of rows) this.#insert.run(r.id, r.time, r.pid, r.plugin, r.stream, r.line);
      this.#db.exec("COMMIT");
    } catch (e) {
      try {
        this.#db.exec("ROLLBACK");
      } catch {
        // no transaction left to roll back
      }
      const message = e instanceof Error ? e.message : String(e);
      if (this.#failing === null) {
        this.onTrouble?.(`the journal cannot be written (${message}); entries are kept in memory`);
      }
      this.#failing = message;
      this.#retry ??= setTimeout(() => {
        this.#retry = undefined;
        this.flush();
      }, 1000);
      return false;
    }
    this.#buffer = [];
    if (this.#failing !== null) {
      this.#failing = null;
      this.onTrouble?.("the journal can be written again; no entry was lost");
    }
    return true;
  }

  /**
   * Entries matching `query`, oldest first, for the host's own reads: bounded
   * only by `limit`, never cut by time (a busy machine must not change what
   * the host sees).
   */
  query(query: LogQuery = {}): Entry[] {
    return this.#select(query, Infinity, Infinity).entries;
  }

  /**
   * Entries matching `query`, oldest first, newest kept when the answer is
   * bounded: by {@linkcode MAX_ANSWER_BYTES} and by {@linkcode MAX_QUERY_MS}
   * of scanning; `cut` says where it stopped.
   *
   * @example
   * ```ts
   * import { Journal } from "./journal.ts";
   * const journal = new Journal(":memory:");
   * journal.event(null, null, "hello");
   * journal.search({ grep: "^hel+o$" }); // { entries: [{ line: "hello", ... }] }
   * journal.close();
   * ```
   */
  search(query: LogQuery = {}): LogAnswer {
    return this.#select(query, this.#maxQueryMs, this.#maxAnswerBytes);
  }

  #select(query: LogQuery, maxQueryMs: number, maxAnswerBytes: number): LogAnswer {
    this.flush();
    const where: string[] = [];
    const args: (string | number)[] = [];
    if (query.plugin !== undefined) {
      where.push("plugin = ?");
      args.push(String(query.plugin));
    }
    if (query.pid !== undefined) {
      where.push("pid = ?");
      args.push(String(query.pid));
    }
    if (query.since !== undefined) {
      where.push("id >= ?");
      args.push(boundId(query.since, "since"));
    }
    if (query.until !== undefined) {
      where.push("id < ?");
      args.push(boundId(query.until, "until"));
    }
    const grep = query.grep === undefined ? undefined : compiledPattern(String(query.grep));
    const limit = query.limit ?? DEFAULT_LIMIT;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
      throw new QueryError(`limit must be an integer from 1 to ${MAX_LIMIT}`);
    }
    const sql = `SELECT id, time, pid, plugin, stream, line FROM entries` +
      (where.length ? ` WHERE ${where.join(" AND ")}` : "") +
      // with grep, SQLite cannot count the matches: the scan stops at `limit` itself
      (grep === undefined ? ` ORDER BY id DESC LIMIT ${limit}` : " ORDER BY id DESC");
    const rows: Row[] = [];
    let cut: LogCut | undefined;
    let bytes = 0;
    let examined: string | undefined;
    const deadline = performance.now() + maxQueryMs;
    for (const r of this.#db.prepare(sql).iterate(...args) as Iterable<Row>) {
      if (examined !== undefined && performance.now() > deadline) {
        cut = { reason: "time", until: examined };
        break;
      }
      examined = r.id;
      if (grep !== undefined && !grep.matches(r.line)) continue;
      bytes += utf8Length(r.line) + ENTRY_OVERHEAD_BYTES;
      if (bytes > maxAnswerBytes && rows.length > 0) {
        cut = { reason: "size", until: rows[rows.length - 1].id };
        break;
      }
      rows.push(r);
      if (rows.length === limit) break;
    }
    const entries = rows.reverse().map(toEntry);
    return cut === undefined ? { entries } : { entries, cut };
  }

  /** Writes what is buffered and closes the database. */
  close(): void {
    if (this.#closed) return;
    if (this.#retry !== undefined) clearTimeout(this.#retry);
    this.flush();
    this.#closed = true;
    this.#followers.clear();
    this.#db.close();
  }

  #scheduleFlush(): void {
    if (this.#flushQueued || this.#failing !== null) return;
    this.#flushQueued = true;
    setTimeout(() => this.flush(), 0);
  }
}

function toEntry(r: Row): Entry {
  return {
    id: r.id,
    time: new Date(r.time).toISOString(),
    pid: r.pid,
    plugin: r.plugin,
    stream: r.stream as Stream,
    line: r.line,
  };
}

/** A compiled `grep`: RE2's linear-time matcher behind JavaScript's syntax. */
interface Pattern {
  matches(line: string): boolean;
}

const patterns = new Map<string, Pattern>();
function compiledPattern(pattern: string): Pattern {
  let compiled = patterns.get(pattern);
  if (!compiled) {
    if (pattern.length > MAX_GREP_LENGTH) {
      throw new QueryError(`grep is longer than ${MAX_GREP_LENGTH} characters`);
    }
    const missing = unsupportedConstruct(pattern);
    if (missing) throw new QueryError(`grep cannot use ${missing}: it is matched in linear time`);
    let re: RE2JS;
    try {
      re = RE2JS.compile(RE2JS.translateRegExp(pattern), RE2JS.LOOKBEHINDS);
    } catch (e) {
      const message = (e as Error).message.replace(/^error parsing regexp: /, "");
      throw new QueryError(`grep is not a valid regular expression: ${message}`);
    }
    compiled = { matches: (line) => re.matcher(line).find() };
    if (patterns.size > 100) patterns.clear();
    patterns.set(pattern, compiled);
  }
  return compiled;
}

/** The first construct of JavaScript's syntax that a linear-time engine cannot match, named. */
function unsupportedConstruct(pattern: string): string | null {
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === "\\") {
      const next = pattern[i + 1] ?? "";
      if (/[1-9]/.test(next)) return `a backreference (\\${next})`;
      if (next === "k" && pattern[i + 2] === "<") return "a named backreference (\\k<name>)";
      i++;
    } else if (c === "(" && pattern[i + 1] === "?") {
      const kind = pattern.slice(i + 2, i + 3);
      if (kind === "=") return "a lookahead ((?=...))";
      if (kind === "!") return "a negative lookahead ((?!...))";
    }
  }
  return null;
}

/** The UTF-8 length of a string, without encoding it. */
function utf8Length(text: string): number {
  let n = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x80) n += c >= 0x800 && (c < 0xd800 || c > 0xdfff) ? 2 : 1;
  }
  return n;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The smallest UUIDv7 at a time: entries sort by ID, so a time becomes an ID bound. */
function boundId(value: string | number, name: string): string {
  if (typeof value === "string" && UUID.test(value)) return value.toLowerCase();
  // digits alone are milliseconds (as from a shell), never a year for Date.parse
  const ms = typeof value === "number"
    ? value
    : /^\d+$/.test(value)
    ? Number(value)
    : Date.parse(value);
  if (!Number.isFinite(ms) || ms < 0) {
    throw new QueryError(
      `${name} must be an ISO 8601 time, milliseconds since 1970, or an entry id`,
    );
  }
  const hex = Math.floor(ms).toString(16).padStart(12, "0");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7000-8000-000000000000`;
}
