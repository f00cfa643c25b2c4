import assert from "node:assert/strict";
import { complete, type CompletionContext } from "./complete.ts";

const A = "probe-0197f3a2-7c1e-7d2b-9a41-5f0c2e8b1d34";
const B = "notes-0197f3a2-8888-7d2b-9a41-5f0c2e8b1d34";
const context: CompletionContext = {
  plugins: ["notes", "probe"],
  pids: [A, B],
  methods: ["core.call", "core.kill", "core.log"],
};

Deno.test("the first word completes to commands, plugins and core methods", () => {
  assert.deepEqual(complete("", context)[0], [
    "core.",
    "help",
    "kill",
    "log",
    "notes.",
    "probe.",
    "ps",
    "quit",
    "stop",
  ]);
  assert.deepEqual(complete("p", context), [["probe.", "ps"], "p"]);
  assert.deepEqual(complete("st", context), [["stop"], "st"]);
  assert.deepEqual(complete("core.", context), [["core.call", "core.kill", "core.log"], "core."]);
  assert.deepEqual(complete("core.k", context), [["core.kill"], "core.k"]);
  assert.deepEqual(complete("x", context), [[], "x"]);
});

Deno.test("stop and kill complete process IDs", () => {
  assert.deepEqual(complete("stop ", context), [[B, A], ""]);
  assert.deepEqual(complete("kill pro", context), [[A], "pro"]);
  assert.deepEqual(complete(`kill ${A} `, context), [[], ""]);
});

Deno.test("log completes plugins and process IDs, not the number after -n", () => {
  assert.deepEqual(complete("log n", context), [["notes", B], "n"]);
  assert.deepEqual(complete("log -n ", context), [[], ""]);
  assert.deepEqual(complete("log -", context), [[], "-"]);
  assert.deepEqual(complete("log -n 5 pr", context), [["probe", A], "pr"]);
});

Deno.test("params and chat text complete to nothing", () => {
  assert.deepEqual(complete('probe.echo {"a', context), [[], '{"a']);
  assert.deepEqual(complete("write a p", context), [[], "p"]);
});
