import assert from "node:assert/strict";
import { keepExports, leb, Reader, rewriteSections } from "./wasm_sections.ts";

/** A module with a table and one function `() -> ()` exported under each of `names`. */
function moduleExporting(names: string[]): Uint8Array {
  const section = (id: number, body: number[]) => {
    const out = [id];
    leb(body.length, out);
    return [...out, ...body];
  };
  const name = (s: string) => {
    const bytes = [...new TextEncoder().encode(s)];
    const out: number[] = [];
    leb(bytes.length, out);
    return [...out, ...bytes];
  };
  const exports: number[] = [];
  leb(names.length + 1, exports);
  for (const n of names) exports.push(...name(n), 0x00, 0x00);
  exports.push(...name("$imports"), 0x01, 0x00);
  return new Uint8Array([
    0x00,
    0x61,
    0x73,
    0x6d,
    0x01,
    0x00,
    0x00,
    0x00,
    ...section(1, [1, 0x60, 0, 0]), // type: () -> ()
    ...section(3, [1, 0]), // one function
    ...section(4, [1, 0x70, 0x00, 2]), // table: funcref, min 2
    ...section(7, exports),
    ...section(10, [1, 2, 0, 0x0b]), // its body: nothing
  ]);
}

Deno.test("keepExports keeps the exports named, in order, and the module still compiles", () => {
  const bytes = moduleExporting(["0", "1", "2", "αβ"]);
  const trimmed = keepExports(bytes, new Set(["2", "αβ", "$imports"]));
  const module = new WebAssembly.Module(trimmed as Uint8Array<ArrayBuffer>);
  assert.deepEqual(WebAssembly.Module.exports(module).map((e) => [e.name, e.kind]), [
    ["2", "function"],
    ["αβ", "function"],
    ["$imports", "table"],
  ]);
  const instance = new WebAssembly.Instance(module);
  assert.equal(typeof instance.exports["2"], "function");
});

Deno.test("keepExports returns the same bytes when every export is kept", () => {
  const bytes = moduleExporting(["0"]);
  assert.equal(keepExports(bytes, new Set(["0", "$imports"])), bytes);
});

Deno.test("rewriteSections refuses a section that runs past the end", () => {
  const bytes = moduleExporting(["0"]);
  assert.throws(
    () => rewriteSections(bytes.subarray(0, bytes.length - 2), () => undefined),
    RangeError,
  );
});

Deno.test("Reader reads LEB128 as written and names as UTF-8", () => {
  for (const n of [0, 1, 127, 128, 300, 2 ** 32, 2 ** 53 - 1]) {
    const out: number[] = [];
    leb(n, out);
    assert.equal(new Reader(new Uint8Array(out)).u(), n);
  }
  assert.throws(() => new Reader(new Uint8Array([2, 0xff, 0xfe])).name(), TypeError);
});
