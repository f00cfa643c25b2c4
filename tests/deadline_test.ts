/**
 * Deadlines (PROTOCOL 3.4): `core.call` with `timeout_ms` bounds a call
 * whatever the callee does. Unanswered by then, the caller gets -32006 from
 * the core and the callee is stopped; an answer in time is untouched, and a
 * late one is dropped. From a client, from a process on the same worker, as
 * a notification, and for a core method. (`sausage call --timeout` against
 * a running host: `control_test.ts`.)
 */
import assert from "node:assert/strict";
import type { Response } from "../core/jsonrpc.ts";
import { eventually, startWorld } from "./world.ts";

type Deadline = { pid: string; timeout_ms: number };

function deadlineOf(response: Response): Deadline {
  assert.equal(response.error?.code, -32006, JSON.stringify(response));
  return response.error!.data as Deadline;
}

Deno.test("a call past its deadline gets -32006 at the deadline, and its process is stopped", async () => {
  await using w = await startWorld();
  const started = performance.now();
  const response = await w.request("core.call", {
    method: "probe.never",
    params: {},
    timeout_ms: 300,
  });
  const ms = performance.now() - started;
  const data = deadlineOf(response);
  assert.equal(data.timeout_ms, 300);
  assert.match(data.pid, /^probe-/);
  assert.match(
    response.error!.message,
    /probe\.never: no answer within the call's deadline of 300 ms/,
  );
  assert.ok(ms >= 290, `answered after ${ms} ms, before the deadline`);
  // probe.never ends at EOF: the stop reaches it, and nothing is left
  await eventually(() => w.host.processes.list().length === 0);
  const lines = w.host.journal.query({ pid: data.pid }).map((e) => e.line);
  assert.ok(
    lines.some((l) => /within its deadline of 300 ms: the caller got -32006/.test(l)),
    lines.join("\n"),
  );
  assert.ok(
    lines.some((l) => l.startsWith("stop: the deadline of its call passed")),
    lines.join("\n"),
  );
  assert.ok(lines.includes("probe: got EOF"), lines.join("\n"));
});

Deno.test("an answer within the deadline is untouched; a detached callee that answered runs on past it", async () => {
  await using w = await startWorld();
  const echo = await w.request("core.call", {
    method: "probe.echo",
    params: { a: 1 },
    timeout_ms: 5000,
  });
  assert.deepEqual(echo.result, { a: 1 });
  const linger = await w.request("core.call", {
    method: "probe.linger",
    params: {},
    detach: true,
    timeout_ms: 200,
  });
  assert.equal(linger.result, "lingering");
  await new Promise((r) => setTimeout(r, 400));
  const [lingering] = w.host.processes.list();
  assert.equal(lingering?.state, "running", "the deadline of an answered call stops nothing");
  await w.call("core.stop", { pid: lingering.pid });
});

Deno.test("from a process on the same worker: -32006 at the deadline, and the callee's late answer is dropped", async () => {
  await using w = await startWorld({ workers: 1, maxWorkers: 1 });
  // probe.sleep blocks for 800 ms, then answers after its deadline of 200 ms
  const r = (await w.call("probe.call", {
    method: "core.call",
    params: { method: "probe.sleep", params: { ms: 800 }, timeout_ms: 200 },
  })) as { response: Response };
  const data = deadlineOf(r.response);
  await eventually(() =>
    w.host.journal.query({ pid: data.pid, grep: "^dropped a response" }).length === 1
  );
  await eventually(() => w.host.processes.list().length === 0);
});

Deno.test("a detached notification with a deadline: its process is stopped when the deadline passes", async () => {
  await using w = await startWorld();
  // detached, so that it does not end with the caller that sent it
  await w.call("probe.notify_plugin", {
    method: "core.call",
    params: { method: "probe.never", params: {}, detach: true, timeout_ms: 300 },
  });
  await eventually(() => w.host.processes.list().some((p) => p.method === "never"));
  await eventually(() => w.host.processes.list().length === 0, 5_000);
  const stops = w.host.journal.query({ plugin: "probe", grep: "^stop: the deadline" });
  assert.equal(stops.length, 1);
});

Deno.test("a core method within a deadline answers; bad timeout_ms values are -32602 with the range", async () => {
  await using w = await startWorld();
  const log = await w.request("core.call", {
    method: "core.log",
    params: { limit: 1 },
    timeout_ms: 5000,
  });
  assert.ok(log.result, JSON.stringify(log));
  for (const bad of [0, -1, 1.5, "100", 2 ** 31, null]) {
    const r = await w.request("core.call", { method: "probe.echo", timeout_ms: bad });
    assert.equal(r.error?.code, -32602, `timeout_ms ${JSON.stringify(bad)}`);
    assert.match(
      r.error!.message,
      /"timeout_ms" must be a whole number of milliseconds from 1 to 2147483647/,
    );
  }
});

Deno.test("core.lock within a deadline: -32006, and the waiter leaves the queue", async () => {
  await using w = await startWorld();
  // the console holds the lock; a second wait for it gives up at its deadline
  assert.deepEqual(await w.call("core.lock", { path: "/state/x.lock" }), { held: true });
  const r = await w.request("core.call", {
    method: "core.lock",
    params: { path: "/state/x.lock" },
    timeout_ms: 200,
  });
  assert.equal(r.error?.code, -32006, JSON.stringify(r));
  assert.match(r.error!.message, /the lock was not taken/);
  assert.deepEqual(w.host.locks.snapshot().map((l) => l.waiting), [[]]);
});
