/**
 * A client of the core that is not a process: the console, `sausage call`,
 * the core's own services, tests. It sends requests with its own IDs and
 * gets responses and notifications back.
 *
 * @module
 */
import { type Id, idKey, type Message, type Request, type Response } from "./jsonrpc.ts";
import type { Peer } from "./process.ts";
import type { Router } from "./router.ts";

/** Options of one request. */
export interface RequestOptions {
  /** Gets the `core.notify` notifications of this call. */
  onNotify?: (name: string, params: unknown) => void;
  /** Gives up after this many milliseconds (the call goes on; its answer is dropped). */
  timeoutMs?: number;
  /** Told the ID the request goes out with (the `origin` of the process it starts). */
  onId?: (id: Id) => void;
}

/** Raised when a request got no answer in time. */
export class TimeoutError extends Error {
  override name = "TimeoutError";
}

interface Pending {
  resolve: (r: Response) => void;
  onNotify?: (name: string, params: unknown) => void;
}

/** A peer driven from TypeScript. */
export class Client implements Peer {
  readonly name: string;
  readonly #router: Router;
  readonly #pending = new Map<string, Pending>();
  #nextId = 1;
  alive = true;
  /** Notifications that belong to no pending call. */
  onNotification?: (message: Request) => void;

  constructor(name: string, router: Router) {
    this.name = name;
    this.#router = router;
  }

  /** Sends a request and waits for its response (a result or an error object). */
  request(
    method: string,
    params: Record<string, unknown> = {},
    options: RequestOptions = {},
  ): Promise<Response> {
    const id: Id = this.#nextId++;
    const key = idKey(id);
    const { promise, resolve, reject } = Promise.withResolvers<Response>();
    this.#pending.set(key, { resolve, onNotify: options.onNotify });
    options.onId?.(id);
    let timer: ReturnType<typeof setTimeout> | undefined;
    if (options.timeoutMs !== undefined) {
      timer = setTimeout(() => {
        this.#pending.delete(key);
        reject(new TimeoutError(`${method}: no answer within ${options.timeoutMs} ms`));
      }, options.timeoutMs);
    }
    this.#router.receive(this, { jsonrpc: "2.0", id, method, params });
    return timer === undefined ? promise : promise.finally(() => clearTimeout(timer));
  }

  /** Sends a notification. */
  notify(method: string, params: Record<string, unknown> = {}): void {
    this.#router.receive(this, { jsonrpc: "2.0", method, params });
  }

  /** Sends any message, as it is (for raw input such as a batch). */
  send(message: unknown): void {
    this.#router.receive(this, message);
  }

  deliver(message: Message): void {
    if ("method" in message) {
      const p = message.params as { call?: Id; name?: string; params?: unknown } | undefined;
      if (message.method === "core.notify" && p && p.call !== undefined) {
        const pending = this.#pending.get(idKey(p.call));
        if (pending) {
          pending.onNotify?.(String(p.name), p.params);
          return;
        }
      }
      this.onNotification?.(message);
      return;
    }
    const key = idKey(message.id);
    const pending = this.#pending.get(key);
    if (!pending) return; // late: the caller gave up
    this.#pending.delete(key);
    pending.resolve(message);
  }
}
