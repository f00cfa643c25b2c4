import assert from "node:assert/strict";
import binaryen from "binaryen";
import { testPlugin } from "../../tests/setup.ts";
import { LINK_MODULE, linkModules, linkThroughTable, planTableLink } from "./table_link.ts";
import { readModule } from "./expressions.ts";
import { transpileComponent } from "./transpile.ts";

/** jco's glue after linkDirect, cut down to one preview1 function. */
const GLUE = `const module0 = getCoreModule('main.wasm');
const module1 = getCoreModule('adapter.wasm');
const module2 = getCoreModule('shim.wasm');
function* body() {
  ({ exports: exports0 } = yield instantiateCore(yield module2));
  ({ exports: exports1 } = yield instantiateCore(yield module0, {
    wasi_snapshot_preview1: {
      fd_write: exports0['1'],
    },
  }));
  ({ exports: exports2 } = yield instantiateCore(yield module1, {
    env: {
      memory: exports1.memory,
    },
  }));
  exports0.$imports.set(1, exports2.fd_write);
}
`;

const LINK = {
  glue: GLUE,
  shim: { file: "shim.wasm", keep: new Set(["$imports", "1"]), exports: "exports0" },
  fixup: "fixup.wasm",
  direct: 0,
  tableSets: 1,
};

/** A main module that calls `wasi_snapshot_preview1.fd_write(n)` from its export `go`. */
function mainModule(): Uint8Array {
  const mod = new binaryen.Module();
  mod.addFunctionImport(
    "fd_write",
    "wasi_snapshot_preview1",
    "fd_write",
    binaryen.i32,
    binaryen.i32,
  );
  mod.addFunction(
    "go",
    binaryen.i32,
    binaryen.i32,
    [],
    mod.call("fd_write", [mod.local.get(0, binaryen.i32)], binaryen.i32),
  );
  mod.addFunctionExport("go", "go");
  const bytes = mod.emitBinary();
  mod.dispose();
  return bytes;
}

/** An adapter whose `fd_write(n)` answers `n + 1000`. */
function adapterModule(): Uint8Array {
  const mod = new binaryen.Module();
  mod.addFunction(
    "fd_write",
    binaryen.i32,
    binaryen.i32,
    [],
    mod.i32.add(mod.local.get(0, binaryen.i32), mod.i32.const(1000)),
  );
  mod.addFunctionExport("fd_write", "fd_write");
  mod.addFunctionExport("fd_write", "kept");
  const bytes = mod.emitBinary();
  mod.dispose();
  return bytes;
}

Deno.test("linkThroughTable routes the main module's preview1 import through the shim's table", () => {
  const linked = linkThroughTable(GLUE, LINK, {
    "main.wasm": mainModule(),
    "adapter.wasm": adapterModule(),
  })!;
  assert.ok(linked);
  assert.equal(linked.calls, 1);
  assert.equal(linked.slots, 1);
  assert.deepEqual([...linked.shimKeep], ["$imports"]);
  // the glue: no Table.set, no import of the shim's export, the table given to both
  assert.doesNotMatch(linked.glue, /\.set\(/);
  assert.doesNotMatch(linked.glue, /exports0\['1'\]/);
  assert.equal(
    linked.glue.split(`'${LINK_MODULE}': {\n      $imports: exports0.$imports,`).length,
    3,
  );

  // the modules, linked as the edited glue does: the call reaches the adapter
  const main = new WebAssembly.Module(linked.modules["main.wasm"] as Uint8Array<ArrayBuffer>);
  const adapter = new WebAssembly.Module(linked.modules["adapter.wasm"] as Uint8Array<ArrayBuffer>);
  assert.deepEqual(
    WebAssembly.Module.imports(main).map((i) => `${i.module}.${i.name}:${i.kind}`),
    [`${LINK_MODULE}.$imports:table`],
  );
  assert.deepEqual(WebAssembly.Module.exports(adapter).map((e) => e.name), ["kept"]);
  const table = new WebAssembly.Table({ element: "anyfunc", initial: 2 });
  const link = { [LINK_MODULE]: { $imports: table } };
  const go = new WebAssembly.Instance(main, link).exports.go as (n: number) => number;
  new WebAssembly.Instance(adapter, link);
  assert.equal(go(7), 1007);
});

Deno.test("linkThroughTable leaves a glue or a module of another form as it is", () => {
  const modules = { "main.wasm": mainModule(), "adapter.wasm": adapterModule() };
  assert.equal(linkThroughTable(GLUE, undefined, modules), undefined);
  // no Table.set: nothing crosses through the table
  assert.equal(
    linkThroughTable(
      GLUE.replace("  exports0.$imports.set(1, exports2.fd_write);\n", ""),
      LINK,
      modules,
    ),
    undefined,
  );
  // the adapter does not export what the glue puts in the table
  assert.equal(
    linkThroughTable(GLUE.replace("exports2.fd_write", "exports2.fd_read"), LINK, modules),
    undefined,
  );
  // the main module's import is not the one the glue names
  assert.equal(
    linkThroughTable(GLUE.replace("wasi_snapshot_preview1", "other"), LINK, modules),
    undefined,
  );
});

Deno.test("linkModules edits neither module when one is not of the plan's form", () => {
  // the transpiler edits the modules it has pooled and instrumented: a refusal must leave them whole
  const modules = { "main.wasm": mainModule(), "adapter.wasm": adapterModule() };
  const plan = planTableLink(GLUE.replace("exports2.fd_write", "exports2.fd_read"), LINK, modules);
  assert.ok(plan, "the glue alone is of the known form");
  const main = readModule(modules["main.wasm"]);
  const adapter = readModule(modules["adapter.wasm"]);
  try {
    const before = [main.emitText(), adapter.emitText()];
    assert.equal(linkModules(plan, main, adapter), false);
    assert.deepEqual([main.emitText(), adapter.emitText()], before);
  } finally {
    main.dispose();
    adapter.dispose();
  }
});

Deno.test("a real component's main module reaches its adapter through the table alone", async () => {
  const bytes = await Deno.readFile(await testPlugin("probe"));
  const out = await transpileComponent(bytes, "probe");
  assert.doesNotMatch(out.js, /\$imports\.set\(/, "the adapter's slots are filled by the adapter");
  const compiled = Object.values(out.modules).map((b) =>
    new WebAssembly.Module(b as Uint8Array<ArrayBuffer>)
  );
  const shim = compiled.find((m) =>
    WebAssembly.Module.exports(m).some((e) => e.name === "$imports")
  );
  assert.ok(shim, "a module exports the shim's table");
  assert.deepEqual(WebAssembly.Module.exports(shim).map((e) => e.name), ["$imports"]);
  const importers = compiled.filter((m) =>
    WebAssembly.Module.imports(m).some((i) => i.module === LINK_MODULE && i.kind === "table")
  );
  assert.equal(importers.length, 2, "the main module and the adapter import the table");
  // the main module's calls of those functions stay bracketed as calls of the host: the adapter
  // they reach calls the host, and a guest must not yield below a JS frame
  const main = Object.values(out.modules).find((b) =>
    WebAssembly.Module.exports(new WebAssembly.Module(b as Uint8Array<ArrayBuffer>)).some((e) =>
      e.name === "memory"
    )
  )!;
  const mod = binaryen.readBinary(main);
  let linkTable = "";
  for (let i = 0; i < mod.getNumTables(); i++) {
    const t = binaryen.getTableInfo(mod.getTableByIndex(i));
    if (t.module === LINK_MODULE) linkTable = t.name;
  }
  assert.ok(linkTable, "the main module imports the table");
  const names = new Set<string>();
  const linked: string[] = [];
  for (let i = 0; i < mod.getNumFunctions(); i++) {
    const info = binaryen.getFunctionInfo(mod.getFunctionByIndex(i));
    names.add(info.name);
    if (
      info.body && binaryen.getExpressionId(info.body) === binaryen.CallIndirectId &&
      // a constant slot: the table link's own functions (Rust's call a computed one)
      binaryen.getExpressionId(
          (binaryen.getExpressionInfo(info.body) as binaryen.CallIndirectInfo).target,
        ) === binaryen.ConstId
    ) {
      linked.push(info.name);
    }
  }
  mod.dispose();
  assert.ok(linked.length >= 10, `functions that call through the table: ${linked.length}`);
  for (const name of linked) assert.ok(names.has(`sausage$host$${name}`), `${name} is bracketed`);
  for (const m of compiled) {
    const preview1 = WebAssembly.Module.imports(m).filter((i) =>
      i.module === "wasi_snapshot_preview1"
    );
    assert.deepEqual(preview1, [], "no module imports a preview1 function any more");
    assert.ok(!WebAssembly.Module.exports(m).some((e) => e.name === "fd_write"));
  }
});
