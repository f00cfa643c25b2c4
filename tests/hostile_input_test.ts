/**
 * Input built to hold the host's thread or overflow its stack (issue 11):
 * `core.log`'s `grep` runs in linear time and its answer is bounded, and a
 * message nested thousands deep is refused before anything recursive sees
 * it. After each, another plugin answers and no bystander died.
 */
import assert from "node:assert/strict";
import { MAX_JSON_DEPTH } from "../runtime/json_depth.ts";
import { startWorld, type TestWorld } from "./world.ts";

const BOOT = { "config/boot.yaml": "- method: probe.linger\n  params: {}\n" };

/** A world with a boot service and a bystander that waits, both on `probe`, and `other`. */
async function hostileWorld(): Promise<TestWorld & { bystanders: () => string[] }> {
  const w = await startWorld({ plugins: { probe: "probe", other: "probe" }, files: BOOT });
  await w.host.servicesStarted;
  w.request("probe.never", {}); // answered only by the host's shutdown
  const deadline = performance.now() + 5000;
  while (w.host.processes.list().length < 2 && performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, 10));
  }
  const pids = w.host.processes.list().map((p) => p.pid);
  assert.equal(pids.length, 2);
  return Object.assign(w, { bystanders: () => pids });
}

/** Another plugin answers within 2 s, and the boot service and the bystander still run. */
async function assertHostUp(w: TestWorld, bystanders: string[]): Promise<void> {
  const answer = await Promise.race([
    w.call("other.echo", { still: "here" }),
    new Promise((r) => setTimeout(() => r("no answer within 2 s"), 2000)),
  ]);
  assert.deepEqual(answer, { still: "here" });
  for (const pid of bystanders) assert.equal(w.host.processes.get(pid)?.state, "running", pid);
}

function nested(depth: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = i % 2 ? { v } : [v];
  return v;
}

Deno.test("core.log: a grep that backtracks forever in JavaScript answers at once, and others are answered meanwhile", async () => {
  await using w = await hostileWorld();
  for (let i = 0; i < 1000; i++) w.host.journal.event(null, null, `${"a".repeat(40)}!`);
  const start = performance.now();
  const [log, echo] = await Promise.all([
    w.call("core.log", { grep: "^(a+)+$", limit: 10 }),
    w.call("other.echo", { x: 1 }),
  ]);
  assert.ok(performance.now() - start < 2000);
  assert.deepEqual(log, { entries: [] });
  assert.deepEqual(echo, { x: 1 });
  await assertHostUp(w, w.bystanders());
});

Deno.test("core.log: a grep with a construct linear time cannot match gets -32602 that names it", async () => {
  await using w = await startWorld();
  for (const [grep, named] of [["(a)\\1", /backreference/], ["x(?=y)", /lookahead/]] as const) {
    const r = await w.request("core.log", { grep });
    assert.equal(r.error?.code, -32602);
    assert.match(r.error!.message, named);
  }
  const r = await w.request("core.log", { grep: "(" });
  assert.equal(r.error?.code, -32602);
  assert.match(r.error!.message, /not a valid regular expression/);
});

Deno.test("core.log: an answer over 4 MiB is cut to the most recent entries, with `cut` saying where to go on", async () => {
  await using w = await startWorld();
  const long = "y".repeat(16_000);
  for (let i = 0; i < 300; i++) w.host.journal.event(null, null, `${i} ${long}`);
  const answer = await w.call("core.log", { grep: "^\\d+ y", limit: 1000 }) as {
    entries: { id: string; line: string }[];
    cut?: { reason: string; until: string };
  };
  assert.ok(answer.entries.length > 200 && answer.entries.length < 300, `${answer.entries.length}`);
  assert.equal(answer.entries.at(-1)!.line.split(" ")[0], "299");
  assert.deepEqual(answer.cut, { reason: "size", until: answer.entries[0].id });
  const rest = await w.call("core.log", { grep: "^\\d+ y", limit: 1000, until: answer.cut!.until });
  const older = (rest as { entries: unknown[] }).entries.length;
  assert.equal(older + answer.entries.length, 300);
  assert.deepEqual(await w.call("core.log", { limit: 1 }).then((r) => Object.keys(r as object)), [
    "entries",
  ]);
});

Deno.test("a plugin's stdout line nested 4,000 deep is discarded like noise, and its worker lives", async () => {
  await using w = await hostileWorld();
  const deep = JSON.stringify({
    jsonrpc: "2.0",
    id: 9,
    method: "other.echo",
    params: { x: nested(4000) },
  });
  const after = JSON.stringify({ jsonrpc: "2.0", id: 10, method: "other.echo", params: { ok: 1 } });
  const { answer } = await w.call("probe.raw", { line: `${deep}\n${after}` }) as {
    answer: { id: number; result: unknown };
  };
  assert.deepEqual(answer, { jsonrpc: "2.0", id: 10, result: { ok: 1 } });
  assert.ok(w.host.journal.query({ grep: "discarded" }).length >= 1);
  await assertHostUp(w, w.bystanders());
});

Deno.test(`a message from a client nested deeper than ${MAX_JSON_DEPTH} gets -32600; a shallower one goes through`, async () => {
  await using w = await hostileWorld();
  const r = await w.request("probe.echo", { x: nested(4000) });
  assert.equal(r.error?.code, -32600);
  assert.match(r.error!.message, new RegExp(`deeper than ${MAX_JSON_DEPTH}`));
  const core = await w.request("core.log", { x: nested(4000) });
  assert.equal(core.error?.code, -32600);
  // the message is level 1 and params level 2; serde_json reads up to 128
  const fits = await w.call("other.echo", { x: nested(100) });
  assert.deepEqual(fits, { x: nested(100) });
  await assertHostUp(w, w.bystanders());
});
