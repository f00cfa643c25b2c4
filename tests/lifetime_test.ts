/**
 * Lifetime (PROTOCOL 3.6): EOF means stop, the kill after 5 s, attached
 * children, core.stop and core.kill, host shutdown; and preemption: a
 * process that computes never blocks the others, and a kill ends it.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Process } from "../core/process.ts";
import { eventually, startWorld, type TestWorld } from "./world.ts";

async function waitFor(w: TestWorld, method: string, count = 1): Promise<Process[]> {
  await eventually(() =>
    w.host.processes.list().filter((p) => p.method === method).length >= count
  );
  return w.host.processes.list().filter((p) => p.method === method);
}

Deno.test("core.stop closes stdin; the stop hook still writes files; the answer comes when the process has ended", async () => {
  await using w = await startWorld();
  assert.equal(await w.call("probe.linger", { hook_file: "/hook.txt" }), "lingering");
  const [p] = await waitFor(w, "linger");
  assert.deepEqual(await w.call("core.stop", { pid: p.pid }), {});
  assert.equal(p.state, "ended");
  assert.equal(await Deno.readTextFile(join(w.root, "hook.txt")), "stopped");
  assert.equal(w.host.processes.get(p.pid), undefined);
});

Deno.test("a stopping process cannot make calls; the core refuses them and says so", async () => {
  await using w = await startWorld();
  await w.call("probe.linger", { call_on_stop: "probe.echo" });
  const [p] = await waitFor(w, "linger");
  await w.call("core.stop", { pid: p.pid });
  const refused = w.host.journal.query({ pid: p.pid, grep: "refused the call probe.echo" });
  assert.equal(refused.length, 1);
  assert.equal(w.host.journal.query({ grep: "^start echo" }).length, 0);
});

Deno.test("a process that ignores EOF is killed 5 s after the stop", async () => {
  await using w = await startWorld();
  await w.call("probe.stubborn");
  const [p] = await waitFor(w, "stubborn");
  const started = performance.now();
  await w.call("core.stop", { pid: p.pid });
  const took = performance.now() - started;
  assert.ok(took >= 4900, `stopped after ${took} ms`);
  const end = await p.ended;
  assert.equal(end.reason, "killed");
  assert.match(end.detail ?? "", /did not stop within 5 s/);
});

Deno.test("when a process ends, its attached children stop, all in parallel", async () => {
  await using w = await startWorld();
  // three stubborn children answer, their parent answers and ends: the children
  // must all be stopped, and killed together after 5 s (not 15)
  const started = performance.now();
  await w.call("probe.fan_out", { method: "probe.stubborn", count: 3 });
  const children = await waitFor(w, "stubborn", 3);
  await Promise.all(children.map((c) => c.ended));
  const took = performance.now() - started;
  assert.ok(took < 9000, `the tree took ${took} ms`);
  for (const c of children) assert.equal((await c.ended).reason, "killed");
  assert.equal(w.host.processes.list().length, 0);
});

Deno.test("an attached child with a stop hook runs it when its parent ends", async () => {
  await using w = await startWorld();
  await w.call("probe.call", { method: "probe.linger", params: { hook_file: "/child-hook.txt" } });
  await eventually(() => existsSync(join(w.root, "child-hook.txt")));
  await eventually(() => w.host.processes.list().length === 0);
});

Deno.test("core.kill ends a process at once; its caller gets -32002 with the reason", async () => {
  await using w = await startWorld();
  const pending = w.request("probe.never", {});
  const [p] = await waitFor(w, "never");
  assert.deepEqual(await w.call("core.kill", { pid: p.pid }), {});
  const r = await pending;
  assert.equal(r.error?.code, -32002);
  assert.equal((r.error!.data as { reason: string }).reason, "killed");
});

Deno.test("core.stop and core.kill of an unknown process are -32602", async () => {
  await using w = await startWorld();
  const stop = await w.request("core.stop", { pid: "probe-nothing" });
  assert.equal(stop.error?.code, -32602);
  const kill = await w.request("core.kill", {});
  assert.equal(kill.error?.code, -32602);
});

Deno.test("host shutdown starts nothing new and stops every process in parallel", async () => {
  const w = await startWorld();
  try {
    await w.call("probe.linger", { hook_file: "/a.txt" });
    await w.call("probe.linger", { hook_file: "/b.txt" });
    // three that ignore EOF: each is killed after 5 s, so stopping them one by one takes 15 s
    for (let i = 0; i < 3; i++) await w.call("probe.stubborn");
    const stubborn = await waitFor(w, "stubborn", 3);
    assert.equal(stubborn.length, 3);
    const started = performance.now();
    const shutdown = w.host.shutdown();
    await eventually(() => !w.host.processes.accepting);
    const refused = await w.request("probe.echo", {});
    assert.equal(refused.error?.code, -32000);
    assert.match(refused.error!.message, /shutting down/);
    await shutdown;
    const took = performance.now() - started;
    // parallel: one grace period of 5 s; the bound leaves room for a loaded machine
    assert.ok(took >= 4900 && took < 9000, `shutdown took ${Math.round(took)} ms`);
    for (const p of stubborn) assert.equal((await p.ended).reason, "killed");
    assert.ok(existsSync(join(w.root, "a.txt")) && existsSync(join(w.root, "b.txt")));
    assert.equal(w.host.processes.list().length, 0);
  } finally {
    await w[Symbol.asyncDispose]();
  }
});

Deno.test("a spinning process never delays the others: four spinners, and a call to another plugin still answers", async () => {
  // `other` is the same probe in a second folder: its calls share no plugin with the spinners
  await using w = await startWorld({ workers: 2, plugins: { probe: "probe", other: "probe" } });
  const spinners = [1, 2, 3, 4].map((seed) => w.request("probe.spin", { seed }));
  await waitFor(w, "spin", 4);
  await new Promise((r) => setTimeout(r, 100));
  const latencies: number[] = [];
  for (let i = 0; i < 9; i++) {
    const t = performance.now();
    assert.deepEqual(await w.call("other.echo", { i }), { i });
    latencies.push(performance.now() - t);
  }
  // the benchmark measures this precisely (a median of about 4 ms); here the bounds leave room
  // for a busy machine, yet a worker that a spinner held would take seconds
  const sorted = [...latencies].sort((a, b) => a - b);
  const shown = `latencies ${latencies.map(Math.round)} ms`;
  assert.ok(sorted[4] < 100, `median over 100 ms: ${shown}`);
  assert.ok(sorted[8] < 1000, shown);
  for (const p of w.host.processes.list().filter((p) => p.method === "spin")) {
    await w.call("core.kill", { pid: p.pid });
  }
  for (const s of await Promise.all(spinners)) {
    assert.equal((s.error?.data as { reason: string }).reason, "killed");
  }
});

Deno.test("core.kill ends a spinning process promptly", async () => {
  await using w = await startWorld();
  const pending = w.request("probe.spin", {});
  const [p] = await waitFor(w, "spin");
  await new Promise((r) => setTimeout(r, 50));
  const t = performance.now();
  await w.call("core.kill", { pid: p.pid });
  const took = performance.now() - t;
  // the benchmark: about 2 ms; a kill that waited for the spinner to yield would never come
  assert.ok(took < 250, `kill took ${took} ms`);
  assert.equal(((await pending).error?.data as { reason: string }).reason, "killed");
  // the spinner meets the interrupt before the worker reads the kill message:
  // the reason still comes from the host
  assert.match((await p.ended).detail ?? "", /core\.kill/);
});

Deno.test("host shutdown ends spinning processes too", async () => {
  const w = await startWorld();
  try {
    w.request("probe.spin", {});
    w.request("probe.busy", { ms: 60_000 });
    await waitFor(w, "spin");
    await waitFor(w, "busy");
    const started = performance.now();
    await w.host.shutdown();
    assert.ok(performance.now() - started < 9000);
    assert.equal(w.host.processes.list().length, 0);
  } finally {
    await w[Symbol.asyncDispose]();
  }
});

Deno.test("a computing process still gets its timers and finishes its work", async () => {
  await using w = await startWorld();
  const busy = w.call("probe.busy", { ms: 300 });
  const slept = await w.call("probe.sleep", { ms: 50 });
  assert.deepEqual(slept, { slept: 50 });
  assert.ok(((await busy) as { x: number }).x >= 0);
});

Deno.test("a kill in the middle of writes under a lock: no write lands after the next holder got the lock", async () => {
  await using w = await startWorld();
  const path = join(w.root, "state", "append.bin");
  const writer = w.request("probe.append_forever", { path: "/state/append.bin" });
  await eventually(async () => (await Deno.stat(path).catch(() => ({ size: 0 }))).size > 1 << 20);
  const [p] = await waitFor(w, "append_forever");
  const next = w.host.client("next");
  const granted = next.request("core.lock", { path: "/state/append.bin" });
  await w.call("core.kill", { pid: p.pid });
  assert.deepEqual((await granted).result, { held: true });
  const size = (await Deno.stat(path)).size;
  await new Promise((r) => setTimeout(r, 300));
  assert.equal((await Deno.stat(path)).size, size);
  assert.equal(size % 4096, 0, "whole blocks only: each write returned before the kill");
  assert.equal(((await writer).error?.data as { reason: string }).reason, "killed");
});
