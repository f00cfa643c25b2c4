import assert from "node:assert/strict";
import binaryen from "binaryen";
import {
  bareInterrupts,
  instantiateBare,
  instantiateCore,
  instantiatedModules,
  instantiationCeiling,
  planBare,
} from "./bare_instances.ts";

function compile(wat: string): WebAssembly.Module {
  const mod = binaryen.parseText(wat);
  const bytes = mod.emitBinary();
  mod.dispose();
  return new WebAssembly.Module(bytes as Uint8Array<ArrayBuffer>);
}

/** A main module: its memory and table, and an import of the host. */
const MAIN = compile(`(module
  (import "host" "log" (func $log (param i32)))
  (memory (export "memory") 1)
  (table (export "table") 2 funcref)
  (func (export "go") (call $log (i32.const 1))))`);
/** An adapter that needs the main module's memory and table, and the interrupt imports. */
const ADAPTER = compile(`(module
  (import "env" "memory" (memory 1))
  (import "env" "table" (table 2 funcref))
  (import "sausage:interrupt" "interrupts" (memory 1 1 shared))
  (import "sausage:interrupt" "cell" (global (mut i32)))
  (func (export "answer") (result i32) (global.get 0)))`);

Deno.test("planBare: each module after the memory and table it imports", () => {
  const plan = planBare({ "adapter.wasm": ADAPTER, "main.wasm": MAIN });
  assert.deepEqual(plan.steps.map((s) => s.module), [MAIN, ADAPTER]);
  const from = Object.fromEntries(plan.steps[1].imports.map((i) => [i.name, i.from]));
  assert.deepEqual(from, {
    memory: "memory",
    table: "table",
    interrupts: "interrupts",
    cell: "cell",
  });
  instantiateBare(plan, bareInterrupts());
  assert.ok(instantiateCore({ "adapter.wasm": ADAPTER, "main.wasm": MAIN }) >= 0);
});

Deno.test("planBare: a module whose memory no other module has is named", () => {
  assert.throws(() => planBare({ "adapter.wasm": ADAPTER }), /cannot link adapter\.wasm/);
});

Deno.test("instantiatedModules: the modules the glue instantiates, or all of them", () => {
  const glue = `const module0 = getCoreModule('main.wasm');
const module1 = getCoreModule('adapter.wasm');
const module2 = getCoreModule('fixup.wasm');
  ({ exports: exports1 } = yield instantiateCore(yield module0, {}));
  ({ exports: exports2 } = yield instantiateCore(yield module1, {}));
`;
  const all = { "main.wasm": MAIN, "adapter.wasm": ADAPTER, "fixup.wasm": MAIN };
  assert.deepEqual(Object.keys(instantiatedModules(glue, all)), ["main.wasm", "adapter.wasm"]);
  assert.equal(instantiatedModules("export function instantiate() {}", all), all);
});

Deno.test("instantiationCeiling: a rate per window, summed over its threads", async () => {
  const windows = await instantiationCeiling(
    { "main.wasm": MAIN, "adapter.wasm": ADAPTER },
    { threads: 2, ms: 200, windowMs: 100, warmup: 10 },
  );
  assert.equal(windows.length, 2);
  for (const rate of windows) assert.ok(rate > 0, `a window with no instance: ${windows}`);
});
