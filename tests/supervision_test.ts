/**
 * Supervision: a crashed plugin worker ends only the processes it ran;
 * services it ended start again after a backoff; a plugin that the crashes
 * point to again and again is refused for a while; and each worker gets its
 * share of the host's open files, also under the `sausage` executable's
 * permissions.
 *
 * A worker crashes here by the pool's test marker: a process that logs the
 * marker line makes its worker throw an uncaught error, which ends the
 * worker as a bug in it would.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Response } from "../core/jsonrpc.ts";
import type { SupervisionOptions } from "../core/supervision.ts";
import type { Process } from "../core/process.ts";
import { SAUSAGE_FLAGS } from "../core/host.ts";
import { initWorld } from "../core/init.ts";
import { testPlugin } from "./setup.ts";
import {
  eventually,
  installPlugin,
  startWorld,
  TEST_CACHE_DIR,
  type TestWorld,
  type WorldOptions,
} from "./world.ts";

const MARKER = "supervision test: crash this worker";

/** A world whose processes can crash their worker, with the supervision given. */
function crashWorld(
  supervision: Partial<SupervisionOptions> = {},
  options: WorldOptions = {},
): Promise<TestWorld> {
  return startWorld({ ...options, supervision: { crashMarker: MARKER, ...supervision } });
}

/** Calls `plugin.crash_worker`: its process crashes its worker; returns the -32002 answer. */
async function crash(w: TestWorld, params: Record<string, unknown> = {}, plugin = "probe") {
  const response = await w.request(`${plugin}.crash_worker`, { marker: MARKER, ...params });
  assert.equal(response.error?.code, -32002, JSON.stringify(response));
  return response.error!;
}

function running(w: TestWorld, method: string, plugin = "probe"): Process[] {
  return w.host.processes.list().filter((p) =>
    p.method === method && p.plugin === plugin && p.state === "running"
  );
}

function journaled(w: TestWorld, grep: string): number {
  return w.host.journal.query({ grep, limit: 1000 }).length;
}

Deno.test("a crashed worker: its processes end with -32002 and the reason; their lock, /proc folders and notification budget are freed; a new worker runs the next calls", async () => {
  await using w = await crashWorld({}, {
    workers: 1,
    maxWorkers: 1,
    files: { "config/limits.yaml": "notifications_per_sender: 2\n" },
  });
  // two processes started by the console's notifications: its budget is full
  w.client.notify("probe.never");
  w.client.notify("probe.never");
  await eventually(() => running(w, "never").length === 2);
  const bystanders = running(w, "never");
  w.client.notify("probe.never");
  await eventually(() => journaled(w, "limit: the notification probe.never was refused") === 1);
  // a request waiting for an answer, and a process holding a lock
  const waiting = w.request("probe.sleep", { ms: 60_000 });
  await eventually(() => running(w, "sleep").length === 1);
  const error = await crash(w, { lock: "/state/held" });

  const data = error.data as { pid: string; reason: string; status: null; detail: string };
  assert.equal(data.reason, "killed");
  assert.equal(data.status, null);
  assert.match(
    data.detail,
    /its plugin worker \d+ crashed \(.*injected crash: .*test crash marker/,
  );
  assert.match(error.message, /ended without an answer: it was killed \(its plugin worker/);
  const slept = (await waiting) as Response;
  assert.equal(slept.error?.code, -32002, "the caller of another process on it is answered too");
  assert.match((slept.error?.data as { detail: string }).detail, /plugin worker \d+ crashed/);
  for (const p of bystanders) assert.equal((await p.ended).reason, "killed");
  assert.equal(w.host.processes.list().length, 0);
  assert.deepEqual(w.host.locks.snapshot(), [], "the lock of the crashed process is released");
  await eventually(() =>
    journaled(w, "^plugin worker \\d+ crashed \\(.*\\): it ran 4 processes of probe;") === 1
  );

  // a new worker: the lock can be taken, /proc has no folder of the ended processes
  assert.deepEqual(await w.call("probe.locked_increment", { path: "/state/held" }), { was: 0 });
  const proc = (await w.call("probe.list_dir", { path: "/proc" })) as { names: string[] };
  assert.deepEqual(proc.names.filter((n) => n.startsWith("probe-")).length, 1, "only its own");
  assert.ok(!proc.names.includes(data.pid));
  // the notification budget came back: two new notifications start processes
  w.client.notify("probe.never");
  w.client.notify("probe.never");
  await eventually(() => running(w, "never").length === 2);
  // on a new worker (the pool may also have grown meanwhile)
  const crashed = Number(
    w.host.journal.query({ grep: "^plugin worker \\d+ crashed" })[0].line.split(" ")[2],
  );
  for (const p of running(w, "never")) assert.notEqual(w.host.pool.workerOf(p.pid), crashed);
});

Deno.test("a crash ends only the processes of the crashed worker; the others go on and answer", async () => {
  await using w = await crashWorld({}, { workers: 2, maxWorkers: 2 });
  const calls = [1, 2, 3, 4].map(() => w.request("probe.sleep", { ms: 1500 }));
  await eventually(() => running(w, "sleep").length === 4);
  // it waits before it writes the marker: a process starts in about a millisecond now, and a
  // crash at once could end it between two looks at the process table
  const crashing = w.request("probe.crash_worker", { marker: MARKER, after_ms: 300 });
  await eventually(() => running(w, "crash_worker").length === 1);
  const [crasher] = running(w, "crash_worker");
  const crashed = w.host.pool.workerOf(crasher.pid);
  const onIt = new Set(
    running(w, "sleep").filter((p) => w.host.pool.workerOf(p.pid) === crashed).map((p) => p.pid),
  );
  assert.equal((await crashing).error?.code, -32002);
  const answers = await Promise.all(calls);
  let ended = 0;
  let answered = 0;
  for (const a of answers) {
    if (a.error) {
      ended++;
      assert.ok(onIt.has((a.error.data as { pid: string }).pid), JSON.stringify(a.error));
    } else {
      answered++;
      assert.deepEqual(a.result, { slept: 1500 });
    }
  }
  assert.equal(ended, onIt.size);
  assert.equal(answered, 4 - onIt.size);
  assert.ok(answered > 0, "the other worker ran some of them");
  assert.equal(w.host.pool.workers, 2);
  await eventually(() => w.host.processes.list().length === 0);
});

/** A boot service that answers, then crashes its worker `afterMs` later, at each start. */
function crashingService(afterMs: number): Record<string, string> {
  const params = JSON.stringify({ marker: MARKER, answer: true, after_ms: afterMs });
  return { "config/boot.yaml": `- method: probe.crash_worker\n  params: ${params}\n` };
}

/** The waits journaled for the service's restarts, and the time each took, in order. */
function restarts(w: TestWorld): { said: string; tookMs: number }[] {
  const lines = w.host.journal.query({ grep: "^service probe.crash_worker", limit: 1000 });
  const out: { said: string; tookMs: number }[] = [];
  for (const [i, e] of lines.entries()) {
    const m = e.line.match(
      /\) ended: its plugin worker \d+ crashed .*; starting it again in (.*)$/,
    );
    if (!m) continue;
    const next = lines.slice(i + 1).find((n) => n.line.endsWith("after the crash of its worker"));
    if (!next) continue;
    out.push({ said: m[1], tookMs: Date.parse(next.time) - Date.parse(e.time) });
  }
  return out;
}

Deno.test("a service ended by a worker crash starts again after a backoff that doubles up to its most; journaled", async () => {
  await using w = await crashWorld(
    { restartDelayMs: 200, maxRestartDelayMs: 400, resetAfterMs: 60_000, crashLimit: 1000 },
    { workers: 1, maxWorkers: 1, files: crashingService(100) },
  );
  await eventually(() => restarts(w).length >= 4, 10_000);
  const seen = restarts(w).slice(0, 4);
  assert.deepEqual(seen.map((r) => r.said), ["0.2 s", "0.4 s", "0.4 s", "0.4 s"]);
  for (const [i, r] of seen.entries()) {
    const ms = [200, 400, 400, 400][i];
    assert.ok(r.tookMs >= ms - 20, `restart ${i + 1} after ${r.tookMs} ms, not ${ms}`);
  }
  // each start made it ready again, and each crash was journaled with what ran on the worker
  assert.ok(journaled(w, "^service probe.crash_worker: ready$") >= 4);
  assert.ok(journaled(w, "^plugin worker \\d+ crashed .*charged to probe, the only plugin") >= 4);
});

Deno.test("a service that ran a while before its worker crashed waits the first delay again", async () => {
  await using w = await crashWorld(
    { restartDelayMs: 100, maxRestartDelayMs: 10_000, resetAfterMs: 250, crashLimit: 1000 },
    { workers: 1, maxWorkers: 1, files: crashingService(400) },
  );
  await eventually(() => restarts(w).length >= 3, 10_000);
  assert.deepEqual(restarts(w).slice(0, 3).map((r) => r.said), ["0.1 s", "0.1 s", "0.1 s"]);
});

Deno.test("a plugin that crashes its worker 3 times in the window is refused, with why and until when; then accepted again", async () => {
  await using w = await crashWorld(
    { crashLimit: 3, crashWindowMs: 60_000, refuseMs: 1500 },
    { workers: 1, maxWorkers: 1 },
  );
  await crash(w);
  await crash(w);
  assert.deepEqual(await w.call("probe.echo", { still: "accepted" }), { still: "accepted" });
  await crash(w);
  const refused = await w.request("probe.echo", {});
  const error = refused.error!;
  assert.equal(error.code, -32000, JSON.stringify(refused));
  assert.match(
    error.message,
    /^probe\.echo was refused: the processes of probe were on 3 crashes of plugin workers within 60 s, and no other plugin was on all of them \(the last: .*\); calls of probe are accepted again at .*Z \(in [12] s\), or at once after core\.activate of a new version of probe$/,
  );
  const data = error.data as { refused: string; plugin: string; crashes: number; until: string };
  assert.deepEqual([data.refused, data.plugin, data.crashes], ["worker_crashes", "probe", 3]);
  const until = Date.parse(data.until);
  assert.ok(until > Date.now() && until <= Date.now() + 1500);
  assert.equal(w.host.processes.list().length, 0, "a refused call starts no process");
  // a notification is dropped as quietly as at a limit
  w.client.notify("probe.never");
  await eventually(() =>
    journaled(w, "^calls of probe are refused until .*Z: its processes") === 1
  );

  await new Promise((r) => setTimeout(r, until - Date.now() + 20));
  assert.deepEqual(await w.call("probe.echo", { again: true }), { again: true });
  await eventually(() =>
    journaled(
      w,
      "^calls of probe are accepted again: its refusal ended \\(2 refused meanwhile\\)$",
    ) ===
      1
  );
});

Deno.test("core.activate of a new version accepts a refused plugin's calls at once", async () => {
  await using w = await crashWorld({ crashLimit: 2, refuseMs: 60_000 }, {
    workers: 1,
    maxWorkers: 1,
  });
  await crash(w);
  await crash(w);
  assert.equal((await w.request("probe.echo")).error?.code, -32000);
  // the same code with a custom section: another version
  const bytes = await Deno.readFile(await testPlugin("probe"));
  const name = new TextEncoder().encode("supervision-new-version");
  const payload = [name.length, ...name, 1];
  await Deno.writeFile(
    join(w.root, "state", "probe-new.wasm"),
    new Uint8Array([...bytes, 0, payload.length, ...payload]),
  );
  await w.call("core.activate", { plugin: "probe", wasm: "/state/probe-new.wasm", force: true });
  assert.deepEqual(await w.call("probe.echo", { new: 1 }), { new: 1 });
  await eventually(() =>
    journaled(w, "^calls of probe are accepted again: a new version is current") === 1
  );
});

Deno.test("a crash on a worker shared by two plugins is charged to neither; the one on every crash is refused", async () => {
  await using w = await crashWorld({ crashLimit: 3, refuseMs: 60_000 }, {
    workers: 1,
    maxWorkers: 1,
    plugins: { probe: "probe", other: "probe" },
  });
  for (let i = 0; i < 3; i++) {
    w.client.notify("other.never");
    await eventually(() => running(w, "never", "other").length === 1);
    await crash(w);
  }
  await eventually(() => journaled(w, "probe; charged to none of them alone$") === 3);
  // both were on all three crashes: neither is refused
  assert.deepEqual(await w.call("probe.echo", { a: 1 }), { a: 1 });
  assert.deepEqual(await w.call("other.echo", { b: 2 }), { b: 2 });
  // a fourth without the other plugin: probe alone was on every crash it was on
  await crash(w);
  await eventually(() => journaled(w, "charged to probe, the only plugin on it$") === 1);
  assert.equal((await w.request("probe.echo")).error?.code, -32000);
  assert.deepEqual(await w.call("other.echo", { c: 3 }), { c: 3 });
});

// ---------------------------------------------------------------- open files

/** The flags of the `sausage` executable (not --allow-all). */
function sausageFlags(): string[] {
  return [...SAUSAGE_FLAGS];
}

/** What {@linkcode startHostWith} reports. */
interface Started {
  budget: number;
  sockets: number;
  openFiles: { limit: number; source: string };
  warnings: string[];
  result?: Record<string, unknown>;
}

/**
 * Starts a host on a new world in a `deno run` with `flags`, and the
 * open-file limit set to `nofile` (soft and hard: Deno raises its soft limit
 * to the hard one at start); makes one call when `method` is given.
 */
async function startHostWith(
  nofile: number,
  flags: string[],
  call?: { method: string; params: Record<string, unknown> },
): Promise<Started> {
  const root = await Deno.makeTempDir({ prefix: "sausage-world-" });
  const script = `${root}-start.ts`;
  try {
    await initWorld(root, { installAgent: false });
    await installPlugin(root, "fsprobe", "fsprobe");
    const host = new URL("../core/host.ts", import.meta.url).href;
    await Deno.writeTextFile(
      script,
      `import { Host } from ${JSON.stringify(host)};
const [world, cacheDir, method, params] = Deno.args;
const h = await Host.start({ world, cacheDir, services: false, installAgent: false });
await h.discovered;
const result = method ? (await h.client("console").request(method, JSON.parse(params))).result : undefined;
const warnings = h.journal.query({ grep: "limit of open files" }).map((e) => e.line);
console.log(JSON.stringify({ budget: h.pool.fileBudget, sockets: h.pool.socketBudget, openFiles: h.pool.openFiles, warnings, result }));
await h.shutdown();
`,
    );
    const config = new URL("../deno.json", import.meta.url).pathname;
    const args = [...flags, "--config", config, script, root, TEST_CACHE_DIR];
    if (call) args.push(call.method, JSON.stringify(call.params));
    const quoted = [Deno.execPath(), "run", ...args].map((a) => `'${a}'`).join(" ");
    const out = await new Deno.Command("sh", {
      args: ["-c", `ulimit -n ${nofile} && exec ${quoted}`],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stdout = new TextDecoder().decode(out.stdout);
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    return JSON.parse(stdout.trim().split("\n").pop()!) as Started;
  } finally {
    await Deno.remove(root, { recursive: true });
    await Deno.remove(script).catch(() => {});
  }
}

Deno.test("under the sausage executable's permissions, each worker gets half the host's open-file limit over its workers", async () => {
  // 4096 / 2 over the most workers (4 × the base ones)
  const workers = Math.max(2, navigator.hardwareConcurrency || 2);
  const budget = Math.max(64, Math.min(4096, Math.floor(4096 / 2 / (workers * 4))));
  const r = await startHostWith(4096, sausageFlags(), {
    method: "fsprobe.open_many",
    params: { dir: "/state/raw", raw: true },
  });
  assert.deepEqual(r.openFiles, { limit: 4096, source: "getrlimit" });
  assert.equal(r.budget, budget);
  // and a quarter of it for the sockets of each worker's processes
  assert.equal(r.sockets, Math.max(64, Math.min(4096, Math.floor(4096 / 4 / (workers * 4)))));
  assert.deepEqual(r.warnings, []);
  // a process opens host files until the worker's budget is used up
  const report = r.result as { opened: number; error: unknown };
  assert.deepEqual(report.error, { code: "insufficient-memory" }, JSON.stringify(report));
  assert.ok(
    report.opened <= budget && report.opened >= budget - 8,
    `opened ${report.opened}, budget ${budget}`,
  );
});

Deno.test("a host that cannot read its open-file limit says so in the journal, with the budget it assumes", async () => {
  // the sausage flags without --allow-ffi: neither /proc/self/limits nor getrlimit can be read
  const r = await startHostWith(4096, sausageFlags().filter((f) => f !== "--allow-ffi"));
  assert.equal(r.openFiles.source, "fallback");
  assert.equal(r.warnings.length, 1, JSON.stringify(r.warnings));
  assert.match(
    r.warnings[0],
    new RegExp(
      "^warning: the host's limit of open files cannot be read \\(/proc/self/limits: .*; " +
        `getrlimit: .*\\), so 1024 is assumed: each plugin worker may hold ${r.budget} host ` +
        "files open; run the host with --allow-ffi \\(or --allow-all\\) to use the real limit$",
    ),
  );
});
