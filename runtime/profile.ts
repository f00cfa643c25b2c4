/**
 * Opt-in timestamps of the stages of a call, for the benchmark's profile
 * (`deno task bench --only profile`). Off unless `SAUSAGE_PROFILE=1` is set
 * when the host starts, or {@linkcode enableProfile} was called before its
 * workers start. When off, every hook is one test of a module-level boolean
 * and nothing is recorded or wrapped.
 *
 * Marks carry `performance.timeOrigin + performance.now()`. Each thread reads
 * its origin when it starts, so the threads' clocks usually agree within about
 * 10 µs, but a thread preempted as it starts can be off by more: compare marks
 * of one thread with each other, and across threads only as an estimate. A
 * plugin worker sends its marks over a `BroadcastChannel` when a process
 * ends; the host thread keeps its own.
 *
 * @example
 * ```ts
 * import { enableProfile, mark, takeMarks } from "./profile.ts";
 * enableProfile(true);
 * mark("probe-1", "m.spawn");
 * const [first] = takeMarks();
 * console.log(first.stage); // "m.spawn"
 * enableProfile(false);
 * ```
 *
 * @module
 */
import type { ByteSource } from "./wasi/io.ts";

/** The environment variable that turns profiling on for a host. */
export const PROFILE_ENV = "SAUSAGE_PROFILE";
/** The most marks a thread keeps until they are taken. */
export const MAX_MARKS = 1_000_000;
/** The channel on which plugin workers send their marks. */
export const PROFILE_CHANNEL = "sausage-profile";

/** One timestamp of one process. */
export interface Mark {
  pid: string;
  /** `m.*` on the host's thread, `w.*` in a plugin worker. */
  stage: string;
  /** Milliseconds since the epoch, with sub-microsecond resolution. */
  at: number;
  /** `main` or `worker-<n>`. */
  thread: string;
}

/** The calls of one core import (a WASI function through jco's glue) by one process. */
export interface ImportCalls {
  pid: string;
  /** `<interface>#<function>` as the core module imports it. */
  name: string;
  calls: number;
  /** Time inside the import, glue included; for a suspending import, until it resumed. */
  micros: number;
  suspending: boolean;
}

/** What a plugin worker sends when a process ends. */
export interface WorkerProfile {
  marks: Mark[];
  imports: ImportCalls[];
}

function fromEnv(): boolean {
  try {
    // a plugin worker may not read the environment (its host tells it): ask without a prompt
    const granted = Deno.permissions.querySync({ name: "env", variable: PROFILE_ENV });
    return granted.state === "granted" && Deno.env.get(PROFILE_ENV) === "1";
  } catch {
    return false;
  }
}

let on = fromEnv();
let thread = "main";
let marks: Mark[] = [];
const imports = new Map<string, ImportCalls>();
/** What marks and counts are recorded for: a process, whose ID may be given after it was linked. */
export interface ProfileOwner {
  readonly pid: string;
}

/**
 * jco's glue gives a core module the lowered imports through a shim: the
 * module imports `<interface>#<function>` as the shim's export `n`, and the
 * shim calls the function that module `""` field `n` gives it. Per process,
 * `n` → the WIT name, to name those.
 */
const shimNames = new Map<ProfileOwner, Map<string, string>>();
let channel: BroadcastChannel | undefined;

/** Whether marks are recorded in this thread. */
export function profiling(): boolean {
  return on;
}

/**
 * Turns profiling on or off in this thread. A host's workers follow the
 * host thread's setting when they start. `where` names the thread in marks.
 */
export function enableProfile(value: boolean, where = "main"): void {
  on = value;
  thread = where;
  if (value && where !== "main") patchSuspending();
}

/** Records that process `pid` reached `stage` now. */
export function mark(pid: string, stage: string): void {
  if (!on) return;
  if (marks.length >= MAX_MARKS) return; // nobody took them: a host profiled for ever stays bounded
  marks.push({ pid, stage, at: performance.timeOrigin + performance.now(), thread });
}

/** The marks recorded in this thread so far, removed from it. */
export function takeMarks(): Mark[] {
  const taken = marks;
  marks = [];
  return taken;
}

/** A plugin worker: sends its marks and import counts to the host thread. */
export function sendProfile(): void {
  if (!on || thread === "main") return;
  channel ??= new BroadcastChannel(PROFILE_CHANNEL);
  const byPid = new Map([...shimNames].map(([owner, names]) => [owner.pid, names]));
  const named = [...imports.values()].map((i) => {
    const slot = i.name.startsWith("#") ? byPid.get(i.pid)?.get(i.name.slice(1)) : undefined;
    return slot ? { ...i, name: slot } : i;
  });
  const message: WorkerProfile = { marks: takeMarks(), imports: named };
  imports.clear();
  shimNames.clear();
  channel.postMessage(message);
}

function record(pid: string, name: string, micros: number, suspending: boolean): void {
  const key = `${pid}\n${name}`;
  let calls = imports.get(key);
  if (!calls) {
    calls = { pid, name, calls: 0, micros: 0, suspending };
    imports.set(key, calls);
  }
  calls.calls++;
  calls.micros += micros;
}

interface SuspendingName {
  owner: ProfileOwner;
  name: string;
}

const suspendingNames = new WeakMap<object, SuspendingName>();
let suspendingPatched = false;

/**
 * Times JSPI-suspending imports too: each `WebAssembly.Suspending` made in
 * this worker from now on wraps its function with a timer; its process and
 * name are filled in when a core module is instantiated with it.
 */
function patchSuspending(): void {
  // deno-lint-ignore no-explicit-any
  const wasm = WebAssembly as any;
  if (suspendingPatched || typeof wasm.Suspending !== "function") return;
  suspendingPatched = true;
  const Original = wasm.Suspending;
  wasm.Suspending = function (fn: (...args: unknown[]) => unknown) {
    const who: SuspendingName = { owner: { pid: "?" }, name: "?" };
    const timed = async function (this: unknown, ...args: unknown[]) {
      const t0 = performance.now();
      try {
        return await fn.apply(this, args);
      } finally {
        record(who.owner.pid, who.name, (performance.now() - t0) * 1000, true);
      }
    };
    const suspending = new Original(timed);
    suspendingNames.set(suspending, who);
    return suspending;
  };
}

/**
 * The imports of one core module with each function timed for the process
 * of `owner`; the imports themselves when profiling is off.
 */
export function profileImports<T extends Record<string, unknown> | undefined>(
  owner: ProfileOwner,
  given: T,
): T {
  if (!on || !given) return given; // a module without imports gets none
  const out: Record<string, unknown> = {};
  for (const [module, fields] of Object.entries(given)) {
    if (typeof fields !== "object" || fields === null) {
      out[module] = fields;
      continue;
    }
    const wrapped: Record<string, unknown> = {};
    for (const [field, value] of Object.entries(fields)) {
      const name = `${module}#${field}`;
      const who = typeof value === "object" && value !== null
        ? suspendingNames.get(value)
        : undefined;
      if (who) {
        who.owner = owner;
        who.name = name;
        wrapped[field] = value;
      } else if (typeof value === "function" && /^\d+$/.test(value.name)) {
        // a wasm function of another core instance (named by its index) stays as it is: a JS
        // frame between two wasm frames would stop a JSPI suspension
        let names = shimNames.get(owner);
        if (!names) shimNames.set(owner, names = new Map());
        names.set(value.name, name);
        wrapped[field] = value;
      } else if (typeof value === "function") {
        const fn = value as (...args: unknown[]) => unknown;
        wrapped[field] = (...args: unknown[]) => {
          const t0 = performance.now();
          try {
            return fn(...args);
          } finally {
            record(owner.pid, name, (performance.now() - t0) * 1000, false);
          }
        };
      } else {
        wrapped[field] = value;
      }
    }
    out[module] = wrapped;
  }
  return out as T;
}

/** Stdin of the process of `owner` with its waits marked; the source itself when profiling is off. */
export function profileSource(owner: ProfileOwner, source: ByteSource): ByteSource {
  if (!on) return source;
  return {
    read: (max) => {
      const bytes = source.read(max);
      if (bytes && bytes.length > 0) mark(owner.pid, "w.stdin.read");
      return bytes;
    },
    readable: () => source.readable(),
    whenReadable: () => {
      mark(owner.pid, "w.stdin.wait");
      return source.whenReadable();
    },
    close: source.close ? () => source.close!() : undefined,
  };
}
