import assert from "node:assert/strict";
import { compareVersions, methodLabels } from "./identity.ts";
import type { OpenRpcDocument } from "./compat.ts";

const doc = (title: string | undefined, methods: string[], endpoints = {}): OpenRpcDocument => ({
  openrpc: "1.2.6",
  ...(title === undefined ? {} : { info: { title, version: "1" } }),
  methods: methods.map((name) => ({ name, params: [] })),
  "x-sausage-endpoints": endpoints,
});

Deno.test("methodLabels lists the main methods, then each endpoint's", () => {
  const www = doc("www", ["start"], {
    control: { methods: [{ name: "stats" }, { name: "stop" }] },
  });
  assert.deepEqual(methodLabels("www", www), [
    "www.start",
    "www.control.stats",
    "www.control.stop",
  ]);
});

Deno.test("a new version that keeps its title and some methods: only what it removes", () => {
  const change = compareVersions(
    "notes",
    doc("notes", ["add"]),
    doc("notes", ["add", "list"]),
    new Set(["www"]),
  );
  assert.deepEqual(change, { removed: ["notes.list"], problems: [] });
  // a new plugin removes nothing
  assert.deepEqual(compareVersions("notes", doc("notes", ["add"]), undefined, new Set()), {
    removed: [],
    problems: [],
  });
});

Deno.test("a title of another plugin of the world, or another name, asks for force", () => {
  const other = compareVersions(
    "notes",
    doc("www", ["add"]),
    doc("notes", ["add"]),
    new Set(["www"]),
  );
  assert.deepEqual(other.problems.map((p) => p.kind), ["title"]);
  assert.match(other.problems[0].text, /calls itself "www" .*another plugin of this world/);
  assert.match(other.problems[0].text, /force/);
  const renamed = compareVersions("notes", doc("my-notes", ["add"]), undefined, new Set(["www"]));
  assert.deepEqual(renamed.problems.map((p) => p.kind), ["title"]);
  assert.doesNotMatch(renamed.problems[0].text, /another plugin of this world/);
  // no title: nothing to compare
  assert.deepEqual(
    compareVersions("notes", doc(undefined, ["add"]), undefined, new Set()).problems,
    [],
  );
});

Deno.test("a version with none of the current methods is another plugin under this name", () => {
  // the SDK titles a document with the name it runs under, so only the methods tell
  const change = compareVersions(
    "notes",
    doc("notes", ["start"], { control: { methods: [{ name: "stats" }] } }),
    doc("notes", ["add", "list"]),
    new Set(["www"]),
  );
  assert.deepEqual(change.removed, ["notes.add", "notes.list"]);
  assert.deepEqual(change.problems.map((p) => p.kind), ["replaced"]);
  assert.match(
    change.problems[0].text,
    /none of the methods of the current one \(notes\.add, notes\.list\), only notes\.start, notes\.control\.stats/,
  );
  // a current version without methods has nothing to keep
  assert.deepEqual(
    compareVersions("notes", doc("notes", ["add"]), doc("notes", []), new Set()).problems,
    [],
  );
});
