import assert from "node:assert/strict";
import { makeStyle } from "./format.ts";
import { formatGraph } from "./graph.ts";

const GRAPH = {
  plugins: {
    www: {
      version: "7c0e11aa99",
      discovery: "ok",
      imports: {
        notes: {
          status: "broken",
          methods: ["add"],
          problems: ["add: the param text became required"],
        },
        secrets: { status: "missing", methods: ["get"], problems: [] },
      },
    },
    notes: {
      version: "91ab02cd77",
      discovery: "ok",
      imports: { cargo: { status: "ok", methods: ["build"], problems: [] } },
    },
    cargo: { version: null, discovery: "ok", imports: {} },
    odd: { version: null, discovery: "unavailable: the file is not a component", imports: {} },
  },
  counts: { ok: 1, broken: 1, missing: 1 },
};

Deno.test("graph: plugins in order, their imports under them, a summary", () => {
  assert.equal(
    formatGraph(GRAPH),
    [
      "  cargo  built in",
      "  notes  91ab02cd",
      "    └─ cargo    ok           build",
      "  odd    unavailable: the file is not a component",
      "  www    7c0e11aa",
      "    ├─ notes    broken       add",
      "    │    add: the param text became required",
      "    └─ secrets  missing      get",
      "         there is no plugin secrets",
      "  4 plugins, 3 imports: 1 broken, 1 missing, 1 ok",
    ].join("\n"),
  );
});

Deno.test("graph: broken and missing imports are red, ok ones are not", () => {
  const text = formatGraph(GRAPH, makeStyle(true));
  const red = "\x1b[31m";
  const line = (word: string) => text.split("\n").find((l) => l.includes(word)) ?? "";
  assert.ok(line("broken").includes(red));
  assert.ok(line("missing").includes(red));
  assert.ok(line("became required").includes(red));
  assert.ok(!line("build").includes(red));
});

Deno.test("graph: an empty or unreadable graph says so", () => {
  assert.match(formatGraph({}), /no plugins yet/);
});
