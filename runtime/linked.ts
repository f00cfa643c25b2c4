/**
 * A component linked once and run by one process after another of its
 * version, on one worker: after a clean exit, everything the last process
 * could change is put back as linking left it, and the next process finds
 * the instance as a fresh one would be (see `core/components/recycle.ts` for
 * what a transpile adds to make that possible).
 *
 * What is put back: the linear memory (zeroed to its real size, then the
 * image linking left in it), the guest's memory size, every mutable global
 * of every core module, and the glue's handle tables, lent objects and task
 * stacks. What moves to the next process: its WASI (the glue's imports
 * forward to the process it serves now) and its interrupt cell. Tables and
 * segments are not put back, so a module that changes them is never reused;
 * nor is an instance after a trap or a kill (a suspended stack of the guest
 * could still run), nor one that imports the network (its classes belong to
 * one process).
 *
 * @module
 */
import type { ProcessMemory } from "./memory_pool.ts";
import type { InstanceControl, Scheduler } from "./scheduler.ts";
import { INTERRUPT_MODULE, RECYCLE_GLOBAL_PREFIX, RESET_KEY } from "./messages.ts";
import { NETWORK_INTERFACES } from "./wasi/network.ts";
import { profileImports, type ProfileOwner } from "./profile.ts";

/** The jco glue of one component version, loaded once per worker. */
export interface Glue {
  instantiate(
    getCoreModule: (name: string) => WebAssembly.Module,
    imports: Record<string, unknown>,
    instantiateCore: (module: WebAssembly.Module, imports: Record<string, unknown>) => unknown,
  ): Promise<Component>;
  modules: Record<string, WebAssembly.Module>;
}

/** What the glue's `instantiate` gives: the command's entry point, and its reset when it has one. */
export interface Component {
  run: { run(): Promise<void> };
  [RESET_KEY]?: () => void;
}

/** The WASI of one process, by interface: functions, and classes every process shares. */
export type Wasi = Record<string, Record<string, unknown>>;

/** What {@linkcode LinkedComponent.link} needs besides the glue. */
export interface LinkOptions {
  /** Which instances may serve one another's processes: the version and its limits. */
  key: string;
  scheduler: Scheduler;
  /** The WASI of the first process. */
  wasi: Wasi;
  control: InstanceControl;
  memory: ProcessMemory;
  /** Whom profiled imports are charged to: the process served now. */
  owner: ProfileOwner;
  /** False: it serves its first process only (the host turned reuse off). */
  reuse: boolean;
}

const usesInterrupts = new WeakMap<WebAssembly.Module, boolean>();
function needsInterrupts(module: WebAssembly.Module): boolean {
  let known = usesInterrupts.get(module);
  if (known === undefined) {
    known = WebAssembly.Module.imports(module).some((i) => i.module === INTERRUPT_MODULE);
    usesInterrupts.set(module, known);
  }
  return known;
}

const CLASS = /^class[\s{]/;
function isClass(value: unknown): boolean {
  return typeof value === "function" && CLASS.test(Function.prototype.toString.call(value));
}

/** A linked component and what it needs to serve another process. */
export class LinkedComponent {
  readonly key: string;
  readonly component: Component;
  /** The core instances, to find their memories after a trap. */
  readonly cores: WebAssembly.Instance[];
  readonly memory: ProcessMemory;
  readonly control: InstanceControl;
  readonly #scheduler: Scheduler;
  readonly #interrupts: Record<string, unknown>;
  readonly #current: { wasi: Wasi; owner: ProfileOwner };
  /** The classes the glue took from the first process's WASI: every other must give the same. */
  readonly #classes: [string, string, unknown][];
  /** Mutable globals of the core modules, with their values after linking. */
  #globals: [WebAssembly.Global, unknown][] = [];
  /** Why it serves one process only; undefined while it may serve more. */
  #single: string | undefined;

  private constructor(
    options: LinkOptions,
    parts: {
      component: Component;
      cores: WebAssembly.Instance[];
      interrupts: Record<string, unknown>;
      current: { wasi: Wasi; owner: ProfileOwner };
      classes: [string, string, unknown][];
      single: string | undefined;
    },
  ) {
    this.key = options.key;
    this.memory = options.memory;
    this.control = options.control;
    this.#scheduler = options.scheduler;
    this.component = parts.component;
    this.cores = parts.cores;
    this.#interrupts = parts.interrupts;
    this.#current = parts.current;
    this.#classes = parts.classes;
    this.#single = options.reuse ? parts.single : "the host reuses no instance";
    if (!this.component[RESET_KEY]) this.#single ??= "its glue has no reset";
    if (this.#single === undefined && !this.memory.keepImage()) {
      this.#single = "it has no pooled memory";
    }
    try {
      for (const core of this.cores) {
        for (const [name, value] of Object.entries(core.exports)) {
          if (name.startsWith(RECYCLE_GLOBAL_PREFIX) && value instanceof WebAssembly.Global) {
            this.#globals.push([value, value.value]);
          }
        }
      }
    } catch (e) {
      // a global JS cannot read (the transpile refuses v128 ones): this instance serves one
      this.#single ??= `a global cannot be read: ${e}`;
    }
  }

  /** Links `glue` for the process whose WASI and control `options` give. */
  static async link(glue: Glue, options: LinkOptions): Promise<LinkedComponent> {
    const current = { wasi: options.wasi, owner: options.owner };
    const owner: ProfileOwner = {
      get pid() {
        return current.owner.pid;
      },
    };
    const classes: [string, string, unknown][] = [];
    let single: string | undefined;
    // what the glue destructures when it links: functions that call the WASI of the
    // process served at the time of the call, and the classes themselves
    const imports: Record<string, unknown> = {};
    for (const name of Object.keys(options.wasi)) {
      Object.defineProperty(imports, name, {
        enumerable: true,
        get: () => {
          if (NETWORK_INTERFACES.includes(name)) {
            single ??= `it imports ${name}`;
            return options.wasi[name];
          }
          const forwarded: Record<string, unknown> = {};
          for (const [field, value] of Object.entries(options.wasi[name])) {
            if (isClass(value)) {
              classes.push([name, field, value]);
              forwarded[field] = value;
            } else if (typeof value === "function") {
              forwarded[field] = (...args: unknown[]) =>
                (current.wasi[name][field] as (...a: unknown[]) => unknown)(...args);
            } else {
              single ??= `${name} gives ${field}, neither a function nor a class`;
              forwarded[field] = value;
            }
          }
          return forwarded;
        },
      });
    }
    const interrupts = options.scheduler.imports(options.control);
    const cores: WebAssembly.Instance[] = [];
    const component = await glue.instantiate(
      (name) => glue.modules[name],
      imports,
      (module, given) => {
        const pooled = options.memory.importsFor(module);
        const timed = pooled
          ? { ...profileImports(owner, given), ...pooled }
          : profileImports(owner, given);
        const core = new WebAssembly.Instance(
          module,
          (needsInterrupts(module)
            ? { ...timed, [INTERRUPT_MODULE]: interrupts }
            : timed) as WebAssembly.Imports,
        );
        cores.push(core);
        return core;
      },
    );
    return new LinkedComponent(options, {
      component,
      cores,
      interrupts,
      current,
      classes,
      single,
    });
  }

  /**
   * Gives the instance to the next process: its WASI (with the same classes
   * as the first's) and its interrupt cell, in a control of this instance.
   */
  serve(wasi: Wasi, cell: number, owner: ProfileOwner): InstanceControl {
    for (const [name, field, value] of this.#classes) {
      if (wasi[name]?.[field] !== value) {
        throw new Error(`${name}'s ${field} differs between processes: this instance serves one`);
      }
    }
    this.#current.wasi = wasi;
    this.#current.owner = owner;
    const control = this.control;
    control.running = false;
    control.killed = null;
    this.#scheduler.moveCell(control, this.#interrupts, cell);
    return control;
  }

  /**
   * After a clean exit: puts back everything the process could change, so
   * that the next one finds it as linking left it. False when it cannot serve
   * another process (its memory then goes back to the worker's pool).
   */
  reset(): boolean {
    if (this.#single !== undefined || !this.memory.restore()) {
      this.memory.release();
      return false;
    }
    try {
      for (const [global, value] of this.#globals) global.value = value;
      this.component[RESET_KEY]!();
    } catch {
      return false; // half put back: no process gets it, nor its memory
    }
    return true;
  }
}

/**
 * Bytes of instances kept on a worker in all (their memories, and what each
 * holds besides: its glue's objects, some 40 KB), as much as 16 instances of
 * 4 MiB. No count per version: an instance is kept only when its process
 * ends, so a version never has more kept than it had processes at once, and
 * a chain of calls as deep as `call_depth` allows finds as many instances
 * ready as it had the time before (fresh ones made each hop cost twice as
 * much, DECISIONS).
 */
const KEEP_BYTES = 64 * 2 ** 20;
/** What a kept instance holds besides its memory. */
const INSTANCE_BYTES = 64 * 1024;
/** A key whose instances no process took or left for this long gives them up. */
const KEEP_IDLE_MS = 60_000;
const kept = new Map<string, LinkedComponent[]>();
const keptSize = new WeakMap<LinkedComponent, number>();
let keptBytes = 0;
const lastUse = new Map<string, number>();
let sweep: ReturnType<typeof setTimeout> | undefined;

/** A reset instance of `key` to serve a new process, if the worker keeps one. */
export function takeLinked(key: string): LinkedComponent | undefined {
  lastUse.set(key, performance.now());
  const list = kept.get(key);
  const linked = list?.pop();
  if (!linked) return undefined;
  keptBytes -= keptSize.get(linked) ?? 0;
  if (list!.length === 0) kept.delete(key);
  return linked;
}

/** After a clean exit of its process: resets `linked` and keeps it for the next, if it can. */
export function keepLinked(linked: LinkedComponent): void {
  lastUse.set(linked.key, performance.now());
  if (!linked.reset()) return;
  const size = linked.memory.heldBytes + INSTANCE_BYTES;
  if (size > KEEP_BYTES) {
    linked.memory.release();
    return;
  }
  let list = kept.get(linked.key);
  list ??= [];
  kept.delete(linked.key); // the key used last goes last
  kept.set(linked.key, list);
  list.push(linked);
  keptSize.set(linked, size);
  keptBytes += size;
  while (keptBytes > KEEP_BYTES) {
    // the key used longest ago gives one up
    const [oldest, entries] = kept.entries().next().value!;
    const dropped = entries.shift()!;
    keptBytes -= keptSize.get(dropped) ?? 0;
    dropped.memory.release();
    if (entries.length === 0) kept.delete(oldest);
  }
  sweep ??= sweepLater();
}

/** Drops the instances kept for versions whose key `matches`; their memories go to the pool. */
export function dropLinked(matches: (key: string) => boolean): void {
  for (const [key, list] of kept) {
    if (!matches(key)) continue;
    for (const linked of list) {
      keptBytes -= keptSize.get(linked) ?? 0;
      linked.memory.release();
    }
    kept.delete(key);
  }
}

/** Drops the keys unused for {@linkcode KEEP_IDLE_MS}, then again while any are kept. */
function sweepLater(): ReturnType<typeof setTimeout> {
  const timer = setTimeout(() => {
    sweep = undefined;
    const now = performance.now();
    dropLinked((key) => now - (lastUse.get(key) ?? 0) >= KEEP_IDLE_MS);
    for (const key of lastUse.keys()) if (!kept.has(key)) lastUse.delete(key);
    if (kept.size > 0) sweep = sweepLater();
  }, KEEP_IDLE_MS);
  Deno.unrefTimer(timer); // kept instances never keep a worker alive
  return timer;
}
