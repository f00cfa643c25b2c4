import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { Journal, type LogQuery, QueryError } from "./journal.ts";

async function withJournal(fn: (j: Journal, path: string) => void | Promise<void>) {
  const dir = await Deno.makeTempDir();
  const path = join(dir, "journal.sqlite");
  const j = new Journal(path);
  try {
    await fn(j, path);
  } finally {
    try {
      j.close();
    } catch {
      // closed by the test
    }
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("entries sort by time, and the file is in WAL mode", async () => {
  await withJournal((j, path) => {
    for (let i = 0; i < 50; i++) j.append("p-1", "p", "stderr", `line ${i}`);
    const all = j.query({ limit: 100 });
    assert.deepEqual(all.map((e) => e.line), Array.from({ length: 50 }, (_, i) => `line ${i}`));
    const ids = all.map((e) => e.id);
    assert.deepEqual([...ids].sort(), ids);
    const db = new DatabaseSync(path);
    assert.equal(
      (db.prepare("PRAGMA journal_mode").get() as { journal_mode: string }).journal_mode,
      "wal",
    );
    db.close();
  });
});

Deno.test("limit gives the most recent entries, oldest first", async () => {
  await withJournal((j) => {
    for (let i = 0; i < 10; i++) j.event(null, null, `e${i}`);
    assert.deepEqual(j.query({ limit: 3 }).map((e) => e.line), ["e7", "e8", "e9"]);
  });
});

Deno.test("tails keep the last lines of tracked processes", async () => {
  await withJournal((j) => {
    j.track("p-1");
    for (let i = 0; i < 30; i++) j.append("p-1", "p", "stderr", `l${i}`);
    assert.equal(j.tail("p-1").length, 20);
    assert.equal(j.tail("p-1").at(-1), "l29");
    j.untrack("p-1");
    assert.deepEqual(j.tail("p-1"), []);
  });
});

Deno.test("a failed write keeps the entries and writes them later: nothing is lost", async () => {
  await withJournal((j, path) => {
    j.append(null, null, "core", "before");
    assert.ok(j.flush());
    // another connection holds the write lock: the journal cannot write
    const other = new DatabaseSync(path);
    other.exec("BEGIN IMMEDIATE");
    const blocked = new Journal(path, { busyTimeoutMs: 10 });
    const notes: string[] = [];
    blocked.onTrouble = (m) => notes.push(m);
    blocked.append(null, null, "core", "during 1");
    assert.equal(blocked.flush(), false);
    blocked.append(null, null, "core", "during 2");
    assert.match(notes[0], /cannot be written/);
    other.exec("COMMIT");
    other.close();
    assert.ok(blocked.flush());
    assert.match(notes[1], /no entry was lost/);
    blocked.close();
    assert.deepEqual(j.query().map((e) => e.line), ["before", "during 1", "during 2"]);
  });
});

/** The millisecond a UUIDv7 was made in. */
function idMs(id: string): number {
  return parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
}

/** Waits until the clock is past `ms`: what is journaled next is in a later millisecond. */
async function pastMs(ms: number): Promise<void> {
  while (Date.now() <= ms) await new Promise((resolve) => setTimeout(resolve, 1));
}

Deno.test("since and until as milliseconds since 1970: since includes, until excludes", async () => {
  await withJournal(async (j) => {
    j.append("p-1", "p", "stderr", "early");
    const early = j.query()[0];
    await pastMs(Math.max(idMs(early.id), Date.parse(early.time)));
    const t = Date.now();
    j.append("p-1", "p", "stderr", "late");
    const lines = (q: LogQuery) => j.query(q).map((e) => e.line);
    assert.deepEqual(lines({ since: t }), ["late"]);
    assert.deepEqual(lines({ until: t }), ["early"]);
    assert.deepEqual(lines({ since: t, until: t }), []);
    assert.deepEqual(
      lines({ since: t + 0.75 }),
      ["late"],
      "a fraction of a millisecond is dropped",
    );
    assert.deepEqual(lines({ since: 0 }), ["early", "late"]);
    assert.deepEqual(lines({ until: 0 }), []);
    assert.deepEqual(lines({ since: idMs(early.id) }), ["early", "late"]);
    assert.deepEqual(lines({ until: Date.now() + 60_000 }), ["early", "late"]);
    assert.deepEqual(lines({ since: Date.now() + 60_000 }), []);
    // digits in a string are milliseconds too, not a year
    assert.deepEqual(lines({ since: String(t) }), ["late"]);
    assert.deepEqual(lines({ until: "12" }), []);
    // the same bounds as ISO times
    assert.deepEqual(lines({ since: new Date(t).toISOString() }), ["late"]);
    assert.deepEqual(lines({ until: new Date(t).toISOString() }), ["early"]);
    for (const bad of [-1, NaN, Infinity, "yesterday"]) {
      assert.throws(() => j.query({ since: bad }), QueryError, String(bad));
      assert.throws(() => j.query({ until: bad }), /until must be an ISO 8601 time/);
    }
  });
});

Deno.test("since and until as entry ids: since includes the entry, until excludes it, within one millisecond too", async () => {
  await withJournal((j) => {
    for (let i = 0; i < 5; i++) j.append("p-1", "p", "stderr", `e${i}`);
    const ids = j.query().map((e) => e.id);
    const lines = (q: LogQuery) => j.query(q).map((e) => e.line);
    assert.deepEqual(lines({ since: ids[2] }), ["e2", "e3", "e4"]);
    assert.deepEqual(lines({ until: ids[2] }), ["e0", "e1"]);
    assert.deepEqual(lines({ since: ids[1], until: ids[3] }), ["e1", "e2"]);
    assert.deepEqual(lines({ since: ids[4], until: ids[4] }), []);
    assert.deepEqual(lines({ since: ids[3].toUpperCase() }), ["e3", "e4"], "ids in capitals");
    assert.deepEqual(lines({ since: ids[0], limit: 2 }), ["e3", "e4"], "limit keeps the newest");
    // an id of an entry still to come: nothing is at or after it yet
    const later = j.append("p-1", "p", "stderr", "e5");
    assert.deepEqual(lines({ since: later }), ["e5"]);
    assert.deepEqual(lines({ until: later, since: ids[4] }), ["e4"]);
  });
});

// An ID and a time taken apart differ by a millisecond now and then; `since: entry.time` would
// then leave the entry itself out.
Deno.test("an entry's time is the millisecond of its id: since its own time includes it", async () => {
  await withJournal((j) => {
    for (let i = 0; i < 10_000; i++) j.append(null, null, "core", `l${i}`);
    const all = j.query({ limit: 10_000 });
    for (const e of all) assert.equal(Date.parse(e.time), idMs(e.id), e.id);
  });
});

Deno.test("grep is matched in linear time: a pattern that backtracks forever in JavaScript answers at once", async () => {
  await withJournal((j) => {
    for (let i = 0; i < 200; i++) j.event(null, null, `${"a".repeat(40)}!`);
    j.event(null, null, "a".repeat(40));
    const start = performance.now();
    const found = j.query({ grep: "^(a+)+$", limit: 1000 });
    assert.ok(performance.now() - start < 1000);
    assert.deepEqual(found.map((e) => e.line), ["a".repeat(40)]);
  });
});

Deno.test("grep keeps JavaScript's syntax where it can be matched in linear time", async () => {
  await withJournal((j) => {
    j.event(null, null, 'start notes.add {"text": "milk"}');
    j.event(null, null, "exit status 0");
    j.event(null, null, "A/B");
    const lines = (grep: string) => j.query({ grep }).map((e) => e.line);
    assert.deepEqual(lines("^start \\w+\\.add"), ['start notes.add {"text": "milk"}']);
    assert.deepEqual(lines("(?<word>exit) status \\d$"), ["exit status 0"]);
    assert.deepEqual(lines("\\u0041/B"), ["A/B"]);
    assert.deepEqual(lines("(?<=A)/"), ["A/B"]);
    assert.deepEqual(lines("(?i)^a/b$"), ["A/B"]);
    assert.deepEqual(lines("\\x41/[^a]"), ["A/B"]);
  });
});

Deno.test("a grep that cannot be matched in linear time, or is not valid, is refused with its construct named", async () => {
  await withJournal((j) => {
    const refused = (grep: string, why: RegExp) =>
      assert.throws(() => j.query({ grep }), (e) => e instanceof QueryError && why.test(e.message));
    refused("(a)\\1", /backreference \(\\1\)/);
    refused("(?<n>a)\\k<n>", /named backreference/);
    refused("a(?=b)", /lookahead \(\(\?=/);
    refused("a(?!b)", /negative lookahead/);
    refused("(a", /not a valid regular expression: missing closing \)/);
    refused("a{2000}", /not a valid regular expression: invalid repeat count/);
    refused("a".repeat(1001), /longer than 1000 characters/);
    assert.deepEqual(j.query({ grep: "\\\\1" }), []); // an escaped backslash, not a backreference
  });
});

Deno.test("an answer over its size is cut to the most recent entries that fit, and says where to go on", async () => {
  const dir = await Deno.makeTempDir();
  const j = new Journal(join(dir, "journal.sqlite"), { maxAnswerBytes: 3 * (200 + 1000) });
  try {
    for (let i = 0; i < 10; i++) j.event(null, null, `${i}`.padEnd(1000, "x"));
    const answer = j.search({ limit: 10 });
    assert.deepEqual(answer.entries.map((e) => e.line[0]), ["7", "8", "9"]);
    assert.deepEqual(answer.cut, { reason: "size", until: answer.entries[0].id });
    const next = j.search({ limit: 10, until: answer.cut!.until });
    assert.deepEqual(next.entries.map((e) => e.line[0]), ["4", "5", "6"]);
    assert.equal(j.search({ limit: 2 }).cut, undefined);
  } finally {
    j.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a query that scans too long stops, keeps what it found, and says where it stopped", async () => {
  const dir = await Deno.makeTempDir();
  const j = new Journal(join(dir, "journal.sqlite"), { maxQueryMs: 0 });
  try {
    for (let i = 0; i < 5; i++) j.event(null, null, `e${i}`);
    const answer = j.search({ grep: "^e" });
    assert.deepEqual(answer.entries.map((e) => e.line), ["e4"]);
    assert.deepEqual(answer.cut, { reason: "time", until: answer.entries[0].id });
    const next = j.search({ grep: "^e", until: answer.cut!.until });
    assert.deepEqual(next.entries.map((e) => e.line), ["e3"]);
  } finally {
    j.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("grep gives the most recent `limit` matches, however many lines do not match", async () => {
  await withJournal((j) => {
    for (let i = 0; i < 20; i++) {
      j.event(null, null, `match ${i}`);
      for (let k = 0; k < 10; k++) j.event(null, null, `other ${i} ${k}`);
    }
    assert.deepEqual(j.query({ grep: "^match", limit: 3 }).map((e) => e.line), [
      "match 17",
      "match 18",
      "match 19",
    ]);
    assert.equal(j.query({ grep: "^match", limit: 100 }).length, 20);
  });
});

/**
 * Writes an entry as a host of another time wrote it (its own connection, an
 * ID at `ms`, `n` making IDs of one millisecond apart).
 */
function insertAt(path: string, ms: number, n: number, plugin: string | null, line: string) {
  const db = new DatabaseSync(path);
  const hex = ms.toString(16).padStart(12, "0");
  db.prepare(
    "INSERT INTO entries (id, time, pid, plugin, stream, line) VALUES (?, ?, NULL, ?, 'core', ?)",
  ).run(
    `${hex.slice(0, 8)}-${hex.slice(8)}-7000-8000-${n.toString(16).padStart(12, "0")}`,
    ms,
    plugin,
    line,
  );
  db.close();
}

/** Writes `n` lines `line <i>` (from `from`) in transactions of 10,000, as a busy host does. */
function fill(j: Journal, n: number, from = 0, plugin = "p") {
  for (let i = from; i < from + n; i++) {
    j.append("p-1", plugin, "stderr", `line ${i} ${"x".repeat(60)}`);
    if (i % 10_000 === 9_999) j.flush();
  }
  j.flush();
}

Deno.test("grep reaches the oldest entry behind slices of 100,000 entries, following cut until it is found", async () => {
  const dir = await Deno.makeTempDir();
  const j = new Journal(join(dir, "journal.sqlite"), { maxQueryMs: 0 });
  try {
    j.event(null, null, "host start: the oldest entry");
    fill(j, 250_000);
    const found: string[] = [];
    let until: string | undefined;
    let rounds = 0;
    for (; rounds < 10; rounds++) {
      const answer = j.search({ grep: "host start", ...(until ? { until } : {}) });
      found.push(...answer.entries.map((e) => e.line));
      if (!answer.cut) break;
      assert.equal(answer.cut.reason, "time");
      until = answer.cut.until;
    }
    assert.deepEqual(found, ["host start: the oldest entry"]);
    assert.ok(rounds >= 2, `the slices were not bounded: ${rounds} rounds`);
    // without the time bound, one query finds it
    assert.deepEqual(j.query({ grep: "^host start" }).map((e) => e.line), [
      "host start: the oldest entry",
    ]);
    // the filters still apply inside the slices
    assert.equal(j.query({ grep: "line 12345 ", plugin: "p" }).length, 1);
    assert.equal(j.query({ grep: "line 12345 ", plugin: "q" }).length, 0);
  } finally {
    j.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("entries held in memory while the database cannot be written answer queries too", async () => {
  await withJournal((j, path) => {
    j.event(null, null, "written");
    j.flush();
    const other = new DatabaseSync(path);
    other.exec("BEGIN IMMEDIATE");
    const blocked = new Journal(path, { busyTimeoutMs: 10 });
    try {
      blocked.event(null, "p", "held 1");
      blocked.event(null, "q", "held 2");
      assert.equal(blocked.flush(), false);
      assert.equal(blocked.unwritten, 2);
      assert.deepEqual(blocked.query().map((e) => e.line), ["written", "held 1", "held 2"]);
      assert.deepEqual(blocked.search({ grep: "held" }).entries.map((e) => e.line), [
        "held 1",
        "held 2",
      ]);
      assert.deepEqual(blocked.query({ plugin: "q" }).map((e) => e.line), ["held 2"]);
      assert.deepEqual(blocked.query({ limit: 1 }).map((e) => e.line), ["held 2"]);
    } finally {
      other.exec("COMMIT");
      other.close();
      blocked.close();
    }
  });
});

Deno.test("retention by size: the oldest entries go down to 85 % of the bound, the file shrinks, the prune is journaled", async () => {
  const dir = await Deno.makeTempDir();
  const path = join(dir, "journal.sqlite");
  const j = new Journal(path, { retention: { mib: 2, days: 90 } });
  try {
    fill(j, 60_000); // about 8 MiB
    const report = await j.prune();
    assert.ok(report, "nothing was pruned");
    assert.equal(report.reason, "size");
    assert.ok(j.usedBytes() <= 2 * 1024 * 1024 * 0.85, `${j.usedBytes()} bytes kept`);
    assert.ok(j.fileBytes() <= 2 * 1024 * 1024, `the file is ${j.fileBytes()} bytes`);
    assert.ok(report.longestBatchMs < 200, `a batch held the thread ${report.longestBatchMs} ms`);
    const kept = j.query({ limit: 10_000, plugin: "p" });
    // the newest entries are kept, whole and in order
    const numbers = kept.map((e) => Number(e.line.split(" ")[1]));
    assert.equal(numbers.at(-1), 59_999);
    assert.deepEqual(numbers, numbers.map((_, i) => numbers[0] + i));
    assert.equal(kept.length + report.entries <= 60_000 + 1, true);
    const event = j.query({ grep: "^journal pruned" });
    assert.equal(event.length, 1);
    assert.match(
      event[0].line,
      new RegExp(
        `^journal pruned: ${report.entries} entries from .+ to .+ \\(journal_mib 2 was reached\\)$`,
      ),
    );
  } finally {
    j.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("retention by age: entries older than journal_days go, newer ones stay", async () => {
  const dir = await Deno.makeTempDir();
  const path = join(dir, "journal.sqlite");
  const j = new Journal(path, { retention: { mib: 1024, days: 7 } });
  try {
    j.event(null, null, "new");
    j.flush();
    // entries of 10, 8 and 6 days ago, as a host of then wrote them
    for (const days of [10, 8, 6]) {
      insertAt(path, Date.now() - days * 86_400_000, days, null, `${days} days`);
    }
    const report = await j.prune();
    assert.equal(report?.reason, "age");
    assert.equal(report?.entries, 2);
    assert.deepEqual(j.query({ grep: "^(\\d+ days|new)$" }).map((e) => e.line), ["6 days", "new"]);
    assert.match(j.query({ grep: "^journal pruned" })[0].line, /\(older than journal_days 7\)$/);
  } finally {
    j.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a query while a prune runs, and a stop in the middle of one, lose nothing that was kept", async () => {
  const dir = await Deno.makeTempDir();
  const path = join(dir, "journal.sqlite");
  const j = new Journal(path, { retention: { mib: 2, days: 90 } });
  try {
    fill(j, 60_000);
    const pruning = j.prune();
    // between two batches: a query answers, newest first and whole
    await new Promise((resolve) => setTimeout(resolve, 0));
    const during = j.query({ limit: 100, plugin: "p" });
    assert.equal(during.at(-1)?.line.split(" ")[1], "59999");
    j.append("p-1", "p", "stderr", "line 60000 written while it prunes");
    // the host stops in the middle
    j.close();
    await pruning;
  } catch (e) {
    j.close();
    throw e;
  }
  const again = new Journal(path);
  try {
    const kept = again.query({ limit: 10_000, plugin: "p" });
    const numbers = kept.map((e) => Number(e.line.split(" ")[1]));
    assert.equal(numbers.at(-1), 60_000);
    assert.deepEqual(numbers, numbers.map((_, i) => numbers[0] + i), "a gap in what was kept");
  } finally {
    again.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a small journal over its bound keeps what fits: a prune never removes all at once", async () => {
  const dir = await Deno.makeTempDir();
  const j = new Journal(join(dir, "journal.sqlite"), { retention: { mib: 1, days: 90 } });
  try {
    // 2 KB lines up to 96 % of the bound, the check of each 1/64 kept from starting a prune
    let i = 0;
    while (j.usedBytes() < 0.96 * 1024 * 1024) {
      insertAt(join(dir, "journal.sqlite"), Date.now(), i, "p", `${i} ${"z".repeat(2000)}`);
      i++;
    }
    const report = await j.prune();
    assert.equal(report?.reason, "size");
    const used = j.usedBytes() / (1024 * 1024);
    assert.ok(used <= 0.85 && used > 0.6, `${used} of the bound kept`);
    assert.ok(j.query({ plugin: "p", limit: 10_000 }).length > i / 2);
  } finally {
    j.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a prune for age alone removes only entries older than journal_days, below the size bound", async () => {
  const dir = await Deno.makeTempDir();
  const path = join(dir, "journal.sqlite");
  const j = new Journal(path, { retention: { mib: 1, days: 7 } });
  try {
    for (let k = 0; j.usedBytes() < 0.88 * 1024 * 1024; k++) {
      j.event(null, "p", `${k} ${"z".repeat(1000)}`);
      j.flush();
    }
    insertAt(path, Date.now() - 10 * 86_400_000, 0, null, "ten days old");
    const kept = j.query({ plugin: "p", limit: 10_000 }).length;
    const report = await j.prune();
    assert.equal(report?.reason, "age");
    assert.equal(report?.entries, 1);
    assert.equal(j.query({ plugin: "p", limit: 10_000 }).length, kept);
  } finally {
    j.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("one prune at a time, even when its first flush passes the bound again", async () => {
  const dir = await Deno.makeTempDir();
  const j = new Journal(join(dir, "journal.sqlite"), { retention: { mib: 1, days: 90 } });
  try {
    for (let k = 0; k < 9000; k++) j.event(null, "p", `${k} ${"z".repeat(200)}`); // one turn
    await j.prune();
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(j.query({ grep: "^journal pruned" }).length, 1);
    const used = j.usedBytes() / (1024 * 1024);
    assert.ok(used <= 0.85 && used > 0.6, `${used} of the bound kept`);
  } finally {
    j.close();
    await Deno.remove(dir, { recursive: true });
  }
});
