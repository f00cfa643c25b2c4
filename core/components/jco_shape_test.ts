/** One shape, one glue: checked against jco itself on the test plugins. */
import assert from "node:assert/strict";
import {
  coreModuleFile,
  coreModulesOf,
  type JcoGlue,
  JcoShapes,
  modulesMatch,
  shapeOf,
} from "./jco_shape.ts";
import { jco, transpileComponent } from "./transpile.ts";
import { sections } from "./wasm_sections.ts";
import { testPlugin } from "../../tests/setup.ts";
import { withCustomSection } from "./wasm_sections.ts";

async function jcoGlue(bytes: Uint8Array) {
  const { files } = await jco(bytes, "a test plugin");
  return { js: new TextDecoder().decode(files["plugin.js"]), files };
}

Deno.test("components of one shape get one glue from jco, and their modules are read as jco writes them", async () => {
  const shapes = new JcoShapes();
  const glues = new Map<string, { js: string; from: string }>();
  const names = [
    "probe",
    "notes_v1",
    "notes_v2",
    "notes_v3",
    "agent_v1",
    "agent_v1b",
    "agent_v2",
    "fsprobe",
    "fsbench",
    "hog",
    "hostile",
    "netprobe",
    "sqlprobe",
    "conformance",
  ];
  for (const name of names) {
    const bytes = await Deno.readFile(await testPlugin(name));
    const key = await shapes.keyOf(bytes);
    assert.ok(key, `${name} has a shape`);
    const { js, files } = await jcoGlue(bytes);
    assert.ok(modulesMatch(bytes, "plugin", files), `${name}: the modules are jco's`);
    const seen = glues.get(key);
    if (seen) assert.ok(seen.js === js, `${name} and ${seen.from}: one shape, two glues`);
    else glues.set(key, { js, from: name });
  }
  // versions of one plugin share theirs; plugins that import more do not
  const keyOf = async (name: string) =>
    await shapes.keyOf(await Deno.readFile(await testPlugin(name)));
  assert.equal(await keyOf("notes_v1"), await keyOf("notes_v2"));
  assert.notEqual(await keyOf("probe"), await keyOf("fsprobe"));
  // a custom section of its own (a tag, producers) does not change the glue
  const probe = await Deno.readFile(await testPlugin("probe"));
  const tagged = withCustomSection(probe, "a-tag");
  assert.equal(await shapes.keyOf(tagged), await shapes.keyOf(probe));
  assert.equal((await jcoGlue(tagged)).js, (await jcoGlue(probe)).js);
  assert.ok(glues.size < names.length, "some of them share a shape");
  // the shipped agent, built like any plugin of the SDK
  const agent = await Deno.readFile(
    new URL("../../plugins/agent/dist/agent.wasm", import.meta.url),
  );
  const { js, files } = await jcoGlue(agent);
  assert.ok(modulesMatch(agent, "plugin", files));
  const seen = glues.get((await shapes.keyOf(agent))!);
  if (seen) assert.ok(seen.js === js, `the agent and ${seen.from}: one shape, two glues`);
});

Deno.test("a component's core modules are read in jco's order and named as its files", async () => {
  const bytes = await Deno.readFile(await testPlugin("probe"));
  const modules = coreModulesOf(bytes)!;
  assert.ok(modules.length >= 2);
  const { files } = await jcoGlue(bytes);
  modules.forEach((m, i) => assert.deepEqual(files[coreModuleFile("plugin", i)], m));
  // a different code, the same shape: only what the glue reads is in it
  const shape = shapeOf(bytes)!;
  assert.ok(shape.length < bytes.length / 4, `${shape.length} of ${bytes.length}`);
});

Deno.test("bytes that are not a component, or nest components, have no shape", () => {
  assert.equal(coreModulesOf(new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0])), undefined);
  assert.equal(shapeOf(new Uint8Array([1, 2, 3])), undefined);
  const header = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];
  // a nested component (section 4) with a core module (section 1) in it
  const emptyModule = [0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0];
  const nested = [...header, 1, emptyModule.length, ...emptyModule];
  assert.equal(coreModulesOf(new Uint8Array([...header, 4, nested.length, ...nested])), undefined);
  // one without: its modules are the outer ones
  assert.deepEqual(coreModulesOf(new Uint8Array([...header, 4, 8, ...header])), []);
  // a section that runs past the end
  assert.equal(coreModulesOf(new Uint8Array([...header, 1, 9, 0])), undefined);
  // a core module whose own section runs past its end: no shape, so jco names the fault
  const shortModule = [0x00, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 2, 9, 0];
  assert.equal(
    shapeOf(new Uint8Array([...header, 1, shortModule.length, ...shortModule])),
    undefined,
  );
  assert.deepEqual(coreModulesOf(new Uint8Array(header)), []);
});

Deno.test("the shapes kept are bounded, the least recently used leaving first", () => {
  const shapes = new JcoShapes();
  const glue = (js: string) => ({ js, imports: [], exports: [] });
  for (let i = 0; i < 16; i++) shapes.set(`k${i}`, glue(`${i}`));
  assert.equal(shapes.get("k0")?.js, "0"); // used: now the most recent
  shapes.set("k16", glue("16"));
  assert.equal(shapes.get("k1"), undefined);
  assert.equal(shapes.get("k0")?.js, "0");
  assert.equal(shapes.get("k16")?.js, "16");
});

Deno.test("a component transpiled from the glue of its shape is the one jco's own glue gives", async () => {
  const v1 = await Deno.readFile(await testPlugin("notes_v1"));
  const v2 = await Deno.readFile(await testPlugin("notes_v2"));
  let glue: JcoGlue | undefined;
  await transpileComponent(v1, "notes_v1", { onGlue: (g) => glue = g });
  assert.ok(glue, "jco's glue was given for the shape");
  const viaJco = await transpileComponent(v2, "notes_v2");
  const viaShape = await transpileComponent(v2, "notes_v2", {
    glue,
    onGlue: () => assert.fail("jco ran"),
  });
  assert.equal(viaShape.js, viaJco.js);
  assert.deepEqual(viaShape.modules, viaJco.modules);
  assert.deepEqual(viaShape.imports, viaJco.imports);
  assert.deepEqual(viaShape.exports, viaJco.exports);
  // a module that does not validate goes to jco, which names the fault
  const broken = v2.slice();
  const main = coreModulesOf(broken)![0];
  const code = [...sections(main)].find((s) => s.id === 10)!;
  main[code.end - code.body.length] ^= 1; // its count of function bodies, one off
  assert.equal(coreModulesOf(broken)?.length, coreModulesOf(v2)?.length);
  await assert.rejects(
    transpileComponent(broken, "broken", { glue }),
    /broken is not a valid component/,
  );
});
