/**
 * An upgrade of a service while it serves (PROTOCOL 3.7), with two real
 * versions of an SDK plugin (`sdk/test-plugins/counter`): version 2 keeps its
 * count in another format and migrates version 1's in `rpc.retired`.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { eventually, startWorld } from "../tests/world.ts";
import { plugin } from "./build.ts";

interface Hit {
  count: number;
  version: number;
}

Deno.test("a service upgraded while it serves: the old version serves through its grace period, the new one takes over and migrates the state", async () => {
  await using w = await startWorld({
    plugins: {},
    wasm: { counter: await Deno.readFile(await plugin("counter_v1")) },
    files: { "config/boot.yaml": "- method: counter.serve\n" },
  });
  await w.host.servicesStarted;
  const [v1Service] = w.host.processes.list().filter((p) => p.plugin === "counter");
  assert.ok(v1Service, "the service runs");
  for (const count of [1, 2, 3]) {
    assert.deepEqual(await w.call("counter.knock"), { count, version: 1 });
  }

  await Deno.mkdir(join(w.root, "state", "builds"), { recursive: true });
  await Deno.copyFile(await plugin("counter_v2"), join(w.root, "state", "builds", "counter.wasm"));
  const activated = await w.request("core.activate", {
    plugin: "counter",
    wasm: "/state/builds/counter.wasm",
  });
  assert.equal(activated.error, undefined, activated.error?.message);

  // new calls get version 2; the service of version 1 still answers its endpoint
  assert.deepEqual(await w.call("counter.knock"), { count: 4, version: 1 });
  assert.equal(await w.call("counter.count"), 4, "version 2 reads the state not yet migrated");
  assert.equal(v1Service.state, "running");

  // after its grace period (2 s) the old service stops, and comes back on version 2
  await v1Service.ended;
  assert.equal(
    w.host.journal.query({ pid: v1Service.pid, grep: "grace period of 2 s ended" }).length,
    1,
  );
  await eventually(async () => {
    const r = await w.request("counter.knock", {});
    return (r.result as Hit | undefined)?.version === 2;
  }, 10_000);
  const services = w.host.processes.list().filter((p) => p.plugin === "counter" && p.detached);
  assert.equal(services.length, 1);
  assert.notEqual(services[0].version, v1Service.version);

  // rpc.retired moved the count: count.txt is gone, count.json goes on from it
  await eventually(() =>
    w.host.journal.query({ grep: '^rpc.retired .* of counter: "(migrated|nothing)' }).length === 1
  );
  await assert.rejects(Deno.stat(join(w.root, "state", "counter", "count.txt")));
  const stored = JSON.parse(
    await Deno.readTextFile(join(w.root, "state", "counter", "count.json")),
  );
  const next = (await w.call("counter.knock")) as Hit;
  assert.deepEqual(next, { count: stored.count + 1, version: 2 });
  assert.ok(stored.count >= 5, `the count went on from version 1's: ${stored.count}`);
});
