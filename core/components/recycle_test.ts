import assert from "node:assert/strict";
import binaryen from "binaryen";
import { testPlugin } from "../../tests/setup.ts";
import { exportMutableGlobals, makeRecyclable, recycleGlue } from "./recycle.ts";
import { transpileComponent } from "./transpile.ts";
import { instrument } from "./instrument.ts";
import { RECYCLE_GLOBAL_PREFIX, RESET_KEY } from "../../runtime/messages.ts";

function wasm(text: string): Uint8Array {
  const mod = binaryen.parseText(text);
  mod.setFeatures(binaryen.Features.All);
  try {
    return mod.emitBinary();
  } finally {
    mod.dispose();
  }
}

Deno.test("a module's own mutable globals are exported for a reset; imported and constant ones are not", () => {
  const made = exportMutableGlobals(wasm(`(module
    (import "env" "g" (global $imported (mut i32)))
    (global $stack (mut i32) (i32.const 1024))
    (global $constant i32 (i32.const 7))
    (func (export "f") (global.set $stack (i32.const 0))))`));
  assert.ok(made.bytes, made.reason);
  const exported = WebAssembly.Module.exports(new WebAssembly.Module(made.bytes as BufferSource))
    .filter((e) => e.kind === "global").map((e) => e.name);
  assert.deepEqual(exported, [`${RECYCLE_GLOBAL_PREFIX}1`]);
  const instance = new WebAssembly.Instance(new WebAssembly.Module(made.bytes as BufferSource), {
    env: { g: new WebAssembly.Global({ value: "i32", mutable: true }, 0) },
  });
  const stack = instance.exports[`${RECYCLE_GLOBAL_PREFIX}1`] as WebAssembly.Global;
  assert.equal(stack.value, 1024);
  (instance.exports.f as () => void)();
  assert.equal(stack.value, 0);
});

Deno.test("a module that changes a table or drops a segment, or has a start function, is not reused", () => {
  const changes: [string, RegExp][] = [
    [
      `(module (table $t 1 funcref) (func (export "f") (drop (table.grow $t (ref.null func) (i32.const 1)))))`,
      /function .* uses table\.grow/,
    ],
    [
      `(module (table $t 1 funcref) (func $g) (elem declare func $g)
         (func (export "f") (table.set $t (i32.const 0) (ref.func $g))))`,
      /uses table\.set/,
    ],
    [`(module (memory 1) (data $d "x") (func (export "f") (data.drop $d)))`, /uses data\.drop/],
  ];
  for (const [text, reason] of changes) {
    // the instrumentation's walk finds them, and the component keeps fresh instances
    const { report } = instrument(wasm(text));
    assert.match(report.unresettable ?? "", reason, text);
    const made = makeRecyclable("", { "m.wasm": wasm(text) }, { "m.wasm": report.unresettable });
    assert.match(made.reason!, reason);
  }
  const started = exportMutableGlobals(wasm(`(module (global $g (mut i32) (i32.const 0))
    (func $s (global.set $g (i32.const 1))) (start $s))`));
  assert.equal(started.bytes, undefined);
  assert.match(started.reason!, /start function/);
  const vector = exportMutableGlobals(
    wasm(`(module (global $v (mut v128) (v128.const i32x4 0 0 0 0))
    (func (export "f") (global.set $v (v128.const i32x4 1 1 1 1))))`),
  );
  assert.match(vector.reason ?? "", /mutable v128 global/);
  assert.equal(instrument(wasm(`(module (func (export "f")))`)).report.unresettable, undefined);
});

Deno.test("a glue that declares state it does not know gets no reset, and says which", () => {
  const unknown = recycleGlue(`export function instantiate(getCoreModule, imports) {
    const { getStdin } = imports['wasi:cli/stdin'];
    let secret = 0;
    let gen = (function* _initGenerator () { return { run: {} }; })();
  }`);
  assert.equal(unknown.glue, undefined);
  assert.match(unknown.reason!, /`secret`, unknown state/);
  const inGenerator = recycleGlue(`export function instantiate(getCoreModule, imports) {
    let gen = (function* _initGenerator () { const cache = new Map(); return { run: {} }; })();
  }`);
  assert.match(inGenerator.reason!, /`cache`, unknown state/);
  const hidden = [
    ["class C { static seen = new Map(); }", /class C has a static field `seen`/],
    ["class C { static { this.n = 0; } }", /class C has a static block/],
    ["if (imports) { var leaked = []; }", /declares state inside a statement/],
    ["{ let kept = 0; globalThis.f = () => kept++; }", /declares state inside a statement/],
  ] as const;
  for (const [statement, reason] of hidden) {
    const made = recycleGlue(`export function instantiate(getCoreModule, imports) {
      ${statement}
      let gen = (function* _initGenerator () { return { run: {} }; })();
    }`);
    assert.match(made.reason ?? "", reason, statement);
  }
  // jco's tables of constants, and functions of its own, are no state
  const constant = recycleGlue(`export function instantiate(getCoreModule, imports) {
    class AsyncTask { static State = { INITIAL: 'initial', DONE: -1 }; }
    if (!getCoreModule) getCoreModule = (name) => { const url = name; return url; };
    let gen = (function* _initGenerator () { return { run: {} }; })();
  }`);
  assert.ok(constant.glue, constant.reason);
  assert.match(recycleGlue("export const x = 1;").reason!, /no function `instantiate`/);
  assert.match(recycleGlue("export function instantiate( {").reason!, /does not parse/);
});

Deno.test("the reset a glue gets empties its handle tables, lent objects and task stacks", () => {
  const made = recycleGlue(`export function instantiate(getCoreModule, imports) {
    const T_FLAG = 1 << 30;
    let curResourceBorrows = [];
    const ASYNC_CURRENT_TASK_IDS = [];
    let gen = (function* _initGenerator () {
      const handleTable0 = [T_FLAG, 0];
      const captureTable0 = new Map();
      let captureCnt0 = 0;
      function use() {
        handleTable0.push(5, 6);
        captureTable0.set(++captureCnt0, {});
        curResourceBorrows.push({});
        ASYNC_CURRENT_TASK_IDS.push(1);
      }
      return {
        run: { use },
        state: () => [handleTable0, captureTable0.size, captureCnt0, curResourceBorrows.length,
          ASYNC_CURRENT_TASK_IDS.length],
      };
    })();
    return gen.next().value;
  }`);
  assert.ok(made.glue, made.reason);
  const instantiate = new Function(`${made.glue.replace("export function", "return function")}`)();
  const component = instantiate(() => undefined, {});
  component.run.use();
  component.run.use();
  assert.deepEqual(component.state(), [[1 << 30, 0, 5, 6, 5, 6], 2, 2, 2, 2]);
  component[RESET_KEY]();
  assert.deepEqual(component.state(), [[1 << 30, 0], 0, 0, 0, 0]);
});

Deno.test("a real component's glue and modules are made reusable, together", async () => {
  const bytes = await Deno.readFile(await testPlugin("probe"));
  const { js, modules } = await transpileComponent(bytes, "probe");
  assert.ok(js.includes(`"${RESET_KEY}": () => {`), "the glue has a reset");
  const tables = js.match(/const handleTable\d+ = \[T_FLAG, 0\];/g)?.length ?? 0;
  assert.ok(tables > 0);
  assert.equal(
    js.match(/handleTable\d+\.splice\(0, handleTable\d+\.length, T_FLAG, 0\);/g)?.length,
    tables,
  );
  const globals = Object.values(modules).flatMap((m) =>
    WebAssembly.Module.exports(new WebAssembly.Module(m as BufferSource))
      .filter((e) => e.name.startsWith(RECYCLE_GLOBAL_PREFIX))
  );
  assert.ok(globals.length >= 2, "the stack pointers, at least, are exported");
  // one module that cannot be reset leaves the whole component as it was
  const grows = wasm(`(module (table $t 1 funcref)
    (func (export "f") (drop (table.grow $t (ref.null func) (i32.const 1)))))`);
  const refused = makeRecyclable("export function instantiate() {}", { "a.wasm": grows }, {
    "a.wasm": instrument(grows).report.unresettable,
  });
  assert.match(refused.reason!, /^a\.wasm: function .* uses table\.grow/);
  assert.equal(refused.modules["a.wasm"], grows);
});
