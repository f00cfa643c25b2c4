/**
 * What `core.activate` says beside the documents (PROTOCOL 10.3): the
 * methods a new version removes, and a file that looks like another plugin
 * (its title, or none of the current methods), which needs `force`.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { sha256Hex } from "../core/components/cache.ts";
import { testPlugin } from "./setup.ts";
import { startWorld, type TestWorld } from "./world.ts";

async function stage(w: TestWorld, crate: string): Promise<string> {
  const path = `/state/builds/${crate}.wasm`;
  await Deno.mkdir(join(w.root, "state", "builds"), { recursive: true });
  await Deno.copyFile(await testPlugin(crate), join(w.root, path));
  return path;
}

const notesHash = async (w: TestWorld) =>
  await sha256Hex(await Deno.readFile(join(w.root, "plugins", "notes", "plugin.wasm")));

interface Report {
  removed?: Record<string, string[]>;
  warnings?: string[];
}

Deno.test("a version that removes a method says so in the answer and the journal, also when no consumer used it", async () => {
  await using w = await startWorld({ plugins: { notes: "notes_v1" } });
  // notes_v3 drops list (and changes add): nobody imports notes here, so no check refuses it
  const r = await w.request("core.activate", { plugin: "notes", wasm: await stage(w, "notes_v3") });
  assert.equal(r.error, undefined, r.error?.message);
  const result = r.result as Record<string, unknown> & { $report: Report };
  assert.deepEqual(result.$report, { removed: { notes: ["notes.list"] } });
  assert.equal((result.notes as { info: { version: string } }).info.version, "3");
  assert.equal(
    w.host.journal.query({ grep: "^activated notes: .*; it removes notes\\.list$" }).length,
    1,
  );

  // a version that removes nothing: the documents alone, as before
  const back = await w.request("core.activate", {
    plugin: "notes",
    wasm: await stage(w, "notes_v2"),
  });
  assert.equal(back.error, undefined, back.error?.message);
  assert.deepEqual(Object.keys(back.result as object), ["notes"]);
});

Deno.test("another plugin's file under this name is refused with -32003 and what to do; force activates it with warnings", async () => {
  await using w = await startWorld({ plugins: { notes: "notes_v1", probe: "probe" } });
  const before = await notesHash(w);
  const wasm = await stage(w, "probe");
  const r = await w.request("core.activate", { plugin: "notes", wasm });
  assert.equal(r.error?.code, -32003);
  const message = r.error!.message;
  assert.match(message, /^notes was not activated\./);
  assert.match(
    message,
    /calls itself "probe" in its rpc\.discover document \(info\.title\), another plugin of this world/,
  );
  assert.match(message, /none of the methods of the current one \(notes\.add, notes\.list\)/);
  const kinds = (r.error!.data as { problems: { kind: string }[] }).problems.map((p) => p.kind);
  assert.deepEqual(kinds, ["title", "replaced"]);
  assert.equal(await notesHash(w), before, "nothing changed");
  assert.equal(
    w.host.journal.query({ grep: "^activation rejected: notes was not activated" }).length,
    1,
  );

  const forced = await w.request("core.activate", { plugin: "notes", wasm, force: true });
  assert.equal(forced.error, undefined, forced.error?.message);
  const report = (forced.result as { $report: Report }).$report;
  assert.deepEqual(report.removed, { notes: ["notes.add", "notes.list"] });
  assert.equal(report.warnings?.length, 2);
  assert.notEqual(await notesHash(w), before);
  assert.equal(w.host.journal.query({ plugin: "notes", grep: "^warning: forced: " }).length, 2);

  // a revert goes back to this plugin's own version: no identity check, the removals told
  const reverted = await w.request("core.revert", { plugin: "notes" });
  assert.equal(reverted.error, undefined, reverted.error?.message);
  assert.equal(await notesHash(w), before);
  assert.equal((reverted.result as { $report?: Report }).$report?.warnings, undefined);
});
