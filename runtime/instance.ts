/**
 * One process inside a plugin worker: a component instance with its own
 * WASI context (environment, stdio, clocks, files) and interrupt cell.
 *
 * @module
 */
import {
  type DirectoryMount,
  type ExitReport,
  type FromWorker,
  Interrupt,
  INTERRUPT_MODULE,
  LAYER_PROC,
  LAYER_RUN,
  LAYER_WORLD,
  MOUNT_POINTS,
  type ProcessLimits,
  resourceLimitText,
  selfLayer,
  type ToWorker,
} from "./messages.ts";
import { type InstanceControl, KilledSignal, type Scheduler } from "./scheduler.ts";
import { LogLineSink, MessageLineSink, type OutputPort, RawSink, StdinSource } from "./stdio.ts";
import { cliImports, ExitSignal } from "./wasi/cli.ts";
import { clocksImports } from "./wasi/clocks.ts";
import { filesystemImports, filesystemImportsFor, releaseFilesystem } from "./wasi/filesystem.ts";
import {
  HostFileSystem,
  MountFileSystem,
  RemoteFileSystem,
  type SyncChannel,
  VfsError,
} from "../vfs/mod.ts";
import { InputStream, ioImports, OutputStream } from "./wasi/io.ts";
import { networkImports, releaseNetwork } from "./wasi/network.ts";
import { randomImports } from "./wasi/random.ts";
import { mark, profileImports, profileSource, sendProfile } from "./profile.ts";

/** The jco glue of one component version, loaded once per worker. */
export interface Glue {
  instantiate(
    getCoreModule: (name: string) => WebAssembly.Module,
    imports: Record<string, unknown>,
    instantiateCore: (module: WebAssembly.Module, imports: Record<string, unknown>) => unknown,
  ): Promise<{ run: { run(): Promise<void> } }>;
  modules: Record<string, WebAssembly.Module>;
}

type Spawn = Extract<ToWorker, { t: "spawn" }>;

/** Where an instance reports to (the worker's batched outbox). */
export interface InstanceHost {
  scheduler: Scheduler;
  cells: Int32Array;
  /** The synchronous channel to the layers the host serves. */
  files: SyncChannel;
  output(pid: string): OutputPort;
  raw(pid: string, fd: 1 | 2, bytes: Uint8Array): void;
  /** Sends everything batched so far (before an exit report). */
  flush(): void;
  post(message: FromWorker): void;
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

const MIB = 2 ** 20;

/** What Rust's allocator writes to stderr before it aborts. */
const FAILED_ALLOCATION = /^memory allocation of (\d+) bytes failed/;
const FAILED_ALLOCATION_START = "memory allocation of ";

/** A running process. */
export class Instance {
  readonly pid: string;
  readonly #host: InstanceHost;
  readonly #control: InstanceControl;
  readonly #kill = new AbortController();
  readonly #stdin: StdinSource;
  readonly #stdout: MessageLineSink | RawSink;
  readonly #stderr: LogLineSink | RawSink;
  readonly #limits: ProcessLimits | undefined;
  /** The core instances of the component, to find its memories after a trap. */
  readonly #cores: WebAssembly.Instance[] = [];
  /** The last stderr line that named a failed allocation (Rust's, before it aborts). */
  #failedAllocation = "";
  #exited = false;
  #files: object | undefined;
  #network: object | undefined;
  /** Called once when the process has ended and its exit was reported. */
  onExit?: () => void;

  constructor(spawn: Spawn, host: InstanceHost) {
    this.pid = spawn.pid;
    this.#host = host;
    this.#control = { cell: spawn.cell, running: false, killed: null };
    Atomics.store(host.cells, spawn.cell, Interrupt.None);
    const limits = this.#limits = spawn.limits;
    this.#stdin = limits
      ? new StdinSource(this.#kill.signal, limits.stdinMib * MIB, () =>
        this.kill(
          `it left more than ${limits.stdinMib} MiB of stdin unread: ` +
            resourceLimitText("stdin_mib", limits.stdinMib),
        ))
      : new StdinSource(this.#kill.signal);
    if (spawn.stdio === "rpc") {
      const output = host.output(spawn.pid);
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
      this.#stdout = new RawSink((b) => host.raw(spawn.pid, 1, b));
      this.#stderr = new RawSink((b) => host.raw(spawn.pid, 2, b));
    }
  }

  /** Instantiates the component and runs it to its end. */
  async run(spawn: Spawn, glue: Glue): Promise<void> {
    let report: ExitReport;
    try {
      const wasi = {
        ...cliImports({
          env: spawn.env,
          args: spawn.args,
          cwd: spawn.cwd,
          stdin: new InputStream(profileSource(this.pid, this.#stdin)),
          stdout: new OutputStream(this.#stdout),
          stderr: new OutputStream(this.#stderr),
        }),
        ...ioImports(),
        ...clocksImports({ onTimer: () => this.#host.scheduler.turn(), kill: this.#kill.signal }),
        ...randomImports(),
        ...(this.#files = this.#filesystem(spawn)),
        ...(this.#network = networkImports({
          kill: this.#kill.signal,
          onWake: () => this.#host.scheduler.turn(),
        })),
      };
      const sausage = this.#host.scheduler.imports(this.#control);
      const component = await glue.instantiate(
        (name) => glue.modules[name],
        wasi,
        (module, imports) => {
          const timed = profileImports(this.pid, imports);
          const core = new WebAssembly.Instance(
            module,
            (needsInterrupts(module)
              ? { ...timed, [INTERRUPT_MODULE]: sausage }
              : timed) as WebAssembly.Imports,
          );
          this.#cores.push(core);
          return core;
        },
      );
      if (this.#control.killed !== null) throw new KilledSignal(this.#control.killed);
      this.#control.running = true;
      mark(this.pid, "w.run");
      await component.run.run();
      mark(this.pid, "w.returned");
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
  #filesystem(spawn: Spawn): Record<string, Record<string, unknown>> {
    if (!("world" in spawn.files)) {
      // outside a world (`sausage run`), folders opened below a preopen follow Wasmtime's rules
      return filesystemImports(spawn.files.mounts, {
        symlink: this.#mountLinks(spawn.files.mounts),
        bounded: true,
      });
    }
    const files = spawn.files;
    const layers = files.layers ??
      { proc: LAYER_PROC, run: LAYER_RUN, self: selfLayer(spawn.pid), world: LAYER_WORLD };
    const channel = this.#host.files;
    const hostWorld = new RemoteFileSystem(channel, layers.world);
    const world: HostFileSystem = new HostFileSystem(files.world, {
      reserved: MOUNT_POINTS,
      // scoped permissions cannot make links: the host makes them, inside the world
      symlink: (target, hostPath) =>
        hostWorld.symlink(target, hostPath.slice(world.root.length) || "/"),
    });
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
    return filesystemImportsFor([{ guestPath: "/", fs: table }]);
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
    let largest = 0;
    for (const core of this.#cores) {
      for (const value of Object.values(core.exports)) {
        if (value instanceof WebAssembly.Memory) {
          largest = Math.max(largest, value.buffer.byteLength);
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
    this.#host.post({ t: "exit", pid: this.pid, ...report });
    sendProfile();
    this.onExit?.();
  }
}

/** jco throws the `err` case of `run`'s `result` as a value without a message. */
function isRunErr(e: unknown): boolean {
  return e === undefined ||
    (typeof e === "object" && e !== null && "payload" in e &&
      (e as { payload: unknown }).payload === undefined);
}
