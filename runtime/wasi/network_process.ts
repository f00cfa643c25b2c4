/**
 * The network state of one process: its limits, what it holds open, and how
 * its waits end and wake it.
 *
 * Every socket, listener, lookup and HTTP exchange of a process registers
 * here, so that {@linkcode NetworkProcess.release} can close them all when
 * the process ends (a guest that exits drops nothing).
 *
 * @module
 */
import { abortable, Signal } from "./io.ts";
import { MAX_REQUESTS_PER_PROCESS, MAX_SOCKETS_PER_PROCESS } from "../../protocol/limits.ts";
export { MAX_REQUESTS_PER_PROCESS, MAX_SOCKETS_PER_PROCESS };

/** Most name lookups one process may have running. */
export const MAX_LOOKUPS_PER_PROCESS = 16;
/** Most bytes of request bodies one process may have collected to send whole. */
export const MAX_BODY_BYTES_PER_PROCESS = 32 * 1024 * 1024;

/** Something a process holds that must be closed when it ends. */
export interface Closable {
  /** Releases the host resource. May finish in the background (a socket drains its writes). */
  close(): void;
}

/** Host sockets open in this worker, across processes, and the budget for them. */
let _hostSockets = 0;
/** Until the host says (a worker cannot read the process's limits itself). */
let _hostSocketBudget = 1024;

/**
 * Sets the host sockets this worker's processes may hold open together
 * (the host derives it from its open-file limit, as for files).
 */
export function setHostSocketBudget(sockets: number): void {
  _hostSocketBudget = Math.max(64, Math.floor(sockets));
}

/** What a process's network needs from its worker (see `NetworkOptions` in `network.ts`). */
export interface ProcessOptions {
  /** Aborts every wait of the process (it was killed). */
  kill?: AbortSignal;
  /** Runs when I/O of the process completes (the worker notes a new task). */
  onWake?: () => void;
}

/** The network state of one process. */
export class NetworkProcess {
  readonly #kill: AbortSignal | undefined;
  readonly #onWake: (() => void) | undefined;
  readonly #open = new Set<Closable>();
  #sockets = 0;
  #requests = 0;
  #lookups = 0;
  #bodyBytes = 0;
  #released = false;
  /** Notifiers of this process with a pending wait. */
  readonly pending = new Set<Notifier>();

  constructor(options: ProcessOptions = {}) {
    this.#kill = options.kill;
    this.#onWake = options.onWake;
  }

  /** True once the process has ended: nothing new may start. */
  get released(): boolean {
    return this.#released;
  }

  /** The kill signal of the process, for timers and requests that must stop with it. */
  get kill(): AbortSignal | undefined {
    return this.#kill;
  }

  /** `promise`, or a promise that never settles once the process was killed. */
  wait<T>(promise: Promise<T>): Promise<T> {
    return abortable(promise, this.#kill);
  }

  /** Tells the worker that I/O of this process completed (a task may resume it). */
  wake(): void {
    this.#onWake?.();
  }

  /** Registers something to close when the process ends. */
  track(item: Closable): void {
    if (this.#released) {
      item.close();
      return;
    }
    this.#open.add(item);
  }

  /** Forgets an item that was closed by its owner. */
  untrack(item: Closable): void {
    this.#open.delete(item);
  }

  /** Counts a new socket; throws `new-socket-limit` when the process or the worker is full. */
  takeSocket(): void {
    if (
      this.#released || this.#sockets >= MAX_SOCKETS_PER_PROCESS ||
      _hostSockets >= _hostSocketBudget
    ) throw "new-socket-limit";
    this.#sockets++;
    _hostSockets++;
  }

  /** Gives back a socket counted by {@linkcode takeSocket}. */
  returnSocket(): void {
    if (this.#sockets === 0) return; // all given back when the process ended
    this.#sockets--;
    _hostSockets--;
  }

  /** Sockets held now. */
  get sockets(): number {
    return this.#sockets;
  }

  /** Counts an HTTP request; false when the process has too many in flight. */
  takeRequest(): boolean {
    if (this.#released || this.#requests >= MAX_REQUESTS_PER_PROCESS) return false;
    this.#requests++;
    return true;
  }

  /** Gives back a request counted by {@linkcode takeRequest}. */
  returnRequest(): void {
    this.#requests--;
  }

  /** Requests in flight now. */
  get requests(): number {
    return this.#requests;
  }

  /** Counts a name lookup; false when the process has too many running. */
  takeLookup(): boolean {
    if (this.#released || this.#lookups >= MAX_LOOKUPS_PER_PROCESS) return false;
    this.#lookups++;
    return true;
  }

  /** Gives back a lookup counted by {@linkcode takeLookup}. */
  returnLookup(): void {
    this.#lookups--;
  }

  /** Reserves room for a request body collected to be sent whole; false when there is none. */
  reserveBody(bytes: number): boolean {
    if (this.#released || this.#bodyBytes + bytes > MAX_BODY_BYTES_PER_PROCESS) return false;
    this.#bodyBytes += bytes;
    return true;
  }

  /** Gives back room reserved by {@linkcode reserveBody}. */
  releaseBody(bytes: number): void {
    this.#bodyBytes -= bytes;
  }

  /** Closes everything the process still holds; later operations fail. */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    // a dead guest drops nothing: its sockets leave the worker's budget now
    _hostSockets -= this.#sockets;
    this.#sockets = 0;
    const open = [...this.#open];
    this.#open.clear();
    for (const item of open) {
      try {
        item.close();
      } catch {
        // Already closed by the host: nothing left to release.
      }
    }
    // the waits of a dead guest never settle: nothing needs refreshing any more
    for (const notifier of [...this.pending]) notifier.refresh();
  }
}

/**
 * How often a wait that is still pending is released anyway. `poll` races
 * the waits of its pollables, and each race leaves a reaction on every wait
 * that has not settled: a listener polled with a timer for hours would pile
 * them up. A released wait only makes `poll` look again (a spurious wake-up,
 * which WASI allows): the guest does not run.
 */
export const WAIT_REFRESH_MS = 1000;

/** Notifiers with a pending wait, released at each refresh. */
const _pending = new Set<Notifier>();
let _refresher: ReturnType<typeof setInterval> | undefined;

function _refreshAll(): void {
  for (const notifier of [..._pending]) notifier.refresh();
  if (_pending.size === 0) {
    clearInterval(_refresher);
    _refresher = undefined;
  }
}

/**
 * The wake-up side of a host event that a guest may wait for: a
 * {@linkcode Signal} whose waits end with the process and whose
 * notifications tell the worker that the process may run.
 */
export class Notifier {
  readonly #process: NetworkProcess;
  readonly #signal = new Signal();
  /** The wait until the next notification, shared by all who wait now. */
  #next: Promise<void> | null = null;

  constructor(process: NetworkProcess) {
    this.#process = process;
  }

  /** Settles at the next {@linkcode notify} (or refresh); never, once the process was killed. */
  wait(): Promise<void> {
    if (this.#next) return this.#next;
    if (this.#process.released) return this.#process.wait(new Promise<void>(() => {}));
    const next = this.#process.wait(this.#signal.wait());
    // the signal also settles by itself (a refresh): a settled wait must never be handed out
    // again, or every poll would return at once and spin
    const settled = () => {
      if (this.#next !== next) return;
      this.#next = null;
      _pending.delete(this);
      this.#process.pending.delete(this);
    };
    next.then(settled, settled);
    this.#next = next;
    _pending.add(this);
    this.#process.pending.add(this);
    _refresher ??= setInterval(_refreshAll, WAIT_REFRESH_MS);
    return next;
  }

  /** Wakes every waiter. */
  notify(): void {
    this.#process.wake();
    this.refresh();
  }

  /** Settles the pending wait without waking the worker (see {@linkcode WAIT_REFRESH_MS}). */
  refresh(): void {
    this.#next = null;
    _pending.delete(this);
    this.#process.pending.delete(this);
    this.#signal.notify();
  }
}

/** Worker-wide socket counts, for tests. */
export function hostSocketUse(): { open: number; budget: number } {
  return { open: _hostSockets, budget: _hostSocketBudget };
}
