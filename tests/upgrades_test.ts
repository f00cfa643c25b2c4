/**
 * Upgrades (PROTOCOL 3.7): a new version takes new calls at once; old
 * processes finish within their grace period; services come back on the new
 * version; rpc.retired tells the new version what it replaces.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { testPlugin } from "./setup.ts";
import { eventually, startWorld, type TestWorld } from "./world.ts";

/** The probe with a custom section named `tag`: same code, another version (hash). */
async function probeVariant(tag: string): Promise<Uint8Array> {
  const bytes = await Deno.readFile(await testPlugin("probe"));
  const name = new TextEncoder().encode(tag);
  const payload = [name.length, ...name, 1];
  return new Uint8Array([...bytes, 0, payload.length, ...payload]);
}

async function install(w: TestWorld, bytes: Uint8Array): Promise<void> {
  const path = join(w.root, "plugins", "probe", "plugin.wasm");
  const tmp = `${path}.tmp`;
  await Deno.writeFile(tmp, bytes);
  await Deno.rename(tmp, path); // a copy by hand, done atomically
}

const grace1 = JSON.stringify({
  openrpc: "1.2.6",
  info: { title: "probe", version: "1" },
  methods: [],
  "x-sausage-grace": 1,
});

Deno.test("a copy by hand: new calls get the new version, old processes stop after their grace, rpc.retired runs", async () => {
  const tag = crypto.randomUUID();
  await using w = await startWorld({ filesAfterStart: { "state/probe-discover.json": grace1 } });
  await install(w, await probeVariant(`old-${tag}`));
  const old = await w.host.versions.current("probe");
  await w.host.discovery.discover("probe", old);
  assert.equal(w.host.upgrades.graceSeconds(old.hash), 1);

  await w.call("probe.linger", { hook_file: "/old-stopped.txt" });
  await eventually(() => w.host.processes.list().length === 1);
  const [lingering] = w.host.processes.list();
  assert.equal(lingering.version, old.hash);

  await install(w, await probeVariant(`new-${tag}`));
  // the watcher notices the copy without any call
  await eventually(() => w.host.versions.known("probe")?.hash !== old.hash, 5000);
  const fresh = (await w.call("probe.env")) as { vars: Record<string, string> };
  assert.ok(fresh.vars.SAUSAGE_PID);
  const newHash = w.host.versions.known("probe")!.hash;
  assert.ok(w.host.journal.query({ grep: `^start env` }).length === 1);

  // the old process keeps running during its grace period (1 s), then stops
  assert.equal(lingering.state, "running");
  await lingering.ended;
  assert.equal(await Deno.readTextFile(join(w.root, "old-stopped.txt")), "stopped");
  assert.equal(
    w.host.journal.query({ pid: lingering.pid, grep: "grace period of 1 s ended" }).length,
    1,
  );

  // then the new version is told what it replaces
  await eventually(async () => {
    try {
      return JSON.parse(await Deno.readTextFile(join(w.root, "state", "retired.json"))).previous ===
        old.hash;
    } catch {
      return false;
    }
  });
  const retiredOld = `^rpc.retired \\{"previous": "${old.hash.slice(0, 12)}.*"migrated":true`;
  await eventually(() => w.host.journal.query({ grep: retiredOld }).length === 1);
  const upgradedFromOld = `^upgrade probe: ${old.hash.slice(0, 12)} → ${newHash.slice(0, 12)}$`;
  assert.equal(w.host.journal.query({ grep: upgradedFromOld }).length, 1);
  assert.notEqual(newHash, old.hash);
});

Deno.test("a service comes back on the new version when its old process has ended", async () => {
  const tag = crypto.randomUUID();
  await using w = await startWorld({
    // a version of its own, whose document (with a grace of 1 s) no other test shares
    wasm: { probe: await probeVariant(`svc-old-${tag}`) },
    files: {
      "config/boot.yaml": "- method: probe.linger\n  params: {}\n",
      "state/probe-discover.json": grace1,
    },
  });
  await w.host.servicesStarted;
  const [service] = w.host.processes.list();
  assert.ok(service && service.detached);
  const before = service.version;
  await install(w, await probeVariant(`svc-${tag}`));
  await service.ended;
  await eventually(() =>
    w.host.processes.list().some((p) => p.method === "linger" && p.version !== before)
  );
  const [again] = w.host.processes.list();
  assert.equal(again.detached, true);
  assert.notEqual(again.pid, service.pid);
  assert.equal(w.host.journal.query({ grep: "starting again after the upgrade" }).length, 1);
});

Deno.test("two upgrades in one grace period: the service comes back once, on the newest version; each old version is retired once", async () => {
  const tag = crypto.randomUUID();
  await using w = await startWorld({
    wasm: { probe: await probeVariant(`twice-a-${tag}`) },
    files: {
      "config/boot.yaml": "- method: probe.linger\n  params: {}\n",
      "state/probe-discover.json": grace1.replace('"x-sausage-grace":1', '"x-sausage-grace":2'),
    },
  });
  await w.host.servicesStarted;
  const [service] = w.host.processes.list();
  const a = service.version;
  await install(w, await probeVariant(`twice-b-${tag}`));
  await eventually(() => w.host.journal.query({ grep: "^upgrade probe" }).length === 1, 5000);
  const b = w.host.versions.known("probe")!.hash;
  await install(w, await probeVariant(`twice-c-${tag}`));
  await eventually(() => w.host.journal.query({ grep: "^upgrade probe" }).length === 2, 5000);
  const c = w.host.versions.known("probe")!.hash;
  assert.equal(service.state, "running", "the old service is still in its grace period");
  await service.ended;
  await eventually(() => w.host.journal.query({ grep: "^rpc.retired" }).length === 2);
  const retired = w.host.journal.query({ grep: "^rpc.retired" }).map((e) =>
    e.line.match(/"previous": "([0-9a-f]{12})/)![1]
  ).sort();
  assert.deepEqual(retired, [a, b].map((h) => h.slice(0, 12)).sort());
  await eventually(() => w.host.processes.list().some((p) => p.method === "linger"));
  // give a second restart the time it would need to show itself
  await new Promise((r) => setTimeout(r, 500));
  const lingering = w.host.processes.list().filter((p) => p.method === "linger");
  assert.deepEqual(lingering.map((p) => p.version), [c]);
  assert.equal(w.host.journal.query({ grep: "starting again after the upgrade" }).length, 1);
  assert.equal(w.host.journal.query({ grep: "^rpc.retired" }).length, 2);
});

Deno.test("back to the old version within its grace period: its processes stay, and it is not retired", async () => {
  const tag = crypto.randomUUID();
  const first = await probeVariant(`back-a-${tag}`);
  await using w = await startWorld({
    wasm: { probe: first },
    files: { "state/probe-discover.json": grace1 },
  });
  await w.host.discovery.discover("probe", await w.host.versions.current("probe"));
  await w.call("probe.linger", { hook_file: "/back-stopped.txt" });
  const [lingering] = w.host.processes.list();
  await install(w, await probeVariant(`back-b-${tag}`));
  await eventually(() => w.host.journal.query({ grep: "^upgrade probe" }).length === 1, 5000);
  const b = w.host.versions.known("probe")!.hash;
  await install(w, first);
  await eventually(() => w.host.journal.query({ grep: "^upgrade probe" }).length === 2, 5000);
  assert.equal(w.host.versions.known("probe")!.hash, lingering.version);
  // past the grace period of 1 s, the process of the current version runs on
  await new Promise((r) => setTimeout(r, 2000));
  assert.equal(lingering.state, "running");
  const retired = w.host.journal.query({ grep: "^rpc.retired" }).map((e) => e.line);
  assert.equal(retired.length, 1, retired.join("\n"));
  assert.match(retired[0], new RegExp(`"previous": "${b.slice(0, 12)}`));
});

Deno.test("after a revert, the version's new processes are awaited too before it is retired again", async () => {
  const tag = crypto.randomUUID();
  const first = await probeVariant(`again-a-${tag}`);
  await using w = await startWorld({
    wasm: { probe: first },
    files: { "state/probe-discover.json": grace1 },
  });
  const a = await w.host.versions.current("probe");
  await w.host.discovery.discover("probe", a);
  await w.call("probe.linger", { hook_file: "/again-stopped.txt" });
  const [early] = w.host.processes.list();
  await install(w, await probeVariant(`again-b-${tag}`));
  await eventually(() => w.host.journal.query({ grep: "^upgrade probe" }).length === 1, 5000);
  await install(w, first); // back to a: `early` stays
  await eventually(() => w.host.journal.query({ grep: "^upgrade probe" }).length === 2, 5000);
  // a new process of a, busy for longer than the grace period
  const late = w.call("probe.sleep", { ms: 2500 });
  await eventually(() => w.host.processes.list().length === 2);
  const sleeper = w.host.processes.list().find((p) => p.pid !== early.pid)!;
  await install(w, await probeVariant(`again-c-${tag}`));
  await eventually(() => w.host.journal.query({ grep: "^upgrade probe" }).length === 3, 5000);
  await early.ended;
  assert.deepEqual(await late, { slept: 2500 });
  await sleeper.ended;
  const retiredA = `^rpc.retired \\{"previous": "${a.hash.slice(0, 12)}`;
  await eventually(() => w.host.journal.query({ grep: retiredA }).length === 1);
  // told only once the last process of a ended: the sleeper, after the early one
  const [retired] = w.host.journal.query({ grep: retiredA });
  const [sleeperEnd] = w.host.journal.query({ pid: sleeper.pid, grep: "^exit status" });
  assert.ok(retired.id > sleeperEnd.id, `${retired.line} came before ${sleeperEnd.line}`);
  assert.equal(w.host.journal.query({ grep: retiredA }).length, 1);
});

Deno.test("a long call finishes on the old version during the grace period", async () => {
  const tag = crypto.randomUUID();
  await using w = await startWorld({
    files: {
      "state/probe-discover.json": grace1.replace('"x-sausage-grace":1', '"x-sausage-grace":30'),
    },
  });
  await install(w, await probeVariant(`long-${tag}`));
  await w.host.discovery.discover("probe", await w.host.versions.current("probe"));
  const long = w.call("probe.sleep", { ms: 1500 });
  await eventually(() => w.host.processes.list().length === 1);
  await install(w, await probeVariant(`long2-${tag}`));
  await eventually(() => w.host.journal.query({ grep: "^upgrade probe" }).length === 1);
  assert.deepEqual(await long, { slept: 1500 });
});

Deno.test("a version that declares no grace period gets 60 s", async () => {
  await using w = await startWorld();
  const probe = await w.host.versions.current("probe");
  const found = await w.host.discovery.discover("probe", probe);
  assert.ok(found.ok);
  assert.equal(found.document["x-sausage-grace"], undefined);
  assert.equal(w.host.upgrades.graceSeconds(probe.hash), 60);
});
