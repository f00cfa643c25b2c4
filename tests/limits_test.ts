/**
 * Limits on processes, call depth and notifications in flight (PROTOCOL
 * 3.10): a hostile plugin hits them, gets the named error, and the host and
 * other plugins carry on. The limits on what a running process holds
 * (memory, unread stdin, `/self` and `/run`) are in `resource_limits_test.ts`.
 */
import assert from "node:assert/strict";
import { parseLimits } from "../core/limits.ts";
import { eventually, startWorld, type TestWorld } from "./world.ts";

/** What `probe.tree` answers. */
type TreeResult = {
  leaves: number;
  failed: number;
  error: { code: number; message: string; data: { limit: string; value: number; raise: string } };
};

const PLUGINS = { probe: "probe", other: "probe" };

/** Another plugin answers within 2 s, and no process is left. */
async function hostCarriesOn(w: TestWorld): Promise<void> {
  const started = performance.now();
  assert.deepEqual(await w.call("other.echo", { ok: true }), { ok: true });
  assert.ok(performance.now() - started < 2000, "another plugin answered within 2 s");
  await eventually(() => w.host.processes.list().length === 0 && w.host.processes.live === 0);
}

Deno.test("a self-calling fan-out stops at the limit of processes per call tree", async () => {
  await using w = await startWorld({ plugins: PLUGINS });
  const result = await w.call("probe.tree", { fan: 2, depth: 12 }) as TreeResult;
  assert.ok(result.failed > 0);
  assert.equal(result.error.code, -32000);
  assert.equal(result.error.data.limit, "processes_per_tree");
  assert.equal(result.error.data.value, 256);
  assert.match(result.error.data.raise, /config\/limits\.yaml/);
  assert.match(result.error.message, /processes_per_tree \(256 live processes in this call tree\)/);
  await hostCarriesOn(w);
  assert.ok(
    w.host.journal.query({ grep: "^limit: .*processes_per_tree", limit: 10_000 }).length >= 1,
  );
});

Deno.test("the world-wide limit of processes refuses a start; a detached call starts a new tree", async () => {
  await using w = await startWorld({
    plugins: PLUGINS,
    files: { "config/limits.yaml": "processes: 20\nprocesses_per_tree: 5\n" },
  });
  // the tree's own limit comes first
  const tree = await w.call("probe.tree", { fan: 2, depth: 6 }) as TreeResult;
  assert.equal(tree.error.data.limit, "processes_per_tree");
  // a detached call is a tree of its own: three processes above it do not count in it
  const chain = (inner: Record<string, unknown>) => ({
    method: "probe.call",
    params: { method: "probe.call", params: { method: "core.call", params: inner } },
  });
  const tree3 = { method: "probe.tree", params: { fan: 1, depth: 2 } };
  const detached = JSON.stringify(await w.call("probe.call", chain({ ...tree3, detach: true })));
  assert.match(detached, /"failed":0,"leaves":1/);
  const attached = JSON.stringify(await w.call("probe.call", chain(tree3)));
  assert.match(attached, /"limit":"processes_per_tree"/);
  const wide = await Promise.all(
    Array.from({ length: 25 }, () => w.request("probe.sleep", { ms: 300 })),
  );
  const refused = wide.filter((r) => r.error);
  assert.ok(refused.length >= 5, `${refused.length} of 25 refused`);
  for (const r of refused) {
    assert.equal((r.error!.data as TreeResult["error"]["data"]).limit, "processes");
  }
  await hostCarriesOn(w);
});

Deno.test("nested calls stop at the depth limit with the named error", async () => {
  await using w = await startWorld({ plugins: PLUGINS });
  const result = await w.call("probe.tree", { fan: 1, depth: 40 }) as TreeResult;
  assert.equal(result.leaves, 0);
  assert.equal(result.failed, 1);
  assert.equal(result.error.data.limit, "call_depth");
  assert.equal(result.error.data.value, 32);
  // depth 32 is allowed: 31 calls below the first process
  const deep = await w.call("probe.tree", { fan: 1, depth: 31 }) as TreeResult;
  assert.deepEqual([deep.leaves, deep.failed], [1, 0]);
  await hostCarriesOn(w);
  assert.ok(w.host.journal.query({ grep: "^limit: .*call_depth", limit: 10_000 }).length >= 1);
});

Deno.test("a raised limit in config/limits.yaml takes effect", async () => {
  await using w = await startWorld({
    plugins: PLUGINS,
    files: { "config/limits.yaml": "# deeper\ncall_depth: 40\n" },
  });
  assert.equal(w.host.processes.limits.call_depth, 40);
  const deep = await w.call("probe.tree", { fan: 1, depth: 39 }) as TreeResult;
  assert.deepEqual([deep.leaves, deep.failed], [1, 0]);
  const deeper = await w.call("probe.tree", { fan: 1, depth: 40 }) as TreeResult;
  assert.equal(deeper.error.data.limit, "call_depth");
  assert.equal(deeper.error.data.value, 40);
  await hostCarriesOn(w);
});

Deno.test("a flood of notifications from a client and from a plugin is dropped, not queued", async () => {
  await using w = await startWorld({ plugins: PLUGINS });
  const rss = Deno.memoryUsage().rss;
  for (let i = 0; i < 20_000; i++) w.client.notify("probe.sleep", { ms: 200 });
  // a plugin's flood counts against the plugin, not against the console
  const flood = { method: "probe.sleep", params: { ms: 1000 }, count: 20_000 };
  assert.equal(await w.call("probe.notify_flood", flood), "sent");
  assert.ok(w.host.processes.live <= 1 + 2 * 100, `${w.host.processes.live} live`);
  await hostCarriesOn(w);
  // queued, 40,000 notifications held about 5 GB; the bound leaves room for a busy machine's GC
  const grown = (Deno.memoryUsage().rss - rss) / 2 ** 20;
  assert.ok(grown < 1024, `RSS grew by ${grown.toFixed(0)} MiB`);
  const notes = w.host.journal.query({
    grep: "^(console: )?limit: .*notifications_per_sender",
    limit: 10_000,
  });
  assert.ok(notes.length >= 1 && notes.length < 20, `${notes.length} journal notes`);
});

Deno.test("limits.yaml: unknown keys and bad values are reported, the defaults apply", () => {
  const { limits, problems } = parseLimits("processes: 0\ncall_deep: 3\nprocesses_per_tree: 9\n");
  assert.equal(limits.processes, 1000);
  assert.equal(limits.processes_per_tree, 9);
  assert.equal(problems.length, 2);
  assert.match(problems[0], /processes must be a positive integer/);
  assert.match(problems[1], /unknown limit "call_deep"/);
  assert.equal(parseLimits("- a\n").problems.length, 1);
  assert.equal(parseLimits(null).limits.call_depth, 32);
});
