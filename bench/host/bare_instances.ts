/**
 * The floor under any scheme that makes a fresh instance per call: the
 * compiled core modules of a component instantiated bare, linked crudely
 * (memories and tables come from the instances made before, every function
 * import is a no-op), with no glue, no WASI, and nothing run. Once on this
 * thread ({@linkcode instantiateCore}), or in a loop on one worker per core
 * ({@linkcode instantiationCeiling}): the most instances per second V8 makes
 * here, which no host that starts a fresh instance per call can pass.
 *
 * @module
 */
import { coreModuleFile } from "../../core/components/direct_link.ts";
import { freshMemory, pooledLimits } from "../../runtime/memory_pool.ts";
import { POOLED_MEMORY_MODULE, type PooledMemoryLimits } from "../../runtime/messages.ts";

/** What each import of a bare instance gets. */
type Source = "noop" | "cell" | "pages" | "interrupts" | "memory" | "table" | PooledMemoryLimits;

/** The modules in an order that links, and the source of each of their imports. */
export interface BarePlan {
  steps: {
    module: WebAssembly.Module;
    imports: { module: string; name: string; from: Source }[];
  }[];
}

/** The interrupt imports of a bare instance (a fresh process gets its cell in a shared memory). */
export interface BareInterrupts {
  interrupts: WebAssembly.Memory;
  cell: WebAssembly.Global;
}

/** Fresh interrupt imports. */
export function bareInterrupts(): BareInterrupts {
  return {
    interrupts: new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true }),
    cell: new WebAssembly.Global({ value: "i32", mutable: true }, 1),
  };
}

/**
 * Orders the modules so that each finds the memory and table it imports in
 * an instance made before it.
 */
export function planBare(modules: Record<string, WebAssembly.Module>): BarePlan {
  const steps: BarePlan["steps"] = [];
  let memories = 0;
  let tables = 0;
  let waiting = Object.entries(modules);
  while (waiting.length > 0) {
    const later: typeof waiting = [];
    for (const [file, module] of waiting) {
      const imports: BarePlan["steps"][number]["imports"] = [];
      let ready = true;
      for (const i of WebAssembly.Module.imports(module)) {
        let from: Source | undefined;
        if (i.kind === "function") from = "noop";
        else if (i.kind === "global") from = i.module === POOLED_MEMORY_MODULE ? "pages" : "cell";
        else if (i.kind === "memory" && i.module === POOLED_MEMORY_MODULE) {
          // the memory a worker takes from its pool: a fresh one here, as a fresh instance has
          from = pooledLimits(module) ?? undefined;
        } else if (i.kind === "memory") {
          from = i.name === "interrupts" ? "interrupts" : memories > 0 ? "memory" : undefined;
        } else if (i.kind === "table") from = tables > 0 ? "table" : undefined;
        if (from === undefined) {
          ready = false;
          break;
        }
        imports.push({ module: i.module, name: i.name, from });
      }
      if (!ready) {
        later.push([file, module]);
        continue;
      }
      steps.push({ module, imports });
      for (const e of WebAssembly.Module.exports(module)) {
        if (e.kind === "memory") memories++;
        if (e.kind === "table") tables++;
      }
    }
    if (later.length === waiting.length) {
      throw new Error(
        `cannot link ${later.map(([f]) => f).join(", ")}: a memory or table is missing`,
      );
    }
    waiting = later;
  }
  return { steps };
}

/** Makes one bare instance of each module of `plan`. */
export function instantiateBare(plan: BarePlan, interrupts: BareInterrupts): void {
  const memories: WebAssembly.Memory[] = [];
  const tables: WebAssembly.Table[] = [];
  const noop = () => {};
  let pages: WebAssembly.Global | undefined;
  for (const step of plan.steps) {
    const imports: Record<string, Record<string, WebAssembly.ImportValue>> = {};
    for (const i of step.imports) {
      const value = typeof i.from === "object"
        ? freshMemory(i.from)
        : i.from === "noop"
        ? noop
        : i.from === "cell"
        ? interrupts.cell
        : i.from === "pages"
        ? (pages ??= new WebAssembly.Global({ value: "i32", mutable: true }, 0))
        : i.from === "interrupts"
        ? interrupts.interrupts
        : i.from === "memory"
        ? memories[0]
        : tables[0];
      (imports[i.module] ??= {})[i.name] = value;
    }
    const instance = new WebAssembly.Instance(step.module, imports);
    for (const e of Object.values(instance.exports)) {
      if (e instanceof WebAssembly.Memory && !memories.includes(e)) memories.push(e);
      if (e instanceof WebAssembly.Table) tables.push(e);
    }
  }
}

/**
 * Instantiates compiled core modules once, bare, with fresh interrupt
 * imports, and returns the milliseconds it took (the order of the modules
 * is worked out each time too).
 */
export function instantiateCore(modules: Record<string, WebAssembly.Module>): number {
  const start = performance.now();
  instantiateBare(planBare(modules), bareInterrupts());
  return performance.now() - start;
}

/**
 * The modules the glue instantiates: jco compiles every core module of the
 * component, but a glue linked without the fixup (`direct_link.ts`) no
 * longer instantiates it. All of them when the glue names none.
 */
export function instantiatedModules(
  glue: string,
  modules: Record<string, WebAssembly.Module>,
): Record<string, WebAssembly.Module> {
  const used: Record<string, WebAssembly.Module> = {};
  for (const [, name] of glue.matchAll(/instantiateCore\(yield (module\d+)\b/g)) {
    const file = coreModuleFile(glue, name);
    if (file !== undefined && modules[file]) used[file] = modules[file];
  }
  return Object.keys(used).length > 0 ? used : modules;
}

/** What a ceiling thread is told, and what it answers. */
export type CeilingMessage =
  | { t: "warm"; modules: Record<string, WebAssembly.Module>; count: number }
  | { t: "run"; ms: number; windowMs: number };
/** A ceiling thread's answer: `warm` when warmed up, then the instances made in each window. */
export type CeilingAnswer = { t: "warm" } | { t: "counts"; counts: number[] };

/**
 * Instances per second of bare instantiation on `threads` workers at once,
 * in windows of `windowMs` over `ms` (all threads summed per window), after
 * `warmup` instantiations on each. Each instance reuses one set of
 * interrupt imports, as the processes of a worker share theirs.
 */
export async function instantiationCeiling(
  modules: Record<string, WebAssembly.Module>,
  options: { threads: number; ms: number; windowMs: number; warmup: number },
): Promise<number[]> {
  const workers = Array.from(
    { length: options.threads },
    () => new Worker(new URL("./bare_instances_worker.ts", import.meta.url), { type: "module" }),
  );
  try {
    const answers = (w: Worker) =>
      new Promise<CeilingAnswer>((resolve, reject) => {
        w.onmessage = (e: MessageEvent<CeilingAnswer>) => resolve(e.data);
        w.onerror = (e) => {
          e.preventDefault();
          reject(new Error(`a ceiling thread failed: ${e.message}`));
        };
      });
    const tell = (message: CeilingMessage) =>
      Promise.all(workers.map((w) => {
        const answer = answers(w);
        w.postMessage(message);
        return answer;
      }));
    await tell({ t: "warm", modules, count: options.warmup });
    const counts = await tell({ t: "run", ms: options.ms, windowMs: options.windowMs });
    const windows = Math.floor(options.ms / options.windowMs);
    return Array.from(
      { length: windows },
      (_, i) =>
        counts.reduce((sum, a) => sum + (a.t === "counts" ? a.counts[i] ?? 0 : 0), 0) * 1000 /
        options.windowMs,
    );
  } finally {
    for (const w of workers) w.terminate();
  }
}
