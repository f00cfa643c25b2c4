/**
 * The resource limits of PROTOCOL 3.10 (`memory_mib`, `stdin_mib`,
 * `files_mib`): a hostile `hog` takes memory, leaves its stdin unread or
 * fills `/self` and `/run`; it meets the named limit, and the host and the
 * other processes carry on. The worlds use small limits so the tests stay
 * quick and light.
 */
import assert from "node:assert/strict";
import { capMemory, memoryCap, PAGE_BYTES } from "../core/components/memory_cap.ts";
import { DEFAULT_LIMITS, parseLimits } from "../core/limits.ts";
import { StdinSource } from "../runtime/stdio.ts";
import { MemoryFileSystem, SharedBudget } from "../vfs/memory.ts";
import { VfsError } from "../vfs/mod.ts";
import { eventually, startWorld, type TestWorld } from "./world.ts";

const MIB = 2 ** 20;
const PLUGINS = { hog: "hog", other: "probe" };

/** The -32002 error's data of a process that ended without an answer. */
type Ended = { reason: string; detail: string; log: { line: string }[] };

/** A world of `hog` and a bystander (`other.never`, which waits for EOF). */
async function hogWorld(limits: string): Promise<TestWorld & { bystander: string }> {
  const w = await startWorld({ plugins: PLUGINS, files: { "config/limits.yaml": limits } });
  w.request("other.never", {}); // answered only by the host's shutdown
  // not the first process listed: the host's discovery of a plugin may run meanwhile
  const bystander = () =>
    w.host.processes.list().find((p) => p.plugin === "other" && p.method === "never");
  await eventually(() => bystander() !== undefined);
  return Object.assign(w, { bystander: bystander()!.pid });
}

/** Another plugin answers within 2 s and the bystander still runs. */
async function hostCarriesOn(w: TestWorld & { bystander: string }): Promise<void> {
  const answer = await Promise.race([
    w.call("other.echo", { still: "here" }),
    new Promise((r) => setTimeout(() => r("no answer within 2 s"), 2000)),
  ]);
  assert.deepEqual(answer, { still: "here" });
  const state = w.host.processes.get(w.bystander)?.state;
  if (state !== "running") {
    // say why it ended: its own lines of the journal
    const lines = w.host.journal.query({ pid: w.bystander, limit: 50 }).map((e) => e.line);
    assert.fail(`the bystander ${w.bystander} is ${state ?? "gone"}:\n${lines.join("\n")}`);
  }
}

/** The error of a call that must fail. */
async function failure(w: TestWorld, method: string, params: Record<string, unknown>) {
  const r = await w.request(method, params);
  assert.ok(r.error, `${method} failed: ${JSON.stringify(r.result)?.slice(0, 200)}`);
  return r.error;
}

function journal(w: TestWorld, grep: string): string[] {
  return w.host.journal.query({ grep, limit: 10_000 }).map((e) => e.line);
}

Deno.test("memory_mib: a process that grows past its memory limit ends with the limit named; others carry on", async () => {
  await using w = await hogWorld("memory_mib: 64\n");
  assert.equal(w.host.processes.limits.memory_mib, 64);
  // below the limit: fine
  const small = await w.call("hog.grow", { mib: 32 }) as { held_mib: number; memory_mib: number };
  assert.equal(small.held_mib, 32);
  assert.ok(small.memory_mib < 64, `${small.memory_mib} MiB`);
  // step by step to the limit, and one allocation past it; four at once, while the bystander waits
  const grows = await Promise.all([
    failure(w, "hog.grow", { mib: 200 }),
    failure(w, "hog.grow", { mib: 200 }),
    failure(w, "hog.grow_once", { mib: 100 }),
    failure(w, "hog.grow_once", { mib: 70 }),
  ]);
  for (const e of grows) {
    assert.equal(e.code, -32002);
    const data = e.data as Ended;
    assert.equal(data.reason, "trapped");
    assert.match(data.detail, /it ran out of memory/);
    assert.match(data.detail, /the limit memory_mib \(64 MiB of linear memory of one process\)/);
    assert.match(data.detail, /set "memory_mib: <number>" in config\/limits\.yaml/);
    assert.match(e.message, /memory_mib/);
  }
  assert.equal(journal(w, "^crashed: it ran out of memory.*memory_mib").length, 4);
  // a trap that is not about memory is not blamed on it
  const other = await failure(w, "other.panic", {});
  assert.doesNotMatch((other.data as Ended).detail, /memory_mib/);
  await hostCarriesOn(w);
});

Deno.test("stdin_mib: a process that leaves answers unread is killed at the limit; one that reads is not", async () => {
  await using w = await hogWorld("stdin_mib: 6\n");
  // two answers of 1 MiB fit
  const fits = { method: "other.echo", params: { text: "y".repeat(MIB) }, count: 2, wait_ms: 200 };
  assert.deepEqual(await w.call("hog.unread", fits), { answers: 2 });
  // core.log answers of about 4 MiB, ten of them, never read
  const line = "z".repeat(4000);
  for (let i = 0; i < 1000; i++) w.host.journal.event(null, null, `${i} ${line}`);
  const logs = { method: "core.log", params: { limit: 1000 }, count: 10, wait_ms: 10_000 };
  const started = performance.now();
  const e = await failure(w, "hog.unread", logs);
  assert.ok(performance.now() - started < 8000, "killed before its wait ended");
  assert.equal(e.code, -32002);
  const data = e.data as Ended;
  assert.equal(data.reason, "killed");
  assert.match(data.detail, /more than 6 MiB of stdin unread/);
  assert.match(data.detail, /the limit stdin_mib \(6 MiB of stdin that one process has not read\)/);
  assert.match(data.detail, /config\/limits\.yaml/);
  assert.equal(journal(w, "^killed: .*stdin_mib").length, 1);
  // the answers a second process asks for from another plugin: the same
  const big = { method: "other.echo", params: { text: "y".repeat(2 * MIB) }, count: 8 };
  const e2 = await failure(w, "hog.unread", { ...big, wait_ms: 10_000 });
  assert.match((e2.data as Ended).detail, /stdin_mib/);
  await hostCarriesOn(w);
});

Deno.test("files_mib: /self and /run together stop at the limit with insufficient-space and a journal line", async () => {
  await using w = await hogWorld("files_mib: 8\n");
  assert.equal(w.host.files.filesLimitMib, 8);
  assert.deepEqual(await w.call("hog.write", { path: "/run/a", mib: 6 }), {
    written: 6 * MIB,
    error: null,
  });
  // /self of another process: 2 MiB are left, then the area is full
  const self = await w.call("hog.write", { path: "/self/b", mib: 4 }) as {
    written: number;
    error: string;
  };
  assert.equal(self.written, 2 * MIB);
  assert.match(self.error, /space/i);
  const notes = journal(w, "^limit: write of /self/b failed with insufficient-space");
  assert.equal(notes.length, 1);
  assert.match(notes[0], /the limit files_mib \(8 MiB of files in \/self and \/run/);
  assert.match(notes[0], /set "files_mib: <number>" in config\/limits\.yaml/);
  // that /self went with its process; /run keeps its 6 MiB for all
  await eventually(() => w.host.files.budget.bytes === 6 * MIB);
  const run = await w.call("hog.write", { path: "/run/c", mib: 4 }) as { written: number };
  assert.equal(run.written, 2 * MIB);
  // removing gives it back; four writers at once get 8 MiB together
  await w.call("hog.remove", { path: "/run/a" });
  await w.call("hog.remove", { path: "/run/c" });
  assert.equal(w.host.files.budget.bytes, 0);
  const all = await Promise.all(
    Array.from({ length: 4 }, (_, i) => w.call("hog.write", { path: `/run/f${i}`, mib: 3 })),
  ) as { written: number; error: string | null }[];
  // a stream write that fails cannot say how much of it was written: the files hold it all
  assert.ok(all.reduce((n, r) => n + r.written, 0) <= 8 * MIB);
  assert.ok(all.some((r) => r.error !== null));
  assert.equal(w.host.files.run.bytes, 8 * MIB);
  assert.equal(w.host.files.budget.bytes, 8 * MIB);
  // each refused write is noted at most once a second, not once each
  const allNotes = journal(w, "^limit: .*files_mib");
  assert.ok(allNotes.length >= 1 && allNotes.length <= 3, `${allNotes.length} notes`);
  await hostCarriesOn(w);
});

Deno.test("limits.yaml: the resource limits have defaults, and memory_mib at most 4096", () => {
  assert.equal(DEFAULT_LIMITS.memory_mib, 1024);
  assert.equal(DEFAULT_LIMITS.stdin_mib, 64);
  assert.equal(DEFAULT_LIMITS.files_mib, 512);
  const { limits, problems } = parseLimits("memory_mib: 8192\nstdin_mib: 16\nfiles_mib: 0\n");
  assert.equal(limits.memory_mib, 1024);
  assert.equal(limits.stdin_mib, 16);
  assert.equal(limits.files_mib, 512);
  assert.equal(problems.length, 2);
  assert.match(problems[0], /memory_mib must be at most 4096/);
  assert.match(problems[1], /files_mib must be a positive integer/);
});

/** A module with one memory (`min` pages, `max` if given) and one table, both exported. */
function moduleWith(min: number, max?: number): Uint8Array {
  const limits = max === undefined ? [0x00, min] : [0x01, min, max];
  const memory = [0x01, ...limits];
  const table = [0x01, 0x70, 0x00, 0x01];
  const exports = [
    0x02,
    ...[0x03, 0x6d, 0x65, 0x6d, 0x02, 0x00], // "mem" memory 0
    ...[0x03, 0x74, 0x61, 0x62, 0x01, 0x00], // "tab" table 0
  ];
  return new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    ...[0x04, table.length, ...table],
    ...[0x05, memory.length, ...memory],
    ...[0x07, exports.length, ...exports],
  ]);
}

Deno.test("capMemory: the maximum of a memory and a table is lowered to the cap, never below the start", async () => {
  const cap = { pages: 3, tableElements: 5 };
  for (const max of [undefined, 100, 2]) {
    const bytes = capMemory(moduleWith(1, max), cap);
    const { instance } = await WebAssembly.instantiate(bytes as Uint8Array<ArrayBuffer>);
    const mem = instance.exports.mem as WebAssembly.Memory;
    const tab = instance.exports.tab as WebAssembly.Table;
    const most = Math.min(max ?? Infinity, 3);
    mem.grow(most - 1);
    assert.equal(mem.buffer.byteLength, most * PAGE_BYTES);
    assert.throws(() => mem.grow(1), RangeError);
    tab.grow(4);
    assert.throws(() => tab.grow(1), RangeError);
  }
  // a module that starts above the cap keeps its start, and cannot grow
  const { instance } = await WebAssembly.instantiate(
    capMemory(moduleWith(5), cap) as Uint8Array<ArrayBuffer>,
  );
  assert.throws(() => (instance.exports.mem as WebAssembly.Memory).grow(1), RangeError);
  assert.deepEqual(memoryCap(64), { pages: 1024, tableElements: 65536 });
});

Deno.test("SharedBudget: layers that share a budget hold at most it together, and give it back", () => {
  const budget = new SharedBudget(3000);
  const told: string[] = [];
  budget.onFull = (layer, syscall, path) => {
    told.push(`${layer} ${syscall} ${path}`);
    return "the shared limit";
  };
  const a = new MemoryFileSystem({ maxBytes: 1 << 20, shared: budget, name: "a" });
  const b = new MemoryFileSystem({ maxBytes: 1 << 20, shared: budget, name: "b" });
  const fa = a.open("/x", { write: true, create: true });
  fa.write(new Uint8Array(2000), 0);
  const fb = b.open("/y", { write: true, create: true });
  assert.throws(
    () => fb.write(new Uint8Array(1500), 0),
    (e) => e instanceof VfsError && e.code === "ENOSPC" && /the shared limit/.test(e.message),
  );
  assert.deepEqual(told, ["b write /y"]);
  assert.equal(fb.stat().size, 0, "a write that fails changes nothing");
  fb.write(new Uint8Array(1000), 0);
  assert.equal(budget.bytes, 3000);
  fa.setSize(500);
  assert.equal(budget.bytes, 1500);
  b.symlink("t".repeat(100), "/l");
  assert.equal(budget.bytes, 1600);
  b.detach();
  assert.equal(budget.bytes, 500);
  fa.close();
  a.unlink("/x");
  assert.equal(budget.bytes, 0);
});

Deno.test("StdinSource: bytes past its limit are not kept; the overflow is told once and the stream ends", () => {
  let overflows = 0;
  const stdin = new StdinSource(undefined, 10, () => overflows++);
  stdin.push(new Uint8Array(6));
  stdin.read(4);
  stdin.push(new Uint8Array(8)); // 2 + 8 unread: at the limit, kept
  assert.equal(stdin.unread, 10);
  assert.equal(overflows, 0);
  stdin.push(new Uint8Array(1));
  assert.equal(overflows, 1);
  assert.equal(stdin.unread, 0);
  stdin.push(new Uint8Array(1));
  assert.equal(overflows, 1);
  assert.equal(stdin.read(10), null, "the stream has ended");
});
