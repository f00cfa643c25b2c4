/**
 * Instances linked ahead of their processes (`core/pool.ts`, `prepare`): a
 * worker that ran a version links the next instance of it while idle, and
 * the next call of that version starts on it (on what an earlier process
 * left, put back, when there is one: `tests/reuse_test.ts`). Each is still
 * as fresh as an instance linked at its spawn: its memory, environment,
 * folders, kill and preemption.
 */
import assert from "node:assert/strict";
import { eventually, spinPreemptAndKill, startWorld } from "./world.ts";

/**
 * One worker, which the pool does not grow past: on a loaded machine a guest
 * runs past its slice by the clock, the worker counts as computing, and the
 * pool would start another for the next process, which finds nothing linked.
 */
const ONE_WORKER = { workers: 1, maxWorkers: 1 };

/** Waits until the one worker has the next instance of probe ready, then calls. */
async function callAhead(
  w: Awaited<ReturnType<typeof startWorld>>,
  method: string,
  params: Record<string, unknown> = {},
) {
  const before = w.host.pool.starts.ahead;
  // the instance is linked after the last process ended, while the worker idles (on a loaded
  // machine that can take a while: 30 ms was once too short)
  await new Promise((r) => setTimeout(r, 100));
  const response = await w.request(method, params);
  // a start is counted when its process ends
  await eventually(() => w.host.pool.size === 0);
  return { response, ahead: w.host.pool.starts.ahead > before };
}

Deno.test("a call starts on an instance linked ahead, with memory as fresh as a new one's", async () => {
  await using w = await startWorld(ONE_WORKER);
  assert.deepEqual(await w.call("probe.bump"), { count: 1, heap: 1 });
  let ahead = 0;
  for (let i = 0; i < 10; i++) {
    const r = await callAhead(w, "probe.bump");
    assert.deepEqual(r.response.result, { count: 1, heap: 1 });
    if (r.ahead) ahead++;
  }
  // the first call links at its spawn; after it, each call finds its instance ready
  assert.ok(ahead >= 9, `${ahead} of 10 calls started on an instance linked ahead`);
});

Deno.test("a process started ahead gets its own ID, arguments and environment", async () => {
  await using w = await startWorld(ONE_WORKER);
  await w.call("probe.echo");
  const seen = new Set<string>();
  for (let i = 0; i < 3; i++) {
    const r = await callAhead(w, "probe.env");
    assert.ok(r.ahead, "started ahead");
    const { vars, args, cwd } = r.response.result as {
      vars: Record<string, string>;
      args: string[];
      cwd: string;
    };
    assert.match(vars.SAUSAGE_PID, /^probe-/);
    assert.equal(vars.SAUSAGE_PLUGIN, "probe");
    assert.equal(vars.SAUSAGE_PARENT, "console");
    assert.deepEqual(args, ["probe"]);
    assert.equal(cwd, "/");
    seen.add(vars.SAUSAGE_PID);
  }
  assert.equal(seen.size, 3, "each process has its own ID");
});

Deno.test("a process started ahead sees the world and its own /self, not another's", async () => {
  await using w = await startWorld({ ...ONE_WORKER, files: { "state/probe/seed.txt": "seed" } });
  await w.call("probe.echo");
  const wrote = await callAhead(w, "probe.write_file", { path: "/self/mine.txt", text: "one" });
  assert.ok(wrote.ahead);
  assert.deepEqual(wrote.response.result, { read: "one" });
  const other = await callAhead(w, "probe.read_file", { path: "/self/mine.txt" });
  assert.ok(other.ahead);
  assert.equal((other.response.result as { kind: string }).kind, "NotFound");
  const world = await callAhead(w, "probe.read_file", { path: "/state/probe/seed.txt" });
  assert.deepEqual(world.response.result, { text: "seed" });
});

Deno.test("a spinner started ahead is preempted and killed, and the next call still answers", async () => {
  await using w = await startWorld(ONE_WORKER);
  await w.call("probe.echo");
  await new Promise((r) => setTimeout(r, 30));
  const before = w.host.pool.starts.ahead;
  await spinPreemptAndKill(w);
  assert.ok(w.host.pool.starts.ahead > before, "the spinner started ahead");
  const next = await callAhead(w, "probe.bump");
  assert.deepEqual(next.response.result, { count: 1, heap: 1 });
});

Deno.test("with prepareAhead off, every process is linked at its spawn", async () => {
  await using w = await startWorld({ ...ONE_WORKER, prepareAhead: false });
  for (let i = 0; i < 3; i++) await callAhead(w, "probe.echo");
  assert.equal(w.host.pool.starts.ahead, 0);
  assert.ok(w.host.pool.starts.cold >= 3);
});

Deno.test("a plugin that calls itself: the caller and its callee both start on instances linked ahead", async () => {
  await using w = await startWorld(ONE_WORKER);
  await w.call("probe.call", { method: "probe.bump", params: {} });
  for (let i = 0; i < 5; i++) {
    const before = w.host.pool.starts.ahead;
    await new Promise((r) => setTimeout(r, 100)); // the worker links two while it idles
    const nested = (await w.call("probe.call", { method: "probe.bump", params: {} })) as {
      response: { result: unknown };
    };
    assert.deepEqual(nested.response.result, { count: 1, heap: 1 }, "a fresh instance each");
    await eventually(() => w.host.pool.size === 0);
    assert.equal(w.host.pool.starts.ahead - before, 2, `call ${i}: both linked ahead`);
  }
});
