/**
 * Makes a component's instance reusable by the next process of its version:
 * what a worker must put back so that the instance is, to its next guest, a
 * fresh one (see `runtime/linked.ts`, which does it).
 *
 * A core instance holds four kinds of state: its memory, its mutable
 * globals, its tables and its dropped segments. The memory is the worker's
 * (`pooled_memory.ts`) and is restored from an image taken after linking.
 * The mutable globals a module defines are exported here under
 * {@linkcode RECYCLE_GLOBAL_PREFIX}, so that the worker can read their
 * values after linking and write them back. Tables and segments cannot be
 * put back from JS, so a module that changes them as it runs (`table.set`,
 * `table.grow`, `data.drop`: the instrumentation's walk of every function
 * finds them, `instrument.ts`) keeps fresh instances, as does one with a
 * start function (it would have run before the image was taken, with
 * effects the glue does not restore).
 *
 * jco's glue holds state too: the handle tables of resources, the objects
 * the host lent the guest, the stack of tasks. {@linkcode recycleGlue} adds
 * a `sausage:reset` function to what `instantiate` returns, which empties
 * them, and refuses a glue that declares anything else it does not know to
 * be constant once linked: another jco must be looked at first.
 *
 * @example
 * ```ts
 * import { recycleGlue } from "./recycle.ts";
 * const result = recycleGlue("export function instantiate() { let secret = 1; }");
 * console.log(result.reason); // names `secret`: unknown state, so no reuse
 * ```
 *
 * @module
 */
import * as acorn from "acorn";
import {
  importKinds,
  KIND,
  leb,
  Reader,
  rewriteSections,
  SECTION,
  sections,
  skipValueType,
} from "./wasm_sections.ts";
import { RECYCLE_GLOBAL_PREFIX, RESET_KEY } from "../../runtime/messages.ts";

const GLOBAL_SECTION = 6;
const V128 = 0x7b;
const START_SECTION = 8;

/** A module made reusable, or why it cannot be. */
export type RecycledModule = { bytes: Uint8Array; reason?: undefined } | {
  bytes?: undefined;
  reason: string;
};

/**
 * `bytes` (a core module, in its final form) exporting each mutable global
 * it defines; a reason instead when an instance of it cannot be put back
 * (a start function, or a section of a form this does not read). What its
 * code changes is the instrumentation's to find (`instrument.ts`, in the
 * walk it makes anyway: `unresettable`).
 */
export function exportMutableGlobals(bytes: Uint8Array): RecycledModule {
  let imported = 0;
  const mutable: number[] = [];
  const exported = new Set<string>();
  let hasExports = false;
  try {
    for (const { id, body } of sections(bytes)) {
      if (id === START_SECTION) return { reason: "it has a start function" };
      if (id === SECTION.import) {
        imported = importKinds(body).filter((k) => k === KIND.global).length;
      }
      if (id === GLOBAL_SECTION) mutable.push(...mutableGlobals(body, imported));
      if (id === SECTION.export) {
        hasExports = true;
        for (const e of exportsOf(body)) exported.add(e);
      }
    }
  } catch (e) {
    return { reason: `its sections cannot be read: ${e instanceof Error ? e.message : e}` };
  }
  const added = mutable.filter((i) => !exported.has(`${RECYCLE_GLOBAL_PREFIX}${i}`));
  if (added.length === 0) return { bytes };
  if (!hasExports) return { reason: "it has mutable globals and no export section" };
  const out = rewriteSections(bytes, (id, body) => {
    if (id !== SECTION.export) return undefined;
    const r = new Reader(body);
    const count = r.u();
    const content: number[] = [];
    leb(count + added.length, content);
    for (let i = r.at; i < body.length; i++) content.push(body[i]);
    for (const index of added) {
      const name = new TextEncoder().encode(`${RECYCLE_GLOBAL_PREFIX}${index}`);
      leb(name.length, content);
      content.push(...name, KIND.global);
      leb(index, content);
    }
    return content;
  });
  return { bytes: out };
}

/** The indices of the mutable globals a global section defines (after `imported` imports). */
function mutableGlobals(body: Uint8Array, imported: number): number[] {
  const r = new Reader(body);
  const out: number[] = [];
  const count = r.u();
  for (let i = 0; i < count; i++) {
    const type = r.bytes[r.at];
    skipValueType(r);
    if (r.byte() === 1) {
      // JS can neither read nor write a v128 global
      if (type === V128) throw new RangeError("a mutable v128 global");
      out.push(imported + i);
    }
    constantExpression(r);
  }
  return out;
}

/** Skips a constant expression, up to and with its `end`. */
function constantExpression(r: Reader): void {
  for (;;) {
    const op = r.byte();
    if (op === 0x0b) return; // end
    if (op === 0x41 || op === 0x42) r.skipLeb(); // i32.const, i64.const
    else if (op === 0x43) r.at += 4; // f32.const
    else if (op === 0x44) r.at += 8; // f64.const
    else if (op === 0x23 || op === 0xd2) r.u(); // global.get, ref.func
    else if (op === 0xd0) r.skipLeb(); // ref.null and its heap type
    else if ((op >= 0x6a && op <= 0x6c) || (op >= 0x7c && op <= 0x7e)) continue; // extended const
    else if (op === 0xfd && r.u() === 12) r.at += 16; // v128.const
    else throw new RangeError(`a constant expression with opcode 0x${op.toString(16)}`);
  }
}

function exportsOf(body: Uint8Array): string[] {
  const r = new Reader(body);
  const names: string[] = [];
  for (let n = r.u(); n > 0; n--) {
    names.push(r.name());
    r.byte();
    r.u();
  }
  return names;
}

/** The glue with its reset function, or why it cannot have one. */
export type RecycledGlue = { glue: string; reason?: undefined } | {
  glue?: undefined;
  reason: string;
};

/** State the glue declares that a reset empties, by name, with the statement that does it. */
const RESETS: [RegExp, (name: string) => string][] = [
  [/^handleTable\d+$/, (n) => `${n}.splice(0, ${n}.length, T_FLAG, 0);`],
  [/^captureTable\d+$/, (n) => `${n}.clear();`],
  [/^captureCnt\d+$/, (n) => `${n} = 0;`],
  [/^curResourceBorrows$/, (n) => `${n} = [];`],
  [/^(ASYNC_TASKS_BY_COMPONENT_IDX|ASYNC_STATE)$/, (n) => `${n}.clear();`],
  [/^(ASYNC_CURRENT_TASK_IDS|ASYNC_CURRENT_COMPONENT_IDXS)$/, (n) => `${n}.length = 0;`],
];

/**
 * What the glue declares that stays as linking left it: constants, caches
 * keyed by what they hold, counters of IDs, and what linking assigns once
 * (the instances' exports, the memory, the entry point).
 */
const CONSTANT = new RegExp(
  "^(" + [
    String.raw`dv|dataView|toUint\d+|utf8Decoder|utf8Encoder|utf8EncodedLen|T_FLAG|NEXT_TASK_ID`,
    String.raw`_debugLog|ASYNC_DETERMINISM|_coinFlip|I32_MAX|I32_MIN|_typeCheckValidI32`,
    String.raw`isNode|_fs|symbolCabiDispose|symbolRscHandle|symbolRscRep|symbolDispose`,
    String.raw`handleTables|hasOwnProperty|module\d+|exports\d+|memory\d+|realloc\d+`,
    String.raw`postReturn\d+|trampoline\d+|run\d+Run|run\d+|gen|promise|resolve|reject`,
    String.raw`maybeSyncReturn`,
  ].join("|") + ")$",
);

// deno-lint-ignore no-explicit-any
type Node = any;

/**
 * `glue` (jco's, an ES module exporting `instantiate`) with a reset
 * function in what `instantiate` returns (see the module's comment); a
 * reason instead when it declares state this does not know.
 */
export function recycleGlue(glue: string): RecycledGlue {
  let ast: Node;
  try {
    ast = acorn.parse(glue, { ecmaVersion: "latest", sourceType: "module" });
  } catch (e) {
    return { reason: `the glue does not parse: ${e instanceof Error ? e.message : e}` };
  }
  const instantiate = ast.body.find((s: Node) =>
    s.type === "ExportNamedDeclaration" && s.declaration?.id?.name === "instantiate"
  )?.declaration;
  if (!instantiate) return { reason: "the glue exports no function `instantiate`" };
  const resets: string[] = [];
  let returned: Node;
  const scan = (body: Node[], inGenerator: boolean): string | undefined => {
    for (const statement of body) {
      if (statement.type === "FunctionDeclaration") continue;
      if (statement.type === "ClassDeclaration") {
        const state = staticState(statement);
        if (state) return state;
        continue;
      }
      if (inGenerator && statement.type === "ReturnStatement") returned = statement.argument;
      if (statement.type !== "VariableDeclaration") {
        const nested = nestedDeclaration(statement);
        if (nested) return nested;
        continue;
      }
      for (const d of statement.declarations) {
        if (d.id.type === "ObjectPattern" && isImportsLookup(d.init)) continue;
        if (d.id.type !== "Identifier") return `a declaration of another form at ${d.start}`;
        const name = d.id.name;
        if (name === "gen" && !inGenerator) {
          const generator = d.init?.callee;
          if (generator?.type !== "FunctionExpression" || !generator.generator) {
            return "`gen` is not the generator jco makes";
          }
          const inner = scan(generator.body.body, true);
          if (inner) return inner;
          continue;
        }
        const reset = RESETS.find(([pattern]) => pattern.test(name));
        if (reset) resets.push(reset[1](name));
        else if (!CONSTANT.test(name)) return `the glue declares \`${name}\`, unknown state`;
      }
    }
    return undefined;
  };
  const unknown = scan(instantiate.body.body, false);
  if (unknown) return { reason: unknown };
  if (returned?.type !== "ObjectExpression") {
    return { reason: "the linking generator returns no object" };
  }
  const at = returned.start + 1;
  const reset = `\n    ${JSON.stringify(RESET_KEY)}: () => {\n      ${
    resets.join("\n      ")
  }\n    },`;
  return { glue: glue.slice(0, at) + reset + glue.slice(at) };
}

/** Static fields of jco's classes that are tables of constants (`AsyncTask.State`, …). */
const CONSTANT_STATICS = new Set(["State", "BlockResult"]);

/** Why a class of the glue keeps state of its own (a static field or block), if it does. */
function staticState(declaration: Node): string | undefined {
  for (const member of declaration.body.body) {
    if (member.type === "StaticBlock") return `class ${declaration.id.name} has a static block`;
    if (member.type !== "PropertyDefinition" || !member.static) continue;
    const name = member.key?.name;
    if (CONSTANT_STATICS.has(name) && isConstantObject(member.value)) continue;
    return `class ${declaration.id.name} has a static field \`${name ?? "?"}\`, unknown state`;
  }
  return undefined;
}

/** An object literal of literals (or of such objects). */
function isConstantObject(node: Node): boolean {
  if (node?.type === "Literal") return true;
  if (node?.type === "UnaryExpression" && node.argument.type === "Literal") return true;
  return node?.type === "ObjectExpression" &&
    node.properties.every((p: Node) => p.type === "Property" && isConstantObject(p.value));
}

/**
 * A declaration inside a statement of `instantiate` or of the generator
 * (an `if`, a block: a `var` there belongs to the whole scope, and a
 * closure may keep a `let`), outside the functions it defines; undefined
 * when there is none.
 */
function nestedDeclaration(statement: Node): string | undefined {
  const stack: Node[] = [statement];
  while (stack.length > 0) {
    const node = stack.pop();
    if (!node || typeof node.type !== "string") continue;
    if (
      node.type === "FunctionExpression" || node.type === "ArrowFunctionExpression" ||
      node.type === "FunctionDeclaration"
    ) continue;
    if (
      node.type === "VariableDeclaration" || node.type === "ClassDeclaration" ||
      node.type === "ClassExpression"
    ) return `the glue declares state inside a statement at ${node.start}`;
    for (const value of Object.values(node)) {
      if (Array.isArray(value)) stack.push(...value);
      else if (value && typeof value === "object") stack.push(value);
    }
  }
  return undefined;
}

/** `imports['wasi:…']`: what jco destructures the host's functions and classes from. */
function isImportsLookup(init: Node): boolean {
  return init?.type === "MemberExpression" && init.object.type === "Identifier" &&
    init.object.name === "imports";
}

/**
 * The glue and core modules of a component made reusable together, or as
 * they were with the reason when either cannot be: a reset of the glue
 * alone, or of some modules, would leave the rest as the last process left
 * it.
 */
export function makeRecyclable(
  glue: string,
  modules: Record<string, Uint8Array>,
  unresettable: Record<string, string | undefined> = {},
): { glue: string; modules: Record<string, Uint8Array>; reason?: string } {
  const out: Record<string, Uint8Array> = {};
  for (const [file, bytes] of Object.entries(modules)) {
    const reason = unresettable[file];
    if (reason) return { glue, modules, reason: `${file}: ${reason}` };
    const made = exportMutableGlobals(bytes);
    if (made.reason !== undefined) return { glue, modules, reason: `${file}: ${made.reason}` };
    out[file] = made.bytes;
  }
  const edited = recycleGlue(glue);
  if (edited.reason !== undefined) return { glue, modules, reason: edited.reason };
  return { glue: edited.glue, modules: out };
}
