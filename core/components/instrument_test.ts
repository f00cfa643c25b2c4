import assert from "node:assert/strict";
import binaryen from "binaryen";
import { instrument } from "./instrument.ts";

function wasm(text: string): Uint8Array {
  const mod = binaryen.parseText(text);
  try {
    return mod.emitBinary();
  } finally {
    mod.dispose();
  }
}

const LOOPING = wasm(`(module
  (import "env" "host" (func $host (param i32) (result i32)))
  (func $count (export "count") (param $n i32) (result i32)
    (local $i i32)
    (loop $again
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $again (i32.lt_u (local.get $i) (local.get $n))))
    (local.get $i))
  (func (export "via_host") (param $n i32) (result i32)
    (call $host (local.get $n))))`);

function instantiate(bytes: Uint8Array, interrupted: (inHost: number) => number) {
  const memory = new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true });
  const cells = new Int32Array(memory.buffer);
  let exports: Record<string, (n: number) => number> = {};
  const instance = new WebAssembly.Instance(
    new WebAssembly.Module(bytes as Uint8Array<ArrayBuffer>),
    {
      env: { host: (n: number) => exports.count(n) }, // JS calls back into the guest: a host call
      sausage: {
        interrupts: memory,
        cell: new WebAssembly.Global({ value: "i32", mutable: true }, 8),
        interrupted,
        yield: () => {},
      },
    },
  );
  exports = instance.exports as typeof exports;
  return { exports, cells };
}

Deno.test("loop headers check the cell; calls to imports are marked as host calls", () => {
  const out = instrument(LOOPING);
  assert.equal(out.report.loops, 1);
  assert.equal(out.report.hostCalls, 1);
  const imports = WebAssembly.Module.imports(
    new WebAssembly.Module(out.bytes as Uint8Array<ArrayBuffer>),
  );
  assert.deepEqual(imports.filter((i) => i.module === "sausage").map((i) => i.name).sort(), [
    "cell",
    "interrupted",
    "interrupts",
    "yield",
  ]);
  const seen: number[] = [];
  const { exports, cells } = instantiate(out.bytes, (inHost) => {
    seen.push(inHost);
    Atomics.store(cells, 2, 0);
    return 0;
  });
  assert.equal(exports.count(1000), 1000);
  assert.deepEqual(seen, [], "no check fires while the cell is 0");
  Atomics.store(cells, 2, 1);
  exports.count(10);
  Atomics.store(cells, 2, 1);
  exports.via_host(10);
  assert.deepEqual(seen, [0, 1], "the loop reached from a host call reports in_host = 1");
});

Deno.test("a kill traps a guest that spins", () => {
  const out = instrument(LOOPING);
  const { exports, cells } = instantiate(out.bytes, () => {
    throw new Error("killed");
  });
  Atomics.store(cells, 2, 2);
  assert.throws(() => exports.count(2 ** 31 - 1), /killed/);
});

Deno.test("a module without loops is left as it was", () => {
  const plain = wasm(`(module (func (export "f") (result i32) (i32.const 7)))`);
  const out = instrument(plain);
  assert.equal(out.bytes, plain);
  assert.equal(out.report.loops, 0);
});
