/**
 * Discovery (PROTOCOL 10.1): a process of its own per version, stopped after
 * the answer; documents kept by hash; a plugin that does not answer in 10 s
 * is "unavailable".
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { sha256Hex } from "../core/components/cache.ts";
import { Host } from "../core/host.ts";
import { initWorld } from "../core/init.ts";
import { eventually, installPlugin, startWorld } from "./world.ts";

Deno.test("at start the core discovers each plugin and shows the document at /proc/core/plugins/<name>/discover.json", async () => {
  await using w = await startWorld();
  const r =
    (await w.call("probe.read_file", { path: "/proc/core/plugins/probe/discover.json" })) as {
      text: string;
    };
  const document = JSON.parse(r.text);
  assert.equal(document.openrpc, "1.2.6");
  assert.equal(document.methods[0].name, "echo");
  // the discovery process was stopped after its answer
  await eventually(() => w.host.processes.list().length === 0);
});

Deno.test("a document is kept by the file's hash, across host starts: a new host reads <cache>/discover/<hash>.json and does not ask", async () => {
  const root = await Deno.makeTempDir({ prefix: "sausage-world-" });
  const cacheDir = await Deno.makeTempDir({ prefix: "sausage-cache-" });
  const documentNamed = (title: string) =>
    JSON.stringify({ openrpc: "1.2.6", info: { title, version: "1" }, methods: [] });
  const start = () => Host.start({ world: root, cacheDir, services: false, installAgent: false });
  /** The document the host shows, as a plugin reads it. */
  const shown = async (host: Host) => {
    const r = await host.client("console").request("probe.read_file", {
      path: "/proc/core/plugins/probe/discover.json",
    });
    return JSON.parse((r.result as { text: string }).text).info.title;
  };
  const asked = (host: Host) => host.journal.query({ grep: "^start rpc\\.discover" }).length;
  try {
    await initWorld(root);
    await installPlugin(root, "probe", "probe");
    // the probe answers rpc.discover with this file when it is there
    await Deno.writeTextFile(join(root, "state", "probe-discover.json"), documentNamed("first"));
    const hash = await sha256Hex(
      await Deno.readFile(join(root, "plugins", "probe", "plugin.wasm")),
    );
    const cached = join(cacheDir, "discover", `${hash}.json`);

    // the first host asks the plugin, once, and keeps the answer in the cache folder
    const first = await start();
    try {
      await first.discovered;
      assert.equal(asked(first), 1);
      assert.equal(await shown(first), "first");
      assert.equal(JSON.parse(await Deno.readTextFile(cached)).info.title, "first");
      // asking again in the same host: from memory
      await first.discovery.discover("probe", await first.versions.current("probe"));
      assert.equal(asked(first), 1, "asked once");
    } finally {
      await first.shutdown();
    }

    // the plugin would now answer "second"; the cache file says "from the cache"
    await Deno.writeTextFile(join(root, "state", "probe-discover.json"), documentNamed("second"));
    await Deno.writeTextFile(cached, documentNamed("from the cache"));
    const second = await start();
    try {
      await second.discovered;
      assert.equal(await shown(second), "from the cache");
      assert.equal(asked(second), 1, "no discovery process in the second host");
    } finally {
      await second.shutdown();
    }

    // without the cache file, the next host asks the plugin again
    await Deno.remove(cached);
    const third = await start();
    try {
      await third.discovered;
      assert.equal(await shown(third), "second");
      assert.equal(asked(third), 2);
      assert.equal(JSON.parse(await Deno.readTextFile(cached)).info.title, "second");
    } finally {
      await third.shutdown();
    }
  } finally {
    await Deno.remove(root, { recursive: true });
    await Deno.remove(cacheDir, { recursive: true });
  }
});

Deno.test("a plugin that does not answer rpc.discover within 10 s is unavailable; its process is killed", async () => {
  const custom = JSON.stringify({
    openrpc: "1.2.6",
    info: { title: "p", version: "9" },
    methods: [],
  });
  await using w = await startWorld({
    filesAfterStart: { "state/probe-discover-hangs": "", "state/probe-discover.json": custom },
  });
  // a new version (another hash) is asked afresh: append a custom section to the file
  const wasm = join(w.root, "plugins", "probe", "plugin.wasm");
  const bytes = await Deno.readFile(wasm);
  const section = new Uint8Array([0, 6, 4, 0x68, 0x61, 0x6e, 0x67, 0x7a]); // custom section "hang" + 1 byte
  await Deno.writeFile(wasm, new Uint8Array([...bytes, ...section]));
  const started = performance.now();
  const outcome = await w.host.discovery.discover("probe", await w.host.versions.current("probe"));
  assert.ok(performance.now() - started >= 9900);
  assert.deepEqual(outcome, { ok: false, reason: "no rpc.discover answer within 10 s" });
  await eventually(() => w.host.processes.list().length === 0);
});

Deno.test("an answer that is not a document, or an error, makes the plugin unavailable with the reason", async () => {
  await using w = await startWorld({
    filesAfterStart: { "state/probe-discover.json": '{"methods": 3}' },
  });
  const wasm = join(w.root, "plugins", "probe", "plugin.wasm");
  const bytes = await Deno.readFile(wasm);
  await Deno.writeFile(wasm, new Uint8Array([...bytes, 0, 5, 4, 0x62, 0x61, 0x64, 0x21]));
  const outcome = await w.host.discovery.discover("probe", await w.host.versions.current("probe"));
  assert.deepEqual(outcome, {
    ok: false,
    reason: 'its rpc.discover result has no "openrpc" version',
  });
});
