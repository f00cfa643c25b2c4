import assert from "node:assert/strict";
import { testPlugin } from "../../tests/setup.ts";
import { linkDirect } from "./direct_link.ts";
import { transpileComponent } from "./transpile.ts";

/** The shape of jco's glue around the shim and the fixup, cut down to two slots. */
const GLUE = `const module0 = getCoreModule('plugin.core.wasm');
const module1 = getCoreModule('plugin.core2.wasm');
const module2 = getCoreModule('plugin.core3.wasm');
const module3 = getCoreModule('plugin.core4.wasm');
function* body() {
  let exports0;
  let exports1;
  let exports2;
  let exports3;
  const trampoline7 = new WebAssembly.Suspending(async function() {});
  ({ exports: exports0 } = yield instantiateCore(yield module2));
  ({ exports: exports1 } = yield instantiateCore(yield module0, {
    wasi_snapshot_preview1: { fd_write: exports0['1'] },
    'wasi:cli/stdin@0.2.6': { 'get-stdin': exports0['0'] },
  }));
  ({ exports: exports2 } = yield instantiateCore(yield module1, {
    'wasi:io/streams@0.2.6': { '[method]output-stream.blocking-write-and-flush': exports0['0'] },
  }));
  ({ exports: exports3 } = yield instantiateCore(yield module3, {
    '': {
      $imports: exports0.$imports,
      '0': trampoline7,
      '1': exports2.fd_write,
    },
  }));
}
`;

Deno.test("linkDirect gives trampolines directly and sets the adapter's slots from JS", () => {
  const link = linkDirect(GLUE)!;
  assert.ok(link);
  assert.equal(link.direct, 2);
  assert.equal(link.tableSets, 1);
  assert.equal(link.shim.file, "plugin.core3.wasm");
  assert.equal(link.fixup, "plugin.core4.wasm");
  assert.deepEqual([...link.shim.keep].sort(), ["$imports", "1"]);
  assert.doesNotMatch(link.glue, /instantiateCore\(yield module3/);
  assert.match(link.glue, /exports0\.\$imports\.set\(1, exports2\.fd_write\);/);
  assert.match(link.glue, /'get-stdin': trampoline7 \}/);
  assert.match(link.glue, /fd_write: exports0\['1'\]/);
});

Deno.test("linkDirect leaves the glue as it is when a slot holds a JS function it cannot give directly", () => {
  // defined after the shim: only the fixup can put it in the table (Table.set takes wasm functions)
  const late = GLUE.replace(
    "  const trampoline7 = new WebAssembly.Suspending(async function() {});\n",
    "",
  )
    .replace(
      "  ({ exports: exports3 }",
      "  const trampoline7 = () => {};\n  ({ exports: exports3 }",
    );
  assert.equal(linkDirect(late), undefined);
  assert.throws(
    () => new WebAssembly.Table({ element: "anyfunc", initial: 1 }).set(0, (() => {}) as never),
    TypeError,
    "V8 refuses a JS function in a table, so the fixup stays",
  );
});

Deno.test("linkDirect leaves a glue of another form as it is", () => {
  assert.equal(linkDirect("export function instantiate() {}"), undefined);
  // the fixup's exports are read: its instantiation stays
  assert.equal(linkDirect(GLUE + "console.log(exports3);\n"), undefined);
  // no shim instantiated without imports
  assert.equal(
    linkDirect(GLUE.replace("yield instantiateCore(yield module2));", "yield f(yield module2));")),
    undefined,
  );
});

Deno.test("the glue of a real component links without jco's fixup", async () => {
  const bytes = await Deno.readFile(await testPlugin("probe"));
  const out = await transpileComponent(bytes, "probe");
  const instantiated = [...out.js.matchAll(/instantiateCore\(yield (module\d+)/g)].map((m) => m[1]);
  assert.equal(instantiated.length, 3, `core instances: ${instantiated.join(", ")}`);
  // what the shim still exports is the test of table_link_test.ts
});
