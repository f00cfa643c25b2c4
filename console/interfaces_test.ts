/**
 * `methods`, `activate` and `revert` on a running world with versions of
 * `notes` and `agent` that differ in their interfaces
 * (tests/plugins/crates/iface).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { sha256Hex } from "../core/components/cache.ts";
import { testPlugin } from "../tests/setup.ts";
import { eventually, startWorld, type TestWorld } from "../tests/world.ts";
import { commandsOn } from "./_testing.ts";

async function world(): Promise<TestWorld> {
  return await startWorld({ plugins: { probe: "probe", notes: "notes_v1", agent: "agent_v1" } });
}

/** Copies a test plugin into the world's /state/builds/ and returns its path there. */
async function stage(w: TestWorld, crate: string): Promise<string> {
  const path = `/state/builds/${crate}.wasm`;
  await Deno.mkdir(join(w.root, "state", "builds"), { recursive: true });
  await Deno.copyFile(await testPlugin(crate), join(w.root, path));
  return path;
}

/**
 * Gives the probe a new version that answers `rpc.discover` with `document`
 * (written to /state/probe-discover.json): its plugin.wasm gets a custom
 * section named after the document, so each document has a hash of its own.
 */
async function probeAnswering(w: TestWorld, document: string): Promise<void> {
  await Deno.writeTextFile(join(w.root, "state", "probe-discover.json"), document);
  const wasm = join(w.root, "plugins", "probe", "plugin.wasm");
  const tag = (await sha256Hex(new TextEncoder().encode(document))).slice(0, 32);
  const name = new TextEncoder().encode(tag);
  const section = [name.length, ...name];
  const bytes = await Deno.readFile(wasm);
  // written whole, then renamed: the host's file watcher sees only the finished file
  await Deno.writeFile(`${wasm}.new`, new Uint8Array([...bytes, 0, section.length, ...section]));
  await Deno.rename(`${wasm}.new`, wasm);
  await w.host.discovery.discover("probe", await w.host.versions.current("probe"));
  await w.host.graph.update(); // the graph knows the new document's imports
}

Deno.test("methods shows a plugin's methods from its rpc.discover document", async () => {
  await using w = await world();
  const c = commandsOn(w);
  assert.equal(
    await c.output("methods notes"),
    [
      "  notes, version 1",
      "  methods:",
      "    add(text: string) -> Added { count: integer }",
      "      Add a note.",
      "    list() -> string[]",
      "      List the notes.",
    ].join("\n"),
  );
  await eventually(() => w.host.graph.view.plugins.agent?.imports.notes?.status === "ok");
  assert.equal(
    await c.output("methods agent"),
    "  agent, version 1\n  methods:\n    chat() -> string\n  imports:\n    notes: add (ok)",
  );
});

Deno.test("methods of an unknown plugin, of the core, and of a plugin that cannot load", async () => {
  await using w = await startWorld({
    plugins: { probe: "probe" },
    wasm: { junk: new TextEncoder().encode("not wasm") },
  });
  const c = commandsOn(w);
  assert.equal(
    await c.output("methods nope"),
    '  there is no plugin "nope" (no /plugins/nope/plugin.wasm); the plugins are cargo, junk, mcp, probe',
  );
  assert.match(await c.output("methods core"), /^ {2}core is the host, not a plugin: .*core\.call/);
  assert.match(
    await c.output("methods junk"),
    /^ {2}the plugin\.wasm of junk cannot be loaded: .*is not WebAssembly/,
  );
});

Deno.test("methods shows endpoints, the grace period and imports; a failed discovery is said so", async () => {
  await using w = await startWorld({ plugins: { probe: "probe" } });
  const c = commandsOn(w);
  await probeAnswering(
    w,
    JSON.stringify({
      openrpc: "1.2.6",
      info: { title: "probe", version: "7" },
      methods: [{
        name: "serve",
        summary: "Serves.",
        params: [{ name: "port", schema: { type: ["integer", "null"] } }],
        result: { name: "r", schema: { $ref: "#/components/schemas/Served" } },
      }],
      components: {
        schemas: {
          Served: { type: "object", properties: { port: { type: "integer" } }, required: ["port"] },
        },
      },
      "x-sausage-endpoints": {
        control: {
          methods: [{
            name: "stats",
            params: [],
            result: { name: "r", schema: { type: "array", items: { type: "string" } } },
          }],
        },
      },
      "x-sausage-grace": 5,
      "x-sausage-imports": { notes: { methods: [{ name: "add" }] } },
    }),
  );
  assert.equal(
    await c.output("methods probe"),
    [
      "  probe, version 7",
      "  methods:",
      "    serve(port?: integer | null) -> Served { port: integer }",
      "      Serves.",
      "  endpoint control",
      "    stats() -> string[]",
      "  grace period: 5 s (old processes get this long to finish after an upgrade)",
      "  imports:",
      "    notes: add (missing)",
    ].join("\n"),
  );
  await probeAnswering(w, '{"methods": 3}');
  assert.equal(
    await c.output("methods probe"),
    [
      `  the discovery of probe failed: its rpc.discover result has no "openrpc" version`,
      "  its methods are unknown, and the imports of probe and of its consumers cannot be checked " +
      "(log probe shows its journal)",
    ].join("\n"),
  );
});

Deno.test("activate and revert show what changed; a rejection shows its lines", async () => {
  await using w = await world();
  const c = commandsOn(w);
  const v2 = await stage(w, "notes_v2");
  const v3 = await stage(w, "notes_v3");
  const grace = "  new calls get the new version; running processes of the old one finish within " +
    "their grace period";

  assert.equal(
    await c.output(`activate notes ${v3}`),
    [
      "  error -32003: notes was not activated: 1 consumer breaks.",
      "    - agent imports notes.add(text: string) -> Added.",
      '      The new notes.add has no param "text". It requires "body": string.',
      '      Counterexample: {"text": "milk"} is not valid for the new params.',
      "      Update agent first, or activate both together.",
    ].join("\n"),
  );
  assert.equal(
    await c.output(`activate notes ${v2}`),
    `  activated notes (version 2, methods add, list)\n${grace}`,
  );
  assert.deepEqual(await w.call("notes.add", { text: "milk" }), { count: 2, total: 2 });
  assert.equal(
    await c.output(`activate notes ${v2}`),
    "  notes is unchanged: this file is its current version",
  );
  assert.equal(
    await c.output("revert notes"),
    `  reverted notes (version 1, methods add, list)\n${grace}`,
  );
  assert.deepEqual(await w.call("notes.add", { text: "milk" }), { count: 1 });
  assert.match(await c.output("revert probe"), /error -32602: .*probe has no previous version/);
  assert.match(
    await c.output("activate notes /state/none.wasm"),
    /^ {2}error -32602: cannot read \/state\/none\.wasm/,
  );
});

Deno.test("activate takes pairs, checked as a set, and --force skips the checks", async () => {
  await using w = await world();
  const c = commandsOn(w);
  const v3 = await stage(w, "notes_v3");
  const a2 = await stage(w, "agent_v2");
  const together = await c.output(`activate notes=${v3} agent=${a2}`);
  assert.match(
    together,
    /^ {2}activated notes \(version 3, methods add\)\n {2}activated agent \(version 2, methods chat\)\n/,
  );
  assert.deepEqual(await w.call("notes.add", { body: "milk" }), { count: 3 });

  const v1 = await stage(w, "notes_v1");
  const forced = await c.output(`activate notes ${v1} --force`);
  assert.match(forced, /^ {2}activated notes \(version 1, methods add, list\)\n/);
  assert.match(forced, /the checks were skipped \(--force\)/);
  await eventually(() => w.host.graph.view.plugins.agent?.imports.notes?.status === "broken");
  assert.match(await c.output("methods agent"), /notes: add \(broken\)/);
});
