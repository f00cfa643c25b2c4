/**
 * Lets a worker give each new instance of a component a linear memory that
 * an earlier process of it used, zeroed, instead of a fresh one: mapping,
 * faulting in and unmapping a fresh memory per process is kernel work under
 * the one address space of the host, which all its threads wait on.
 *
 * A memory cannot shrink, so a reused one may be larger than the module
 * asks for. The component's one memory becomes an import, and every
 * `memory.size` and `memory.grow` on it, in every core module (the main
 * module and the preview1 adapter that allocates in it), reads and grows a
 * size of the process's own instead: a global `pages` that starts at the
 * module's initial size. The guest sees the sizes a fresh memory would
 * have; what it cannot see is a trap for an access between its size and
 * the memory's real one, which holds zeros or its own data.
 *
 * Components with more than one memory, or a memory of 64 bits, are left as
 * they are and get fresh memories.
 *
 * @module
 */
import binaryen from "binaryen";
import {
  POOLED_IMPORTS,
  POOLED_MEMORY_MODULE,
  POOLED_MEMORY_SECTION,
  type PooledMemoryLimits,
} from "../../runtime/messages.ts";
import { readModule, type Ref, type Slot, slotsOf } from "./expressions.ts";
import { memoryCounts } from "./wasm_sections.ts";

// deno-lint-ignore no-explicit-any
const B = binaryen as any;

const PAGES = "sausage$pages";
const GROW = "sausage$grow";

/**
 * `modules` (core modules by file, before instrumentation) with the
 * component's one memory imported from the worker's pool; the same object
 * when the component has none it can pool.
 */
export function poolMemory(modules: Record<string, Uint8Array>): Record<string, Uint8Array> {
  const read = new Map<string, binaryen.Module>();
  try {
    const edited = poolModules(modules, (file) => {
      let mod = read.get(file);
      if (!mod) read.set(file, mod = readModule(modules[file]));
      return mod;
    });
    if (edited.size === 0) return modules;
    const out = { ...modules };
    for (const file of edited) out[file] = read.get(file)!.emitBinary();
    return out;
  } finally {
    for (const mod of read.values()) mod.dispose();
  }
}

/**
 * Imports the component's one memory from the worker's pool, as
 * {@linkcode poolMemory} does to bytes, by editing the binaryen modules that
 * `read` gives for the files of `modules` (their bytes, read only for the
 * count of their memories). Returns the files it edited: none when the
 * component has no memory it can pool, and then no module was touched.
 */
export function poolModules(
  modules: Record<string, Uint8Array>,
  read: (file: string) => binaryen.Module,
): Set<string> {
  const none = new Set<string>();
  const counts = Object.entries(modules).map(([file, bytes]) => ({
    file,
    ...memoryCounts(bytes),
  }));
  const owners = counts.filter((c) => c.defined > 0);
  if (owners.length !== 1 || owners[0].defined !== 1 || owners[0].imported !== 0) return none;
  if (counts.some((c) => c.defined + c.imported > 1)) return none;
  // every module's memory first, so that none is edited when one cannot be
  const plans: Plan[] = [];
  for (const c of counts) {
    if (c.defined + c.imported === 0) continue;
    const plan = planOf(c.file, read(c.file), c.defined === 1);
    if (plan === undefined) return none;
    plans.push(plan);
  }
  const edited = new Set<string>();
  for (const plan of plans) if (rewrite(plan)) edited.add(plan.file);
  return edited;
}

/** One module's memory, as its rewrite needs it. */
interface Plan {
  file: string;
  mod: binaryen.Module;
  memory: binaryen.MemoryInfo;
  /** The memory's name, when the module defines it (and exports it). */
  owned?: string;
}

/** What one module's rewrite needs; undefined when it cannot be done. */
function planOf(file: string, mod: binaryen.Module, owner: boolean): Plan | undefined {
  const memory = mod.getMemoryInfo();
  if (memory.is64) return undefined;
  if (!owner) return { file, mod, memory };
  let name: string | undefined;
  for (let i = 0; i < mod.getNumExports(); i++) {
    const e = binaryen.getExportInfo(mod.getExportByIndex(i));
    if (e.kind === binaryen.ExternalMemory) name = e.value;
  }
  if (name === undefined) return undefined; // no one else can reach it: nothing to gain
  return { file, mod, memory, owned: name };
}

/**
 * One module's memory made the pool's (when it defines it) and its size
 * and growth made the process's; false when nothing in it had to change.
 */
function rewrite({ mod, memory, owned }: Plan): boolean {
  if (owned !== undefined) {
    const limits: PooledMemoryLimits = {
      initial: memory.initial,
      maximum: memory.max ?? null,
      shared: memory.shared,
    };
    mod.addMemoryImport(owned, POOLED_MEMORY_MODULE, POOLED_IMPORTS.memory, memory.shared);
    mod.addCustomSection(POOLED_MEMORY_SECTION, new TextEncoder().encode(JSON.stringify(limits)));
  }
  const { sizes, grows } = sizeAndGrowth(mod);
  if (sizes.length + grows.length === 0) return owned !== undefined;
  mod.addGlobalImport(PAGES, POOLED_MEMORY_MODULE, POOLED_IMPORTS.pages, binaryen.i32, true);
  addGrow(mod);
  for (const { slot } of sizes) slot.set(mod.global.get(PAGES, binaryen.i32));
  // deepest first: a growth inside another's delta is replaced before its parent is read
  for (const { slot, e } of grows.reverse()) {
    slot.set(mod.call(GROW, [B.MemoryGrow.getDelta(e)], binaryen.i32));
  }
  return true;
}

/** Every `memory.size` and `memory.grow` of the module's functions, with the slot it sits in. */
function sizeAndGrowth(mod: binaryen.Module) {
  const sizes: { slot: Slot; e: Ref }[] = [];
  const grows: { slot: Slot; e: Ref }[] = [];
  for (let i = 0; i < mod.getNumFunctions(); i++) {
    const f = mod.getFunctionByIndex(i);
    const fn = binaryen.getFunctionInfo(f);
    if (fn.module) continue;
    const body = B._BinaryenFunctionGetBody(f);
    const stack: Slot[] = [{ ref: body, set: (v) => B._BinaryenFunctionSetBody(f, v) }];
    while (stack.length > 0) {
      const slot = stack.pop()!;
      const e = slot.ref;
      if (!e) continue;
      const id = B._BinaryenExpressionGetId(e);
      if (id === B.MemorySizeId) sizes.push({ slot, e });
      else if (id === B.MemoryGrowId) grows.push({ slot, e });
      const children = slotsOf(e);
      if (!children) {
        throw new RangeError(
          `unsupported wasm instruction (binaryen expression id ${id}) in function ${fn.name}`,
        );
      }
      for (const child of children) stack.push(child);
    }
  }
  return { sizes, grows };
}

/**
 * `sausage$grow(delta)`: `memory.grow` on the process's size. The real
 * memory grows only past what an earlier process already grew it to; its
 * maximum is the module's, so a growth past it fails as it would.
 */
function addGrow(mod: binaryen.Module): void {
  const i32 = binaryen.i32;
  const delta = () => mod.local.get(0, i32);
  const wanted = () => mod.local.get(1, i32);
  const old = () => mod.local.get(2, i32);
  const fail = () => mod.return(mod.i32.const(-1));
  mod.addFunction(
    GROW,
    binaryen.createType([i32]),
    i32,
    [i32, i32],
    mod.block(null, [
      mod.local.set(2, mod.global.get(PAGES, i32)),
      mod.local.set(1, mod.i32.add(old(), delta())),
      mod.if(mod.i32.lt_u(wanted(), old()), fail()),
      mod.if(
        mod.i32.gt_u(wanted(), mod.memory.size()),
        mod.if(
          mod.i32.eq(mod.memory.grow(mod.i32.sub(wanted(), mod.memory.size())), mod.i32.const(-1)),
          fail(),
        ),
      ),
      mod.global.set(PAGES, wanted()),
      old(),
    ], i32),
  );
}
