/**
 * The pool of plugin workers, seen from the host's main thread.
 *
 * A process is a component instance on one of a few workers (about one per
 * core): a fresh instance in a warm worker costs well under a millisecond, a
 * fresh worker 40 ms. Each worker gets a small shared memory of interrupt
 * cells, one per process; a 10 ms ticker asks long runners to yield, and a
 * kill sets the cell so that even a spinning guest traps at its next loop
 * header.
 *
 * New processes go to the least loaded worker that is not computing. When
 * every worker computes, the pool grows (up to a limit) and shrinks again
 * when the extra workers idle. A worker that ran a version links the next
 * instance of it while idle (`prepare`), and the next process of that
 * version goes there unless that worker is much busier than another. A
 * process called by another process goes to its caller's worker before
 * that, on the same terms: the caller waits, and the callee's answer then
 * goes to it without the host's thread. A spawn is sent at the end of the
 * turn that made it, with what was written to the process's stdin in that
 * turn (its request).
 *
 * @module
 */
import type { LoadedComponent } from "./components/cache.ts";
import { PLUGIN_WORKER } from "./embedded.ts";
import type { WorkerCrash } from "./supervision.ts";
import { type FileSystemServer, SyncChannel } from "../vfs/mod.ts";
import { mark, profiling } from "../runtime/profile.ts";
import {
  type DirectoryMount,
  type ExitReport,
  type FromWorker,
  HEARTBEAT_SLOT,
  Interrupt,
  SLICE_MS,
  type StdioMode,
  type ToWorker,
  type WorldFiles,
} from "../runtime/messages.ts";

type Spawn = Extract<ToWorker, { t: "spawn" }>;

/** Receives what one process does. */
export interface ProcessEvents {
  /**
   * JSON-RPC messages (and batches) from stdout, plus a count of dropped
   * noise lines; `answered` when one is the answer that the worker gave to
   * the caller itself (see {@linkcode SpawnOptions.caller}).
   */
  stdout?(messages: unknown[], discarded: number, answered: boolean): void;
  /** Stderr lines, plus lines dropped by the rate limit. */
  stderr?(lines: string[], dropped: number): void;
  /** Raw stdout (1) or stderr (2) bytes, in `raw` mode. */
  raw?(fd: 1 | 2, data: Uint8Array): void;
  /**
   * The process ended. Called once, after all its output; `workerCrash` is
   * set when it ended because its worker crashed.
   */
  exit(report: ExitReport & { workerCrash?: WorkerCrash }): void;
}

/** A worker that crashed, and the processes that ended with it. */
export interface CrashReport extends WorkerCrash {
  /** The IDs of the processes that ran on it. */
  pids: string[];
}

/** How to start one process. */
export interface SpawnOptions {
  pid: string;
  env: [string, string][];
  args: string[];
  cwd: string;
  files: WorldFiles | { mounts: DirectoryMount[] };
  stdio: StdioMode;
  /**
   * The process that made the call, and its request ID. The process goes to
   * the caller's worker when that one has room, and its answer then goes
   * from there straight to the caller's stdin: two hops between threads
   * fewer. The host still gets the answer, after it.
   */
  caller?: Spawn["answerTo"];
}

/** Deno permissions of the plugin workers: a second wall behind the VFS. */
export interface WorkerPermissions {
  read: string[];
  write: string[];
  net: boolean;
}

/** Options of the pool. */
export interface PoolOptions {
  /** Workers kept running (default: the number of cores, at least 2). */
  size?: number;
  /** The most workers when all compute (default: 4 × size). */
  maxSize?: number;
  permissions: WorkerPermissions;
  /** Serves the host's layers (`/proc`, `/self`, `/run`) to the workers. */
  files?: FileSystemServer;
  /** Told about worker faults (bugs), for the journal. */
  onFault?: (message: string) => void;
  /**
   * Told when a worker crashed, before its processes' `exit` events (the
   * process table charges the crash and journals it).
   */
  onCrash?: (crash: CrashReport) => void;
  /**
   * For tests only: a process that writes exactly this line to stderr makes
   * its worker throw an uncaught error (a crash, as a bug in the worker would).
   */
  crashMarker?: string;
  /**
   * Link an instance of a version ahead of its next process, on the worker
   * that just ran one, while that worker is idle (default: true). A spawn
   * then finds its instance linked, as Wasmtime's `InstancePre` lets it.
   */
  prepareAhead?: boolean;
  /**
   * Put a process called by another on its caller's worker when that one
   * has room, so that its answer goes to the caller without the host's
   * thread (default: true; the benchmark turns it off to measure what it
   * saves).
   */
  nearCaller?: boolean;
  /**
   * Run a process on an instance an earlier process of its version left,
   * put back as linking left it (`runtime/linked.ts`; default: true; the
   * benchmark turns it off to measure what it saves).
   */
  reuseInstances?: boolean;
}

/** How processes started: on an instance linked ahead, or linked at their spawn. */
export interface StartCounts {
  ahead: number;
  cold: number;
  /** Of all starts, those on a component an earlier process of the version left. */
  reused: number;
}

/** The open-file limit of the host and where it was found. */
export interface OpenFileLimit {
  /** The soft limit of open files (1024 when it could not be read). */
  limit: number;
  /** `/proc/self/limits`, `getrlimit`, or `fallback` (then `problem` says why). */
  source: "/proc/self/limits" | "getrlimit" | "fallback";
  problem?: string;
}

/** The open-file limit assumed when the host cannot read its own. */
const FALLBACK_OPEN_FILES = 1024;

/**
 * The soft limit of open files of this process. Deno lets only `--allow-all`
 * read `/proc/self/limits`, which the `sausage` executable does not have, so
 * the limit then comes from libc's `getrlimit` (the host has `--allow-ffi`).
 */
export function openFileLimit(): OpenFileLimit {
  const problems: string[] = [];
  try {
    const m = Deno.readTextFileSync("/proc/self/limits").match(/^Max open files\s+(\d+)/m);
    if (m) return { limit: Number(m[1]), source: "/proc/self/limits" };
    problems.push('/proc/self/limits has no line "Max open files"');
  } catch (e) {
    problems.push(`/proc/self/limits: ${(e as Error).message}`);
  }
  const libc = Deno.build.os === "darwin"
    ? { path: "libSystem.dylib", resource: 8 }
    : Deno.build.os === "linux"
    ? { path: "libc.so.6", resource: 7 } // RLIMIT_NOFILE
    : undefined;
  if (libc) {
    try {
      const lib = Deno.dlopen(
        libc.path,
        {
          getrlimit: { parameters: ["i32", "buffer"], result: "i32" },
        } as const,
      );
      try {
        const limits = new BigUint64Array(2); // rlim_cur, rlim_max
        if (lib.symbols.getrlimit(libc.resource, limits) === 0) {
          // RLIM_INFINITY is all ones: far more than any budget needs
          const soft = limits[0] > 1n << 31n ? 2 ** 31 : Number(limits[0]);
          return { limit: soft, source: "getrlimit" };
        }
        problems.push("getrlimit failed");
      } finally {
        lib.close();
      }
    } catch (e) {
      problems.push(`getrlimit: ${(e as Error).message}`);
    }
  }
  return { limit: FALLBACK_OPEN_FILES, source: "fallback", problem: problems.join("; ") };
}

/** Interrupt cells per worker (one wasm page of i32). */
const CELLS = 16384;
/** An extra worker idle this long is stopped. */
const IDLE_WORKER_MS = 30_000;
/** A worker that is not ready after this long is a failure. */
const START_TIMEOUT_MS = 30_000;
/** Versions a worker keeps an instance of ahead; the one used longest ago gives way. */
const AHEAD_PER_WORKER = 4;
/**
 * Instances a worker keeps ahead for one version: a process and a callee of
 * the same version (a plugin that calls itself) both find one.
 */
const AHEAD_PER_VERSION = 2;
/** An instance made ahead that no spawn took for this long is dropped (its memory is freed). */
const AHEAD_IDLE_MS = 60_000;
/**
 * How many more processes than the least loaded worker a worker may run and
 * still be chosen for the instance it links ahead, or for being the caller's:
 * most processes of a world wait for an answer rather than compute.
 */
const AHEAD_LOAD_SLACK = 2;

/** An instance a worker makes (or has made) ahead for a version. */
interface AheadSlot {
  cell: number;
  since: number;
}

interface Running {
  events: ProcessEvents;
  cell: number;
  worker: PluginWorker;
  /** The version it runs, and what an instance linked ahead for the next one needs. */
  hash: string;
  limits: LoadedComponent["limits"];
  stdio: StdioMode;
  /** Why the host killed it: the guest may meet the interrupt before the message. */
  killedFor?: string;
}

class PluginWorker {
  readonly index: number;
  readonly worker: Worker;
  readonly interrupts = new WebAssembly.Memory({ initial: 1, maximum: 1, shared: true });
  readonly cells = new Int32Array(this.interrupts.buffer);
  readonly files = SyncChannel.create();
  readonly loaded = new Set<string>();
  readonly live = new Set<number>();
  /** Instances made ahead, by version (the one used longest ago first), oldest first. */
  readonly ahead = new Map<string, AheadSlot[]>();
  readonly ready: Promise<void>;
  /** Set once it crashed or failed to start: its processes have ended. */
  dead = false;
  /** Set once it said it is ready. */
  started = false;
  #startTimer: ReturnType<typeof setTimeout> | undefined;
  #freeCells: number[] = [];
  #nextCell = 1;
  yieldsSeen = 0;
  computing = false;
  idleSince = performance.now();

  constructor(
    index: number,
    budgets: { files: number; sockets: number; reuse: boolean },
    permissions: WorkerPermissions,
    onMessage: (m: FromWorker) => void,
    onCrash: (message: string) => void,
  ) {
    this.index = index;
    this.worker = new Worker(PLUGIN_WORKER, {
      type: "module",
      name: `sausage-plugins-${index}`,
      deno: {
        permissions: {
          read: permissions.read,
          write: permissions.write,
          net: permissions.net,
          env: false,
          run: false,
          ffi: false,
          sys: false,
          import: false,
        },
      },
    } as WorkerOptions);
    this.ready = new Promise((resolve, reject) => {
      const timeout = this.#startTimer = setTimeout(() => {
        const message = `plugin worker ${index} did not start within ${START_TIMEOUT_MS / 1000} s`;
        reject(new Error(message));
        onCrash(message); // processes placed on it must not wait forever
      }, START_TIMEOUT_MS);
      this.worker.onmessage = (e: MessageEvent<FromWorker>) => {
        if (e.data.t === "ready") {
          this.started = true;
          clearTimeout(timeout);
          this.worker.onmessage = (e: MessageEvent<FromWorker>) => onMessage(e.data);
          resolve();
        }
      };
      this.worker.onerror = (e) => {
        e.preventDefault();
        if (this.started) {
          onCrash(e.message);
          return;
        }
        clearTimeout(timeout);
        reject(new Error(`plugin worker ${index} failed to start: ${e.message}`));
        onCrash(`it failed to start: ${e.message}`);
      };
    });
    this.send({
      t: "init",
      index,
      interrupts: this.interrupts,
      files: this.files.buffer,
      fileBudget: budgets.files,
      socketBudget: budgets.sockets,
      ...(budgets.reuse ? {} : { reuse: false }),
      ...(profiling() ? { profile: true } : {}),
    });
  }

  send(message: ToWorker): void {
    this.worker.postMessage(message);
  }

  /** Stops the worker (its processes die with it). */
  terminate(): void {
    clearTimeout(this.#startTimer);
    this.worker.terminate();
  }

  takeCell(): number {
    const cell = this.reserveCell();
    this.live.add(cell);
    return cell;
  }

  /** A cell for an instance made ahead: not live (nothing runs in it yet). */
  reserveCell(): number {
    const cell = this.#freeCells.pop() ?? this.#nextCell++;
    if (cell >= CELLS) throw new Error(`worker ${this.index} runs ${CELLS - 1} processes already`);
    Atomics.store(this.cells, cell, Interrupt.None);
    return cell;
  }

  releaseCell(cell: number): void {
    this.live.delete(cell);
    this.#freeCells.push(cell);
    if (this.live.size === 0) this.idleSince = performance.now();
  }

  /** Takes an instance made ahead for `hash`, if any: its version becomes the last one used. */
  takeAhead(hash: string): AheadSlot | undefined {
    const slots = this.ahead.get(hash);
    const slot = slots?.shift();
    if (!slots || !slot) return undefined;
    this.ahead.delete(hash);
    if (slots.length > 0) this.ahead.set(hash, slots);
    return slot;
  }

  /** Drops the instances made ahead for `hash`, if any, and gives their cells back. */
  forget(hash: string, tell: boolean): void {
    const slots = this.ahead.get(hash);
    if (!slots) return;
    this.ahead.delete(hash);
    for (const slot of slots) this.#freeCells.push(slot.cell);
    if (tell) this.send({ t: "forget", hash });
  }
}

/** The workers of a pool when nothing else is said: one per core, at least 2. */
export function defaultPoolSize(): number {
  return Math.max(2, navigator.hardwareConcurrency || 2);
}

/** The plugin workers and the processes on them. */
export class WorkerPool {
  readonly #options:
    & Required<
      Omit<
        PoolOptions,
        | "onFault"
        | "onCrash"
        | "files"
        | "crashMarker"
        | "prepareAhead"
        | "nearCaller"
        | "reuseInstances"
      >
    >
    & { prepareAhead: boolean; nearCaller: boolean; reuseInstances: boolean }
    & Pick<PoolOptions, "onFault" | "onCrash" | "files" | "crashMarker">;
  readonly #workers: PluginWorker[] = [];
  readonly #processes = new Map<string, Running>();
  #ticker: ReturnType<typeof setInterval> | undefined;
  #nextIndex = 0;
  /** Host files each worker may hold open: half the process's limit, shared by the most workers. */
  readonly #fileBudget: number;
  readonly #socketBudget: number;
  /** The host's open-file limit the budget comes from. */
  readonly openFiles: OpenFileLimit;
  #closed = false;
  readonly #starts: StartCounts = { ahead: 0, cold: 0, reused: 0 };
  #answersInWorker = 0;
  #aheadTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(options: PoolOptions) {
    const size = options.size ?? defaultPoolSize();
    this.#options = {
      ...options,
      size,
      maxSize: Math.max(size, options.maxSize ?? size * 4),
      prepareAhead: options.prepareAhead ?? true,
      nearCaller: options.nearCaller ?? true,
      reuseInstances: options.reuseInstances ?? true,
    };
    this.openFiles = openFileLimit();
    this.#fileBudget = Math.max(
      64,
      Math.min(4096, Math.floor(this.openFiles.limit / 2 / this.#options.maxSize)),
    );
    // a quarter for sockets, which leaves a quarter for the host's own files and connections
    this.#socketBudget = Math.max(
      64,
      Math.min(4096, Math.floor(this.openFiles.limit / 4 / this.#options.maxSize)),
    );
  }

  /** Host sockets each worker's processes may hold open together. */
  get socketBudget(): number {
    return this.#socketBudget;
  }

  /** Host files each worker's processes may hold open together. */
  get fileBudget(): number {
    return this.#fileBudget;
  }

  /** Starts the base workers and waits until they are ready. */
  async start(): Promise<void> {
    for (let i = 0; i < this.#options.size; i++) this.#addWorker();
    await Promise.all(this.#workers.map((w) => w.ready));
  }

  /** Processes running now. */
  get size(): number {
    return this.#processes.size;
  }

  /** Workers running now. */
  get workers(): number {
    return this.#workers.length;
  }

  /** How many processes started on an instance linked ahead, and how many were linked at their spawn. */
  get starts(): Readonly<StartCounts> {
    return { ...this.#starts };
  }

  /** How many answers a worker gave to a caller on the same worker, without the host's thread. */
  get answersInWorker(): number {
    return this.#answersInWorker;
  }

  /** The number of the worker that runs a process (as in `sausage-plugins-<n>`). */
  workerOf(pid: string): number | undefined {
    return this.#processes.get(pid)?.worker.index;
  }

  /** Starts a process of `component`. Events arrive until `exit`. */
  spawn(component: LoadedComponent, options: SpawnOptions, events: ProcessEvents): void {
    if (this.#closed) throw new Error("the worker pool is closed");
    mark(options.pid, "m.spawn");
    const { caller, ...spawned } = options;
    const near = caller && options.stdio === "rpc" && this.#options.nearCaller
      ? this.#processes.get(caller.pid)?.worker
      : undefined;
    const worker = this.#place(component.hash, options.stdio, near);
    const slot = options.stdio === "rpc" ? worker.takeAhead(component.hash) : undefined;
    let cell: number;
    if (slot) {
      // the worker links it now if it has not yet: the spawn comes with the cell it was made for
      cell = slot.cell;
      worker.live.add(cell);
    } else {
      cell = worker.takeCell();
    }
    this.#processes.set(options.pid, {
      events,
      cell,
      worker,
      hash: component.hash,
      limits: component.limits,
      stdio: options.stdio,
    });
    if (!worker.loaded.has(component.hash)) {
      worker.loaded.add(component.hash);
      worker.send({
        t: "load",
        hash: component.hash,
        js: component.js,
        jsUrl: component.jsUrl,
        modules: component.modules,
      });
    }
    // sent at the end of this turn, with what is written to its stdin meanwhile (the request)
    this.#unsent.set(options.pid, {
      worker,
      message: {
        t: "spawn",
        hash: component.hash,
        cell,
        limits: component.limits,
        ...spawned,
        ...(worker === near ? { answerTo: caller } : {}),
      },
    });
    if (this.#unsent.size === 1) queueMicrotask(this.#sendSpawns);
    this.#startTicker();
  }

  /** Spawns made in this turn, not sent yet. */
  readonly #unsent = new Map<string, { worker: PluginWorker; message: Spawn }>();

  #sendSpawns = (): void => {
    for (const pid of [...this.#unsent.keys()]) this.#sendSpawn(pid);
  };

  /** Sends the spawn of `pid` if it waits; everything else for `pid` goes after it. */
  #sendSpawn(pid: string): void {
    const unsent = this.#unsent.get(pid);
    if (!unsent) return;
    this.#unsent.delete(pid);
    const { worker, message } = unsent;
    if (worker.dead) return;
    worker.send(message);
    // the next process of this version may come before this one ends (it may be its callee)
    this.#prepareAhead({
      worker,
      hash: message.hash,
      stdio: message.stdio,
      limits: message.limits,
    });
  }

  /** Sends bytes to the stdin of a process. */
  write(pid: string, data: Uint8Array): void {
    mark(pid, "m.write");
    const unsent = this.#unsent.get(pid);
    if (unsent && !unsent.message.eof) {
      (unsent.message.stdin ??= []).push(data);
      return;
    }
    this.#processes.get(pid)?.worker.send({ t: "stdin", pid, data });
  }

  /** Closes the stdin of a process (EOF). */
  closeStdin(pid: string): void {
    const unsent = this.#unsent.get(pid);
    if (unsent) {
      unsent.message.eof = true;
      return;
    }
    this.#processes.get(pid)?.worker.send({ t: "eof", pid });
  }

  /** Kills a process; its `exit` event follows. */
  kill(pid: string, reason: string): void {
    const p = this.#processes.get(pid);
    if (!p) return;
    this.#sendSpawn(pid); // the worker must know the process to end it
    p.killedFor ??= reason;
    Atomics.store(p.worker.cells, p.cell, Interrupt.Kill);
    p.worker.send({ t: "kill", pid, reason });
  }

  /** Lets workers drop the glue of a version no process runs any more. */
  unload(hash: string): void {
    for (const w of this.#workers) {
      w.forget(hash, false); // the unload drops it in the worker too
      if (w.loaded.delete(hash)) w.send({ t: "unload", hash });
    }
  }

  /** Stops every worker at once (processes die with them). */
  close(): void {
    this.#closed = true;
    if (this.#ticker !== undefined) clearInterval(this.#ticker);
    clearTimeout(this.#aheadTimer);
    for (const w of this.#workers) w.terminate();
    this.#workers.length = 0;
  }

  #addWorker(): PluginWorker {
    const worker: PluginWorker = new PluginWorker(
      this.#nextIndex++,
      {
        files: this.#fileBudget,
        sockets: this.#socketBudget,
        reuse: this.#options.reuseInstances,
      },
      this.#options.permissions,
      (m) => this.#onMessage(worker, m),
      (message) => this.#crashed(worker, message),
    );
    worker.ready.catch((e) => this.#options.onFault?.(String(e)));
    this.#workers.push(worker);
    return worker;
  }

  /**
   * A worker died (a bug, or it did not start): the processes it ran end,
   * each told why, and a new worker takes its place.
   */
  #crashed(worker: PluginWorker, message: string): void {
    if (worker.dead) return; // a second error of the same worker
    worker.dead = true;
    this.#options.onFault?.(`plugin worker ${worker.index} crashed: ${message}`);
    worker.terminate();
    this.#options.files?.drop(worker.files);
    const at = this.#workers.indexOf(worker);
    if (at >= 0) this.#workers.splice(at, 1);
    const ended = [...this.#processes].filter(([, p]) => p.worker === worker);
    for (const [pid] of ended) this.#processes.delete(pid);
    const crash: WorkerCrash = { worker: worker.index, message, at: Date.now() };
    // the replacement first: the exits below may start processes (services, callers);
    // a worker that never started is not replaced here (that failure would repeat)
    if (!this.#closed && worker.started && this.#workers.length < this.#options.size) {
      this.#addWorker();
    }
    try {
      this.#options.onCrash?.({ ...crash, pids: ended.map(([pid]) => pid) });
    } catch (e) {
      this.#options.onFault?.(`handling the crash of worker ${worker.index}: ${e}`);
    }
    const detail = `its plugin worker ${worker.index} crashed (${message}); ` +
      "every process on that worker ended with it";
    for (const [pid, p] of ended) {
      try {
        p.events.exit({ status: null, reason: "killed", detail, workerCrash: crash });
      } catch (e) {
        // one process's bookkeeping must not leave the others hanging
        this.#options.onFault?.(`ending ${pid} after the crash of worker ${worker.index}: ${e}`);
      }
    }
  }

  /**
   * The worker for a new process: the caller's (`near`) when it is not
   * computing and has room, else one with an instance linked ahead, else
   * the least loaded.
   */
  #place(hash: string, stdio: StdioMode, near?: PluginWorker): PluginWorker {
    if (this.#workers.length === 0) return this.#addWorker(); // all crashed or failed to start
    let best: PluginWorker | undefined;
    let ahead: PluginWorker | undefined;
    for (const w of this.#workers) {
      if (w.computing) continue;
      if (!best || w.live.size < best.live.size) best = w;
      // one still being linked counts too: the worker finishes it before it reads the spawn
      if (stdio === "rpc" && w.ahead.has(hash) && (!ahead || w.live.size < ahead.live.size)) {
        ahead = w;
      }
    }
    // the caller waits for the answer: its worker has time, and the answer needs no hops
    if (near && !near.dead && !near.computing && best) {
      if (near.live.size <= best.live.size + AHEAD_LOAD_SLACK) return near;
    }
    if (ahead && best && ahead.live.size <= best.live.size + AHEAD_LOAD_SLACK) return ahead;
    if (best) return best;
    // every worker computes: grow for the next processes, use the least loaded now
    if (this.#workers.length < this.#options.maxSize) {
      const fresh = this.#addWorker();
      fresh.computing = false;
    }
    return this.#workers.reduce((a, b) => (b.live.size < a.live.size ? b : a));
  }

  /**
   * After a spawn of a version and after its process ended: the worker links
   * the next instance of that version while it is idle, unless it has
   * {@linkcode AHEAD_PER_VERSION} (or the version was unloaded).
   */
  #prepareAhead(
    { worker, hash, stdio, limits }: Pick<Running, "worker" | "hash" | "stdio" | "limits">,
  ): void {
    if (!this.#options.prepareAhead || this.#closed || worker.dead || stdio !== "rpc") return;
    if (!worker.loaded.has(hash)) return;
    const slots = worker.ahead.get(hash);
    if (slots && slots.length >= AHEAD_PER_VERSION) return;
    if (!slots && worker.ahead.size >= AHEAD_PER_WORKER) {
      worker.forget(worker.ahead.keys().next().value!, true);
    }
    const cell = worker.reserveCell();
    const slot = { cell, since: performance.now() };
    if (slots) slots.push(slot);
    else worker.ahead.set(hash, [slot]);
    worker.send({ t: "prepare", hash, cell, limits });
    this.#scheduleAheadExpiry();
  }

  /** Drops instances made ahead that no spawn took for {@linkcode AHEAD_IDLE_MS}. */
  #scheduleAheadExpiry(): void {
    if (this.#aheadTimer !== undefined) return;
    const timer = this.#aheadTimer = setTimeout(() => {
      this.#aheadTimer = undefined;
      const now = performance.now();
      let left = false;
      for (const w of this.#workers) {
        for (const [hash, slots] of w.ahead) {
          // a version's instances are made again at each use: its newest says when it was used
          if (now - slots[slots.length - 1].since >= AHEAD_IDLE_MS) w.forget(hash, true);
          else left = true;
        }
      }
      if (left) this.#scheduleAheadExpiry();
    }, AHEAD_IDLE_MS / 4);
    Deno.unrefTimer(timer);
  }

  #onMessage(worker: PluginWorker, message: FromWorker): void {
    if (profiling() && "pid" in message) mark(message.pid, `m.${message.t}`);
    switch (message.t) {
      case "stdout":
        if (message.answered) this.#answersInWorker++;
        this.#processes.get(message.pid)?.events.stdout?.(
          message.messages,
          message.discarded,
          message.answered === true,
        );
        break;
      case "stderr":
        this.#processes.get(message.pid)?.events.stderr?.(message.lines, message.dropped);
        if (this.#options.crashMarker !== undefined) this.#crashOnMarker(worker, message);
        break;
      case "raw":
        this.#processes.get(message.pid)?.events.raw?.(message.fd, message.data);
        break;
      case "exit": {
        const p = this.#processes.get(message.pid);
        if (!p) break;
        this.#processes.delete(message.pid);
        p.worker.releaseCell(p.cell);
        const { t: _t, pid: _pid, ahead, reused, ...report } = message;
        this.#starts[ahead ? "ahead" : "cold"]++;
        if (reused) this.#starts.reused++;
        if (report.reason === "killed" && p.killedFor !== undefined) report.detail = p.killedFor;
        p.events.exit(report);
        this.#prepareAhead(p);
        break;
      }
      case "prepare-failed": {
        const slots = worker.ahead.get(message.hash);
        // taken by a spawn meanwhile, or dropped
        if (!slots?.some((slot) => slot.cell === message.cell)) break;
        // the worker dropped them all: its spawns will fail the same way, and say why
        worker.forget(message.hash, false);
        break;
      }
      case "fault":
        this.#options.onFault?.(message.message);
        break;
      case "vfs":
        this.#options.files?.serve(worker.files);
        break;
    }
  }

  /** Tests: the marker line in a process's stderr crashes its worker. */
  #crashOnMarker(worker: PluginWorker, message: Extract<FromWorker, { t: "stderr" }>): void {
    if (!message.lines.includes(this.#options.crashMarker!)) return;
    worker.send({ t: "crash", reason: `${message.pid} wrote the test crash marker` });
  }

  #startTicker(): void {
    if (this.#ticker !== undefined) return;
    const ticker = setInterval(() => this.#tick(), SLICE_MS);
    Deno.unrefTimer(ticker);
    this.#ticker = ticker;
  }

  #tick(): void {
    const now = performance.now();
    for (const w of [...this.#workers]) {
      const yields = Atomics.load(w.cells, HEARTBEAT_SLOT);
      w.computing = yields !== w.yieldsSeen;
      w.yieldsSeen = yields;
      for (const cell of w.live) {
        Atomics.compareExchange(w.cells, cell, Interrupt.None, Interrupt.Yield);
      }
      const extra = this.#workers.length > this.#options.size;
      if (extra && w.live.size === 0 && now - w.idleSince > IDLE_WORKER_MS) {
        w.terminate();
        this.#workers.splice(this.#workers.indexOf(w), 1);
      }
    }
    if (this.#processes.size === 0 && this.#ticker !== undefined) {
      clearInterval(this.#ticker);
      this.#ticker = undefined;
    }
  }
}
