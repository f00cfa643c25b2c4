/**
 * The agent the host ships (PROTOCOL sections 2 and 3.8): `sausage init`
 * installs it, each start keeps it at the host's version unless the world's
 * agent was changed, installs survive a crash, `token_env` reaches the
 * agent alone, and `plugins/agent/dist/` is fresh and discoverable.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { sha256Hex } from "../core/components/cache.ts";
import { Host } from "../core/host.ts";
import {
  AGENT_CRATE,
  AGENT_DIST,
  agentRecordPath,
  agentSourceHash,
  readAgentManifest,
  readAgentSource,
  type ShippedAgent,
  shippedAgent,
  sourceHash,
} from "../core/shipped_agent.ts";
import { World } from "../core/world.ts";
import { initWorld } from "../core/init.ts";
import { sdkFiles, sdkVersion } from "../core/cargo/sdk.ts";
import { findWasmToolchain } from "../core/cargo/toolchain.ts";
import { buildAgent } from "../plugins/agent/build.ts";
import { testPlugin } from "./setup.ts";
import { eventually, startWorld, TEST_CACHE_DIR } from "./world.ts";

type Vars = { vars: Record<string, string> };

/** A world made by `sausage init` (with the agent); removed at the end. */
async function initedWorld(): Promise<{ root: string; world: World } & AsyncDisposable> {
  const root = await Deno.makeTempDir({ prefix: "sausage-agent-" });
  await initWorld(root, { installAgent: true });
  return {
    root,
    world: new World(root),
    async [Symbol.asyncDispose]() {
      await Deno.remove(root, { recursive: true }).catch(() => {});
    },
  };
}

const start = (root: string) =>
  Host.start({ world: root, cacheDir: TEST_CACHE_DIR, services: false });

async function hashOf(path: string): Promise<string> {
  return await sha256Hex(await Deno.readFile(path));
}

async function assertShipped(root: string, shipped: ShippedAgent, what = "") {
  assert.equal(await hashOf(join(root, "plugins", "agent", "plugin.wasm")), shipped.wasmHash, what);
  const source = await readAgentSource(join(root, "plugins", "agent", "source"));
  assert.deepEqual([...source.keys()].sort(), [...shipped.source.keys()].sort(), what);
  assert.equal(sourceHash(source), shipped.sourceHash, what);
}

async function record(root: string): Promise<{ wasm: string | null; source: string | null }> {
  return JSON.parse(await Deno.readTextFile(agentRecordPath(new World(root))));
}

const CHANGED = "^the world's agent was changed";

Deno.test("sausage init installs the agent's component and source, records them, and a second init finds them current", async () => {
  const shipped = await shippedAgent();
  await using w = await initedWorld();
  await assertShipped(w.root, shipped);
  assert.deepEqual(await record(w.root), { wasm: shipped.wasmHash, source: shipped.sourceHash });
  assert.deepEqual(await w.world.plugins(), ["agent"]);
  const again = await initWorld(w.root, { installAgent: true });
  assert.deepEqual(again.created, []);
  assert.deepEqual(again.notes, []);
  // without the option, a world gets no agent (the tests' worlds)
  const bare = await Deno.makeTempDir();
  try {
    const report = await initWorld(bare);
    assert.ok(!report.created.some((p) => p.includes("(the agent")));
    assert.deepEqual(await new World(bare).plugins(), []);
  } finally {
    await Deno.remove(bare, { recursive: true });
  }
});

Deno.test("a start installs the agent again where it is gone, and into a world made without it", async () => {
  const shipped = await shippedAgent();
  await using w = await initedWorld();
  await Deno.remove(join(w.root, "plugins", "agent"), { recursive: true });
  const host = await start(w.root);
  try {
    await assertShipped(w.root, shipped);
    assert.equal(
      host.journal.query({ grep: "^installed the host's agent: plugins/agent/plugin.wasm" }).length,
      1,
    );
  } finally {
    await host.shutdown();
  }
  const bare = await Deno.makeTempDir();
  try {
    await initWorld(bare); // as a world made before the host shipped the agent
    const other = await start(bare);
    await other.shutdown();
    await assertShipped(bare, shipped);
  } finally {
    await Deno.remove(bare, { recursive: true });
  }
});

Deno.test("a start replaces an older version the host installed: component, prev, source files", async () => {
  const shipped = await shippedAgent();
  await using w = await initedWorld();
  const dir = join(w.root, "plugins", "agent");
  // an older host installed the probe and a source with one more file
  const older = await Deno.readFile(await testPlugin("probe"));
  await Deno.writeFile(join(dir, "plugin.wasm"), older);
  await Deno.writeTextFile(join(dir, "source", "src", "old.rs"), "// gone in the new version\n");
  await Deno.writeTextFile(join(dir, "source", "Cargo.toml"), '[package]\nname = "agent"\n');
  await Deno.mkdir(join(dir, "source", "imports"));
  await Deno.writeTextFile(join(dir, "source", "imports", "notes.json"), "{}\n");
  const oldSource = sourceHash(await readAgentSource(join(dir, "source")));
  await Deno.writeTextFile(
    agentRecordPath(w.world),
    JSON.stringify({ wasm: await sha256Hex(older), source: oldSource }),
  );
  const host = await start(w.root);
  try {
    await assertShipped(w.root, shipped);
    assert.equal(await hashOf(join(dir, "plugin.prev.wasm")), await sha256Hex(older));
    await assert.rejects(Deno.stat(join(dir, "source", "src", "old.rs")));
    // what is not Cargo.toml, Cargo.lock or src/ is not the host's
    assert.equal(await Deno.readTextFile(join(dir, "source", "imports", "notes.json")), "{}\n");
    assert.deepEqual(await record(w.root), { wasm: shipped.wasmHash, source: shipped.sourceHash });
    assert.equal(host.journal.query({ grep: CHANGED }).length, 0);
    await host.discovered;
    assert.equal(host.discovery.known(shipped.wasmHash)?.ok, true);
  } finally {
    await host.shutdown();
  }
});

Deno.test("an install into a running world is an upgrade: the watcher sees the new version", async () => {
  const shipped = await shippedAgent();
  await using w = await startWorld({ plugins: { probe: "probe", agent: "probe" } });
  assert.deepEqual(await w.call("agent.echo", { n: 1 }), { n: 1 });
  const older = await hashOf(join(w.root, "plugins", "agent", "plugin.wasm"));
  await Deno.writeTextFile(agentRecordPath(new World(w.root)), JSON.stringify({ wasm: older }));
  const report = await initWorld(w.root, { installAgent: true });
  assert.ok(
    report.created.some((p) => p.endsWith("plugin.wasm (the agent)")),
    report.created.join(),
  );
  await eventually(() => w.host.versions.known("agent")?.hash === shipped.wasmHash, 10_000);
  await eventually(() => w.host.discovery.known(shipped.wasmHash)?.ok === true, 20_000);
  assert.equal(await hashOf(join(w.root, "plugins", "agent", "plugin.prev.wasm")), older);
  // the new version answers calls
  const r = await w.request("agent.rpc.discover");
  assert.equal(r.error, undefined, JSON.stringify(r.error));
});

Deno.test("a start leaves an activated, hand-copied or edited agent alone and says why; removing it brings the host's back", async () => {
  const shipped = await shippedAgent();
  await using w = await initedWorld();
  const dir = join(w.root, "plugins", "agent");
  const probe = await Deno.readFile(await testPlugin("probe"));
  await Deno.writeFile(join(w.root, "state", "mine.wasm"), probe);
  let host = await start(w.root);
  try {
    const r = await host.client("console").request("core.activate", {
      plugin: "agent",
      wasm: "/state/mine.wasm",
      force: true, // the probe is not an agent: it calls itself probe, with none of its methods
    });
    assert.equal(r.error, undefined, JSON.stringify(r.error));
  } finally {
    await host.shutdown();
  }
  host = await start(w.root);
  try {
    assert.equal(await hashOf(join(dir, "plugin.wasm")), await sha256Hex(probe));
    const lines = host.journal.query({ grep: CHANGED });
    assert.equal(lines.length, 1);
    assert.match(lines[0].line, /plugins\/agent\/plugin\.wasm is not what the host installed/);
    assert.match(lines[0].line, /remove plugins\/agent\/plugin\.wasm and restart the host/);
  } finally {
    await host.shutdown();
  }

  // a copy by hand of another file, and an edit of the source
  const other = await Deno.readFile(await testPlugin("notes_v1"));
  await Deno.writeFile(join(dir, "plugin.wasm"), other);
  const main = join(dir, "source", "src", "main.rs");
  const edited = (await Deno.readTextFile(main)) + "\n// mine\n";
  await Deno.writeTextFile(main, edited);
  const report = await initWorld(w.root, { installAgent: true });
  assert.deepEqual(report.kept.filter((p) => p.includes("plugins/agent")).length, 2);
  assert.match(report.notes[0], /plugin\.wasm and plugins\/agent\/source\/ are not what the host/);
  host = await start(w.root);
  try {
    assert.equal(await hashOf(join(dir, "plugin.wasm")), await sha256Hex(other));
    assert.equal(await Deno.readTextFile(main), edited);
    assert.equal(host.journal.query({ grep: CHANGED }).length, 2);
  } finally {
    await host.shutdown();
  }

  await Deno.remove(join(dir, "plugin.wasm"));
  await Deno.remove(join(dir, "source"), { recursive: true });
  host = await start(w.root);
  try {
    await assertShipped(w.root, shipped, "removed and restarted");
  } finally {
    await host.shutdown();
  }
});

Deno.test("an interrupted install is harmless: the leftovers are removed and the next start completes it", async () => {
  const shipped = await shippedAgent();
  await using w = await initedWorld();
  const dir = join(w.root, "plugins", "agent");
  // the host died after writing half of a new plugin.wasm and of a source file
  const older = await Deno.readFile(await testPlugin("probe"));
  await Deno.writeFile(join(dir, "plugin.wasm"), older);
  await Deno.writeTextFile(
    agentRecordPath(w.world),
    JSON.stringify({ wasm: await sha256Hex(older) }),
  );
  const leftovers = [
    join(dir, ".sausage-agent-1b2c.tmp"),
    join(dir, "source", "src", ".sausage-agent-3d4e.tmp"),
    join(w.root, "state", "core", ".sausage-agent-5f6a.tmp"),
  ];
  for (const path of leftovers) await Deno.writeFile(path, shipped.wasm.subarray(0, 1000));
  const host = await start(w.root);
  try {
    for (const path of leftovers) await assert.rejects(Deno.stat(path), path);
    await assertShipped(w.root, shipped);
    await host.discovered;
    assert.equal(host.discovery.known(shipped.wasmHash)?.ok, true);
    assert.equal(host.journal.query({ grep: CHANGED }).length, 0);
    assert.deepEqual(await host.world.plugins(), ["agent"]);
  } finally {
    await host.shutdown();
  }
});

Deno.test("token_env: the host's variable reaches the agent's processes, and no other plugin's", async () => {
  const name = "SAUSAGE_TEST_AGENT_KEY";
  Deno.env.set(name, "k-123");
  Deno.env.set("SAUSAGE_TEST_OTHER_KEY", "k-456");
  try {
    await using w = await startWorld({
      plugins: { probe: "probe", agent: "probe" },
      files: { "config/agent.yaml": `api: openai-chat-completions\ntoken_env: ${name}\n` },
    });
    const agent = (await w.call("agent.env")) as Vars;
    assert.equal(agent.vars[name], "k-123");
    assert.equal(agent.vars.SAUSAGE_PLUGIN, "agent");
    const probe = (await w.call("probe.env")) as Vars;
    assert.equal(probe.vars[name], undefined);
    // a call from another plugin starts a process of the agent: it has it too
    const nested = (await w.call("probe.call", { method: "agent.env", params: {} })) as {
      response: { result: Vars };
    };
    assert.equal(nested.response.result.vars[name], "k-123");

    const yaml = join(w.root, "config", "agent.yaml");
    await Deno.writeTextFile(yaml, "token_env: SAUSAGE_TEST_OTHER_KEY\n");
    const other = (await w.call("agent.env")) as Vars;
    assert.equal(other.vars[name], undefined);
    assert.equal(other.vars.SAUSAGE_TEST_OTHER_KEY, "k-456");
    // a yaml that does not parse, or a name the host sets itself, gives nothing
    await Deno.writeTextFile(yaml, "token_env: [unclosed\n");
    assert.equal(((await w.call("agent.env")) as Vars).vars.SAUSAGE_TEST_OTHER_KEY, undefined);
    await Deno.writeTextFile(yaml, "token_env: SAUSAGE_PARENT\n");
    assert.equal(((await w.call("agent.env")) as Vars).vars.SAUSAGE_PARENT, "console");
  } finally {
    Deno.env.delete(name);
    Deno.env.delete("SAUSAGE_TEST_OTHER_KEY");
  }
});

Deno.test("plugins/agent/dist/ is fresh: agent.json matches the source, the SDK and agent.wasm", async () => {
  const manifest = await readAgentManifest();
  const source = agentSourceHash(await readAgentSource(AGENT_CRATE), sdkVersion(await sdkFiles()));
  assert.equal(
    source,
    manifest.source,
    "plugins/agent/dist/ was built from another source or SDK: run `deno task build:agent` " +
      "and commit plugins/agent/dist/",
  );
  assert.equal(
    await hashOf(join(AGENT_DIST, "agent.wasm")),
    manifest.wasm,
    "plugins/agent/dist/agent.wasm is not the file agent.json names: run `deno task build:agent`",
  );
});

Deno.test("the shipped agent is a component the host discovers", async () => {
  const shipped = await shippedAgent();
  await using w = await startWorld({ installAgent: true });
  const found = w.host.discovery.known(shipped.wasmHash);
  assert.ok(found?.ok, found && !found.ok ? found.reason : "not discovered");
  const r =
    (await w.call("probe.read_file", { path: "/proc/core/plugins/agent/discover.json" })) as {
      text: string;
    };
  const document = JSON.parse(r.text);
  assert.equal(typeof document.openrpc, "string");
  assert.ok(document.methods.some((m: { name: string }) => m.name === "chat"));
});

/** Where the check below builds a copy: inside the ignored target folder, kept warm between runs. */
const REPRO = join(AGENT_CRATE, "target", "reproducibility");
const toolchain = await findWasmToolchain().then(() => true, () => false);

Deno.test({
  name: "the build is reproducible: a copy of the source built in another folder gives agent.wasm",
  ignore: !toolchain,
  async fn() {
    const files = await readAgentSource(AGENT_CRATE);
    const manifest = await readAgentManifest();
    if (agentSourceHash(files, sdkVersion(await sdkFiles())) !== manifest.source) {
      assert.fail("dist/ is not fresh (see the test above): run `deno task build:agent`");
    }
    const crate = join(REPRO, "crate");
    await Deno.remove(join(crate, "src"), { recursive: true }).catch(() => {});
    for (const [path, bytes] of files) {
      await Deno.mkdir(join(crate, path, ".."), { recursive: true });
      await Deno.writeFile(join(crate, path), bytes);
    }
    const built = await buildAgent({
      crate,
      targetDir: join(REPRO, "target"),
      dist: null,
      verbose: false,
    });
    assert.equal(built.manifest.wasm, manifest.wasm, "the same source built to different bytes");
  },
});
