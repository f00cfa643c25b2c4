/**
 * Turns a `wasi:cli/command` component into what a plugin worker runs: the
 * JS glue from jco (async instantiation, JSPI for blocking WASI calls) and
 * the component's core modules, instrumented for preemption, with their
 * memory taken from the worker's pool (`pooled_memory.ts`).
 *
 * This is pure computation on bytes; {@linkcode ./cache.ts} stores the result
 * by the component's sha256. It loads jco and binaryen (large), so the cache
 * imports it only on a miss.
 *
 * @module
 */
import type binaryen from "binaryen";
import { instrumentModule } from "./instrument.ts";
import { poolModules } from "./pooled_memory.ts";
import { linkDirect } from "./direct_link.ts";
import { linkModules, planTableLink, type TablePlan, validates } from "./table_link.ts";
import { readModule } from "./expressions.ts";
import { keepExports } from "./wasm_sections.ts";
import { makeRecyclable } from "./recycle.ts";
import { coreModuleFile, coreModulesOf, type JcoGlue, modulesMatch } from "./jco_shape.ts";
import {
  ASYNC_WASI_EXPORTS,
  ASYNC_WASI_IMPORTS,
  checkComponentHeader,
  ComponentError,
  type TranspiledComponent,
} from "./format.ts";

/** A glue to use instead of jco's, and where to tell the glue jco made. */
export interface GlueOptions {
  /** jco's glue for a component of this shape (`jco_shape.ts`): jco does not run. */
  glue?: JcoGlue;
  /** Gets jco's glue when jco ran and its modules are those read from the component. */
  onGlue?: (glue: JcoGlue) => void;
  /** Told when jco runs (not from a known shape). */
  onJco?: () => void;
}

/** Transpiles and instruments `bytes`; `name` only labels errors. */
export async function transpileComponent(
  bytes: Uint8Array,
  name: string,
  options: GlueOptions = {},
): Promise<TranspiledComponent> {
  checkComponentHeader(bytes, name);
  let result = fromShape(bytes, options.glue);
  if (!result) {
    options.onJco?.();
    result = await jco(bytes, name);
  }
  const jcoGlue = result.files["plugin.js"];
  if (!options.glue && options.onGlue && jcoGlue && modulesMatch(bytes, "plugin", result.files)) {
    const js = new TextDecoder().decode(jcoGlue);
    options.onGlue({ js, imports: result.imports, exports: result.exports });
  }
  const exports = result.exports;
  if (!exports.some((e) => e.startsWith("wasi:cli/run@"))) {
    throw new ComponentError(
      `${name} is not a wasi:cli/command component: it does not export wasi:cli/run ` +
        `(it exports ${
          exports.join(", ") || "nothing"
        }). Give the crate a \`fn main\` (a binary target).`,
    );
  }
  const files = Object.entries(result.files);
  const glue = files.find(([file]) => file.endsWith(".js"))?.[1];
  let js = glue ? lazyTasks(debugFlagReadOnce(strictStrings(new TextDecoder().decode(glue)))) : "";
  const link = linkDirect(js);
  if (link) js = link.glue;
  const raw: Record<string, Uint8Array> = {};
  for (const [file, content] of files) {
    if (!file.endsWith(".wasm")) continue;
    raw[file] = file === link?.shim.file ? keepExports(content, link.shim.keep) : content;
  }
  // the table link is decided from the glue, before the modules are read
  const plan = planTableLink(js, link, raw);
  const built = (plan && rewriteModules(raw, plan, name)) ?? rewriteModules(raw, undefined, name)!;
  let { modules } = built;
  if (built.linked && plan && link) {
    js = plan.glue;
    modules[link.shim.file] = keepExports(modules[link.shim.file], plan.shimKeep);
  }
  // last: the globals it exports must be those of the modules as they run
  ({ glue: js, modules } = makeRecyclable(js, modules, built.unresettable));
  return { js, modules, imports: result.imports, exports, loops: built.loops };
}

/** The core modules as a worker runs them, with what the instrumentation found. */
interface Rewritten {
  modules: Record<string, Uint8Array>;
  loops: number;
  /** By file: what a reused instance could not put back (`recycle.ts`). */
  unresettable: Record<string, string | undefined>;
  /** Whether the modules are linked through the shim's table (`table_link.ts`). */
  linked: boolean;
}

/**
 * The core modules `raw` rewritten for a worker, each read by binaryen once
 * and written once, and only when something in it changed: its memory taken
 * from the pool (`pooled_memory.ts`), then the interrupt checks
 * (`instrument.ts`), then the table link of `plan` (`table_link.ts`), which
 * is left out when the modules are not of its form. Undefined when the
 * table's edits failed after they began (binaryen refused one, or V8 the
 * result): the caller then rewrites them again without it.
 */
function rewriteModules(
  raw: Record<string, Uint8Array>,
  plan: TablePlan | undefined,
  name: string,
): Rewritten | undefined {
  const read = new Map<string, binaryen.Module>();
  const mod = (file: string) => {
    let m = read.get(file);
    if (!m) read.set(file, m = readModule(raw[file]));
    return m;
  };
  try {
    const edited = new Set<string>();
    let loops = 0;
    const unresettable: Record<string, string | undefined> = {};
    try {
      for (const file of poolModules(raw, mod)) edited.add(file);
      for (const file of Object.keys(raw)) {
        const report = instrumentModule(mod(file));
        if (report.loops > 0) edited.add(file);
        loops += report.loops;
        unresettable[file] = report.unresettable;
      }
    } catch (e) {
      throw new ComponentError(`${name}: ${errorText(e)}`);
    }
    let linked = false;
    if (plan) {
      try {
        linked = linkModules(plan, mod(plan.consumer), mod(plan.provider));
      } catch {
        return undefined;
      }
      if (linked) edited.add(plan.consumer).add(plan.provider);
    }
    const modules = { ...raw };
    for (const file of edited) modules[file] = mod(file).emitBinary();
    if (plan && linked && !validates(modules[plan.consumer])) return undefined;
    if (plan && linked && !validates(modules[plan.provider])) return undefined;
    return { modules, loops, unresettable, linked };
  } finally {
    for (const m of read.values()) m.dispose();
  }
}

/** What jco writes for a component: its files, imports and exports. */
export interface JcoOutput {
  /** The glue `plugin.js` and the core modules `plugin.core.wasm`, `plugin.core2.wasm`, ... */
  files: Record<string, Uint8Array>;
  imports: string[];
  exports: string[];
}

/**
 * jco's output for `bytes`, with the options Sausage runs components with.
 * jco loads on the first call: a transpile from a known shape never loads
 * it (it holds some 200 MB once it has run).
 */
export async function jco(bytes: Uint8Array, name: string): Promise<JcoOutput> {
  const { transpileBytes } = await import("@bytecodealliance/jco-transpile");
  try {
    const result = await transpileBytes(bytes, {
      name: "plugin",
      instantiation: "async",
      asyncMode: "jspi",
      asyncImports: ASYNC_WASI_IMPORTS,
      asyncExports: ASYNC_WASI_EXPORTS,
      emitTypescriptDeclarations: false,
      base64Cutoff: 0,
    });
    const files = result.files as Record<string, Uint8Array>;
    return { files, imports: result.imports, exports: result.exports.map(([n]) => n) };
  } catch (e) {
    throw new ComponentError(`${name} is not a valid component: ${errorText(e)}`);
  }
}

/**
 * What jco would write for `bytes`, from the glue of its shape and its own
 * core modules; undefined when a module does not validate (jco then says why).
 */
function fromShape(bytes: Uint8Array, glue: JcoGlue | undefined): JcoOutput | undefined {
  const modules = glue && coreModulesOf(bytes);
  if (!glue || !modules?.every((m) => WebAssembly.validate(m as Uint8Array<ArrayBuffer>))) {
    return undefined;
  }
  const files: Record<string, Uint8Array> = { "plugin.js": new TextEncoder().encode(glue.js) };
  // copies: each module's buffer is its own, to be transferred from the worker
  modules.forEach((m, i) => files[coreModuleFile("plugin", i)] = m.slice());
  return { files, imports: glue.imports, exports: glue.exports };
}

/** How jco's glue declares the decoder of the strings a component passes to the host. */
const LENIENT_UTF8 = "const utf8Decoder = new TextDecoder();";

/**
 * Makes the glue trap on a string that is not UTF-8, as the component model
 * requires. jco decodes leniently, so two different invalid names would both
 * become the same name with U+FFFD, and reach the same file. A glue that
 * decodes strings without that declaration is refused: another jco must be
 * looked at before it runs. A component that passes no strings has none.
 */
export function strictStrings(glue: string): string {
  if (!glue.includes(LENIENT_UTF8) && /TextDecoder\(/.test(glue)) {
    throw new ComponentError(
      `the glue of this jco does not declare its decoder as \`${LENIENT_UTF8}\`: ` +
        "core/components/transpile.ts must learn its form before strings are decoded strictly",
    );
  }
  return glue.replace(
    LENIENT_UTF8,
    'const utf8Decoder = new TextDecoder("utf-8", { fatal: true });',
  );
}

/** How jco's glue declares its debug log: it reads `JCO_DEBUG` at every call. */
const DEBUG_LOG_PER_CALL = `const _debugLog = (...args) => {
  if (!globalThis?.process?.env?.JCO_DEBUG) { return; }
  console.debug(...args);
}`;

/**
 * Makes the glue read `JCO_DEBUG` once, when it loads, rather than at each
 * of the three to five debug lines of every WASI call: in a worker,
 * `process.env` asks the runtime for the variable each time (0.4 µs hot,
 * several times that right after a process starts). A glue of another form
 * is left as it is; the test of a real component's glue says when that
 * happens.
 */
export function debugFlagReadOnce(glue: string): string {
  return glue.replace(
    DEBUG_LOG_PER_CALL,
    "const _debugLog = globalThis?.process?.env?.JCO_DEBUG\n" +
      "  ? (...args) => console.debug(...args)\n" +
      "  : () => {};",
  );
}

/** How jco's glue makes the task of each call into or out of a component. */
const TASK_PER_CALL =
  `    const newTask = new AsyncTask({ id: nextId, componentIdx, isAsync, entryFnName });
    const newTaskMeta = { id: nextId, componentIdx, task: newTask };`;

/**
 * Makes the glue build a call's `AsyncTask` when something asks for it.
 * The glue starts a task for every WASI call and for `run`, but only the
 * component model's async calls ever read one; built at once, the tasks
 * were 9 of the 40 KB a `probe` process leaves on its worker's heap while
 * it runs (a class with private fields, a promise and its resolvers, each).
 * A glue of another form is left as it is; the test of a real component's
 * glue says when that happens.
 */
export function lazyTasks(glue: string): string {
  return glue.replace(
    TASK_PER_CALL,
    `    let newTask;
    const newTaskMeta = {
      id: nextId,
      componentIdx,
      get task() {
        return newTask ??= new AsyncTask({ id: nextId, componentIdx, isAsync, entryFnName });
      },
    };`,
  );
}

function errorText(e: unknown): string {
  if (e instanceof Error) return e.message;
  if (typeof e === "object" && e && "payload" in e) return String(e.payload);
  return String(e);
}
