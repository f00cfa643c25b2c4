/**
 * Many processes share a plugin worker and one copy of a plugin's glue; each
 * is still its own instance: a trap, a kill or a stream in one never reaches
 * another.
 */
import assert from "node:assert/strict";
import { eventually, startWorld } from "./world.ts";

Deno.test("on one worker, crashes and kills beside many calls leave every answer intact", async () => {
  await using w = await startWorld({ workers: 1 });
  const echoes = Array.from(
    { length: 40 },
    (_, i) => w.request("probe.echo", { i, text: `call ${i}` }),
  );
  const panics = Array.from({ length: 5 }, () => w.request("probe.panic", {}));
  const spinner = w.request("probe.spin", {});
  const logs = Array.from(
    { length: 5 },
    (_, i) => w.request("probe.log", { lines: 3, text: `log${i}` }),
  );
  await eventually(() => w.host.processes.list().some((p) => p.method === "spin"));
  const spin = w.host.processes.list().find((p) => p.method === "spin")!;
  await w.call("core.kill", { pid: spin.pid });

  const results = await Promise.all(echoes);
  results.forEach((r, i) => assert.deepEqual(r.result, { i, text: `call ${i}` }));
  for (const p of await Promise.all(panics)) assert.equal(p.error?.code, -32002);
  assert.equal((await spinner).error?.code, -32002);
  for (const [i, r] of (await Promise.all(logs)).entries()) {
    assert.deepEqual(r.result, { logged: 3 });
    const pid = w.host.journal.query({ grep: `^log${i} 0$` })[0].pid!;
    // each process's stderr is its own: three lines, in order, none of another's
    assert.deepEqual(
      w.host.journal.query({ pid }).filter((e) => e.stream === "stderr").map((e) => e.line),
      [`log${i} 0`, `log${i} 1`, `log${i} 2`],
    );
  }
  assert.deepEqual(await w.call("probe.echo", { after: true }), { after: true });
});

Deno.test("a process never sees the memory of one that ran before it on the same worker", async () => {
  await using w = await startWorld({ workers: 1 });
  const marker = `secret-${crypto.randomUUID()}`;
  type Seen = {
    start_pages: number;
    found: boolean;
    peeked: number | null;
    grew_from: number;
    pages: number;
    written_at: number;
  };
  const first = await w.call("probe.memory", { marker, grow: 4 }) as Seen;
  assert.equal(first.found, false);
  assert.equal(first.pages, first.start_pages + 4);
  for (let i = 0; i < 3; i++) {
    // the same sizes a fresh memory has, none of the marker, and zeros (or a trap) past its size
    const next = await w.request("probe.memory", { marker, peek: first.written_at });
    if (next.error) {
      assert.equal(next.error.code, -32002, JSON.stringify(next.error));
      continue;
    }
    const seen = next.result as Seen;
    assert.equal(seen.start_pages, first.start_pages);
    assert.equal(seen.grew_from, first.start_pages);
    assert.equal(seen.found, false);
    assert.equal(seen.peeked, 0);
  }
  // and one that traps gives its memory to no one
  const trapped = await w.request("probe.memory", { marker, grow: 1, peek: 2 ** 32 - 1 });
  assert.equal(trapped.error?.code, -32002);
  const after = await w.call("probe.memory", { marker }) as Seen;
  assert.equal(after.start_pages, first.start_pages);
  assert.equal(after.found, false);
});
