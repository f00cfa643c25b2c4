import assert from "node:assert/strict";
import { complete, type CompletionContext } from "./complete.ts";

const A = "probe-0197f3a2-7c1e-7d2b-9a41-5f0c2e8b1d34";
const B = "notes-0197f3a2-8888-7d2b-9a41-5f0c2e8b1d34";
/** A small tree of files: folders end with `/`. */
const TREE: Record<string, string[]> = {
  "/": ["config/", "plugins/", "proc/", "run/", "state/"],
  "/plugins/": ["notes/", "probe/"],
  "/plugins/notes/": ["plugin.wasm", "plugin.prev.wasm", ".hidden", "source/"],
  "/state/": ["builds/", "notes.json"],
  "/state/builds/": ["notes.wasm", "agent.wasm", "log.txt"],
};
const context: CompletionContext = {
  plugins: ["notes", "probe"],
  pids: [A, B],
  methods: ["core.call", "core.kill", "core.log"],
  names: (folder) => TREE[folder] ?? [],
  pluginMethods: (plugin) => plugin === "notes" ? ["notes.add", "notes.list", "notes.remove"] : [],
  sessions: ["default", "work"],
};

Deno.test("the first word completes to commands, plugins and core methods", () => {
  assert.deepEqual(complete("", context)[0], [
    "activate",
    "call",
    "cat",
    "clear",
    "core.",
    "graph",
    "help",
    "history",
    "kill",
    "log",
    "ls",
    "methods",
    "notes.",
    "probe.",
    "ps",
    "quit",
    "reset",
    "revert",
    "sessions",
    "stop",
  ]);
  assert.deepEqual(complete("p", context), [["probe.", "ps"], "p"]);
  assert.deepEqual(complete("st", context), [["stop "], "st"]);
  assert.deepEqual(complete("core.", context), [["core.call", "core.kill", "core.log"], "core."]);
  assert.deepEqual(complete("core.k", context), [["core.kill "], "core.k"]);
  assert.deepEqual(complete("x", context), [[], "x"]);
});

Deno.test("a plugin completes to its methods; a unique match gets a space, a plugin its dot", () => {
  assert.deepEqual(complete("no", context), [["notes."], "no"]);
  assert.deepEqual(complete("notes.", context), [
    ["notes.add", "notes.list", "notes.remove"],
    "notes.",
  ]);
  assert.deepEqual(complete("notes.a", context), [["notes.add "], "notes.a"]);
  assert.deepEqual(complete("probe.", context), [[], "probe."]);
});

Deno.test("history and reset complete the agent's sessions", () => {
  assert.deepEqual(complete("history w", context), [["work "], "w"]);
  assert.deepEqual(complete("reset ", context), [["default", "work"], ""]);
  assert.deepEqual(complete("history -n ", context), [[], ""]);
});

Deno.test("stop and kill complete process IDs", () => {
  assert.deepEqual(complete("stop ", context), [[B, A], ""]);
  assert.deepEqual(complete("kill pro", context), [[`${A} `], "pro"]);
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

Deno.test("methods, activate and revert complete plugin names, and --force", () => {
  assert.deepEqual(complete("methods n", context), [["notes "], "n"]);
  assert.deepEqual(complete("methods notes ", context), [[], ""]);
  assert.deepEqual(complete("revert ", context), [["notes", "probe"], ""]);
  assert.deepEqual(complete("revert notes --f", context), [["--force "], "--f"]);
  assert.deepEqual(complete("revert notes ", context), [[], ""]);
  assert.deepEqual(complete("activate p", context), [["probe "], "p"]);
  assert.deepEqual(complete("activate --force p", context), [["probe "], "p"]);
  assert.deepEqual(complete("activate notes -", context), [["--force "], "-"]);
});

Deno.test("ls, cat and the file of activate complete paths", () => {
  assert.deepEqual(complete("ls ", context), [
    ["config/", "plugins/", "proc/", "run/", "state/"],
    "",
  ]);
  assert.deepEqual(complete("ls /pl", context), [["/plugins/"], "/pl"]);
  assert.deepEqual(complete("cat /plugins/notes/p", context), [
    ["/plugins/notes/plugin.prev.wasm", "/plugins/notes/plugin.wasm"],
    "/plugins/notes/p",
  ]);
  assert.deepEqual(complete("cat /plugins/notes/.", context), [
    ["/plugins/notes/.hidden "],
    "/plugins/notes/.",
  ]);
  assert.deepEqual(complete("ls -", context), [["-l "], "-"]);
  assert.deepEqual(complete("ls -l /st", context), [["/state/"], "/st"]);
  assert.deepEqual(complete("cat /nowhere/x", context), [[], "/nowhere/x"]);
  assert.deepEqual(complete("activate notes /state/builds/", context), [
    ["/state/builds/agent.wasm", "/state/builds/notes.wasm"],
    "/state/builds/",
  ]);
  assert.deepEqual(complete("activate notes=/state/b", context), [
    ["notes=/state/builds/"],
    "notes=/state/b",
  ]);
  assert.deepEqual(complete("ls /", { ...context, names: undefined }), [[], "/"]);
});
