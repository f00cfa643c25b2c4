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
import { uuidv7 } from "uuidv7";

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
  /** A JavaScript regular expression the line must match. */
  grep?: string;
  /** The most recent `limit` entries (default 100, at most 10000), oldest first. */
  limit?: number;
}

/** The default and the largest `limit` of a query. */
export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 10_000;
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
  /** Told when writing starts to fail or works again (the host prints it). */
  onTrouble?: (message: string) => void;

  /** Opens (or creates) the journal; a write waits up to `busyTimeoutMs` for a lock. */
  constructor(path: string, options: { busyTimeoutMs?: number } = {}) {
    this.path = path;
    this.#db = new DatabaseSync(path);
    this.#db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;");
    this.#db.exec(`PRAGMA busy_timeout = ${Math.floor(options.busyTimeoutMs ?? 5000)};`);
    this.#db.exec(SCHEMA);
    this.#db.function("sausage_grep", { deterministic: true }, (pattern, line) => {
      return compiledPattern(String(pattern)).test(String(line)) ? 1 : 0;
    });
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
    this.#buffer.push({ id, time, pid, plugin, stream, line });
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

  /** Entries matching `query`, oldest first. */
  query(query: LogQuery = {}): Entry[] {
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
    if (query.grep !== undefined) {
      compiledPattern(String(query.grep), true);
      where.push("sausage_grep(?, line)");
      args.push(String(query.grep));
    }
    const limit = query.limit ?? DEFAULT_LIMIT;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
      throw new QueryError(`limit must be an integer from 1 to ${MAX_LIMIT}`);
    }
    const sql = `SELECT id, time, pid, plugin, stream, line FROM entries` +
      (where.length ? ` WHERE ${where.join(" AND ")}` : "") +
      ` ORDER BY id DESC LIMIT ${limit}`;
    const rows = this.#db.prepare(sql).all(...args) as unknown as Row[];
    return rows.reverse().map(toEntry);
  }

  /** Writes what is buffered and closes the database. */
  close(): void {
    if (this.#closed) return;
    if (this.#retry !== undefined) clearTimeout(this.#retry);
    this.flush();
    this.#closed = true;
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

const patterns = new Map<string, RegExp>();
function compiledPattern(pattern: string, strict = false): RegExp {
  let re = patterns.get(pattern);
  if (!re) {
    try {
      re = new RegExp(pattern);
    } catch (e) {
      if (strict) {
        throw new QueryError(`grep is not a valid regular expression: ${(e as Error).message}`);
      }
      re = /(?!)/;
    }
    if (patterns.size > 100) patterns.clear();
    patterns.set(pattern, re);
  }
  return re;
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
