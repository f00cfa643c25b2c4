/**
 * One process inside a plugin worker: a component instance with its own
 * WASI context (environment, stdio, clocks, files) and interrupt cell, which
 * may be linked before its process is known.
 *
 * @module
 */
import {
  type DirectoryMount,
  type ExitReport,
  type FromWorker,
  Interrupt,
  LAYER_PROC,
  LAYER_RUN,
  LAYER_WORLD,
  MOUNT_POINTS,
  type ProcessLimits,
  resourceLimitText,
  selfLayer,
  type StdioMode,
  type ToWorker,
} from "./messages.ts";
import { type InstanceControl, KilledSignal, type Scheduler } from "./scheduler.ts";
import { LogLineSink, MessageLineSink, type OutputPort, RawSink, StdinSource } from "./stdio.ts";
import { type CliContext, cliImports, ExitSignal } from "./wasi/cli.ts";
import { clocksImports } from "./wasi/clocks.ts";
import {
  bindFilesystem,
  mountPreopens,
  releaseFilesystem,
  unboundFilesystemImports,
} from "./wasi/filesystem.ts";
import {
  HostFileSystem,
  MountFileSystem,
  RemoteFileSystem,
  type SyncChannel,
  VfsError,
} from "../vfs/mod.ts";
import { InputStream, ioImports, OutputStream } from "./wasi/io.ts";
import { NETWORK_INTERFACES, networkImports, releaseNetwork } from "./wasi/network.ts";
import { randomImports } from "./wasi/random.ts";
import { ProcessMemory } from "./memory_pool.ts";
import { mark, profileSource, sendProfile } from "./profile.ts";
import { type Glue, keepLinked, LinkedComponent, takeLinked, type Wasi } from "./linked.ts";

export type { Glue } from "./linked.ts";

type Spawn = Extract<ToWorker, { t: "spawn" }>;

/**
 * What an instance is made for before its process is known: the version,
 * the interrupt cell the host gave it, the limits its modules were compiled
 * for, and how its stdout is read.
 */
export interface Preparation {
  hash: string;
  cell: number;
  limits?: ProcessLimits;
  stdio: StdioMode;
}

/** Where an instance reports to (the worker's batched outbox). */
export interface InstanceHost {
  scheduler: Scheduler;
  cells: Int32Array;
  /** The synchronous channel to the layers the host serves. */
  files: SyncChannel;
  /**
   * Whether a process of version `hash` may run on an instance an earlier
   * one left, or leave its own (`linked.ts`): reuse is on and the version
   * is still loaded.
   */
  reuses(hash: string): boolean;
  /** The outbox of the process of `owner` (its ID is read when something is sent). */
  output(owner: { readonly pid: string }): OutputPort;
  raw(pid: string, fd: 1 | 2, bytes: Uint8Array): void;
  /** Sends everything batched so far (before an exit report). */
  flush(): void;
  post(message: FromWorker): void;
}

const MIB = 2 ** 20;

/**
 * The real path of each world folder this worker's processes saw, by the
 * path the spawn gave: resolved for the first process, not for each.
 */
const realWorlds = new Map<string, string>();

/** What Rust's allocator writes to stderr before it aborts. */
const FAILED_ALLOCATION = /^memory allocation of (\d+) bytes failed/;
const FAILED_ALLOCATION_START = "memory allocation of ";

/**
 * A process: a component instance with its own WASI context (environment,
 * stdio, clocks, files) and interrupt cell.
 *
 * It lives in three steps. {@linkcode Instance.prepare} links the component
 * (jco's glue and the core modules) against imports that know nothing of the
 * process yet, which a worker does ahead, while it is idle, for a version it
 * expects to run again; {@linkcode Instance.claim} gives it its process ID
 * when the spawn arrives; {@linkcode Instance.run} gives it the rest (the
 * environment, arguments and folders) and runs `wasi:cli/run`. The
 * component it runs may have served an earlier process of its version, put
 * back as linking left it (`linked.ts`).
 */
export class Instance {
  readonly #host: InstanceHost;
  readonly #hash: string;
  /** Which linked components may serve this process: its version and limits. */
  readonly #key: string;
  /** Its own until it takes a linked component's, which moves to its cell. */
  #control: InstanceControl;
  readonly #kill = new AbortController();
  readonly #stdin: StdinSource;
  readonly #stdout: MessageLineSink | RawSink;
  readonly #stderr: LogLineSink | RawSink;
  readonly #limits: ProcessLimits | undefined;
  /** What `wasi:cli` answers; the spawn gives the environment, arguments and folder. */
  #cli: CliContext | undefined;
  /** The component it runs, linked for it or kept from an earlier process. */
  #linked: LinkedComponent | undefined;
  /** The memory it took from the worker's pool (or its component's), given back after a clean exit. */
  #memory: ProcessMemory;
  /** The last stderr line that named a failed allocation (Rust's, before it aborts). */
  #failedAllocation = "";
  #pid = "";
  #exited = false;
  #files: object | undefined;
  #network: Record<string, Record<string, unknown>> | undefined;
  #failure: unknown;
  #prepared = false;
  #preparing: Promise<void> | undefined;
  /** Linking had begun when the process claimed it (for the host's counts). */
  #linkedAhead = false;
  /** It runs a component an earlier process left (for the host's counts). */
  #reused = false;
  /** Called once when the process has ended and its exit was reported. */
  onExit?: () => void;

  constructor(preparation: Preparation, host: InstanceHost) {
    this.#host = host;
    this.#hash = preparation.hash;
    this.#key = `${preparation.hash} ${JSON.stringify(preparation.limits ?? null)}`;
    this.#control = { cell: preparation.cell, running: false, killed: null };
    Atomics.store(host.cells, preparation.cell, Interrupt.None);
    const limits = this.#limits = preparation.limits;
    this.#memory = new ProcessMemory(limits?.memoryMib);
    this.#stdin = limits
      ? new StdinSource(this.#kill.signal, limits.stdinMib * MIB, () =>
        this.kill(
          `it left more than ${limits.stdinMib} MiB of stdin unread: ` +
            resourceLimitText("stdin_mib", limits.stdinMib),
        ))
      : new StdinSource(this.#kill.signal);
    if (preparation.stdio === "rpc") {
      const output = host.output(this);
      const port: OutputPort = limits
        ? {
          ...output,
          logLine: (line) => {
            if (line.startsWith(FAILED_ALLOCATION_START)) this.#failedAllocation = line;
            output.logLine(line);
          },
        }
        : output;
      this.#stdout = new MessageLineSink(port, () => {
        throw this.#killNow("it wrote a stdout line longer than the 16 MiB limit");
      });
      this.#stderr = new LogLineSink(port);
    } else {
      this.#stdout = new RawSink((b) => host.raw(this.#pid, 1, b));
      this.#stderr = new RawSink((b) => host.raw(this.#pid, 2, b));
    }
  }

  /** The process's ID, once {@linkcode Instance.claim} gave it. */
  get pid(): string {
    return this.#pid;
  }

  /** Why linking failed, in words; undefined when it did not (or has not happened). */
  get failure(): string | undefined {
    const e = this.#failure;
    if (e === undefined) return undefined;
    return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  }

  /**
   * Links the component, once (a second call waits for the first). Never
   * throws: a failure is kept, and the process that runs this instance ends
   * with it.
   */
  prepare(glue: Glue): Promise<void> {
    return this.#preparing ??= this.#link(glue);
  }

  async #link(glue: Glue): Promise<void> {
    try {
      // read by the guest when it asks, so the spawn can fill them in later
      const cli: CliContext = this.#cli = {
        env: [],
        args: [],
        cwd: "/",
        stdin: new InputStream(profileSource(this, this.#stdin)),
        stdout: new OutputStream(this.#stdout),
        stderr: new OutputStream(this.#stderr),
      };
      const wasi: Wasi = {
        ...cliImports(cli),
        ...ioImports(),
        ...clocksImports({ onTimer: () => this.#host.scheduler.turn(), kill: this.#kill.signal }),
        ...randomImports(),
        ...(this.#files = unboundFilesystemImports()),
      };
      // most plugins import no network interface: make them for the one that asks
      for (const name of NETWORK_INTERFACES) {
        Object.defineProperty(wasi, name, {
          enumerable: true,
          get: () => (this.#network ??= this.#makeNetwork())[name],
        });
      }
      const reuse = this.#host.reuses(this.#hash);
      const kept = this.#exited || !reuse ? undefined : takeLinked(this.#key);
      if (kept && this.#serveFrom(kept, wasi)) return;
      this.#linked = await LinkedComponent.link(glue, {
        key: this.#key,
        scheduler: this.#host.scheduler,
        wasi,
        control: this.#control,
        memory: this.#memory,
        owner: this,
        reuse,
      });
    } catch (e) {
      this.#failure = e;
    } finally {
      this.#prepared = true;
    }
  }

  /** Runs this process on `kept`, a component an earlier process left; false when it cannot. */
  #serveFrom(kept: LinkedComponent, wasi: Wasi): boolean {
    try {
      this.#control = kept.serve(wasi, this.#control.cell, this);
    } catch {
      kept.memory.release();
      return false;
    }
    this.#linked = kept;
    this.#memory = kept.memory;
    this.#reused = true;
    return true;
  }

  #makeNetwork(): Record<string, Record<string, unknown>> {
    return networkImports({
      kill: this.#kill.signal,
      onWake: () => this.#host.scheduler.turn(),
    });
  }

  /** Gives the instance its process: from now on its output and exit carry `pid`. */
  claim(pid: string): void {
    if (this.#pid !== "") throw new Error(`the instance runs ${this.#pid} already`);
    this.#pid = pid;
    this.#linkedAhead = this.#preparing !== undefined;
  }

  /** Gives the process its environment and folders, and runs it to its end (prepared first). */
  async run(spawn: Spawn): Promise<void> {
    if (this.#exited) return; // killed while it was linked
    let report: ExitReport;
    try {
      if (!this.#prepared) throw new Error("the instance was never linked");
      if (this.#failure !== undefined) throw this.#failure;
      const cli = this.#cli!;
      cli.env = spawn.env;
      cli.args = spawn.args;
      cli.cwd = spawn.cwd;
      this.#bindFiles(spawn);
      if (this.#control.killed !== null) throw new KilledSignal(this.#control.killed);
      this.#control.running = true;
      mark(this.#pid, "w.run");
      await this.#linked!.component.run.run();
      mark(this.#pid, "w.returned");
      report = { status: 0, reason: "exited" };
    } catch (e) {
      report = this.#classify(e);
    }
    this.#control.running = false;
    this.#finish(report);
  }

  /**
   * A world process sees the world at `/` (served here, in the worker) and
   * `/proc`, `/self` and `/run` (served by the host over the files channel).
   */
  #bindFiles(spawn: Spawn): void {
    if (!("world" in spawn.files)) {
      // outside a world (`sausage run`), folders opened below a preopen follow Wasmtime's rules
      const mounts = spawn.files.mounts;
      const preopens = mountPreopens(mounts, { symlink: this.#mountLinks(mounts) });
      bindFilesystem(this.#files!, preopens, { bounded: true });
      return;
    }
    const files = spawn.files;
    const layers = files.layers ??
      { proc: LAYER_PROC, run: LAYER_RUN, self: selfLayer(spawn.pid), world: LAYER_WORLD };
    const channel = this.#host.files;
    const hostWorld = new RemoteFileSystem(channel, layers.world);
    const known = realWorlds.get(files.world);
    const world: HostFileSystem = new HostFileSystem(known ?? files.world, {
      realRoot: known !== undefined,
      reserved: MOUNT_POINTS,
      // scoped permissions cannot make links: the host makes them, inside the world
      symlink: (target, hostPath) =>
        hostWorld.symlink(target, hostPath.slice(world.root.length) || "/"),
    });
    if (known === undefined) realWorlds.set(files.world, world.root);
    const table = new MountFileSystem([
      { path: "/", fs: world },
      { path: "/proc", fs: new RemoteFileSystem(channel, layers.proc, { readOnly: true }) },
      { path: "/self", fs: new RemoteFileSystem(channel, layers.self) },
      { path: "/run", fs: new RemoteFileSystem(channel, layers.run) },
      // folders of the developer's own (a test's package folder): their links stay as they are
      ...(files.mounts ?? []).map((m) => ({
        path: m.guestPath,
        fs: new HostFileSystem(m.hostPath, { keepHostLinks: true }),
      })),
    ]);
    bindFilesystem(this.#files!, [{ guestPath: "/", fs: table }]);
  }

  /**
   * Makes links in mounted folders through their host layers (`sausage run`
   * serves one per `--dir`), the innermost folder that holds the path.
   */
  #mountLinks(mounts: DirectoryMount[]): ((target: string, hostPath: string) => void) | undefined {
    if (!mounts.some((m) => m.layer !== undefined)) return undefined;
    let served: { root: string; fs: RemoteFileSystem }[] | undefined;
    return (target, hostPath) => {
      served ??= mounts.filter((m) => m.layer !== undefined).map((m) => ({
        root: Deno.realPathSync(m.hostPath),
        fs: new RemoteFileSystem(this.#host.files, m.layer!),
      })).sort((a, b) => b.root.length - a.root.length);
      const m = served.find((m) => hostPath === m.root || hostPath.startsWith(`${m.root}/`));
      if (!m) throw new VfsError("EPERM", "symlink", hostPath);
      m.fs.symlink(target, hostPath.slice(m.root.length) || "/");
    };
  }

  /** Whether it still runs with its stdin open: bytes written now can be read. */
  get takesInput(): boolean {
    return !this.#exited && this.#stdin.open;
  }

  /** Bytes for stdin. */
  stdin(data: Uint8Array): void {
    this.#stdin.push(data);
  }

  /** EOF on stdin: the host asks the process to stop. */
  eof(): void {
    this.#stdin.end();
  }

  /**
   * Kills the process. Called from the worker's message loop, so the guest
   * is not executing now: it waits (and is abandoned, never resumed) or it
   * is queued to run (and its turn throws). Either way it has ended.
   */
  kill(reason: string): void {
    if (this.#exited) return;
    this.#killNow(reason);
    this.#finish({ status: null, reason: "killed", detail: reason });
  }

  #killNow(reason: string): KilledSignal {
    const signal = new KilledSignal(reason);
    this.#control.killed ??= reason;
    Atomics.store(this.#host.cells, this.#control.cell, Interrupt.Kill);
    this.#host.scheduler.cancel(this.#control, reason);
    this.#kill.abort(signal);
    return signal;
  }

  #classify(e: unknown): ExitReport {
    if (e instanceof ExitSignal) return { status: e.status, reason: "exited" };
    if (this.#control.killed !== null) {
      return { status: null, reason: "killed", detail: this.#control.killed };
    }
    if (e instanceof KilledSignal) return { status: null, reason: "killed", detail: e.message };
    if (e instanceof WebAssembly.RuntimeError) {
      return { status: null, reason: "trapped", detail: this.#memoryLimit(e) ?? e.message };
    }
    if (isRunErr(e)) return { status: 1, reason: "exited" };
    const message = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
    return { status: null, reason: "failed", detail: message };
  }

  /**
   * Why a trap happened when it was the memory limit: a memory within a
   * sixteenth of its cap, or one that the last failed allocation the guest
   * reported would have taken past it (growth past the cap returned
   * -1, and the guest aborted). Undefined for any other trap.
   */
  #memoryLimit(trap: Error): string | undefined {
    const limits = this.#limits;
    if (!limits) return undefined;
    const cap = limits.memoryMib * MIB;
    const wanted = Number(FAILED_ALLOCATION.exec(this.#failedAllocation)?.[1] ?? 0);
    // a pooled memory may be larger than what its guest sees
    let largest = this.#memory.bytes ?? 0;
    if (this.#memory.bytes === undefined) {
      for (const core of this.#linked?.cores ?? []) {
        for (const value of Object.values(core.exports)) {
          if (value instanceof WebAssembly.Memory) {
            largest = Math.max(largest, value.buffer.byteLength);
          }
        }
      }
    }
    if (largest < cap - cap / 16 && largest + wanted <= cap) return undefined;
    return `it ran out of memory (${Math.round(largest / MIB)} MiB when it trapped: ` +
      `${trap.message}): ${resourceLimitText("memory_mib", limits.memoryMib)}`;
  }

  #finish(report: ExitReport): void {
    if (this.#exited) return;
    this.#exited = true;
    // a guest that exits does not drop its descriptors: close its host files
    if (this.#files) releaseFilesystem(this.#files);
    if (this.#network) releaseNetwork(this.#network);
    if (report.reason === "killed") {
      this.#stdout.abandon();
      this.#stderr.abandon();
    } else {
      this.#stdout.finish();
      this.#stderr.finish();
    }
    this.#host.flush();
    this.#host.post({
      t: "exit",
      pid: this.#pid,
      ...report,
      ...(this.#linkedAhead ? { ahead: true } : {}),
      ...(this.#reused ? { reused: true } : {}),
    });
    sendProfile();
    // after the exit is posted; a trap or a kill may leave a suspended stack
    // that could still write to the memory, so only a clean exit gives it back
    if (report.reason === "exited") {
      const linked = this.#linked;
      if (linked && this.#control.killed === null && this.#host.reuses(this.#hash)) {
        keepLinked(linked);
      } else this.#memory.release();
    }
    this.onExit?.();
  }
}

/** jco throws the `err` case of `run`'s `result` as a value without a message. */
function isRunErr(e: unknown): boolean {
  return e === undefined ||
    (typeof e === "object" && e !== null && "payload" in e &&
      (e as { payload: unknown }).payload === undefined);
}
