/**
 * A component linked once serves one process after another of its version
 * (`runtime/linked.ts`): after a clean exit its memory, globals and the
 * glue's handle tables are put back as linking left them. To each process
 * it is a fresh instance: statics, the stack, resources an earlier process
 * left open, the interrupt cell that preempts and kills it.
 */
import assert from "node:assert/strict";
import { eventually, spinPreemptAndKill, startWorld, type TestWorld } from "./world.ts";

/** One worker, which keeps the instances its processes leave. */
const ONE_WORKER = { workers: 1, maxWorkers: 1 };

/** Calls and waits until the process has ended (a start is counted at its end). */
async function callToEnd(w: TestWorld, method: string, params: Record<string, unknown> = {}) {
  const response = await w.request(method, params);
  await eventually(() => w.host.pool.size === 0);
  return response;
}

Deno.test("processes of a version run one after another on one instance, each as on a fresh one", async () => {
  await using w = await startWorld(ONE_WORKER);
  const before = w.host.pool.starts.reused;
  for (let i = 0; i < 10; i++) {
    const r = await callToEnd(w, "probe.bump");
    // a static and a heap value both start from what linking left
    assert.deepEqual(r.result, { count: 1, heap: 1 }, `call ${i}`);
  }
  const reused = w.host.pool.starts.reused - before;
  assert.ok(reused >= 8, `${reused} of 10 processes ran on an instance an earlier one left`);
});

Deno.test("a chain of calls deeper than before finds every instance ready the second time", async () => {
  await using w = await startWorld({
    ...ONE_WORKER,
    files: { "config/limits.yaml": "call_depth: 64\n" },
  });
  // 41 processes of probe at once on the one worker, twice
  const chain = { fan: 1, depth: 40 };
  const first = await callToEnd(w, "probe.tree", chain);
  assert.deepEqual(first.result, { leaves: 1, failed: 0, error: null }, JSON.stringify(first));
  const before = { ...w.host.pool.starts };
  const second = await callToEnd(w, "probe.tree", chain);
  assert.deepEqual(second.result, { leaves: 1, failed: 0, error: null });
  const reused = w.host.pool.starts.reused - before.reused;
  // each process of the chain on an instance one of the run before left (not 8, and 33 new)
  assert.equal(reused, 41, JSON.stringify(w.host.pool.starts));
});

Deno.test("a process that exits deep in its stack leaves the stack pointer to no one", async () => {
  await using w = await startWorld(ONE_WORKER);
  const before = w.host.pool.starts.reused;
  // 12 frames of 64 KiB: three quarters of the stack; a second run from where the
  // first exited would run off the end of the stack and trap
  for (let i = 0; i < 6; i++) {
    const r = await callToEnd(w, "probe.leave", { depth: 12 });
    assert.ok(r.result, `run ${i}: ${JSON.stringify(r.error)}`);
  }
  assert.ok(w.host.pool.starts.reused - before >= 4, "the runs shared instances");
  assert.deepEqual((await callToEnd(w, "probe.bump")).result, { count: 1, heap: 1 });
});

Deno.test("handles an earlier process left open are not there for the next: a forged one traps", async () => {
  await using w = await startWorld(ONE_WORKER);
  let handles: number[] = [];
  for (let i = 0; i < 3; i++) {
    const r = await callToEnd(w, "probe.leave", {});
    handles = (r.result as { handles: number[] }).handles;
  }
  assert.ok(handles.length >= 2, `a folder and a file left open: ${handles}`);
  const before = w.host.pool.starts.reused;
  const forged = await callToEnd(w, "probe.forge", { handles });
  assert.equal(
    w.host.pool.starts.reused - before,
    1,
    "the forger ran on an instance a leaver left",
  );
  // the trap of a handle the instance never gave, as on a fresh instance: no answer
  assert.equal(forged.error?.code, -32002, JSON.stringify(forged));
  assert.deepEqual((await callToEnd(w, "probe.bump")).result, { count: 1, heap: 1 });
});

Deno.test("an instance an earlier process left is preempted and killed through the new process's cell", async () => {
  await using w = await startWorld(ONE_WORKER);
  for (let i = 0; i < 3; i++) await callToEnd(w, "probe.echo");
  const before = w.host.pool.starts.reused;
  // on the one worker, an echo answers beside it: the spinner yields at its slice's end
  await spinPreemptAndKill(w);
  assert.ok(w.host.pool.starts.reused - before >= 2, "the spinner and the echo were reused");
  // the killed instance is not kept: the next process gets another, as fresh
  for (let i = 0; i < 3; i++) {
    assert.deepEqual((await callToEnd(w, "probe.bump")).result, { count: 1, heap: 1 });
  }
});
