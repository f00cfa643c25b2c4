import assert from "node:assert/strict";
import { isPluginName, pluginNameProblem, pluginOfPid, splitMethod } from "./names.ts";

Deno.test("plugin names: a-z, 0-9, - and _; core is reserved", () => {
  for (const ok of ["notes", "a-b_c", "x1", "0"]) assert.ok(isPluginName(ok), ok);
  for (const bad of ["", "core", "Notes", "a.b", "a/b", "é", "a b", "x".repeat(65), ".."]) {
    assert.ok(!isPluginName(bad), bad);
    assert.ok(pluginNameProblem(bad));
  }
});

Deno.test("method names split at the first dot", () => {
  assert.deepEqual(splitMethod("notes.add"), { target: "notes", method: "add" });
  assert.deepEqual(splitMethod("notes.rpc.discover"), { target: "notes", method: "rpc.discover" });
  assert.equal(splitMethod("notes"), null);
  assert.equal(splitMethod(".add"), null);
  assert.equal(splitMethod("notes."), null);
});

Deno.test("the plugin of a process ID", () => {
  assert.equal(pluginOfPid("my-notes-0197f3a2-7c1e-7d2b-9a41-5f0c2e8b1d34"), "my-notes");
  assert.equal(pluginOfPid("notes"), null);
});
