/**
 * Advisory locks on paths (PROTOCOL section 6).
 *
 * Each acquisition gets its own place in a FIFO queue per path, so a process
 * that asks twice waits behind itself. The core releases every lock of a
 * process when it ends; the process manager calls {@linkcode LockTable.releaseAll}
 * only after the worker reported the end, which is after the process's last
 * file operation returned.
 *
 * @module
 */

/** A place in a lock's queue. */
interface Ticket {
  owner: string;
  granted: boolean;
  grant: (held: boolean) => void;
  since: string;
}

/** The state of one lock, for `/proc/core/locks.json`. */
export interface LockState {
  path: string;
  holder: string;
  since: string;
  waiting: string[];
}

/** All locks of a world. */
export class LockTable {
  readonly #queues = new Map<string, Ticket[]>();

  /**
   * Takes the lock on `path` for `owner`. With `wait` false, answers at once
   * whether the lock was free (and taken). An abort of `signal` while it
   * waits takes it out of the queue and answers false.
   */
  acquire(path: string, owner: string, wait = true, signal?: AbortSignal): Promise<boolean> {
    const queue = this.#queues.get(path) ?? [];
    if (!wait && queue.length > 0) return Promise.resolve(false);
    const { promise, resolve } = Promise.withResolvers<boolean>();
    const ticket: Ticket = { owner, granted: false, grant: resolve, since: "" };
    queue.push(ticket);
    this.#queues.set(path, queue);
    if (queue.length === 1) this.#grant(ticket);
    if (!ticket.granted && signal) {
      // a waiter that gives up (a deadline) leaves its place: a later grant would hold the
      // lock for nobody until its owner ended
      signal.addEventListener("abort", () => this.#withdraw(path, ticket), { once: true });
    }
    return promise;
  }

  /** Takes a waiting ticket out of its queue, answering it `false`. */
  #withdraw(path: string, ticket: Ticket): void {
    const queue = this.#queues.get(path);
    if (ticket.granted || !queue) return;
    const rest = queue.filter((t) => t !== ticket);
    if (rest.length === 0) this.#queues.delete(path);
    else this.#queues.set(path, rest);
    ticket.grant(false);
  }

  /** Releases the lock `owner` holds on `path`. Returns false if it held none. */
  release(path: string, owner: string): boolean {
    const queue = this.#queues.get(path);
    if (!queue || queue.length === 0 || queue[0].owner !== owner || !queue[0].granted) return false;
    queue.shift();
    this.#next(path, queue);
    return true;
  }

  /** Releases every lock of `owner` and drops its places in queues. */
  releaseAll(owner: string): void {
    for (const [path, queue] of [...this.#queues]) {
      const holderLeaves = queue[0]?.owner === owner;
      const rest = queue.filter((t) => t.owner !== owner);
      for (const t of queue) if (t.owner === owner && !t.granted) t.grant(false);
      if (holderLeaves) this.#next(path, rest);
      else if (rest.length === 0) this.#queues.delete(path);
      else this.#queues.set(path, rest);
    }
  }

  /** Held locks and their waiters. */
  snapshot(): LockState[] {
    const out: LockState[] = [];
    for (const [path, queue] of this.#queues) {
      if (queue.length === 0 || !queue[0].granted) continue;
      out.push({
        path,
        holder: queue[0].owner,
        since: queue[0].since,
        waiting: queue.slice(1).map((t) => t.owner),
      });
    }
    return out.sort((a, b) => a.path.localeCompare(b.path));
  }

  #grant(ticket: Ticket): void {
    ticket.granted = true;
    ticket.since = new Date().toISOString();
    ticket.grant(true);
  }

  #next(path: string, queue: Ticket[]): void {
    if (queue.length === 0) {
      this.#queues.delete(path);
      return;
    }
    this.#queues.set(path, queue);
    if (!queue[0].granted) this.#grant(queue[0]);
  }
}
