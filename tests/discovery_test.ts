/**
 * Discovery (PROTOCOL 10.1): a process of its own per version, stopped after
 * the answer; documents kept by hash; a plugin that does not answer in 10 s
 * is "unavailable".
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { eventually, startWorld } from "./world.ts";

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

Deno.test("a document is kept by the file's hash, across host starts", async () => {
  await using w = await startWorld();
  const version = await w.host.versions.current("probe");
  const first = await w.host.discovery.discover("probe", version);
  assert.ok(first.ok);
  const starts = w.host.journal.query({ grep: "^start rpc.discover" }).length;
  await w.host.discovery.discover("probe", version);
  assert.equal(w.host.journal.query({ grep: "^start rpc.discover" }).length, starts, "asked once");
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
