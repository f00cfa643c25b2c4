/**
 * Links the main module to the preview1 adapter through the shim's table
 * inside wasm, so that neither the shim nor the adapter exports the
 * functions that cross between them.
 *
 * After {@linkcode ./direct_link.ts}, the main module still imports each
 * preview1 function (`fd_write`, …) as an export of jco's shim, whose body
 * calls through the shim's table; jco's glue fills that table from JS with
 * the adapter's exports. V8 makes a JS function and its records for every
 * export of every instance, and a record for every import: about 1 µs and
 * 250 bytes each, 21 exports of the shim and 21 of the adapter per `probe`
 * process, which the process never uses from JS.
 *
 * So the three modules are edited, and the glue with them:
 * - the main module imports the shim's table (`sausage:link` `$imports`) and
 *   each preview1 import becomes a function of its own that calls its slot
 *   of that table (`call_indirect`), as the shim's export did;
 * - the adapter imports the same table and fills the slots with its
 *   functions by element segments, when it is instantiated, where the glue
 *   called `Table.set`; it no longer exports them;
 * - the shim exports its table alone.
 *
 * Nothing else changes: the main module's calls reach the same adapter
 * functions through the same table, with one wasm call less on the way.
 * A glue or a module of another form is left as it is; the test of a real
 * component's glue says when that happens.
 *
 * @example
 * ```ts
 * import { linkThroughTable } from "./table_link.ts";
 * // a glue without jco's shim: nothing to do
 * console.log(linkThroughTable("export function instantiate() {}", undefined, {})); // undefined
 * ```
 *
 * @module
 */
import binaryen from "binaryen";
import { coreModuleFile, type DirectLink } from "./direct_link.ts";
import { readModule } from "./expressions.ts";

/** The import module and name of the shim's table in the edited modules. */
export const LINK_MODULE = "sausage:link";
const TABLE = "$imports";
const TABLE_NAME = "sausage$link$imports";
/** binaryen's "no maximum" for a table. */
const UNLIMITED = 0xffffffff;

/** What {@linkcode linkThroughTable} changed. */
export interface TableLink {
  glue: string;
  /** The edited modules, by file; the others are as they were. */
  modules: Record<string, Uint8Array>;
  /** Imports of the main module that now call through the table. */
  calls: number;
  /** Slots the adapter fills by element segments. */
  slots: number;
  /** The exports of the shim the glue still uses (its table among them). */
  shimKeep: Set<string>;
}

/**
 * The table link as the glue decides it, before any module is read: the
 * glue it makes and the edits its two modules must get.
 */
export interface TablePlan {
  glue: string;
  /** The exports of the shim the glue still uses (its table among them). */
  shimKeep: Set<string>;
  /** The file of the main module, which calls through the table. */
  consumer: string;
  /** The file of the adapter, which fills the table. */
  provider: string;
  /** The consumer's imports that become calls of a slot. */
  calls: { module: string; field: string; slot: number }[];
  /** The provider's exports that fill a slot. */
  slots: { slot: number; name: string }[];
  /** The table's size: one past its last slot. */
  size: number;
}

/** One `instantiateCore` of the glue: the instance it names and its imports' text. */
interface Block {
  exports: string;
  module: string;
  start: number;
  end: number;
  body: string;
}

const BLOCK = new RegExp(
  String.raw`^  \(\{ exports: (exports\d+) \} = yield instantiateCore\(yield (module\d+), \{\n` +
    String.raw`([\s\S]*?)\n  \}\)\);\n`,
  "gm",
);
const IMPORT_MODULE = /^ {4}(?:'([^']+)'|([\w$]+)): \{$/;
const IMPORT_FIELD = /^ {6}(?:'([^']+)'|([\w$]+)): (.+),$/;

function blocks(glue: string): Block[] {
  return [...glue.matchAll(BLOCK)].map((m) => ({
    exports: m[1],
    module: m[2],
    start: m.index!,
    end: m.index! + m[0].length,
    body: m[3],
  }));
}

/**
 * The glue and modules linked through the shim's table (see the module's
 * comment), or undefined when the glue or a module is not of the form this
 * knows. `link` is what {@linkcode ./direct_link.ts} made of the glue, and
 * `modules` are the core modules by file, instrumented: the main module's
 * calls of these imports keep the bracket that tells the host it is not in
 * the guest's own code (core/components/instrument.ts), since the adapter
 * they reach calls the host.
 */
export function linkThroughTable(
  glue: string,
  link: DirectLink | undefined,
  modules: Record<string, Uint8Array>,
): TableLink | undefined {
  const plan = planTableLink(glue, link, modules);
  if (!plan) return undefined;
  const consumer = readModule(modules[plan.consumer]);
  const provider = readModule(modules[plan.provider]);
  try {
    if (!linkModules(plan, consumer, provider)) return undefined;
    const edited = {
      [plan.consumer]: consumer.emitBinary(),
      [plan.provider]: provider.emitBinary(),
    };
    if (!Object.values(edited).every(validates)) return undefined;
    return {
      glue: plan.glue,
      modules: edited,
      calls: plan.calls.length,
      slots: plan.slots.length,
      shimKeep: plan.shimKeep,
    };
  } catch {
    return undefined; // a module of another form: the glue's way still works
  } finally {
    consumer.dispose();
    provider.dispose();
  }
}

/**
 * What {@linkcode linkThroughTable} would make of `glue`, decided from the
 * glue alone (`modules` only says which files there are), or undefined when
 * the glue is not of the form this knows. The modules must then get the
 * edits of {@linkcode linkModules}, and the glue is used only when they
 * succeed.
 */
export function planTableLink(
  glue: string,
  link: DirectLink | undefined,
  modules: Record<string, Uint8Array>,
): TablePlan | undefined {
  if (!link) return undefined;
  const fileOf = (module: string) => coreModuleFile(glue, module);
  const all = blocks(glue);
  const shimExports = link.shim.exports;

  // the glue's Table.set lines: slot → an export of the adapter
  const SET = new RegExp(
    String.raw`^  ${shimExports}\.\$imports\.set\((\d+), (exports\d+)\.([\w$]+)\);\n`,
    "gm",
  );
  const sets = [...glue.matchAll(SET)];
  if (sets.length === 0) return undefined;
  const providerExports = sets[0][2];
  if (sets.some((s) => s[2] !== providerExports)) return undefined;
  const provider = all.find((b) => b.exports === providerExports);
  // the consumer: the one instance that imports the shim's exports
  const use = new RegExp(String.raw`^${shimExports}\['(\d+)'\]$`);
  const consumers = all.filter((b) =>
    b.body.split("\n").some((line) => use.test(IMPORT_FIELD.exec(line)?.[3] ?? ""))
  );
  if (!provider || consumers.length !== 1) return undefined;
  const consumer = consumers[0];
  const providerFile = fileOf(provider.module);
  const consumerFile = fileOf(consumer.module);
  if (!providerFile || !consumerFile || !modules[providerFile] || !modules[consumerFile]) {
    return undefined;
  }
  // one module cannot both import the table's functions and fill the table with them
  if (providerFile === consumerFile) return undefined;

  // the consumer's imports of the shim: (module, field) → slot; its other lines stay
  const calls: { module: string; field: string; slot: number }[] = [];
  const kept: string[] = [];
  let current: string | undefined;
  for (const line of consumer.body.split("\n")) {
    const m = IMPORT_MODULE.exec(line);
    if (m) current = m[1] ?? m[2];
    const f = IMPORT_FIELD.exec(line);
    const slot = f && use.exec(f[3])?.[1];
    if (f && slot !== undefined && current !== undefined) {
      calls.push({ module: current, field: f[1] ?? f[2], slot: Number(slot) });
      continue;
    }
    kept.push(line);
  }
  if (calls.length === 0) return undefined;
  const slots = sets.map((s) => ({ slot: Number(s[1]), name: s[3] }));
  const size = Math.max(...calls.map((c) => c.slot), ...slots.map((s) => s.slot)) + 1;

  const table = `    '${LINK_MODULE}': {\n      ${TABLE}: ${shimExports}.${TABLE},\n    },\n`;
  const rewrite = (b: Block, body: string) => {
    const open = glue.slice(b.start, b.start + glue.slice(b.start).indexOf("{\n") + 2);
    return `${open}${table}${body}\n  }));\n`;
  };
  const pieces: { start: number; end: number; text: string }[] = [
    { start: consumer.start, end: consumer.end, text: rewrite(consumer, kept.join("\n")) },
    ...(provider === consumer
      ? []
      : [{ start: provider.start, end: provider.end, text: rewrite(provider, provider.body) }]),
    ...sets.map((s) => ({ start: s.index!, end: s.index! + s[0].length, text: "" })),
  ].sort((a, b) => a.start - b.start);
  let out = "";
  let at = 0;
  for (const p of pieces) {
    out += glue.slice(at, p.start) + p.text;
    at = p.end;
  }
  out += glue.slice(at);
  const uses = new RegExp(String.raw`\b${shimExports}\['(\d+)'\]`, "g");
  const shimKeep = new Set([TABLE, ...[...out.matchAll(uses)].map((m) => m[1])]);
  return {
    glue: out,
    shimKeep,
    consumer: consumerFile,
    provider: providerFile,
    calls,
    slots,
    size,
  };
}

/**
 * Edits the binaryen modules of `plan`'s consumer and provider in place to
 * link them through the table; false, with neither touched, when they are
 * not of the form the plan expects. The modules they emit must still pass
 * {@linkcode validates} before the plan's glue is used.
 */
export function linkModules(
  plan: TablePlan,
  consumer: binaryen.Module,
  provider: binaryen.Module,
): boolean {
  const imports = importsToCall(consumer, plan.calls);
  const fills = exportsToFill(provider, plan.slots);
  if (!imports || !fills) return false;
  callThroughTable(consumer, imports, plan.size);
  fillTable(provider, fills, plan.size);
  return true;
}

/** Whether the engine that runs `bytes` takes them (validated by V8 itself). */
export function validates(bytes: Uint8Array): boolean {
  return WebAssembly.validate(bytes as Uint8Array<ArrayBuffer>);
}

function importTable(mod: binaryen.Module, size: number): void {
  mod.setFeatures(mod.getFeatures() | binaryen.Features.ReferenceTypes);
  mod.addTable(TABLE_NAME, size, UNLIMITED);
  mod.addTableImport(TABLE_NAME, LINK_MODULE, TABLE);
}

/** An imported function of the main module that becomes a call of its slot. */
interface ImportToCall {
  name: string;
  slot: number;
  params: number;
  results: number;
}

/** The imported functions of `calls` in the main module; undefined when it does not import them all. */
function importsToCall(
  mod: binaryen.Module,
  calls: TablePlan["calls"],
): ImportToCall[] | undefined {
  const bySource = new Map(calls.map((c) => [`${c.module}\0${c.field}`, c.slot]));
  const found: ImportToCall[] = [];
  for (let i = 0; i < mod.getNumFunctions(); i++) {
    const info = binaryen.getFunctionInfo(mod.getFunctionByIndex(i));
    if (!info.module) continue;
    const slot = bySource.get(`${info.module}\0${info.base}`);
    if (slot !== undefined) {
      found.push({ name: info.name, slot, params: info.params, results: info.results });
    }
  }
  return found.length === calls.length ? found : undefined;
}

/** The main module with each of `found` made a function of its own that calls its slot of the imported table. */
function callThroughTable(mod: binaryen.Module, found: ImportToCall[], size: number): void {
  importTable(mod, size);
  for (const f of found) {
    const args = binaryen.expandType(f.params).map((type, i) => mod.local.get(i, type));
    mod.removeFunction(f.name);
    mod.addFunction(
      f.name,
      f.params,
      f.results,
      [],
      mod.call_indirect(TABLE_NAME, mod.i32.const(f.slot), args, f.params, f.results),
    );
  }
}

/**
 * The adapter's functions and exports for `slots`; undefined when one is not
 * an exported function.
 */
function exportsToFill(
  mod: binaryen.Module,
  slots: TablePlan["slots"],
): { slot: number; name: string; func: string }[] | undefined {
  const fills = [];
  const names = new Set<string>();
  for (const { slot, name } of slots) {
    if (names.has(name)) return undefined; // its export goes with the first slot
    names.add(name);
    const exported = mod.getExport(name);
    if (!exported) return undefined;
    const info = binaryen.getExportInfo(exported);
    if (info.kind !== binaryen.ExternalFunction) return undefined;
    fills.push({ slot, name, func: info.value });
  }
  return fills;
}

/** The adapter with its exports of `fills` put in the imported table, and no longer exported. */
function fillTable(
  mod: binaryen.Module,
  fills: { slot: number; name: string; func: string }[],
  size: number,
): void {
  importTable(mod, size);
  for (const { slot, name, func } of fills) {
    mod.addActiveElementSegment(TABLE_NAME, `sausage$link$${slot}`, [func], mod.i32.const(slot));
    mod.removeExport(name);
  }
}
