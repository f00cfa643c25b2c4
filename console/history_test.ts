import assert from "node:assert/strict";
import { join } from "node:path";
import { History, historyPath, MAX_HISTORY } from "./history.ts";

async function tempDir(): Promise<string> {
  return await Deno.makeTempDir({ prefix: "sausage-history-" });
}

Deno.test("a missing history file is an empty history", async () => {
  const dir = await tempDir();
  try {
    const history = await History.load(join(dir, "none"));
    assert.deepEqual(history.entries, []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("an unreadable history file is an empty history", async () => {
  const dir = await tempDir();
  try {
    const path = historyPath(dir);
    await Deno.mkdir(path); // a folder where the file should be
    const history = await History.load(path);
    assert.deepEqual(history.entries, []);
    const problems: string[] = [];
    history.onWriteError = (m) => problems.push(m);
    history.add("ps");
    history.add("help");
    await history.flushed();
    assert.equal(problems.length, 1, "a failed write is reported once");
    assert.match(problems[0], /history cannot be written/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("lines are written as they are added, and read back in order", async () => {
  const dir = await tempDir();
  try {
    const path = historyPath(dir);
    assert.equal(path, join(dir, "console_history"));
    const history = await History.load(path);
    history.add("probe.echo {}");
    await history.flushed();
    assert.equal(await Deno.readTextFile(path), "probe.echo {}\n");
    history.add("ps");
    history.add("ps"); // a repeat of the last entry
    history.add("   "); // blank
    history.add("log probe");
    await history.flushed();
    assert.equal(await Deno.readTextFile(path), "probe.echo {}\nps\nlog probe\n");
    const again = await History.load(path);
    assert.deepEqual(again.entries, ["probe.echo {}", "ps", "log probe"]);
    assert.deepEqual(again.newestFirst(), ["log probe", "ps", "probe.echo {}"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the history keeps the last 1000 entries", async () => {
  const dir = await tempDir();
  try {
    const path = historyPath(dir);
    const lines = Array.from({ length: MAX_HISTORY + 50 }, (_, i) => `line ${i}`);
    await Deno.writeTextFile(path, lines.join("\n") + "\n");
    const history = await History.load(path);
    assert.equal(history.entries.length, MAX_HISTORY);
    assert.equal(history.entries[0], "line 50");
    history.add("newest");
    await history.flushed();
    const written = (await Deno.readTextFile(path)).trimEnd().split("\n");
    assert.equal(written.length, MAX_HISTORY);
    assert.equal(written[0], "line 51");
    assert.equal(written.at(-1), "newest");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
