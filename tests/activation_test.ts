/**
 * Activation, revert and the graph (PROTOCOL 10.3 and 10.4), with versions
 * of `notes` and `agent` that differ in their interfaces
 * (tests/plugins/crates/iface).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { sha256Hex } from "../core/components/cache.ts";
import { Host } from "../core/host.ts";
import { testPlugin } from "./setup.ts";
import { eventually, startWorld, TEST_CACHE_DIR, type TestWorld } from "./world.ts";

async function stage(w: TestWorld, crate: string): Promise<string> {
  const path = `/state/builds/${crate}.wasm`;
  await Deno.mkdir(join(w.root, "state", "builds"), { recursive: true });
  await Deno.copyFile(await testPlugin(crate), join(w.root, path));
  return path;
}

async function hashOf(w: TestWorld, file: string): Promise<string> {
  return await sha256Hex(await Deno.readFile(join(w.root, "plugins", "notes", file)));
}

async function world(): Promise<TestWorld> {
  return await startWorld({ plugins: { probe: "probe", notes: "notes_v1", agent: "agent_v1" } });
}

Deno.test("the graph shows plugins, imports and the result of each check", async () => {
  await using w = await world();
  const graph = JSON.parse(
    ((await w.call("probe.read_file", { path: "/proc/core/graph.json" })) as { text: string }).text,
  );
  assert.equal(graph.plugins.agent.imports.notes.status, "ok");
  assert.deepEqual(graph.plugins.agent.imports.notes.methods, ["add"]);
  assert.match(graph.plugins.probe.discovery, /^ok$/);
  const dot =
    ((await w.call("probe.read_file", { path: "/proc/core/graph.dot" })) as { text: string }).text;
  assert.match(dot, /"agent" -> "notes";/);
});

Deno.test("the graph shows an import of a missing plugin and of an unavailable one, in graph.json and graph.dot", async () => {
  await using w = await startWorld({
    plugins: { probe: "probe", agent: "agent_v1" },
    files: { "plugins/notes/plugin.wasm": "not a component" },
  });
  await eventually(() => w.host.graph.view.plugins.agent?.imports.notes?.status === "unavailable");
  const read = async (path: string) =>
    ((await w.call("probe.read_file", { path })) as { text: string }).text;
  const graph = JSON.parse(await read("/proc/core/graph.json"));
  assert.equal(graph.plugins.agent.imports.notes.status, "unavailable");
  assert.match(graph.plugins.notes.discovery, /^unavailable: /);
  await Deno.remove(join(w.root, "plugins", "notes"), { recursive: true });
  await eventually(
    () => w.host.graph.view.plugins.agent?.imports.notes?.status === "missing",
    10_000,
  );
  const dot = await read("/proc/core/graph.dot");
  assert.match(dot, /"agent" -> "notes"/);
  assert.equal(
    JSON.parse(await read("/proc/core/graph.json")).plugins.agent.imports.notes.status,
    "missing",
  );
});

Deno.test("a breaking version is rejected with -32003, the counterexample, and nothing changes", async () => {
  await using w = await world();
  const before = await hashOf(w, "plugin.wasm");
  const r = await w.request("core.activate", { plugin: "notes", wasm: await stage(w, "notes_v3") });
  assert.equal(r.error?.code, -32003);
  assert.match(r.error!.message, /^notes was not activated: 1 consumer breaks\./);
  assert.match(r.error!.message, /agent imports notes\.add\(text: string\)/);
  assert.match(r.error!.message, /Counterexample: \{"text": ?"milk"\}/);
  assert.ok((r.error!.data as { problems: unknown[] }).problems.length >= 1);
  assert.equal(await hashOf(w, "plugin.wasm"), before);
  await assert.rejects(Deno.stat(join(w.root, "plugins", "notes", "plugin.prev.wasm")));
});

Deno.test("a compatible version is activated: the copy becomes plugin.wasm, the old one plugin.prev.wasm", async () => {
  await using w = await world();
  const v1 = await hashOf(w, "plugin.wasm");
  const r = await w.request("core.activate", { plugin: "notes", wasm: await stage(w, "notes_v2") });
  assert.equal(r.error, undefined, r.error?.message);
  const documents = r.result as Record<string, { info: { version: string } }>;
  assert.equal(documents.notes.info.version, "2");
  assert.equal(await hashOf(w, "plugin.prev.wasm"), v1);
  assert.deepEqual(await w.call("notes.add", { text: "milk" }), { count: 2, total: 2 });
  assert.equal(w.host.journal.query({ grep: "^activated notes" }).length, 1);

  // the same version again changes nothing
  const again = await w.request("core.activate", {
    plugin: "notes",
    wasm: "/state/builds/notes_v2.wasm",
  });
  assert.equal(again.error, undefined);
  assert.equal(await hashOf(w, "plugin.prev.wasm"), v1);

  // revert: the previous version comes back, the current one becomes the previous
  const v2 = await hashOf(w, "plugin.wasm");
  const reverted = await w.request("core.revert", { plugin: "notes" });
  assert.equal(reverted.error, undefined, reverted.error?.message);
  assert.equal(await hashOf(w, "plugin.wasm"), v1);
  assert.equal(await hashOf(w, "plugin.prev.wasm"), v2);
  assert.deepEqual(await w.call("notes.add", { text: "milk" }), { count: 1 });
});

Deno.test("a compatible change of a consumer is activated; a breaking one is refused and names the method", async () => {
  await using w = await world();
  const compatible = await w.request("core.activate", {
    plugin: "agent",
    wasm: await stage(w, "agent_v1b"),
  });
  assert.equal(compatible.error, undefined, compatible.error?.message);
  await eventually(() =>
    JSON.stringify(w.host.graph.view.plugins.agent?.imports.notes?.methods) === '["add","list"]'
  );
  assert.equal(w.host.graph.view.plugins.agent.imports.notes.status, "ok");
  assert.equal(await w.call("agent.chat"), "hello");
  const breaking = await w.request("core.activate", {
    plugin: "agent",
    wasm: await stage(w, "agent_v2"),
  });
  assert.equal(breaking.error?.code, -32003);
  assert.match(breaking.error!.message, /notes\.add/);
  assert.match(breaking.error!.message, /"body"/);
  assert.equal(await w.call("agent.chat"), "hello");
});

Deno.test("two plugins activated together are checked as a set", async () => {
  await using w = await world();
  const r = await w.request("core.activate", {
    plugins: [
      { plugin: "notes", wasm: await stage(w, "notes_v3") },
      { plugin: "agent", wasm: await stage(w, "agent_v2") },
    ],
  });
  assert.equal(r.error, undefined, r.error?.message);
  assert.deepEqual(await w.call("notes.add", { body: "milk" }), { count: 3 });
  await eventually(() => w.host.graph.view.plugins.agent?.imports.notes?.status === "ok");
});

Deno.test("a set whose second file cannot be written changes not at all: the first plugin goes back", async () => {
  await using w = await world();
  const notes = await hashOf(w, "plugin.wasm");
  await Deno.writeTextFile(join(w.root, "plugins", "notes", "plugin.prev.wasm"), "older");
  // a folder where the new plugin's file must go: its rename fails
  await Deno.mkdir(join(w.root, "plugins", "blocked", "plugin.wasm", "inside"), {
    recursive: true,
  });
  const r = await w.request("core.activate", {
    plugins: [
      { plugin: "notes", wasm: await stage(w, "notes_v2") },
      { plugin: "blocked", wasm: await stage(w, "probe") },
    ],
    force: true, // the probe calls itself probe: without force its title refuses it first
  });
  assert.equal(r.error?.code, -32000, JSON.stringify(r.error));
  assert.match(
    r.error!.message,
    /could not write the plugin files: .*notes stays on its old version/,
  );
  assert.equal(await hashOf(w, "plugin.wasm"), notes);
  assert.equal(
    await Deno.readTextFile(join(w.root, "plugins", "notes", "plugin.prev.wasm")),
    "older",
  );
  for (const plugin of ["notes", "blocked"]) {
    for await (const e of Deno.readDir(join(w.root, "plugins", plugin))) {
      assert.ok(!e.name.startsWith(".activating-"), `${plugin}/${e.name} was left`);
    }
  }
  assert.deepEqual(await w.call("notes.add", { text: "milk" }), { count: 1 });
});

Deno.test("one activation at a time: two at once run one after the other", async () => {
  await using w = await world();
  const [v2, v3] = [await stage(w, "notes_v2"), await stage(w, "notes_v3")];
  const hashes = await Promise.all(
    ["notes_v2", "notes_v3"].map(async (c) => sha256Hex(await Deno.readFile(await testPlugin(c)))),
  );
  const [first, second] = await Promise.all([
    w.request("core.activate", { plugin: "notes", wasm: v2 }),
    w.request("core.activate", { plugin: "notes", wasm: v3, force: true }),
  ]);
  assert.equal(first.error, undefined, first.error?.message);
  assert.equal(second.error, undefined, second.error?.message);
  // the second saw the first's result as the current version: v1 → v2, then v2 → v3
  assert.equal(await hashOf(w, "plugin.wasm"), hashes[1]);
  assert.equal(await hashOf(w, "plugin.prev.wasm"), hashes[0]);
  const activated = w.host.journal.query({ grep: "^activated notes" }).map((e) => e.line);
  assert.equal(activated.length, 2);
  assert.match(activated[1], new RegExp(`${hashes[0].slice(0, 12)}.* → ${hashes[1].slice(0, 12)}`));
});

Deno.test("force skips the checks; the graph and the journal then show the broken import", async () => {
  await using w = await world();
  const r = await w.request("core.activate", {
    plugin: "notes",
    wasm: await stage(w, "notes_v3"),
    force: true,
  });
  assert.equal(r.error, undefined);
  await eventually(() => w.host.graph.view.plugins.agent?.imports.notes?.status === "broken");
  assert.equal(w.host.journal.query({ grep: "^broken import: agent imports notes" }).length, 1);
});

Deno.test("a copy by hand skips the checks: the watcher updates the graph and journals the broken import", async () => {
  await using w = await world();
  await Deno.copyFile(
    await testPlugin("notes_v3"),
    join(w.root, "plugins", "notes", "plugin.wasm"),
  );
  await eventually(
    () => w.host.graph.view.plugins.agent?.imports.notes?.status === "broken",
    10_000,
  );
  const graph = JSON.parse(
    ((await w.call("probe.read_file", { path: "/proc/core/graph.json" })) as { text: string }).text,
  );
  assert.match(graph.plugins.agent.imports.notes.problems.join(" "), /"text"/);
  await eventually(() =>
    w.host.journal.query({ grep: "^broken import: agent imports notes" }).length === 1
  );
});

Deno.test("bad activations: not a component, a missing file, bad params, nothing to revert", async () => {
  await using w = await world();
  await Deno.writeTextFile(join(w.root, "state", "junk.wasm"), "not wasm at all");
  const junk = await w.request("core.activate", { plugin: "notes", wasm: "/state/junk.wasm" });
  assert.equal(junk.error?.code, -32003);
  assert.match(junk.error!.message, /not WebAssembly/);
  const missing = await w.request("core.activate", { plugin: "notes", wasm: "/state/none.wasm" });
  assert.equal(missing.error?.code, -32602);
  const relative = await w.request("core.activate", { plugin: "notes", wasm: "state/x.wasm" });
  assert.equal(relative.error?.code, -32602);
  const name = await w.request("core.activate", { plugin: "Bad", wasm: "/state/junk.wasm" });
  assert.equal(name.error?.code, -32602);
  const nothing = await w.request("core.revert", { plugin: "notes" });
  assert.equal(nothing.error?.code, -32602);
  assert.match(nothing.error!.message, /no previous version/);
  // the probe's document calls it probe, another plugin of this world: only with force
  const probe = await stage(w, "probe");
  const titled = await w.request("core.activate", { plugin: "probe2", wasm: probe });
  assert.equal(titled.error?.code, -32003);
  assert.match(titled.error!.message, /calls itself "probe" .*another plugin of this world/);
  const unavailable = await w.request("core.activate", {
    plugin: "probe2",
    wasm: probe,
    force: true,
  });
  // the probe answers rpc.discover: a new plugin can be activated from nothing
  assert.equal(unavailable.error, undefined, unavailable.error?.message);
  assert.match(
    (unavailable.result as { $report: { warnings: string[] } }).$report.warnings[0],
    /calls itself "probe"/,
  );
  assert.ok((await Deno.stat(join(w.root, "plugins", "probe2", "plugin.wasm"))).isFile);
});

Deno.test("a host that died during an activation says at the next start what it found", async () => {
  const w = await world();
  const root = w.root;
  const v1 = await hashOf(w, "plugin.wasm");
  await w.host.shutdown();
  await Deno.writeTextFile(
    join(root, "state", "core", "activation.json"),
    JSON.stringify({
      started: "2026-01-01T00:00:00Z",
      plugins: [{ plugin: "notes", from: v1, to: "f".repeat(64) }],
    }),
  );
  await Deno.writeTextFile(join(root, "plugins", "notes", ".activating-leftover.wasm"), "half");
  const again = await Host.start({ world: root, cacheDir: TEST_CACHE_DIR, services: false });
  try {
    const found = again.journal.query({ grep: "was interrupted: notes is on its old version" });
    assert.equal(found.length, 1);
    await assert.rejects(Deno.stat(join(root, "plugins", "notes", ".activating-leftover.wasm")));
    await assert.rejects(Deno.stat(join(root, "state", "core", "activation.json")));
  } finally {
    await again.shutdown();
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("a host killed (SIGKILL) at random points of activations leaves notes on its old or new version, and says so at the next start", async () => {
  const w = await world();
  const root = w.root;
  const versions = [
    await hashOf(w, "plugin.wasm"),
    await sha256Hex(await Deno.readFile(await testPlugin("notes_v2"))),
  ];
  const wasm = [await stage(w, "notes_v1"), await stage(w, "notes_v2")];
  await w.host.shutdown();
  const main = new URL("../main.ts", import.meta.url).pathname;
  let interrupted = 0;
  try {
    for (let round = 0; round < 6; round++) {
      // the console reads commands from stdin; the host is killed soon after the activation starts
      const child = new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", "--unstable-worker-options", main, root, "--cache-dir", TEST_CACHE_DIR],
        stdin: "piped",
        stdout: "piped",
        stderr: "null",
        env: { NO_COLOR: "1" },
      }).spawn();
      const writer = child.stdin.getWriter();
      // the version it is not on, so that each round writes files
      const on = await sha256Hex(
        await Deno.readFile(join(root, "plugins", "notes", "plugin.wasm")),
      );
      const params = JSON.stringify({
        plugin: "notes",
        wasm: wasm[on === versions[0] ? 1 : 0],
        force: true,
      });
      await writer.write(new TextEncoder().encode(`core.activate ${params}\n`));
      // the console prints the answer: after it, the activation is over
      let answered = false;
      const out = child.stdout.pipeTo(
        new WritableStream({ write: () => void (answered = true) }),
      ).catch(() => {});
      // the record of an activation appears when it writes files: kill then, or a moment later
      const record = join(root, "state", "core", "activation.json");
      const deadline = performance.now() + 20_000;
      while (!answered && performance.now() < deadline) {
        if (await Deno.stat(record).then(() => true, () => false) && Math.random() < 0.5) break;
        await new Promise((r) => setTimeout(r, Math.random() * 4));
      }
      child.kill("SIGKILL");
      await child.status;
      await out;
      await writer.close().catch(() => {});
      const left = await Deno.stat(record).then(() => true, () => false);
      const now = await sha256Hex(
        await Deno.readFile(join(root, "plugins", "notes", "plugin.wasm")),
      );
      assert.ok(versions.includes(now), `round ${round}: plugin.wasm is neither version`);
      const again = await Host.start({ world: root, cacheDir: TEST_CACHE_DIR, services: false });
      try {
        const notes = again.journal.query({
          grep: "was interrupted: notes is on its (old|new) version",
        });
        if (left) {
          interrupted++;
          assert.ok(notes.length >= 1, `round ${round}: the next start said nothing`);
        }
        for await (const e of Deno.readDir(join(root, "plugins", "notes"))) {
          assert.ok(!e.name.startsWith(".activating-"), `round ${round}: ${e.name} was left`);
        }
        // the version it is on runs
        const client = again.client("console");
        const added = await client.request("notes.add", { text: "milk", body: "milk" });
        assert.equal(added.error, undefined, JSON.stringify(added.error));
      } finally {
        await again.shutdown();
      }
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
  // not asserted (timing), but shown: how many kills hit an activation in the middle
  console.log(`${interrupted} of 6 kills came during an activation's writes`);
});

Deno.test("a consumer activated alone: its imports are checked against the providers that run", async () => {
  await using w = await startWorld({ plugins: { probe: "probe", notes: "notes_v1" } });
  const notes = await hashOf(w, "plugin.wasm");

  // agent version 2 imports notes.add(body): notes version 1 takes "text"
  const broken = await w.request("core.activate", {
    plugin: "agent",
    wasm: await stage(w, "agent_v2"),
  });
  assert.equal(broken.error?.code, -32003);
  const message = broken.error!.message;
  assert.match(message, /^agent was not activated: 1 of its imports breaks\./);
  assert.match(message, /agent imports notes\.add/);
  assert.match(message, /"body"/);
  assert.match(message, /Update notes first, or activate both together\./);
  const problems = (broken.error!.data as { problems: { text: string }[] }).problems;
  assert.ok(problems.length >= 1);
  assert.ok(problems.some((p) => /body|text/.test(p.text)), JSON.stringify(problems));
  await assert.rejects(Deno.stat(join(w.root, "plugins", "agent")), "nothing was installed");
  assert.equal(await hashOf(w, "plugin.wasm"), notes, "the provider is unchanged");
  assert.equal(w.host.journal.query({ grep: "^activation rejected: agent was not" }).length, 1);

  // agent version 1 imports notes.add(text), which notes version 1 has
  const ok = await w.request("core.activate", {
    plugin: "agent",
    wasm: await stage(w, "agent_v1"),
  });
  assert.equal(ok.error, undefined, ok.error?.message);
  const documents = ok.result as Record<string, { info: { version: string } }>;
  assert.deepEqual(Object.keys(documents), ["agent"]);
  assert.equal(documents.agent.info.version, "1");
  assert.equal(
    await sha256Hex(await Deno.readFile(join(w.root, "plugins", "agent", "plugin.wasm"))),
    await sha256Hex(await Deno.readFile(await testPlugin("agent_v1"))),
  );
  await assert.rejects(
    Deno.stat(join(w.root, "plugins", "agent", "plugin.prev.wasm")),
    "a new plugin has no previous version",
  );
  assert.equal(await w.call("agent.chat"), "hello");
  await eventually(() => w.host.graph.view.plugins.agent?.imports.notes?.status === "ok");
  assert.equal(await hashOf(w, "plugin.wasm"), notes);

  // and once it runs, the same breaking version is refused as an update of it
  const update = await w.request("core.activate", {
    plugin: "agent",
    wasm: "/state/builds/agent_v2.wasm",
  });
  assert.equal(update.error?.code, -32003);
  assert.match(update.error!.message, /^agent was not activated: 1 of its imports breaks\./);
  assert.equal(
    await sha256Hex(await Deno.readFile(join(w.root, "plugins", "agent", "plugin.wasm"))),
    await sha256Hex(await Deno.readFile(await testPlugin("agent_v1"))),
  );
});
