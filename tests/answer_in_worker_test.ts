/**
 * A callee on its caller's worker (PROTOCOL 3.3): the worker writes the
 * callee's answer to the caller's stdin itself, and the host keeps the books
 * after it. What the caller reads, what the journal says and the order of
 * the messages are the same as on the way through the host's thread.
 */
import assert from "node:assert/strict";
import { eventually, startWorld, type TestWorld } from "./world.ts";

type Nested = { response: Record<string, unknown>; notifications: Record<string, unknown>[] };

/**
 * A world whose worker ran a nested call already: a first call compiles the
 * glue and may run long enough for its worker to count as computing, and a
 * callee then goes to another worker.
 */
async function warmWorld(options: Parameters<typeof startWorld>[0] = {}): Promise<TestWorld> {
  const w = await startWorld(options);
  for (let i = 0; i < 3; i++) await w.call("probe.call", { method: "probe.echo", params: {} });
  return w;
}

/** `probe.call` of `method`, and how many answers skipped the host's thread meanwhile. */
async function nested(
  w: TestWorld,
  method: string,
  params: Record<string, unknown> = {},
): Promise<{ got: Nested; inWorker: number }> {
  const before = w.host.pool.answersInWorker;
  const got = (await w.call("probe.call", { method, params })) as Nested;
  return { got, inWorker: w.host.pool.answersInWorker - before };
}

Deno.test("a callee on its caller's worker answers through the worker: results and errors read as through the host", async () => {
  // one worker: the callee shares it either way, and only nearCaller decides the answer's way
  await using near = await warmWorld({ workers: 1 });
  await using far = await warmWorld({ workers: 1, nearCaller: false });
  for (
    const [method, params] of [
      ["probe.echo", { a: 1, text: 'ü\n"', list: [null, 2.5] }],
      ["probe.fail", {}],
      ["probe.echo", {}],
    ] as const
  ) {
    const a = await nested(near, method, params);
    const b = await nested(far, method, params);
    assert.equal(a.inWorker, 1, `${method}: the answer went through the worker`);
    assert.equal(b.inWorker, 0, `${method}: nearCaller: false answers through the host`);
    assert.deepEqual(a.got.response, b.got.response);
    assert.deepEqual(a.got.response.id, 1, "the caller's own request ID");
  }
  // an error answer is journaled with its caller either way (PROTOCOL section 7)
  for (const w of [near, far]) {
    await eventually(() =>
      w.host.journal.query({ grep: "^answered probe\\.fail from probe-.* with error 4711" })
        .length === 1
    );
  }
});

Deno.test("with two workers, a callee goes to its caller's worker while that one waits", async () => {
  await using w = await warmWorld({ workers: 2 });
  let inWorker = 0;
  for (let i = 0; i < 20; i++) inWorker += (await nested(w, "probe.echo")).inWorker;
  // a loaded machine may find the caller's worker computing for a moment: most, not all
  assert.ok(inWorker >= 15, `${inWorker} of 20 answers went through the worker`);
});

Deno.test("an answer after a core.notify goes through the host: the caller reads the notification first", async () => {
  await using w = await warmWorld({ workers: 1 });
  const { got, inWorker } = await nested(w, "probe.progress", { count: 3 });
  assert.equal(inWorker, 0, "the callee sent core.notify before its answer");
  assert.equal(got.notifications.length, 3);
  assert.deepEqual(got.response.result, { steps: 3 });
  // the next call of the same caller, answered at once, takes the short way again
  assert.equal((await nested(w, "probe.echo")).inWorker, 1);
});

Deno.test("an answer given by the worker is booked by the host: a second answer is late and dropped", async () => {
  await using w = await warmWorld({ workers: 1 });
  const { got, inWorker } = await nested(w, "probe.twice");
  assert.equal(inWorker, 1);
  assert.equal(got.response.result, "first");
  const late = () =>
    w.host.journal.query({ plugin: "probe", grep: "dropped a response with the late" });
  await eventually(() => late().length === 1);
  // a response with another ID is no answer: the one after it is, and the worker gives that one
  const wrong = await nested(w, "probe.wrong_id");
  assert.equal(wrong.inWorker, 1);
  assert.equal(wrong.got.response.result, "right");
});

Deno.test("callees on their caller's worker answer each call of a fan-out and a tree with its own ID", async () => {
  await using w = await warmWorld({ workers: 1 });
  const before = w.host.pool.answersInWorker;
  const fan = (await w.call("probe.fan_out", { method: "probe.echo", count: 5 })) as Record<
    string,
    { id: number; result: { i: number } }
  >;
  for (let i = 1; i <= 5; i++) assert.deepEqual(fan[String(i)].result, { i });
  const tree = await w.call("probe.tree", { fan: 2, depth: 3 });
  assert.deepEqual(tree, { leaves: 8, failed: 0, error: null });
  // 19 nested calls; while they link, the worker may count as computing, and a callee then goes to
  // another worker and answers through the host: each way gives every caller its own answer
  const inWorker = w.host.pool.answersInWorker - before;
  assert.ok(inWorker > 0 && inWorker <= 5 + 14, `${inWorker} of 19 answers through the worker`);
  await eventually(() => w.host.processes.list().length === 0);
});

Deno.test("a caller that stopped gets no answer from its worker, and nothing is left running", async () => {
  await using w = await warmWorld({ workers: 1 });
  await eventually(() => w.host.processes.list().length === 0);
  const before = w.host.pool.answersInWorker;
  const outer = w.client.request("probe.call", { method: "probe.sleep", params: { ms: 300 } });
  await eventually(() => w.host.processes.list().some((p) => p.method === "sleep"));
  const caller = w.host.processes.list().find((p) => p.method === "call")!;
  // EOF: probe.call hears it, answers its own caller with what it saw, and ends; its callee too
  w.host.processes.stop(caller, "the test stops it");
  const response = await outer;
  assert.deepEqual((response.result as Nested).response, { eof: true });
  await eventually(() => w.host.processes.list().length === 0);
  assert.equal(w.host.pool.answersInWorker - before, 0);
});
