/**
 * The journal's retention and search in a running world (PROTOCOL section
 * 7): a world that logs past `journal_mib` keeps its newest entries within
 * the bound while calls go on, and `sausage log --grep` finds the oldest
 * entry however far behind the scan's time bound it is.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { Journal } from "../core/journal.ts";
import { eventually, startWorld } from "./world.ts";

const MAIN = new URL("../main.ts", import.meta.url).pathname;
const MiB = 1024 * 1024;

Deno.test("a world that logs past journal_mib keeps its newest entries within it, and calls go on meanwhile", async () => {
  await using w = await startWorld({ files: { "config/limits.yaml": "journal_mib: 1\n" } });
  const filler = "x".repeat(100);
  for (let k = 0; k < 4; k++) {
    // a call answers while the journal is pruned behind the logging
    const [logged, echo] = await Promise.all([
      w.call("probe.log", { lines: 10_000, text: `round-${k} ${filler}` }),
      w.call("probe.echo", { k }),
    ]);
    assert.deepEqual(logged, { logged: 10_000 });
    assert.deepEqual(echo, { k });
  }
  await eventually(() => w.host.journal.usedBytes() <= MiB, 20_000);
  assert.ok(w.host.journal.fileBytes() <= MiB, `the file is ${w.host.journal.fileBytes()} bytes`);
  const pruned = (await w.call("core.log", { grep: "^journal pruned", limit: 100 })) as {
    entries: { line: string }[];
  };
  assert.ok(pruned.entries.length >= 1);
  assert.match(
    pruned.entries[0].line,
    /^journal pruned: \d+ entries from \S+ to \S+ \(journal_mib 1 was reached\)$/,
  );
  // the newest lines are kept, in order (a process logging this fast has some of its lines
  // dropped by the host's rate limit, and says so)
  const last = (await w.call("core.log", { grep: "^round-3 ", limit: 10_000 })) as {
    entries: { line: string }[];
  };
  const numbers = last.entries.map((e) => Number(e.line.split(" ").at(-1)));
  assert.ok(numbers.length >= 100, `${numbers.length} lines of the last round kept`);
  assert.deepEqual(numbers, [...numbers].sort((a, b) => a - b));
  // the oldest lines went first
  const first = (await w.call("core.log", { grep: "^round-0 ", limit: 10 })) as {
    entries: unknown[];
  };
  assert.equal(first.entries.length, 0);
});

Deno.test("sausage log --grep follows the scan's time bound to the oldest entry, and --format ndjson --all exports a range oldest first", async () => {
  const root = await Deno.makeTempDir({ prefix: "sausage-log-" });
  try {
    await Deno.mkdir(join(root, "state", "core"), { recursive: true });
    await Deno.mkdir(join(root, "plugins"), { recursive: true });
    const journal = new Journal(join(root, "state", "core", "journal.sqlite"));
    journal.event(null, null, "host start: the oldest entry");
    const middle: string[] = [];
    for (let i = 0; i < 300_000; i++) {
      const id = journal.append("p-1", "p", "stderr", `line ${i} ${"y".repeat(40)}`);
      if (i === 150_000 || i === 150_002) middle.push(id);
      if (i % 20_000 === 19_999) journal.flush();
    }
    // one query's time bound cannot scan all of it: the command must go on where it stopped
    assert.equal(journal.search({ grep: "^h.s. s.a.t" }).cut?.reason, "time");
    journal.close();
    const run = async (...args: string[]) => {
      const out = await new Deno.Command(Deno.execPath(), {
        args: ["run", "--quiet", "--allow-all", "--unstable-worker-options", MAIN, ...args],
        env: { NO_COLOR: "1" },
        stdout: "piped",
        stderr: "piped",
      }).output();
      return {
        code: out.code,
        stdout: new TextDecoder().decode(out.stdout),
        stderr: new TextDecoder().decode(out.stderr),
      };
    };
    // no text of three characters for SQLite to skip lines by: every line is matched in
    // JavaScript, which takes longer than one query's time bound
    const found = await run("log", root, "--grep", "^h.s. s.a.t");
    assert.equal(found.code, 0, found.stderr);
    assert.match(found.stdout, /host start: the oldest entry/);
    assert.doesNotMatch(found.stderr, /left out/);

    const exported = await run(
      "log",
      root,
      "--since",
      middle[0],
      "--until",
      middle[1],
      "--format",
      "ndjson",
      "--all",
    );
    assert.equal(exported.code, 0, exported.stderr);
    const lines = exported.stdout.trim().split("\n").map((l) => JSON.parse(l));
    assert.deepEqual(lines.map((e) => e.line.split(" ")[1]), ["150000", "150001"]);
    assert.equal(lines[0].id, middle[0]);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
