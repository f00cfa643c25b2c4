import assert from "node:assert/strict";
import binaryen from "binaryen";
import { poolMemory } from "./pooled_memory.ts";
import { memoryCounts } from "./wasm_sections.ts";
import { ProcessMemory } from "../../runtime/memory_pool.ts";

const wasm = (text: string) => {
  const mod = binaryen.parseText(text);
  try {
    return mod.emitBinary();
  } finally {
    mod.dispose();
  }
};

// a main module that defines the memory, and an adapter that grows it too
const MAIN = wasm(`(module
  (memory (export "memory") 2 8)
  (data (i32.const 16) "data")
  (func (export "size") (result i32) (memory.size))
  (func (export "grow") (param i32) (result i32) (memory.grow (local.get 0)))
  (func (export "load") (param i32) (result i32) (i32.load8_u (local.get 0)))
  (func (export "store") (param i32 i32) (i32.store8 (local.get 0) (local.get 1))))`);
const ADAPTER = wasm(`(module
  (import "env" "memory" (memory 0))
  (func (export "grow") (result i32) (memory.grow (i32.const 1))))`);

interface Exports {
  size(): number;
  grow(n?: number): number;
  load(at: number): number;
  store(at: number, v: number): void;
}

function start(modules: Record<string, WebAssembly.Module>, memory: ProcessMemory) {
  const main = new WebAssembly.Instance(modules.main, memory.importsFor(modules.main) ?? {});
  const adapter = new WebAssembly.Instance(modules.adapter, {
    env: { memory: main.exports.memory },
    ...memory.importsFor(modules.adapter),
  });
  return {
    main: main.exports as unknown as Exports,
    adapter: adapter.exports as unknown as Exports,
  };
}

Deno.test("a reused memory looks fresh: its size, its growth, zeros and the data segments", () => {
  const pooled = poolMemory({ main: MAIN, adapter: ADAPTER });
  assert.deepEqual(memoryCounts(pooled.main), { defined: 0, imported: 1 });
  const modules = {
    main: new WebAssembly.Module(pooled.main as Uint8Array<ArrayBuffer>),
    adapter: new WebAssembly.Module(pooled.adapter as Uint8Array<ArrayBuffer>),
  };
  const first = new ProcessMemory();
  const a = start(modules, first);
  assert.equal(a.main.size(), 2);
  assert.equal(a.adapter.grow(), 2); // the adapter and the main module share one size
  assert.equal(a.main.grow(3), 3);
  assert.equal(a.main.size(), 6);
  assert.equal(a.main.grow(3), -1, "past the maximum of 8");
  a.main.store(5 * 65536, 42);
  first.release();

  const second = new ProcessMemory();
  const b = start(modules, second);
  assert.equal(b.main.size(), 2, "the size a fresh memory has");
  assert.equal(b.main.load(5 * 65536), 0, "zeroed");
  assert.equal(b.main.load(16), "d".charCodeAt(0), "the data segments written again");
  assert.equal(b.main.grow(1), 2);
  assert.equal(b.main.grow(0xffffffff), -1, "a growth that wraps fails");
});

Deno.test("a memory is not reused unless released, and a process limit caps its maximum", () => {
  const pooled = poolMemory({ main: MAIN, adapter: ADAPTER });
  const modules = {
    main: new WebAssembly.Module(pooled.main as Uint8Array<ArrayBuffer>),
    adapter: new WebAssembly.Module(pooled.adapter as Uint8Array<ArrayBuffer>),
  };
  const a = start(modules, new ProcessMemory()); // trapped: never released
  a.main.store(65536, 7);
  const b = start(modules, new ProcessMemory());
  assert.equal(b.main.load(65536), 0);
  // 1 MiB would be 16 pages; the module's own maximum (8) is lower and stays
  const capped = start(modules, new ProcessMemory(1));
  assert.equal(capped.main.grow(6), 2);
  assert.equal(capped.main.grow(1), -1);
});

Deno.test("components with two memories, or none, are left as they are", () => {
  const other = wasm(`(module (memory (export "m") 1))`);
  const two = { main: MAIN, other };
  assert.equal(poolMemory(two), two);
  const none = { shim: wasm(`(module (table (export "t") 1 funcref))`) };
  assert.equal(poolMemory(none), none);
});
