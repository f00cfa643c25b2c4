/**
 * The process table: starting a process for each call, the process tree,
 * stopping and killing, and what happens when a process ends
 * (PROTOCOL sections 3.3, 3.6 and 3.8).
 *
 * @module
 */
import { uuidv7 } from "uuidv7";
import type { LoadedComponent } from "./components/cache.ts";
import { ErrorCode, type ErrorObject, type Message, RpcError } from "./jsonrpc.ts";
import type { Journal } from "./journal.ts";
import type { CoreFiles } from "./core_files.ts";
import type { NativePlugin } from "./native.ts";
import type { LockTable } from "./locks.ts";
import { AGENT_PLUGIN, pluginNameProblem } from "./names.ts";
import type { CrashReport, WorkerPool } from "./pool.ts";
import { CrashLedger, DEFAULT_SUPERVISION, type SupervisionOptions } from "./supervision.ts";
import { type CallTree, type Origin, type Peer, Process, type ProcessEnd } from "./process.ts";
import { join } from "node:path";
import { LimitError, type Limits, readLimits } from "./limits.ts";
import type { PluginVersions } from "./versions.ts";
import type { World } from "./world.ts";
import type { ExitReport } from "../runtime/messages.ts";
import { AgentEnv } from "./agent_env.ts";
import { STOP_GRACE_MS } from "../protocol/limits.ts";
import type { AnswerBody } from "../protocol/answer.ts";
export { STOP_GRACE_MS };

/** Longest params text in a journal start line. */
const MAX_PARAMS_IN_JOURNAL = 2000;

/** What a new process serves. */
export interface StartRequest {
  plugin: string;
  method: string;
  params: Record<string, unknown>;
  /** The attached parent (it stops the process when it ends); null: detached. */
  parent: Peer | null;
  /** Who makes the call, also when detached: it sets the depth and owns a notification. */
  caller?: Peer;
  /** Where the answer goes; null for a notification. */
  origin: Origin | null;
  /** Run this version instead of the current `plugin.wasm` (discovery of a new version). */
  component?: LoadedComponent;
  /**
   * The caller's deadline in milliseconds from now (`timeout_ms` of
   * `core.call`): unanswered by then, the call gets -32006 from the core and
   * the process is stopped.
   */
  timeoutMs?: number;
}

/** What a start holds against the limits until its process ends. */
interface Slot {
  tree: CallTree;
  depth: number;
  /** The sender of a notification, counted in its notifications in flight. */
  sender: Peer | null;
}

/** Refusals journaled at most once a second per limit; the rest are counted. */
const LIMIT_NOTE_INTERVAL_MS = 1000;

/** Receives the messages processes write. */
export type MessageHandler = (from: Process, messages: unknown[]) => void;

const encoder = new TextEncoder();

/** All processes of a world. */
export class ProcessManager {
  readonly #world: World;
  readonly #versions: PluginVersions;
  readonly #pool: WorkerPool;
  readonly #journal: Journal;
  readonly #locks: LockTable;
  readonly #files: CoreFiles;
  readonly #processes = new Map<string, Process>();
  readonly #killTimers = new Map<string, ReturnType<typeof setTimeout>>();
  /** Why each stopping process was stopped: its caller's -32002 says so. */
  readonly #stopWhy = new Map<string, string>();
  /** The deadlines of calls (`timeout_ms`), by the callee's process ID. */
  readonly #deadlines = new Map<string, ReturnType<typeof setTimeout>>();
  readonly #native = new Map<string, NativePlugin>();
  readonly #aborts = new Map<string, AbortController>();
  readonly #limits: Limits;
  /** Live processes and starts under way: a counter, so a check costs nothing. */
  #live = 0;
  /** Notifications in flight per sender (only senders with one or more). */
  readonly #notifying = new Map<Peer, number>();
  /** The senders of processes that notifications started. */
  readonly #notifiedBy = new Map<Process, Peer>();
  /** Per limit: when a refusal was last journaled, and how many since. */
  readonly #limitNotes = new Map<keyof Limits, { at: number; more: number }>();
  #unjournaledRefusals = false;
  /** The variable `token_env` of agent.yaml names, for the agent's processes. */
  readonly #agentEnv: AgentEnv;
  #accepting = true;
  /** Where messages from processes go (the router). */
  readonly #onMessages: MessageHandler;
  /** How services and crashes of workers are supervised. */
  readonly supervision: Readonly<SupervisionOptions>;
  /** Crashes of workers, and the plugins refused for them. */
  readonly crashes: CrashLedger;

  constructor(deps: {
    world: World;
    versions: PluginVersions;
    pool: WorkerPool;
    journal: Journal;
    locks: LockTable;
    files: CoreFiles;
    supervision?: Partial<SupervisionOptions>;
    /** The limits of PROTOCOL 3.10 in force (read from `config/limits.yaml` when left out). */
    limits?: Limits;
    /** The plugins the host implements itself, by name (`cargo`). */
    natives?: Record<string, NativePlugin>;
    /** Where the messages processes write go (the router's `receive`). */
    onMessages: MessageHandler;
  }) {
    this.#onMessages = deps.onMessages;
    this.#world = deps.world;
    this.#versions = deps.versions;
    this.#pool = deps.pool;
    this.#journal = deps.journal;
    this.#locks = deps.locks;
    this.#files = deps.files;
    this.#agentEnv = new AgentEnv(deps.world.agentConfigPath);
    if (deps.limits) {
      this.#limits = deps.limits;
    } else {
      const { limits, problems } = readLimits(join(deps.world.configDir, "limits.yaml"));
      this.#limits = limits;
      for (const p of problems) this.#journal.event(null, null, `warning: ${p}`);
    }
    for (const [name, plugin] of Object.entries(deps.natives ?? {})) this.#native.set(name, plugin);
    this.supervision = { ...DEFAULT_SUPERVISION, ...deps.supervision };
    this.crashes = new CrashLedger(this.supervision);
    this.crashes.onAccepted = (plugin, refused, why) =>
      this.#journal.event(
        null,
        plugin,
        `calls of ${plugin} are accepted again: ${why} (${refused} refused meanwhile)`,
      );
    const files = deps.pool.openFiles;
    if (files.source === "fallback") {
      this.#journal.event(
        null,
        null,
        `warning: the host's limit of open files cannot be read (${files.problem}), so ` +
          `${files.limit} is assumed: each plugin worker may hold ${deps.pool.fileBudget} host ` +
          "files open; run the host with --allow-ffi (or --allow-all) to use the real limit",
      );
    }
  }

  /** A new version of `plugin` is current: calls refused after crashes are accepted again. */
  newVersion(plugin: string): void {
    this.crashes.forgive(plugin);
  }

  /** The limits in force (PROTOCOL 3.10). */
  get limits(): Readonly<Limits> {
    return this.#limits;
  }

  /** Live processes, with the starts under way. */
  get live(): number {
    return this.#live;
  }

  /** The plugin the host implements under `name`, if any. */
  native(name: string): NativePlugin | undefined {
    return this.#native.get(name);
  }

  /** The names of the plugins the host implements. */
  natives(): string[] {
    return [...this.#native.keys()];
  }

  /** A running or stopping process. */
  get(pid: string): Process | undefined {
    return this.#processes.get(pid);
  }

  /** All processes, oldest first. */
  list(): Process[] {
    return [...this.#processes.values()];
  }

  /** Whether new processes may start (false during shutdown). */
  get accepting(): boolean {
    return this.#accepting;
  }

  /**
   * Starts a process for a call. Throws an {@linkcode RpcError} when the
   * plugin does not exist (-32001); a plugin that cannot run still gets a
   * process ID, and its failure reaches the caller as -32002.
   */
  async start(request: StartRequest): Promise<Process> {
    if (!this.#accepting) {
      throw new RpcError(ErrorCode.ServerError, "the host is shutting down: no new process starts");
    }
    const problem = pluginNameProblem(request.plugin);
    if (problem) {
      throw new RpcError(
        ErrorCode.NoSuchPlugin,
        `there is no plugin "${request.plugin}": ${problem}`,
      );
    }
    // a plugin refused after crashes of its workers; a given version (discovery) still runs
    const refused = request.component
      ? undefined
      : this.crashes.refusal(request.plugin, `${request.plugin}.${request.method}`);
    if (refused) throw refused;
    // reserved before anything awaits: a burst of calls in one turn meets the limits too
    const slot = this.#reserve(request);
    const native = this.#native.get(request.plugin);
    if (native && !request.component) return this.#startNative(request, native, slot);
    let component = request.component;
    let failure: unknown;
    if (!component) {
      try {
        component = await this.#versions.current(request.plugin);
      } catch (e) {
        if (e instanceof Deno.errors.NotFound || e instanceof Deno.errors.NotADirectory) {
          this.#release(slot);
          throw new RpcError(
            ErrorCode.NoSuchPlugin,
            `there is no plugin "${request.plugin}" (no plugins/${request.plugin}/plugin.wasm in the world)`,
          );
        }
        failure = e; // the plugin exists but cannot run: the caller hears it as -32002
      }
    }
    const pid = `${request.plugin}-${uuidv7()}`;
    this.#journal.track(pid);
    if (!component) return this.#failedStart(pid, request, failure, slot);
    const process = new Process({
      tree: slot.tree,
      depth: slot.depth,
      pid,
      plugin: request.plugin,
      version: component.hash,
      method: request.method,
      params: request.params,
      parent: request.parent,
      origin: request.origin,
      write: (m) => this.#pool.write(pid, encoder.encode(JSON.stringify(m) + "\n")),
    });
    this.#register(process, request, slot);
    const parent = request.parent?.name ?? "core";
    const env: [string, string][] = [
      ["SAUSAGE_PID", pid],
      ["SAUSAGE_PLUGIN", request.plugin],
      ["SAUSAGE_PARENT", parent],
    ];
    // the agent's key (token_env of agent.yaml) goes to the agent alone
    if (request.plugin === AGENT_PLUGIN) env.push(...this.#agentEnv.vars());
    this.#pool.spawn(component, {
      pid,
      env,
      args: [request.plugin],
      cwd: "/",
      files: { world: this.#world.root },
      stdio: "rpc",
      // a call with a deadline is answered through this thread alone, where the deadline is kept:
      // a worker that answered its caller itself could race the core's -32006
      caller: request.origin?.peer instanceof Process && request.timeoutMs === undefined
        ? { pid: request.origin.peer.pid, id: request.origin.id }
        : undefined,
    }, {
      stdout: (messages, discarded, answered) => {
        if (answered) process.answerWrittenByWorker();
        this.#stdout(process, messages, discarded);
      },
      stderr: (lines, dropped) => this.#stderr(process, lines, dropped),
      exit: (report) => this.#exited(process, report),
    });
    const first: Message = request.origin
      ? { jsonrpc: "2.0", id: pid, method: request.method, params: request.params }
      : { jsonrpc: "2.0", method: request.method, params: request.params };
    process.deliver(first);
    if (request.timeoutMs !== undefined) this.#keepDeadline(process, request.timeoutMs);
    // the parent may have ended while its version was read (a first transpile takes seconds):
    // an attached process still ends with it
    if (request.parent instanceof Process && request.parent.state === "ended") {
      this.stop(process, `its parent ${request.parent.pid} ended`);
    }
    return process;
  }

  /**
   * Gives a process's answer to its caller (see `Process.answer`); an error
   * answer is journaled with the call and the caller, so `core.log` finds a
   * call its plugin refused (PROTOCOL section 7). False when nothing was sent.
   */
  answer(process: Process, body: AnswerBody): boolean {
    const origin = process.origin;
    if (!process.answer(body)) return false;
    if ("error" in body && origin) {
      this.#journal.event(
        process.pid,
        process.plugin,
        `answered ${process.plugin}.${process.method} from ${origin.peer.name} with error ` +
          `${body.error.code}: ${clip(String(body.error.message))}`,
      );
    }
    return true;
  }

  /**
   * Starts the stopping state: stdin closes (EOF means "stop now"), and the
   * process is killed if it has not ended after 5 seconds.
   */
  stop(process: Process, why: string): Promise<ProcessEnd> {
    if (!process.beginStop()) return process.ended;
    this.#stopWhy.set(process.pid, why);
    this.#journal.event(process.pid, process.plugin, `stop: ${why}`);
    const abort = this.#aborts.get(process.pid);
    if (abort) abort.abort("stop");
    else this.#pool.closeStdin(process.pid);
    const timer = setTimeout(() => {
      this.kill(process, `it did not stop within ${STOP_GRACE_MS / 1000} s after ${why}`);
    }, STOP_GRACE_MS);
    this.#killTimers.set(process.pid, timer);
    return process.ended;
  }

  /** Kills a process at once (also one that computes). */
  kill(process: Process, why: string): Promise<ProcessEnd> {
    if (process.state === "ended") return process.ended;
    this.#journal.event(process.pid, process.plugin, `kill: ${why}`);
    const abort = this.#aborts.get(process.pid);
    if (abort) {
      // a native job that ignores a stop is abandoned: its children were sent SIGKILL
      if (!abort.signal.aborted) abort.abort("kill");
      this.#aborts.delete(process.pid);
      this.#ended(process, { status: null, reason: "killed", detail: why });
    } else {
      this.#pool.kill(process.pid, why);
    }
    return process.ended;
  }

  /**
   * Host shutdown: no new process starts, and every process stops in
   * parallel (killed after 5 s).
   */
  async shutdown(): Promise<void> {
    this.#accepting = false;
    this.#journalRefusals(true);
    const all = this.list();
    await Promise.all(all.map((p) => this.stop(p, "the host is shutting down")));
    await Promise.all([...this.#native.values()].map((n) => n.settled?.()));
  }

  /** Kills everything now (the second Ctrl-C). */
  async killAll(why: string): Promise<void> {
    this.#accepting = false;
    this.#journalRefusals(true);
    await Promise.all(this.list().map((p) => this.kill(p, why)));
  }

  /**
   * Counts a start against the limits (PROTOCOL 3.10), or throws the
   * {@linkcode LimitError} of the first limit it would pass.
   */
  #reserve(request: StartRequest): Slot {
    const caller = request.caller ?? request.parent;
    const from = caller instanceof Process ? caller : null;
    const depth = from ? from.depth + 1 : 1;
    const tree = request.parent instanceof Process ? request.parent.tree : { size: 0 };
    const sender = request.origin === null ? caller : null;
    const limits = this.#limits;
    const what = () =>
      `${request.origin ? "the call" : "the notification"} ${request.plugin}.${request.method}`;
    if (depth > limits.call_depth) throw this.#refuse("call_depth", caller, what());
    if (tree.size >= limits.processes_per_tree) {
      throw this.#refuse("processes_per_tree", caller, what());
    }
    if (this.#live >= limits.processes) throw this.#refuse("processes", caller, what());
    if (sender) {
      const n = this.#notifying.get(sender) ?? 0;
      if (n >= limits.notifications_per_sender) {
        throw this.#refuse("notifications_per_sender", caller, what());
      }
      this.#notifying.set(sender, n + 1);
    }
    this.#live++;
    tree.size++;
    return { tree, depth, sender };
  }

  /** Gives back what {@linkcode ProcessManager.#reserve} counted. */
  #release(slot: Slot): void {
    this.#live--;
    slot.tree.size--;
    if (slot.sender) {
      const n = (this.#notifying.get(slot.sender) ?? 1) - 1;
      if (n > 0) this.#notifying.set(slot.sender, n);
      else this.#notifying.delete(slot.sender);
    }
    if (this.#unjournaledRefusals) this.#journalRefusals(false);
  }

  /** The error of a refused start, journaled at most once a second per limit. */
  #refuse(limit: keyof Limits, caller: Peer | null, what: string): LimitError {
    const error = new LimitError(limit, this.#limits[limit], what);
    const now = performance.now();
    const note = this.#limitNotes.get(limit);
    if (note && now - note.at < LIMIT_NOTE_INTERVAL_MS) {
      note.more++;
      this.#unjournaledRefusals = true;
      return error;
    }
    const more = note?.more ? ` (${note.more} more refused at this limit since the last note)` : "";
    this.#limitNotes.set(limit, { at: now, more: 0 });
    const text = `limit: ${error.message}${more}`;
    if (caller instanceof Process) this.#journal.event(caller.pid, caller.plugin, text);
    else this.#journal.event(null, null, `${caller?.name ?? "core"}: ${text}`);
    return error;
  }

  /** Journals the counts of refusals not journaled yet (older than the interval, or all). */
  #journalRefusals(all: boolean): void {
    const now = performance.now();
    let left = false;
    for (const [limit, note] of this.#limitNotes) {
      if (note.more === 0) continue;
      if (!all && now - note.at < LIMIT_NOTE_INTERVAL_MS) {
        left = true;
        continue;
      }
      this.#journal.event(
        null,
        null,
        `limit: ${note.more} more starts were refused at the limit ${limit} (${
          this.#limits[limit]
        })`,
      );
      this.#limitNotes.set(limit, { at: now, more: 0 });
    }
    this.#unjournaledRefusals = left;
  }

  /** Enters a new process in the table, `/proc`, its parent's children and the journal. */
  #register(process: Process, request: StartRequest, slot: Slot): void {
    if (slot.sender) this.#notifiedBy.set(process, slot.sender);
    this.#processes.set(process.pid, process);
    this.#files.add(process);
    if (request.parent instanceof Process) request.parent.adopt(process);
    this.#journal.event(
      process.pid,
      request.plugin,
      startLine(request),
    );
  }

  /** A call to a plugin the host implements: no worker, the same process face. */
  #startNative(request: StartRequest, native: NativePlugin, slot: Slot): Process {
    const pid = `${request.plugin}-${uuidv7()}`;
    this.#journal.track(pid);
    const abort = new AbortController();
    const process = new Process({
      pid,
      plugin: request.plugin,
      version: "native",
      method: request.method,
      params: request.params,
      parent: request.parent,
      origin: request.origin,
      write: () => {}, // a native process makes no calls, so nothing answers it
      tree: slot.tree,
      depth: slot.depth,
    });
    this.#aborts.set(pid, abort);
    this.#register(process, request, slot);
    if (request.timeoutMs !== undefined) this.#keepDeadline(process, request.timeoutMs);
    const method = Object.hasOwn(native.methods, request.method)
      ? native.methods[request.method]
      : undefined;
    const answer = (body: { result: unknown } | { error: ErrorObject }) => {
      this.answer(process, body);
    };
    const job = method
      ? method({
        pid,
        signal: abort.signal,
        deadline: request.timeoutMs === undefined ? undefined : Date.now() + request.timeoutMs,
        log: (line) => this.#journal.append(pid, request.plugin, "stderr", line),
        notify: (name, params) => {
          if (process.origin && !process.answered) {
            process.origin.peer.deliver({
              jsonrpc: "2.0",
              method: "core.notify",
              params: { call: process.origin.id, name, params: params ?? {} },
            });
          }
        },
      }, request.params)
      : Promise.reject(
        new RpcError(ErrorCode.MethodNotFound, `${request.plugin} has no method ${request.method}`),
      );
    job.then(
      (result) => {
        answer({ result: result ?? null });
        this.#aborts.delete(pid);
        this.#ended(process, { status: 0, reason: "exited" });
      },
      (e) => {
        if (abort.signal.aborted) {
          this.#aborts.delete(pid);
          this.#ended(process, {
            status: null,
            reason: "killed",
            detail: `it was ${abort.signal.reason === "kill" ? "killed" : "stopped"}`,
          });
          return;
        }
        const error = e instanceof RpcError
          ? e
          : new RpcError(ErrorCode.InternalError, (e as Error).message);
        answer({ error: error.toObject() });
        this.#aborts.delete(pid);
        this.#ended(process, { status: 1, reason: "exited" });
      },
    );
    return process;
  }

  /**
   * Keeps the deadline of a call: unanswered after `ms`, its caller gets
   * -32006 and the process is stopped. A process that answered in time runs
   * on (a detached server); one started by a notification is stopped.
   */
  #keepDeadline(process: Process, ms: number): void {
    const timer = setTimeout(() => {
      this.#deadlines.delete(process.pid);
      if (process.state !== "running" || (process.origin && process.answered)) return;
      if (process.origin) {
        process.answer({ error: deadlineError(process, ms).toObject() });
        this.#journal.event(
          process.pid,
          process.plugin,
          `no answer to ${process.plugin}.${process.method} from ${process.origin.peer.name} ` +
            `within its deadline of ${ms} ms: the caller got -32006`,
        );
      }
      this.stop(process, `the deadline of its call passed (timeout_ms ${ms})`);
    }, ms);
    this.#deadlines.set(process.pid, timer);
  }

  #failedStart(pid: string, request: StartRequest, e: unknown, slot: Slot): Process {
    const detail = e instanceof Error ? e.message : String(e);
    const process = new Process({
      pid,
      plugin: request.plugin,
      version: "",
      method: request.method,
      params: request.params,
      parent: request.parent,
      origin: request.origin,
      write: () => {},
      tree: slot.tree,
      depth: slot.depth,
    });
    if (slot.sender) this.#notifiedBy.set(process, slot.sender);
    this.#journal.event(
      pid,
      request.plugin,
      startLine(request),
    );
    this.#journal.event(pid, request.plugin, `cannot start: ${detail}`);
    queueMicrotask(() => this.#ended(process, { status: null, reason: "failed", detail }));
    return process;
  }

  #stdout(process: Process, messages: unknown[], discarded: number): void {
    if (discarded > 0) {
      if (process.discarded(discarded)) {
        this.#journal.event(
          process.pid,
          process.plugin,
          "warning: discarded a line of stdout that is not a JSON-RPC message; " +
            "stdout belongs to the protocol, log to stderr (further such lines are counted at the end)",
        );
      }
    }
    if (messages.length > 0) this.#onMessages(process, messages);
  }

  #stderr(process: Process, lines: string[], dropped: number): void {
    for (const line of lines) this.#journal.append(process.pid, process.plugin, "stderr", line);
    if (dropped > 0) {
      this.#journal.event(
        process.pid,
        process.plugin,
        `dropped ${dropped} lines of stderr: a process may log about 1000 lines per second`,
      );
    }
  }

  /**
   * A worker crashed: journal what ran on it, and charge the plugins (see
   * `supervision.ts`). The pool's `onCrash`, before its processes' exits.
   */
  workerCrashed(crash: CrashReport): void {
    const plugins = new Set<string>();
    for (const pid of crash.pids) {
      const p = this.#processes.get(pid);
      if (p) plugins.add(p.plugin);
    }
    const names = [...plugins].sort();
    const verdict = this.crashes.record(crash, names);
    const ran = names.length === 0
      ? "it ran no process"
      : `it ran ${crash.pids.length} processes of ${names.join(", ")}`;
    const charged = verdict.charged
      ? `charged to ${verdict.charged}, the only plugin on it`
      : names.length > 1
      ? "charged to none of them alone"
      : "charged to no plugin";
    this.#journal.event(
      null,
      null,
      `plugin worker ${crash.worker} crashed (${crash.message}): ${ran}; ${charged}`,
    );
    const r = verdict.refused;
    if (r) {
      this.#journal.event(
        null,
        r.plugin,
        `calls of ${r.plugin} are refused until ${new Date(r.until).toISOString()}: its ` +
          `processes were on ${r.crashes} crashes of plugin workers within ` +
          `${this.supervision.crashWindowMs / 1000} s, and no other plugin was on all of them ` +
          `(a core.activate of a new version accepts them at once)`,
      );
    }
  }

  #exited(process: Process, report: Omit<ProcessEnd, "log">): void {
    if (process.discardedLines > 1) {
      this.#journal.event(
        process.pid,
        process.plugin,
        `discarded ${process.discardedLines} lines of stdout that were not JSON-RPC messages`,
      );
    }
    this.#ended(process, report);
  }

  #ended(process: Process, report: Omit<ProcessEnd, "log">): void {
    if (process.state === "ended") return;
    const timer = this.#killTimers.get(process.pid);
    if (timer !== undefined) clearTimeout(timer);
    this.#killTimers.delete(process.pid);
    const stopped = this.#stopWhy.get(process.pid);
    this.#stopWhy.delete(process.pid);
    clearTimeout(this.#deadlines.get(process.pid));
    this.#deadlines.delete(process.pid);
    this.#journal.event(process.pid, process.plugin, exitText(report));
    const end: ProcessEnd = { ...report, log: this.#journal.tail(process.pid) };
    this.#processes.delete(process.pid);
    this.#files.remove(process.pid);
    this.#journal.untrack(process.pid);
    const orphans = process.end(end);
    const sender = this.#notifiedBy.get(process) ?? null;
    if (sender) this.#notifiedBy.delete(process);
    this.#release({ tree: process.tree, depth: process.depth, sender });
    // an error is made (and its stack captured) only for a call still unanswered
    if (!process.answered) {
      process.answer({ error: processEndedError(process, end, stopped).toObject() });
    }
    for (const child of orphans) this.stop(child, `its parent ${process.pid} ended`);
    // locks go last: the worker reported the end after the last file operation returned
    this.#locks.releaseAll(process.pid);
  }
}

/** The -32006 error of a call whose deadline passed (PROTOCOL 3.4). */
export function deadlineError(process: Process, ms: number): RpcError {
  return new RpcError(
    ErrorCode.Deadline,
    `${process.plugin}.${process.method}: no answer within the call's deadline of ${ms} ms ` +
      `(timeout_ms): the process ${process.pid} is being stopped`,
    { pid: process.pid, timeout_ms: ms },
  );
}

/**
 * The -32002 error of a process that ended without answering; `stopped` is
 * why it was stopped first, if it was (a stopped process may end without an
 * answer: PROTOCOL 3.6).
 */
export function processEndedError(
  process: Process,
  end: ProcessEnd,
  stopped?: string,
): RpcError {
  // `data.detail` is always there (PROTOCOL 3.3), also for a plain exit
  const detail = end.detail ??
    (end.reason === "exited" ? `it exited with status ${end.status} before it answered` : "");
  const how = {
    exited: `exited with status ${end.status}`,
    trapped: "crashed",
    killed: "was killed",
    failed: "could not start",
  }[end.reason];
  const why = end.reason !== "exited" && detail ? ` (${detail})` : "";
  const after = stopped === undefined || end.reason === "killed"
    ? ""
    : ` after it was stopped: ${stopped}`;
  return new RpcError(
    ErrorCode.ProcessEnded,
    `${process.plugin}.${process.method}: the process ${process.pid} ended without an answer: it ${how}${why}${after}`,
    {
      pid: process.pid,
      status: end.status,
      reason: end.reason,
      detail,
      log: end.log,
      ...(stopped === undefined ? {} : { stopped }),
    },
  );
}

function exitText(report: ExitReport): string {
  switch (report.reason) {
    case "exited":
      return `exit status ${report.status}`;
    case "killed":
      return `killed: ${report.detail ?? ""}`;
    case "trapped":
      return `crashed: ${report.detail ?? "trap"}`;
    case "failed":
      return `failed: ${report.detail ?? ""}`;
  }
}

/** The journal's line for a start: the method, its params, and the call's deadline if it has one. */
function startLine(request: StartRequest): string {
  const deadline = request.timeoutMs === undefined ? "" : ` (deadline ${request.timeoutMs} ms)`;
  // a process's caller is in /proc; a front end's (console, web) would be lost
  const parent = request.parent && !(request.parent instanceof Process)
    ? ` (parent ${request.parent.name})`
    : "";
  return `start ${request.method} ${paramsText(request.params)}${deadline}${parent}`;
}

function paramsText(params: Record<string, unknown>): string {
  return clip(JSON.stringify(params));
}

/** A text for a journal line, cut with a mark that says how long it was. */
function clip(text: string): string {
  return text.length > MAX_PARAMS_IN_JOURNAL
    ? `${text.slice(0, MAX_PARAMS_IN_JOURNAL)}… (${text.length} characters)`
    : text;
}
