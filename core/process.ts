/**
 * A process: one run of one plugin version (PROTOCOL section 3), and the
 * {@linkcode Peer} interface shared by everything that makes calls: processes,
 * the console, the core itself.
 *
 * @module
 */
import { type Id, idKey, type Message } from "./jsonrpc.ts";
import { type AnswerBody, answerResponse } from "../protocol/answer.ts";
import type { ExitReport } from "../runtime/messages.ts";
import type { WorkerCrash } from "./supervision.ts";

/** Something that sends calls to the core and receives messages from it. */
export interface Peer {
  /** `console`, `web` (the page), `core`, or a process ID: what `SAUSAGE_PARENT` says. */
  readonly name: string;
  /** Whether messages can still reach it. */
  readonly alive: boolean;
  /** Gives it a response or a notification. */
  deliver(message: Message): void;
}

/** Lifetime states (PROTOCOL 3.6). */
export type ProcessState = "running" | "stopping" | "ended";

/** The call that started a process: where its answer goes. */
export interface Origin {
  peer: Peer;
  /** The caller's request ID (the process got its own PID as ID). */
  id: Id;
}

/** A call a process made that has not been answered yet. */
export interface OutgoingCall {
  method: string;
  /** The process serving it, when the call went to a plugin. */
  callee?: Process;
}

/** A process started from outside and its attached descendants (PROTOCOL 3.10). */
export interface CallTree {
  /** Live processes in the tree, and starts reserved for it. */
  size: number;
}

/** How a process ended, as the core reports it. */
export interface ProcessEnd extends ExitReport {
  /** The last journal lines of the process. */
  log: string[];
  /** Set when it ended because its plugin worker crashed. */
  workerCrash?: WorkerCrash;
}

/** Everything the core knows of one process. */
export class Process implements Peer {
  readonly pid: string;
  readonly plugin: string;
  /** sha256 of the plugin.wasm this process runs. */
  readonly version: string;
  readonly method: string;
  readonly params: Record<string, unknown>;
  /** The attached parent, or null for a detached process. */
  readonly parent: Peer | null;
  readonly startedAt = new Date();
  /** The call tree it counts in (a detached process starts a new one). */
  readonly tree: CallTree;
  /** Nested calls up to this one: 1 for a process started from outside. */
  readonly depth: number;
  #state: ProcessState = "running";
  /** Attached children: they are stopped when this process ends. */
  readonly #children = new Set<Process>();
  /** Where the answer goes; null when it was started by a notification. */
  readonly origin: Origin | null;
  #answered = false;
  /** Its worker gave the answer to the caller itself (see `answerWrittenByWorker`). */
  #answerWritten = false;
  /** Calls this process made, by the exact JSON text of their ID. */
  readonly #outgoing = new Map<string, OutgoingCall>();
  #discardedLines = 0;
  /** Settles when the process has ended. */
  readonly ended: Promise<ProcessEnd>;
  readonly #resolveEnded: (end: ProcessEnd) => void;
  readonly #write: (message: Message) => void;

  constructor(init: {
    pid: string;
    plugin: string;
    version: string;
    method: string;
    params: Record<string, unknown>;
    parent: Peer | null;
    origin: Origin | null;
    write: (message: Message) => void;
    tree?: CallTree;
    depth?: number;
  }) {
    this.pid = init.pid;
    this.plugin = init.plugin;
    this.version = init.version;
    this.method = init.method;
    this.params = init.params;
    this.parent = init.parent;
    this.origin = init.origin;
    this.#write = init.write;
    this.tree = init.tree ?? { size: 0 };
    this.depth = init.depth ?? 1;
    const { promise, resolve } = Promise.withResolvers<ProcessEnd>();
    this.ended = promise;
    this.#resolveEnded = resolve;
  }

  get name(): string {
    return this.pid;
  }

  /** `running`, then `stopping` (its stdin is closed), then `ended`. */
  get state(): ProcessState {
    return this.#state;
  }

  /** Messages reach a process while its stdin is open. */
  get alive(): boolean {
    return this.#state === "running";
  }

  /** Whether the origin got its answer (a second answer is dropped). */
  get answered(): boolean {
    return this.#answered;
  }

  /** Stdout lines dropped because they were not JSON-RPC messages. */
  get discardedLines(): number {
    return this.#discardedLines;
  }

  /** The attached children: they are stopped when this process ends. */
  get children(): ReadonlySet<Process> {
    return this.#children;
  }

  /** The call it made with this ID that has no answer yet. */
  outgoingCall(id: Id): OutgoingCall | undefined {
    return this.#outgoing.get(idKey(id));
  }

  /**
   * Reserves the ID of a call this process makes; false when a call of it
   * with that ID has no answer yet. Reserved before anything awaits, so a
   * second request with the ID in the same batch of lines is refused too.
   */
  reserveCall(id: Id, method: string): boolean {
    const key = idKey(id);
    if (this.#outgoing.has(key)) return false;
    this.#outgoing.set(key, { method });
    return true;
  }

  /**
   * Gives its caller the answer (its `origin` gets it with the caller's ID);
   * false, and nothing sent, when it was started by a notification or
   * answered already.
   */
  answer(body: AnswerBody): boolean {
    if (!this.origin || this.#answered) return false;
    this.#answered = true;
    const response = answerResponse(this.origin.id, body);
    const peer = this.origin.peer;
    if (this.#answerWritten && peer instanceof Process) peer.#delivered(response);
    else peer.deliver(response);
    return true;
  }

  /**
   * Says that its worker wrote its answer to the stdin of its caller, which
   * runs on the same worker: the {@linkcode answer} that follows keeps the
   * books and writes nothing.
   */
  answerWrittenByWorker(): void {
    this.#answerWritten = true;
  }

  /** Counts stdout lines that were not messages; true for the first ones. */
  discarded(lines: number): boolean {
    const first = this.#discardedLines === 0;
    this.#discardedLines += lines;
    return first;
  }

  /** Attaches a child: it is stopped when this process ends. */
  adopt(child: Process): void {
    this.#children.add(child);
  }

  /**
   * Enters the stopping state: its stdin is to close, and the calls it made
   * can no longer be answered. False when it was not running.
   */
  beginStop(): boolean {
    if (this.#state !== "running") return false;
    this.#state = "stopping";
    this.#outgoing.clear();
    return true;
  }

  /** Whether it outlives its caller. */
  get detached(): boolean {
    return this.parent === null;
  }

  /** Writes a message to the process's stdin (dropped once it stops). */
  deliver(message: Message): void {
    if (this.#state !== "running") return;
    this.#delivered(message);
    this.#write(message);
  }

  /** The books of a message that reached its stdin: a response ends the call it answers. */
  #delivered(message: Message): void {
    if (this.#state === "running" && !("method" in message)) {
      this.#outgoing.delete(idKey(message.id));
    }
  }

  /**
   * Marks the process ended, called once by the process manager: what it
   * made has no answer to wait for, and its parent lets it go. Gives the
   * children it had, to be stopped.
   */
  end(end: ProcessEnd): Process[] {
    this.#state = "ended";
    this.#outgoing.clear();
    if (this.parent instanceof Process) this.parent.#children.delete(this);
    const children = [...this.#children];
    this.#children.clear();
    this.#resolveEnded(end);
    return children;
  }

  /** The `info.json` view (PROTOCOL section 4). */
  info(): Record<string, unknown> {
    return {
      pid: this.pid,
      plugin: this.plugin,
      version: this.version,
      method: this.method,
      params: this.params,
      parent: this.parent?.name ?? "core",
      detached: this.detached,
      started: this.startedAt.toISOString(),
      state: this.#state,
    };
  }
}
