import assert from "node:assert/strict";
import { testPlugin } from "../../tests/setup.ts";
import { debugFlagReadOnce, lazyTasks, strictStrings, transpileComponent } from "./transpile.ts";

Deno.test("the glue of a real component decodes the strings a plugin passes strictly", async () => {
  const bytes = await Deno.readFile(await testPlugin("probe"));
  const { js } = await transpileComponent(bytes, "probe");
  assert.match(js, /const utf8Decoder = new TextDecoder\("utf-8", \{ fatal: true \}\);/);
  assert.doesNotMatch(js, /new TextDecoder\(\);/);
});

Deno.test("the glue of a real component reads JCO_DEBUG once, not at each WASI call", async () => {
  const bytes = await Deno.readFile(await testPlugin("probe"));
  const { js } = await transpileComponent(bytes, "probe");
  assert.ok(js.includes("_debugLog("), "the glue logs for debugging");
  assert.match(js, /const _debugLog = globalThis\?\.process\?\.env\?\.JCO_DEBUG\n/);
  assert.equal(js.match(/JCO_DEBUG/g)?.length, 1);
});

Deno.test("the glue of a real component builds a call's task when it is asked for", async () => {
  const bytes = await Deno.readFile(await testPlugin("probe"));
  const { js } = await transpileComponent(bytes, "probe");
  assert.ok(js.includes("function startCurrentTask("), "the glue starts a task per call");
  assert.doesNotMatch(js, /const newTask = new AsyncTask/);
  assert.match(js, /get task\(\) \{\n\s+return newTask \?\?= new AsyncTask\(/);
});

Deno.test("lazyTasks: the task is built once, at its first use, with the call's fields", () => {
  const glue = `let made = 0;
class AsyncTask { constructor(o) { made++; this.o = o; } }
function start(nextId, componentIdx, isAsync, entryFnName) {
    const newTask = new AsyncTask({ id: nextId, componentIdx, isAsync, entryFnName });
    const newTaskMeta = { id: nextId, componentIdx, task: newTask };
  return newTaskMeta;
}
return { start, made: () => made };`;
  const lazy = lazyTasks(glue);
  assert.notEqual(lazy, glue);
  const { start, made } = new Function(lazy)();
  const meta = start(7, 0, false, "run");
  assert.equal(made(), 0);
  assert.deepEqual([meta.id, meta.componentIdx], [7, 0]);
  const task = meta.task;
  assert.deepEqual(task.o, { id: 7, componentIdx: 0, isAsync: false, entryFnName: "run" });
  assert.equal(meta.task, task);
  assert.equal(made(), 1);
  assert.equal(lazyTasks("const a = 1;"), "const a = 1;");
});

Deno.test("debugFlagReadOnce changes only the debug log's declaration", () => {
  const glue = "let a;\nconst _debugLog = (...args) => {\n" +
    "  if (!globalThis?.process?.env?.JCO_DEBUG) { return; }\n  console.debug(...args);\n}\nlet b;";
  const once = debugFlagReadOnce(glue);
  assert.ok(once.startsWith("let a;\nconst _debugLog = globalThis?.process?.env?.JCO_DEBUG\n"));
  assert.ok(once.endsWith(": () => {};\nlet b;"));
  // the same behaviour, the variable read once when the glue loads: with it and without
  const declaration = once.slice("let a;\n".length, -"\nlet b;".length);
  const logOf = (env: Record<string, string>) => {
    const printed: unknown[][] = [];
    const console = { debug: (...args: unknown[]) => printed.push(args) };
    const log = new Function("globalThis", "console", `${declaration}; return _debugLog;`)(
      { process: { env } },
      console,
    );
    log("[x]", { n: 1 });
    return printed;
  };
  assert.deepEqual(logOf({}), []);
  assert.deepEqual(logOf({ JCO_DEBUG: "1" }), [["[x]", { n: 1 }]]);
  assert.equal(debugFlagReadOnce("const a = 1;"), "const a = 1;");
});

Deno.test("strictStrings changes only the decoder of strings", () => {
  const glue = "const a = 1;\nconst utf8Decoder = new TextDecoder();\nconst b = 2;";
  assert.equal(
    strictStrings(glue),
    'const a = 1;\nconst utf8Decoder = new TextDecoder("utf-8", { fatal: true });\nconst b = 2;',
  );
});

Deno.test("strictStrings refuses a glue whose decoder it does not know", () => {
  assert.throws(
    () => strictStrings("const decoder = new TextDecoder();"),
    /does not declare its decoder/,
  );
  assert.equal(strictStrings("const a = 1;"), "const a = 1;");
});

Deno.test("the cache's fingerprint names the jco-transpile that deno.json imports", async () => {
  const { TRANSPILER_FINGERPRINT } = await import("./format.ts");
  const config = JSON.parse(await Deno.readTextFile(new URL("../../deno.json", import.meta.url)));
  const version = /@([^@]+)$/.exec(config.imports["@bytecodealliance/jco-transpile"])?.[1];
  assert.ok(TRANSPILER_FINGERPRINT.includes(`jco-transpile@${version} `), TRANSPILER_FINGERPRINT);
});
