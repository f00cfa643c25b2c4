import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { Journal } from "./journal.ts";

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
