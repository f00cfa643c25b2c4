/**
 * The journal: the central log of a world, in `state/core/journal.sqlite`
 * (PROTOCOL section 7). Only the core writes it.
 *
 * Each entry has a UUIDv7 (it sorts by time), the process, the plugin, the
 * stream (`stderr` for what a process logs, `core` for the core's events)
 * and the line. Writes are batched into one transaction per event-loop turn;
 * a failed write (a full disk) keeps the entries in memory and retries, so a
 * bad moment loses nothing that was already journaled, and queries see them.
 * Retention ({@linkcode Retention}) prunes the oldest entries in small
 * batches; a `grep` reaches every entry, in slices of bounded time.
 *
 * @module
 */
import { DatabaseSync, type StatementSync } from "node:sqlite";
import { uuidv7 } from "uuidv7";
import {
  DEFAULT_LIMIT,
  MAX_ANSWER_BYTES,
  MAX_GREP_LENGTH,
  MAX_LIMIT,
  MAX_QUERY_MS,
} from "../protocol/limits.ts";
import { compiledPattern, QueryError } from "./journal_grep.ts";
export { DEFAULT_LIMIT, MAX_ANSWER_BYTES, MAX_GREP_LENGTH, MAX_LIMIT, MAX_QUERY_MS, QueryError };

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

/** How much journal a world keeps (`journal_mib`, `journal_days` of `config/limits.yaml`). */
export interface Retention {
  /** MiB of the database file: from 95 % of it the oldest entries go, down to 85 %. */
  mib: number;
  /** Days an entry is kept. */
  days: number;
}

/** What one prune removed (also journaled as a core event). */
export interface PruneReport {
  entries: number;
  /** The first and last entry removed. */
  from: string;
  to: string;
  /** Which bound made it prune. */
  reason: "size" | "age";
  /** The longest one batch held the host's thread, in milliseconds. */
  longestBatchMs: number;
}

/** A prune's batch aims at this much of the host's thread; the batch size follows it. */
const PRUNE_BATCH_MS = 5;
/** The share of `journal_mib` at which a prune starts, and the share it prunes down to. */
const PRUNE_FROM = 0.95;
const PRUNE_TO = 0.85;
/** The share of the bound written between two checks of the size (a check reads four numbers). */
const PRUNE_CHECK_SHARE = 1 / 64;
/** How often the bounds are checked without writes (the age moves on). */
const PRUNE_CHECK_MS = 60_000;
/** Rows a `grep` slice covers: SQLite skips lines without the pattern's texts in about 25 ms. */
const GREP_WINDOW_ROWS = 100_000;
/** The write-ahead log is cut back to this after a checkpoint. */
const WAL_LIMIT_BYTES = 16 * 1024 * 1024;

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
      /** Bounds of the journal; none: it is never pruned (a `sausage log` of the file). */
      retention?: Retention;
    } = {},
  ) {
    this.path = path;
    this.onTrouble = options.onTrouble;
    this.#maxQueryMs = options.maxQueryMs ?? MAX_QUERY_MS;
    this.#maxAnswerBytes = options.maxAnswerBytes ?? MAX_ANSWER_BYTES;
    this.#db = new DatabaseSync(path);
    this.#db.exec(`PRAGMA busy_timeout = ${Math.floor(options.busyTimeoutMs ?? 5000)};`);
    if (this.#pragma("page_count") === 0) {
      // pages that a prune frees can go back to the file system (set before the first table)
      this.#db.exec("PRAGMA auto_vacuum = INCREMENTAL;");
    }
    // WAL and NORMAL: a power cut may lose the last entries, never the database's consistency;
    // FULL would put an fsync on the host's thread at every turn of its event loop
    this.#db.exec(
      `PRAGMA journal_mode = WAL; PRAGMA synchronous = ${
        options.synchronous === "FULL" ? "FULL" : "NORMAL"
      };`,
    );
    this.#db.exec(`PRAGMA journal_size_limit = ${WAL_LIMIT_BYTES};`);
    // checkpoints of 1 MiB rather than 4: each holds the host's thread a quarter as long
    this.#db.exec("PRAGMA wal_autocheckpoint = 256;");
    this.#db.exec(SCHEMA);
    this.#insert = this.#db.prepare(
      "INSERT INTO entries (id, time, pid, plugin, stream, line) VALUES (?, ?, ?, ?, ?, ?)",
    );
    this.#retention = options.retention;
    if (this.#retention) {
      this.#pruneTimer = setInterval(() => this.#checkBounds(), PRUNE_CHECK_MS);
      Deno.unrefTimer(this.#pruneTimer);
      this.#checkBounds();
    }
  }

  readonly #retention: Retention | undefined;
  #pruneTimer: ReturnType<typeof setInterval> | undefined;
  #pruning: Promise<PruneReport | null> | null = null;
  /** Entries a prune's batch removes (at most), learnt from the batches before. */
  #pruneBatch = 1000;
  /** Set while `close` writes what is buffered: no prune starts then. */
  #closing = false;
  /** About the bytes written since the size was last checked. */
  #writtenSinceCheck = 0;

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
    if (this.#retention) {
      for (const r of rows) this.#writtenSinceCheck += r.line.length + ENTRY_OVERHEAD_BYTES;
      const bound = this.#retention.mib * 1024 * 1024;
      if (this.#writtenSinceCheck >= bound * PRUNE_CHECK_SHARE) this.#checkBounds();
    }
    return true;
  }

  /** Bytes of the database that hold entries (free pages not counted). */
  usedBytes(): number {
    const pages = this.#pragma("page_count") - this.#pragma("freelist_count");
    return pages * this.#pragma("page_size");
  }

  /** Bytes of the database file. */
  fileBytes(): number {
    return this.#pragma("page_count") * this.#pragma("page_size");
  }

  #pragma(name: string): number {
    return Number((this.#db.prepare(`PRAGMA ${name}`).get() as Record<string, number>)[name]);
  }

  /** Starts a prune in the background when a bound is passed (one at a time). */
  #checkBounds(): void {
    this.#writtenSinceCheck = 0;
    if (this.#closed || this.#closing || this.#pruning !== null || !this.#retention) return;
    if (!this.#overSize(this.#retention, PRUNE_FROM) && !this.#overAge(this.#retention)) return;
    this.prune().catch((e) => {
      this.onTrouble?.(`the journal could not be pruned: ${(e as Error).message}`);
    });
  }

  /** Whether the entries take more than `share` of `journal_mib`. */
  #overSize(retention: Retention, share: number): boolean {
    return this.usedBytes() > retention.mib * 1024 * 1024 * share;
  }

  /** Whether the oldest entry is older than `journal_days`. */
  #overAge(retention: Retention): boolean {
    const oldest = this.#db.prepare("SELECT time FROM entries ORDER BY id LIMIT 1").get() as
      | { time: number }
      | undefined;
    return oldest !== undefined && oldest.time < Date.now() - retention.days * 86_400_000;
  }

  /**
   * Removes the oldest entries until the journal is within its bounds (by
   * size: from 95 % down to 85 % of it, so that the file stays within it
   * while writes go on, and writing does not prune at every turn),
   * in batches of about {@linkcode PRUNE_BATCH_MS} with the event loop free
   * in between; each batch is one transaction, so a stop in the middle keeps
   * every entry that was to be kept. Journals what it removed. Resolves null
   * when nothing had to go (or no retention is set).
   */
  prune(): Promise<PruneReport | null> {
    if (this.#pruning === null) {
      // set before the prune's first step, which may flush and so check the bounds again
      const { promise, resolve, reject } = Promise.withResolvers<PruneReport | null>();
      this.#pruning = promise;
      this.#prune().then(resolve, reject).finally(() => this.#pruning = null);
    }
    return this.#pruning;
  }

  async #prune(): Promise<PruneReport | null> {
    const retention = this.#retention;
    if (!retention) return null;
    this.flush();
    const bound = retention.mib * 1024 * 1024;
    // by size only when it passed where a prune starts; by age whenever
    const bySize = this.#overSize(retention, PRUNE_FROM);
    if (!bySize && !this.#overAge(retention)) return null;
    const report: PruneReport = {
      entries: 0,
      from: "",
      to: "",
      reason: bySize ? "size" : "age",
      longestBatchMs: 0,
    };
    const nth = this.#db.prepare("SELECT id FROM entries ORDER BY id LIMIT 1 OFFSET ?");
    const oldest = this.#db.prepare("SELECT id FROM entries ORDER BY id LIMIT 1");
    const before = this.#db.prepare("SELECT id FROM entries WHERE id < ? ORDER BY id DESC LIMIT 1");
    const remove = this.#db.prepare("DELETE FROM entries WHERE id < ?");
    const firstBytes = this.#db.prepare(
      "SELECT sum(length(line)) AS bytes, count(*) AS n FROM (SELECT line FROM entries ORDER BY id LIMIT ?)",
    );
    let batch = this.#pruneBatch;
    while (!this.#closed) {
      const used = this.usedBytes();
      const size = bySize && used > bound * PRUNE_TO;
      if (!size && !this.#overAge(retention)) break;
      const started = performance.now();
      const from = (oldest.get() as { id: string } | undefined)?.id;
      if (from === undefined) break;
      let count = batch;
      if (size) {
        // no more than is still needed: the lines' bytes and what each entry counts beside
        const need = used - bound * PRUNE_TO;
        const row = firstBytes.get(count) as { bytes: number | null; n: number };
        const bytes = Number(row.bytes ?? 0) + ENTRY_OVERHEAD_BYTES * row.n;
        if (bytes > need) count = Math.max(1, Math.ceil((row.n * need) / bytes));
      }
      // the batch ends before the entry `count` places on; past the end, fewer (never all at once)
      let end: string | undefined;
      for (; count >= 1 && end === undefined; count = Math.floor(count / 2)) {
        end = (nth.get(count) as { id: string } | undefined)?.id;
      }
      end ??= "g"; // one entry is left: "g" sorts after any ID
      if (!size) {
        const young = idAt(Date.now() - retention.days * 86_400_000);
        if (young < end) end = young;
      }
      const last = (before.get(end) as { id: string } | undefined)?.id;
      let changes: number;
      this.#db.exec("BEGIN");
      try {
        changes = Number(remove.run(end).changes);
        this.#db.exec("COMMIT");
      } catch (e) {
        try {
          this.#db.exec("ROLLBACK");
        } catch {
          // SQLite rolled it back already
        }
        throw e;
      }
      if (changes === 0) break;
      report.entries += changes;
      if (report.from === "") report.from = from;
      if (last !== undefined) report.to = last;
      const took = performance.now() - started;
      report.longestBatchMs = Math.max(report.longestBatchMs, took);
      // the next batch aims at PRUNE_BATCH_MS: half to twice this one's size
      batch = Math.max(100, Math.min(50_000, Math.round(batch * clamp(PRUNE_BATCH_MS / took))));
      this.#pruneBatch = batch;
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
    if (report.entries === 0) return null;
    if (this.#closed) return report; // the host stops: the rest waits for its next start
    await this.#giveBack(retention);
    const why = report.reason === "size"
      ? `journal_mib ${retention.mib} was reached`
      : `older than journal_days ${retention.days}`;
    this.event(
      null,
      null,
      `journal pruned: ${report.entries} entries from ${timeOfId(report.from)} to ${
        timeOfId(report.to)
      } (${why})`,
    );
    return report;
  }

  /** Gives free pages back to the file system until the file is within its bound. */
  async #giveBack(retention: Retention): Promise<void> {
    if (this.#pragma("auto_vacuum") !== 2) return; // a journal made before: its pages are reused
    const pageSize = this.#pragma("page_size");
    while (!this.#closed) {
      const over = this.fileBytes() - retention.mib * 1024 * 1024;
      const free = this.#pragma("freelist_count");
      if (over <= 0 || free === 0) return;
      // each step of the statement frees one page: all() runs them all
      this.#db.prepare(
        `PRAGMA incremental_vacuum(${Math.min(free, Math.ceil(over / pageSize), 256)})`,
      )
        .all();
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
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
    const { where, args, since, until, grep } = conditions(query);
    const limit = query.limit ?? DEFAULT_LIMIT;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
      throw new QueryError(`limit must be an integer from 1 to ${MAX_LIMIT}`);
    }
    const rows: Row[] = [];
    let cut: LogCut | undefined;
    let bytes = 0;
    let examined: string | undefined;
    const deadline = performance.now() + maxQueryMs;
    /** Takes a candidate; false when the answer is complete. */
    const take = (r: Row): boolean => {
      if (examined !== undefined && performance.now() > deadline) {
        cut = { reason: "time", until: examined };
        return false;
      }
      examined = r.id;
      if (grep !== undefined && !grep.matches(r.line)) return true;
      bytes += utf8Length(r.line) + ENTRY_OVERHEAD_BYTES;
      if (bytes > maxAnswerBytes && rows.length > 0) {
        cut = { reason: "size", until: rows[rows.length - 1].id };
        return false;
      }
      rows.push(r);
      return rows.length < limit;
    };
    const done = () => {
      const entries = rows.reverse().map(toEntry);
      return cut === undefined ? { entries } : { entries, cut };
    };
    // entries held in memory while the database cannot be written are the newest
    for (let i = this.#buffer.length - 1; i >= 0; i--) {
      const r = this.#buffer[i];
      if (query.plugin !== undefined && r.plugin !== String(query.plugin)) continue;
      if (query.pid !== undefined && r.pid !== String(query.pid)) continue;
      if ((since !== undefined && r.id < since) || (until !== undefined && r.id >= until)) continue;
      if (grep?.literals.some((literal) => !r.line.includes(literal))) continue;
      if (!take(r)) return done();
    }
    const columns = "SELECT id, time, pid, plugin, stream, line FROM entries";
    if (grep === undefined) {
      const bounds = idBounds(since, until);
      const sql = `${columns}${
        whereSql([...where, ...bounds.where])
      } ORDER BY id DESC LIMIT ${limit}`;
      for (const r of this.#db.prepare(sql).iterate(...args, ...bounds.args) as Iterable<Row>) {
        if (!take(r)) break;
      }
      return done();
    }
    // grep: slices of GREP_WINDOW_ROWS entries, newest first, so that no one step of SQLite
    // runs long however few lines match; the time bound is checked between them too
    const windowStart = this.#db.prepare(
      `SELECT id FROM entries${
        whereSql(idBounds(since, "?").where)
      } ORDER BY id DESC LIMIT 1 OFFSET ${GREP_WINDOW_ROWS - 1}`,
    );
    let upper = until;
    while (true) {
      const start = (windowStart.get(...idBounds(since, upper ?? "g").args) as
        | { id: string }
        | undefined)?.id;
      const bounds = idBounds(start ?? since, upper);
      const sql = `${columns}${whereSql([...where, ...bounds.where])} ORDER BY id DESC`;
      for (const r of this.#db.prepare(sql).iterate(...args, ...bounds.args) as Iterable<Row>) {
        if (!take(r)) return done();
      }
      if (start === undefined) return done(); // the oldest entry was searched
      examined = start;
      upper = start;
      if (performance.now() > deadline) {
        cut = { reason: "time", until: start };
        return done();
      }
    }
  }

  /**
   * Every entry matching `query` (its `limit` aside), oldest first, read as
   * it is iterated and bounded by nothing: for a reader of its own, such as
   * `sausage log --all`, never on the host's thread.
   *
   * @example
   * ```ts
   * import { Journal } from "./journal.ts";
   * const journal = new Journal(":memory:");
   * journal.event(null, null, "hello");
   * for (const entry of journal.each({ grep: "^hel" })) console.log(entry.line);
   * journal.close();
   * ```
   */
  *each(query: Omit<LogQuery, "limit"> = {}): Generator<Entry> {
    this.flush();
    const { where, args, since, until, grep } = conditions(query);
    const bounds = idBounds(since, until);
    const sql = `SELECT id, time, pid, plugin, stream, line FROM entries${
      whereSql([...where, ...bounds.where])
    } ORDER BY id`;
    for (const r of this.#db.prepare(sql).iterate(...args, ...bounds.args) as Iterable<Row>) {
      if (grep === undefined || grep.matches(r.line)) yield toEntry(r);
    }
  }

  /** Writes what is buffered and closes the database. */
  close(): void {
    if (this.#closed) return;
    if (this.#retry !== undefined) clearTimeout(this.#retry);
    if (this.#pruneTimer !== undefined) clearInterval(this.#pruneTimer);
    this.#closing = true;
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

/**
 * The SQL conditions of a query's `plugin`, `pid` and `grep` (the texts every
 * match holds: SQLite skips the lines that lack one), and its ID bounds.
 */
function conditions(query: Omit<LogQuery, "limit">) {
  const where: string[] = [];
  const args: string[] = [];
  if (query.plugin !== undefined) {
    where.push("plugin = ?");
    args.push(String(query.plugin));
  }
  if (query.pid !== undefined) {
    where.push("pid = ?");
    args.push(String(query.pid));
  }
  const since = query.since === undefined ? undefined : boundId(query.since, "since");
  const until = query.until === undefined ? undefined : boundId(query.until, "until");
  const grep = query.grep === undefined ? undefined : compiledPattern(String(query.grep));
  for (const literal of grep?.literals ?? []) {
    where.push("instr(line, ?) > 0");
    args.push(literal);
  }
  return { where, args, since, until, grep };
}

/** ` WHERE a AND b`, or nothing. */
function whereSql(where: string[]): string {
  return where.length ? ` WHERE ${where.join(" AND ")}` : "";
}

/** The conditions on the ID of `since` (inclusive) and `until` (exclusive), as bound IDs. */
function idBounds(since: string | undefined, until: string | undefined) {
  const where: string[] = [];
  const args: string[] = [];
  if (since !== undefined) {
    where.push("id >= ?");
    args.push(since);
  }
  if (until !== undefined) {
    where.push("id < ?");
    if (until !== "?") args.push(until);
  }
  return { where, args };
}

/** The factor by which a batch grows or shrinks toward its aim: half to twice. */
function clamp(factor: number): number {
  return Math.max(0.5, Math.min(2, factor));
}

/**
 * The ISO time of an entry's ID (a UUIDv7: its first 48 bits are the millisecond).
 *
 * @example
 * ```ts
 * timeOfId("01a246ca-b392-74de-a7e8-72b4487e29c2"); // "2026-12-05T15:20:19.090Z"
 * ```
 */
export function timeOfId(id: string): string {
  return new Date(parseInt(id.slice(0, 8) + id.slice(9, 13), 16)).toISOString();
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

/** The smallest UUIDv7 at a millisecond. */
function idAt(ms: number): string {
  const hex = Math.floor(ms).toString(16).padStart(12, "0");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7000-8000-000000000000`;
}

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
  return idAt(ms);
}
