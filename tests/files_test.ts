/**
 * The mount table of a process (PROTOCOL section 4): the world at `/`,
 * `/proc` generated and read-only, `/self` its own folder, `/run` shared.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { LOG_LINES } from "../core/core_files.ts";
import { eventually, startWorld, type TestWorld } from "./world.ts";

type AnyRecord = Record<string, unknown>;

async function read(w: TestWorld, path: string): Promise<AnyRecord> {
  return (await w.call("probe.read_file", { path })) as AnyRecord;
}
async function write(w: TestWorld, path: string, text: string): Promise<AnyRecord> {
  return (await w.call("probe.write_file", { path, text })) as AnyRecord;
}
async function list(w: TestWorld, path: string): Promise<string[]> {
  const r = (await w.call("probe.list_dir", { path })) as { names?: string[]; error?: string };
  assert.ok(r.names, `list ${path}: ${r.error}`);
  return r.names;
}
async function fsOp(w: TestWorld, params: AnyRecord): Promise<AnyRecord> {
  return (await w.call("probe.fs_op", params)) as AnyRecord;
}

Deno.test("a listing of / shows the world with proc, run and self", async () => {
  await using w = await startWorld();
  assert.deepEqual(await list(w, "/"), ["config", "plugins", "proc", "run", "self", "state"]);
});

Deno.test("/proc/core has PROTOCOL.md, the docs it links, the graph, locks.json and a folder per plugin", async () => {
  await using w = await startWorld();
  assert.deepEqual(await list(w, "/proc/core"), [
    "PROTOCOL.md",
    "docs",
    "graph.dot",
    "graph.json",
    "locks.json",
    "plugins",
  ]);
  const protocol = await read(w, "/proc/core/PROTOCOL.md");
  assert.match(String(protocol.text), /^# The Sausage protocol/);
  // each docs/<name>.md that PROTOCOL.md links is beside it, as in the repository
  const linked = [...String(protocol.text).matchAll(/\]\(docs\/([A-Z]+\.md)/g)].map((m) => m[1]);
  assert.ok(linked.includes("JOURNAL.md"), "PROTOCOL.md links docs/JOURNAL.md");
  const served = await list(w, "/proc/core/docs");
  for (const name of new Set(linked)) {
    assert.ok(served.includes(name), `/proc/core/docs lacks ${name}`);
    assert.equal(
      (await read(w, `/proc/core/docs/${name}`)).text,
      await Deno.readTextFile(new URL(`../docs/${name}`, import.meta.url)),
    );
  }
  assert.deepEqual(await list(w, "/proc/core/plugins"), ["cargo", "mcp", "probe"]);
  assert.deepEqual(await list(w, "/proc/core/plugins/probe"), ["client.rs", "discover.json"]);
  const graph = JSON.parse(String((await read(w, "/proc/core/graph.json")).text));
  assert.deepEqual(Object.keys(graph.plugins).sort(), ["cargo", "mcp", "probe"]); // cargo and mcp are built in
  // plugins and imports are counted apart: three plugins discovered, and no import among them
  assert.deepEqual(graph.counts, {
    plugins: 3,
    discovered: 3,
    imports: { ok: 0, broken: 0, missing: 0, unavailable: 0 },
  });
  assert.match(String((await read(w, "/proc/core/graph.dot")).text), /digraph world/);
});

Deno.test("locks.json shows holders and waiters", async () => {
  await using w = await startWorld();
  const a = w.host.client("holder");
  const b = w.host.client("waiter");
  await a.request("core.lock", { path: "/state/db" });
  b.request("core.lock", { path: "/state/db" });
  const locks = JSON.parse(String((await read(w, "/proc/core/locks.json")).text));
  assert.equal(locks.locks[0].path, "/state/db");
  assert.equal(locks.locks[0].holder, "holder");
  assert.deepEqual(locks.locks[0].waiting, ["waiter"]);
});

Deno.test("/proc/<pid> has info.json and log of a running process, and goes away when it ends", async () => {
  await using w = await startWorld();
  await w.call("probe.linger");
  await eventually(() => w.host.processes.list().length === 1);
  const [p] = w.host.processes.list();
  assert.ok((await list(w, "/proc")).includes(p.pid));
  const info = JSON.parse(String((await read(w, `/proc/${p.pid}/info.json`)).text));
  assert.equal(info.plugin, "probe");
  assert.equal(info.method, "linger");
  assert.equal(info.parent, "console");
  assert.equal(info.state, "running");
  assert.match(String((await read(w, `/proc/${p.pid}/log`)).text), /start linger/);
  await w.call("core.stop", { pid: p.pid });
  assert.ok(!(await list(w, "/proc")).includes(p.pid));
});

Deno.test("/proc/<pid>/log shows the last 10,000 lines, after a first line that says where the earlier ones are", async () => {
  await using w = await startWorld();
  await w.call("probe.linger");
  await eventually(() => w.host.processes.list().length === 1);
  const [p] = w.host.processes.list();
  // a long-lived process's lines (written here: a process may log about 1000 a second)
  for (let i = 0; i < LOG_LINES + 50; i++) {
    w.host.journal.append(p.pid, "probe", "stderr", `n ${i}`);
  }
  const r = await read(w, `/proc/${p.pid}/log`);
  console.log(JSON.stringify(r).slice(0, 300));
  const lines = String(r.text).trimEnd().split("\n");
  assert.equal(lines.length, LOG_LINES + 1);
  const [, first] = lines[0].match(/"until": "([^"]+)"/) ?? [];
  assert.equal(
    lines[0],
    `(earlier lines: core.log {"pid": "${p.pid}", "until": "${first}"} returns them)`,
  );
  // that query gives the lines before the first one shown
  const earlier = w.host.journal.query({ pid: p.pid, until: first, limit: 10_000 });
  assert.match(earlier.at(-1)!.line, /^n 49$/);
  assert.match(lines[1], / stderr n 50$/);
  assert.match(lines.at(-1)!, new RegExp(` stderr n ${LOG_LINES + 49}$`));
  await w.call("core.stop", { pid: p.pid });
});

Deno.test("/self is the process's own folder: its files show in /proc/<pid>, the core's names are refused", async () => {
  await using w = await startWorld();
  const own = (await w.call("probe.call", {
    method: "probe.write_file",
    params: { path: "/self/note.txt", text: "mine" },
  })) as { response: { result: AnyRecord } };
  assert.equal(own.response.result.read, "mine");
  const self = await write(w, "/self/info.json", "{}");
  assert.match(String(self.kind), /PermissionDenied/);
  const info = JSON.parse(String((await read(w, "/self/info.json")).text));
  assert.equal(info.plugin, "probe");
  assert.ok((await list(w, "/self")).includes("info.json"));
  await w.call("probe.linger", { self_file: "shown.txt" });
  await eventually(() => w.host.processes.list().length === 1);
  const [lingering] = w.host.processes.list();
  assert.equal((await read(w, `/proc/${lingering.pid}/shown.txt`)).text, "from self");
  const otherWrite = await write(w, `/proc/${lingering.pid}/shown.txt`, "not yours");
  assert.ok("error" in otherWrite, "a process writes its own folder only through /self");
  await w.call("core.stop", { pid: lingering.pid });
  const reserved = await fsOp(w, { op: "mkdir", path: "/self/fs" });
  assert.match(String(reserved.kind), /PermissionDenied/);
  // a file in /self is in memory: nothing lands in the world folder
  assert.ok(!existsSync(join(w.root, "self")));
});

Deno.test("writes under /proc always fail", async () => {
  await using w = await startWorld();
  for (const path of ["/proc/x.txt", "/proc/core/PROTOCOL.md", "/proc/core/new"]) {
    const r = await write(w, path, "x");
    assert.ok("error" in r, path);
    assert.equal(String(r.kind), "ReadOnlyFilesystem", `${path}: ${r.kind}`);
  }
});

Deno.test("/run is shared between processes and empty at each host start", async () => {
  const w = await startWorld();
  try {
    await fsOp(w, { op: "mkdir", path: "/run/shared" });
    assert.equal(
      (await write(w, "/run/shared/endpoint", "tcp:127.0.0.1:1 x y")).read,
      "tcp:127.0.0.1:1 x y",
    );
    assert.equal((await read(w, "/run/shared/endpoint")).text, "tcp:127.0.0.1:1 x y");
    assert.ok(!existsSync(join(w.root, "run")));
    await w.host.shutdown();
  } finally {
    await w[Symbol.asyncDispose]();
  }
  await using again = await startWorld();
  assert.deepEqual(await list(again, "/run"), []);
});

Deno.test("temporary file and atomic rename work in /run and /self; a rename across areas fails", async () => {
  await using w = await startWorld();
  await write(w, "/run/tmp.1", "v1");
  assert.deepEqual(await fsOp(w, { op: "rename", path: "/run/tmp.1", to: "/run/final" }), {
    ok: true,
  });
  assert.equal((await read(w, "/run/final")).text, "v1");
  await write(w, "/state/a.txt", "a");
  const across = await fsOp(w, { op: "rename", path: "/state/a.txt", to: "/run/a.txt" });
  assert.equal(String(across.kind), "CrossesDevices", String(across.error));
  const busy = await fsOp(w, { op: "rename", path: "/run", to: "/state/run" });
  assert.ok("error" in busy);
});

Deno.test("`..` leaves a mount as written: /run/../state is the world's state", async () => {
  await using w = await startWorld();
  await write(w, "/state/x.txt", "world");
  assert.equal((await read(w, "/run/../state/x.txt")).text, "world");
  assert.equal((await read(w, "/proc/../../state/x.txt")).text, "world");
});

Deno.test("a symbolic link made by a plugin stays inside the world", async () => {
  await using w = await startWorld({ plugins: { probe: "probe", fsprobe: "fsprobe" } });
  await Deno.symlink("/etc", join(w.root, "state", "out"));
  const r = await read(w, "/state/out/hostname");
  assert.ok("error" in r, "an absolute link is resolved from the world's root");
});

Deno.test("many processes appending to one file under a lock lose nothing, and no two interleave", async () => {
  await using w = await startWorld();
  const parts = 8;
  const results = await Promise.all(
    Array.from(
      { length: 12 },
      () => w.call("probe.locked_append", { path: "/state/appended", parts }),
    ),
  ) as { pid: string }[];
  const lines = (await Deno.readTextFile(join(w.root, "state", "appended"))).trimEnd().split("\n");
  assert.equal(lines.length, 12 * parts);
  // each holder's lines are together and in order: one run of `parts` lines per process
  const runs = Array.from({ length: 12 }, (_, k) => lines.slice(k * parts, (k + 1) * parts));
  for (const run of runs) {
    const pid = run[0].split(" ")[0];
    assert.deepEqual(run, Array.from({ length: parts }, (_, i) => `${pid} ${i}`));
  }
  assert.deepEqual(
    runs.map((run) => run[0].split(" ")[0]).sort(),
    results.map((r) => r.pid).sort(),
  );
});

Deno.test("many processes incrementing one file under a lock lose nothing", async () => {
  await using w = await startWorld();
  const calls = Array.from(
    { length: 12 },
    () => w.call("probe.locked_increment", { path: "/state/counter", hold_ms: 5 }),
  );
  const was = ((await Promise.all(calls)) as { was: number }[]).map((r) => r.was).sort((a, b) =>
    a - b
  );
  assert.deepEqual(was, Array.from({ length: 12 }, (_, i) => i));
  assert.equal(await Deno.readTextFile(join(w.root, "state", "counter")), "12");
});
