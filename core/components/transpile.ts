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
import { transpileBytes } from "@bytecodealliance/jco-transpile";
import { instrument } from "./instrument.ts";
import { poolMemory } from "./pooled_memory.ts";
import { linkDirect } from "./direct_link.ts";
import { linkThroughTable } from "./table_link.ts";
import { keepExports } from "./wasm_sections.ts";
import { makeRecyclable } from "./recycle.ts";
import {
  ASYNC_WASI_EXPORTS,
  ASYNC_WASI_IMPORTS,
  checkComponentHeader,
  ComponentError,
  type TranspiledComponent,
} from "./format.ts";

/** Transpiles and instruments `bytes`; `name` only labels errors. */
export async function transpileComponent(
  bytes: Uint8Array,
  name: string,
): Promise<TranspiledComponent> {
  checkComponentHeader(bytes, name);
  let result;
  try {
    result = await transpileBytes(bytes, {
      name: "plugin",
      instantiation: "async",
      asyncMode: "jspi",
      asyncImports: ASYNC_WASI_IMPORTS,
      asyncExports: ASYNC_WASI_EXPORTS,
      emitTypescriptDeclarations: false,
      base64Cutoff: 0,
    });
  } catch (e) {
    throw new ComponentError(`${name} is not a valid component: ${errorText(e)}`);
  }
  const exports = result.exports.map(([n]) => n);
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
  let modules: Record<string, Uint8Array> = {};
  let loops = 0;
  const unresettable: Record<string, string | undefined> = {};
  let raw: Record<string, Uint8Array> = {};
  for (const [file, content] of files) {
    if (!file.endsWith(".wasm")) continue;
    raw[file] = file === link?.shim.file ? keepExports(content, link.shim.keep) : content;
  }
  try {
    raw = poolMemory(raw);
  } catch (e) {
    throw new ComponentError(`${name}: ${errorText(e)}`);
  }
  for (const [file, content] of Object.entries(raw)) {
    try {
      const out = instrument(content);
      modules[file] = out.bytes;
      loops += out.report.loops;
      unresettable[file] = out.report.unresettable;
    } catch (e) {
      throw new ComponentError(`${name}: ${errorText(e)}`);
    }
  }
  const table = linkThroughTable(js, link, modules);
  if (table && link) {
    js = table.glue;
    modules = { ...modules, ...table.modules };
    modules[link.shim.file] = keepExports(modules[link.shim.file], table.shimKeep);
  }
  // last: the globals it exports must be those of the modules as they run
  ({ glue: js, modules } = makeRecyclable(js, modules, unresettable));
  return { js, modules, imports: result.imports, exports, loops };
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
