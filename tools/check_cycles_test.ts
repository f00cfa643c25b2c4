import assert from "node:assert/strict";
import { cycles, folderGraph, projectGraph, ROOTS } from "./check_cycles.ts";

const graphOf = (edges: Record<string, string[]>) =>
  new Map(Object.entries(edges).map(([from, tos]) => [from, new Set(tos)]));

Deno.test("cycles are found between files, also long ones and a file that imports itself", () => {
  const graph = graphOf({
    "a.ts": ["b.ts"],
    "b.ts": ["c.ts"],
    "c.ts": ["a.ts", "d.ts"],
    "d.ts": [],
    "e.ts": ["e.ts"],
    "f.ts": ["d.ts"],
  });
  assert.deepEqual(cycles(graph), [["a.ts", "b.ts", "c.ts"], ["e.ts"]]);
  assert.deepEqual(cycles(graphOf({ "a.ts": ["b.ts"], "b.ts": [] })), []);
});

Deno.test("a deep chain does not overflow the stack", () => {
  const edges: Record<string, string[]> = {};
  for (let i = 0; i < 100_000; i++) edges[`m${i}.ts`] = [`m${i + 1}.ts`];
  edges["m100000.ts"] = ["m0.ts"];
  assert.equal(cycles(graphOf(edges))[0].length, 100_001);
});

Deno.test("folders import each other when any of their files do", () => {
  const folders = folderGraph(graphOf({
    "core/host.ts": ["cargo/build.ts", "core/world.ts"],
    "cargo/build.ts": ["core/world.ts"],
    "main.ts": ["core/host.ts"],
  }));
  assert.deepEqual(cycles(folders), [["cargo", "core"]]);
  assert.deepEqual([...folders.get(".")!], ["core"]);
});

Deno.test("the project's graph is read from deno info, from every entry point", async () => {
  const root = new URL("../", import.meta.url).pathname;
  const graph = await projectGraph(root, ROOTS);
  assert.ok(graph.get("main.ts")?.has("cli/cli.ts"));
  assert.ok(graph.has("runtime/worker.ts"));
  assert.ok([...graph.keys()].every((f) => !f.startsWith("file:")));
});
