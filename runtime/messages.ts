/**
 * The messages between the host (main thread) and a plugin worker.
 *
 * A worker runs many processes, each one component instance. The host tells
 * it what to load and run, feeds stdin, and kills; the worker reports what
 * the processes write and how they end.
 *
 * @module
 */
export { LOG_LINES_PER_SECOND, MAX_LOG_LINE_BYTES, MAX_MESSAGE_BYTES } from "../protocol/limits.ts";
import type { AnswerId } from "../protocol/answer.ts";

/** A host folder that a process sees at `guestPath` (a WASI preopen). */
export interface DirectoryMount {
  guestPath: string;
  hostPath: string;
  /**
   * The host's layer of the same folder over the files channel: the worker
   * asks it to make symbolic links, which scoped permissions cannot.
   * Without it, making a link there fails with `EPERM`.
   */
  layer?: string;
}

/**
 * How a process's stdout is handled: `rpc` splits lines and parses JSON-RPC
 * messages in the worker; `raw` passes bytes through (`sausage run`).
 */
export type StdioMode = "rpc" | "raw";

/** The import module name of everything the preemption instrumentation adds. */
export const INTERRUPT_MODULE = "sausage";

/** The import module name of a main module's memory, which the worker gives from its pool. */
export const POOLED_MEMORY_MODULE = "sausage$memory";
/** The custom section that keeps the limits of that memory. */
export const POOLED_MEMORY_SECTION = "sausage:memory";
/** The import names under {@linkcode POOLED_MEMORY_MODULE}: the memory and the guest's size of it. */
export const POOLED_IMPORTS = { memory: "memory", pages: "pages" } as const;

/** Exports of a core module's own mutable globals, for a reset: this, then the global's index. */
export const RECYCLE_GLOBAL_PREFIX = "sausage$global$";
/** The key of the reset function in what a glue made reusable returns from `instantiate`. */
export const RESET_KEY = "sausage:reset";

/** The limits of a pooled memory, as the owning module's custom section keeps them. */
export interface PooledMemoryLimits {
  initial: number;
  maximum: number | null;
  shared: boolean;
}

/**
 * The filesystem of a world process: the world folder at `/`, the host's
 * layers at `/proc`, `/self` and `/run`, and host folders at other paths.
 */
export interface WorldFiles {
  world: string;
  /** The names of the host's layers (default: `proc`, `run`, `self:<pid>`, `world`). */
  layers?: { proc: string; run: string; self: string; world: string };
  /** Host folders shown at their guest paths (a test's package folder). */
  mounts?: DirectoryMount[];
}

/** The areas a world process sees at the top of `/`; the world folder must not have these names. */
export const MOUNT_POINTS = ["proc", "run", "self"] as const;

/** Names of the layers a worker asks the host for over its files channel. */
export const LAYER_PROC = "proc";
export const LAYER_RUN = "run";
/** The world folder, for what a worker cannot do with its permissions (symbolic links). */
export const LAYER_WORLD = "world";
/** The `/self` of a process: `self:<pid>`. */
export function selfLayer(pid: string): string {
  return `self:${pid}`;
}

/** Values of an interrupt cell (see `core/components/instrument.ts`). */
export const enum Interrupt {
  None = 0,
  Yield = 1,
  Kill = 2,
}

/**
 * Slot 0 of each worker's interrupt memory counts the yields of its
 * processes: the host reads it to see which workers compute. Cells of
 * processes start at index 1.
 */
export const HEARTBEAT_SLOT = 0;

/** How long a process may compute before it yields to others, in ms. */
export const SLICE_MS = 10;

/**
 * Limits a worker applies to one process (PROTOCOL 3.10), from
 * `config/limits.yaml`; a process without them has none (`sausage run`).
 */
export interface ProcessLimits {
  /** MiB of each linear memory: the modules were compiled with this maximum. */
  memoryMib: number;
  /** MiB of stdin the process has not read, past which it is killed. */
  stdinMib: number;
}

/** Where the limits are raised, relative to the world. */
export const LIMITS_FILE = "config/limits.yaml";

/** The limits a resource reaches while it is in use, rather than at a start. */
export type ResourceLimit = "memory_mib" | "stdin_mib" | "files_mib";

/** What each resource limit counts, in words for errors and the journal. */
export const RESOURCE_WHAT: Readonly<Record<ResourceLimit, string>> = Object.freeze({
  memory_mib: "MiB of linear memory of one process",
  stdin_mib: "MiB of stdin that one process has not read",
  files_mib: "MiB of files in /self and /run, all processes together",
});

/** How to raise the limit `limit`, in words. */
export function raiseText(limit: string): string {
  return `set "${limit}: <number>" in ${LIMITS_FILE} of the world and restart the host`;
}

/**
 * What a process or a write that met a resource limit is told (the detail
 * of its end, a journal line): the limit, its value and how to raise it.
 *
 * @example
 * ```ts
 * resourceLimitText("stdin_mib", 64);
 * // "the limit stdin_mib (64 MiB of stdin that one process has not read) is reached; ..."
 * ```
 */
export function resourceLimitText(limit: ResourceLimit, value: number): string {
  return `the limit ${limit} (${value} ${RESOURCE_WHAT[limit]}) is reached; to raise it, ${
    raiseText(limit)
  }`;
}

/** Host to worker. */
export type ToWorker =
  | {
    t: "init";
    index: number;
    interrupts: WebAssembly.Memory;
    /** The synchronous channel to the layers the host serves (`vfs/remote.ts`). */
    files: SharedArrayBuffer;
    /** Host files the worker's processes may hold open together. */
    fileBudget: number;
    /** Host sockets the worker's processes may hold open together. */
    socketBudget: number;
    /** False: every process gets an instance of its own (`linked.ts`); default true. */
    reuse?: boolean;
    /** Record the stages of calls (`runtime/profile.ts`); only when the host does. */
    profile?: boolean;
  }
  | {
    t: "load";
    hash: string;
    js: string;
    /** The glue as a file (faster to import); `js` when it cannot be read. */
    jsUrl?: string;
    modules: Record<string, WebAssembly.Module>;
  }
  | { t: "unload"; hash: string }
  /**
   * Make an instance of `hash` ahead of its process, when the worker is idle
   * (as Wasmtime's `InstancePre`, one step further): the spawn that comes
   * with the same `cell` finds it linked. Two per version per worker at most.
   */
  | { t: "prepare"; hash: string; cell: number; limits?: ProcessLimits }
  /** Drop the instances made ahead for `hash` (their cells are given back). */
  | { t: "forget"; hash: string }
  | {
    t: "spawn";
    pid: string;
    hash: string;
    cell: number;
    env: [string, string][];
    args: string[];
    cwd: string;
    /**
     * The process's filesystem: a world (its folder at `/`, with `/proc`,
     * `/self` and `/run` from the host), or host folders (`sausage run`).
     */
    files: WorldFiles | { mounts: DirectoryMount[] };
    stdio: StdioMode;
    /** The limits its component was compiled for. */
    limits?: ProcessLimits;
    /**
     * What the host wrote to its stdin in the turn it started it (the
     * request): there before the guest's first read, so that read need not
     * wait for another message.
     */
    stdin?: Uint8Array[];
    /** Its stdin was closed in that turn too. */
    eof?: boolean;
    /**
     * The caller runs on this worker: the worker writes the process's answer
     * to the caller's stdin with the caller's request `id`, and says so in
     * the `stdout` that carries it. Not when the process wrote a message
     * before that may reach the caller through the host (`core.notify`):
     * that must arrive first.
     */
    answerTo?: { pid: string; id: AnswerId };
  }
  | { t: "stdin"; pid: string; data: Uint8Array }
  | { t: "eof"; pid: string }
  | { t: "kill"; pid: string; reason: string }
  /** Tests only (`crashMarker` of the pool): the worker throws an uncaught error. */
  | { t: "crash"; reason: string };

/** How a process ended. */
export interface ExitReport {
  /** 0 or 1 from `wasi:cli/exit` or the end of `run`; null for a trap or a kill. */
  status: number | null;
  /** `exited`, `trapped`, `killed`, or `failed` (the host could not run it). */
  reason: "exited" | "trapped" | "killed" | "failed";
  /** For a trap, a kill or a failure: what happened, in words. */
  detail?: string;
}

/** Worker to host. */
export type FromWorker =
  | { t: "ready"; index: number }
  /** The instance of `hash` for `cell` could not be linked ahead, and why. */
  | { t: "prepare-failed"; hash: string; cell: number; failed: string }
  | {
    t: "stdout";
    pid: string;
    /** Parsed JSON-RPC messages (objects with `"jsonrpc": "2.0"`), and batches (arrays). */
    messages: unknown[];
    /** Lines that were not JSON-RPC messages and were dropped (counted, never shown). */
    discarded: number;
    /** One of `messages` is the answer, and the worker gave it to the caller (`answerTo`). */
    answered?: boolean;
  }
  | { t: "stderr"; pid: string; lines: string[]; dropped: number }
  | { t: "raw"; pid: string; fd: 1 | 2; data: Uint8Array }
  | ({
    t: "exit";
    pid: string;
    /** It ran on an instance linked before its spawn arrived. */
    ahead?: boolean;
    /** It ran on a component an earlier process of its version left, put back (`linked.ts`). */
    reused?: boolean;
  } & ExitReport)
  | { t: "fault"; message: string }
  /** A request waits on the files channel. */
  | { t: "vfs" };
