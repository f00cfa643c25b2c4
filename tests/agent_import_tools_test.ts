/**
 * The tools that save a model from copying JSON by hand: `make_import` writes
 * a consumer's `imports/<provider>.json` from the provider's current document
 * (whole, or cut to the methods named), and `copy` copies a file or a folder.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { agentWorld, messagesOf } from "./agent_world.ts";

const CONSUMER = {
  "plugins/dash/source/Cargo.toml": '[package]\nname = "dash"\nversion = "0.1.0"\n',
  "plugins/dash/source/src/main.rs": "fn main() {}\n",
};

Deno.test("make_import: the provider's current document, whole or cut; a clear error otherwise", async () => {
  await using w = await agentWorld({
    files: CONSUMER,
    script: [
      {
        toolCalls: [
          { name: "make_import", arguments: { plugin: "dash", provider: "probe" }, id: "whole" },
          {
            name: "make_import",
            arguments: { plugin: "dash", provider: "probe", methods: ["nope"] },
            id: "unknown",
          },
          { name: "make_import", arguments: { plugin: "dash", provider: "ghost" }, id: "ghost" },
        ],
      },
      {
        toolCalls: [{
          name: "make_import",
          arguments: { plugin: "dash", provider: "probe", methods: ["echo"] },
          id: "cut",
        }],
      },
      { text: "imported" },
    ],
  });
  assert.equal((await w.chat("let dash use probe")).response.result, "imported");
  const results = new Map(
    messagesOf(w.server, 2).filter((m) => m.role === "tool").map((
      m,
    ) => [m.tool_call_id, m.content]),
  );
  assert.match(
    String(results.get("whole")),
    /^wrote \/plugins\/dash\/source\/imports\/probe\.json from \/proc\/core\/plugins\/probe\/discover\.json: the methods echo/,
  );
  assert.match(String(results.get("whole")), /import!\("probe"\)/);
  assert.match(
    String(results.get("unknown")),
    /the provider has no method `nope`: its methods are echo/,
  );
  assert.match(String(results.get("ghost")), /\/proc\/core\/plugins\/ghost\/discover\.json/);
  const current = JSON.parse(
    await Deno.readTextFile(join(w.root, "plugins/dash/source/imports/probe.json")),
  );
  const served = await w.call("probe.read_file", {
    path: "/proc/core/plugins/probe/discover.json",
  }) as { text: string };
  assert.deepEqual(current.methods, JSON.parse(served.text).methods);
  assert.equal(current.info.title, "probe");
});

Deno.test("copy: a file (its folders made; replaced only when asked) and a folder", async () => {
  await using w = await agentWorld({
    files: { ...CONSUMER, "state/notes/a.txt": "A\n", "state/notes/sub/b.txt": "B\n" },
    script: [
      {
        toolCalls: [
          {
            name: "copy",
            arguments: { from: "/state/notes/a.txt", to: "/state/copy/x/a.txt" },
            id: "f",
          },
          {
            name: "copy",
            arguments: { from: "/state/notes/a.txt", to: "/state/copy/x/a.txt" },
            id: "again",
          },
          { name: "copy", arguments: { from: "/state/notes", to: "/state/notes2" }, id: "d" },
        ],
      },
      { text: "copied" },
    ],
  });
  assert.equal((await w.chat("copy")).response.result, "copied");
  const results = new Map(
    messagesOf(w.server, 2).filter((m) => m.role === "tool").map((
      m,
    ) => [m.tool_call_id, m.content]),
  );
  assert.match(
    String(results.get("f")),
    /copied \/state\/notes\/a\.txt \(2 bytes\) to \/state\/copy\/x\/a\.txt/,
  );
  assert.match(String(results.get("again")), /exists already: set replace/);
  assert.match(String(results.get("d")), /copied 2 files/);
  assert.equal(await Deno.readTextFile(join(w.root, "state/copy/x/a.txt")), "A\n");
  assert.equal(await Deno.readTextFile(join(w.root, "state/notes2/sub/b.txt")), "B\n");
});
