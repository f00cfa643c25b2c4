/**
 * The core API (PROTOCOL section 9): the `core.*` methods. Everything else
 * is a file.
 *
 * @module
 */
import { ErrorCode, type Id, RpcError } from "./jsonrpc.ts";
import { type Journal, type LogQuery, QueryError } from "./journal.ts";
import type { LockTable } from "./locks.ts";
import type { Activation, ActivationItem } from "./activation.ts";
import { type Peer, Process } from "./process.ts";
import type { ProcessManager } from "./process_table.ts";
import { MAX_TIMEOUT_MS } from "../protocol/limits.ts";

/** Returned by the core API when it answers later or not at all. */
export const NO_ANSWER = Symbol("no answer");

/** How `core.call` starts a call (PROTOCOL 3.4). */
export interface CallOptions {
  /** The callee has no parent: it does not end with its caller. */
  detach?: boolean;
  /**
   * The deadline, in milliseconds from now: if the callee has not answered
   * by then, the core answers -32006 for it and stops it.
   */
  timeoutMs?: number;
}

/** What the core API needs of the router: calls for `core.call`, and `core.notify` passed on. */
export interface CallRouter {
  call(
    caller: Peer,
    id: Id | undefined,
    method: string,
    params: Record<string, unknown>,
    options?: CallOptions,
  ): Promise<void>;
  forwardNotify(from: Peer, name: string, params: unknown): void;
}

/** The world beyond one process: other processes, plugins and the host itself. */
export interface CoreWorld {
  processes: ProcessManager;
  router: CallRouter;
  activation: Activation;
  /** `core.exit`: stop the host with exit code 75. */
  requestExit: () => void;
}

/**
 * What the core API needs from the host. The test runner gives it no
 * `world` (a test has no other plugins): the methods that need one refuse.
 */
export interface CoreApiDeps {
  locks: LockTable;
  journal: Journal;
  world?: CoreWorld;
  /** Why the methods that need the world do nothing without one, after "core.call does nothing". */
  alone?: string;
  /** `core.log` shows a caller only its own entries (a test's journal is its own). */
  ownEntriesOnly?: boolean;
}

type Params = Record<string, unknown>;
type Handler = (
  caller: Peer,
  params: Params,
  id: Id | undefined,
  signal?: AbortSignal,
) => unknown | Promise<unknown>;

function invalid(message: string): RpcError {
  return new RpcError(ErrorCode.InvalidParams, message);
}

function requireString(params: Params, name: string, method: string): string {
  const v = params[name];
  if (typeof v !== "string" || v === "") {
    throw invalid(`core.${method} needs "${name}", a non-empty string`);
  }
  return v;
}

function optionalBoolean(params: Params, name: string, method: string): boolean | undefined {
  const v = params[name];
  if (v !== undefined && typeof v !== "boolean") {
    throw invalid(`core.${method}: "${name}" must be true or false`);
  }
  return v as boolean | undefined;
}

function optionalTimeout(params: Params): number | undefined {
  const v = params.timeout_ms;
  if (v === undefined) return undefined;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 1 || v > MAX_TIMEOUT_MS) {
    throw invalid(
      `core.call: "timeout_ms" must be a whole number of milliseconds from 1 to ${MAX_TIMEOUT_MS}` +
        ` (about 24.8 days), not ${JSON.stringify(v)}`,
    );
  }
  return v;
}

function optionalObject(params: Params, name: string, method: string): Params {
  const v = params[name];
  if (v === undefined) return {};
  if (typeof v !== "object" || v === null || Array.isArray(v)) {
    throw invalid(`core.${method}: "${name}" must be an object (params are by name)`);
  }
  return v as Params;
}

/** The `core.*` methods. */
export class CoreApi {
  readonly #d: CoreApiDeps;
  readonly #methods: Record<string, Handler>;

  constructor(deps: CoreApiDeps) {
    this.#d = deps;
    this.#methods = {
      call: (caller, p, id) => this.#call(caller, p, id),
      notify: (caller, p) => this.#notify(caller, p),
      stop: (caller, p) => this.#stop(caller, p),
      kill: (_caller, p) => this.#kill(p),
      lock: (caller, p, _id, signal) => this.#lock(caller, p, signal),
      unlock: (caller, p) => this.#unlock(caller, p),
      log: (caller, p) => this.#log(caller, p),
      activate: (_caller, p) => this.#activate(p),
      revert: (_caller, p) => this.#revert(p),
      exit: () => this.#exit(),
    };
  }

  /** Names of the methods, for `help` and errors. */
  get methods(): string[] {
    return Object.keys(this.#methods).map((m) => `core.${m}`);
  }

  /**
   * A request: the result, or {@linkcode NO_ANSWER} when the answer comes
   * later by itself. `signal` aborts when the caller's deadline passes: a
   * method that waits (`core.lock`) gives up its place.
   */
  async request(
    caller: Peer,
    id: Id,
    method: string,
    params: Params,
    signal?: AbortSignal,
  ): Promise<unknown> {
    return await this.#handler(method)(caller, params, id, signal);
  }

  /** A notification: no answer. */
  async notify(caller: Peer, method: string, params: Params): Promise<void> {
    await this.#handler(method)(caller, params, undefined);
  }

  #handler(method: string): Handler {
    const handler = Object.hasOwn(this.#methods, method) ? this.#methods[method] : undefined;
    if (!handler) {
      throw new RpcError(
        ErrorCode.MethodNotFound,
        `the core has no method "core.${method}"; it has ${this.methods.join(", ")} ` +
          "(see /proc/core/PROTOCOL.md, section 9)",
      );
    }
    return handler;
  }

  async #call(caller: Peer, p: Params, id: Id | undefined) {
    const method = requireString(p, "method", "call");
    const params = optionalObject(p, "params", "call");
    const detach = optionalBoolean(p, "detach", "call") ?? false;
    const timeoutMs = optionalTimeout(p);
    await this.#world("call").router.call(caller, id, method, params, { detach, timeoutMs });
    return NO_ANSWER;
  }

  #notify(caller: Peer, p: Params) {
    const name = requireString(p, "name", "notify");
    if (this.#d.world) {
      this.#d.world.router.forwardNotify(caller, name, p.params);
    } else {
      // alone, the caller has no caller: the journal keeps what it said
      const plugin = caller instanceof Process ? caller.plugin : null;
      this.#d.journal.event(
        caller.name,
        plugin,
        `notify ${name} ${JSON.stringify(p.params ?? {})}`,
      );
    }
    return {};
  }

  #process(p: Params, method: string) {
    const pid = requireString(p, "pid", method);
    const process = this.#world(method).processes.get(pid);
    if (!process) throw invalid(`core.${method}: there is no running process ${pid}`);
    return process;
  }

  async #stop(caller: Peer, p: Params) {
    const process = this.#process(p, "stop");
    await this.#world("stop").processes.stop(process, `core.stop by ${caller.name}`);
    return {};
  }

  async #kill(p: Params) {
    const process = this.#process(p, "kill");
    await this.#world("kill").processes.kill(process, "core.kill");
    return {};
  }

  async #lock(caller: Peer, p: Params, signal?: AbortSignal) {
    const path = requireString(p, "path", "lock");
    const wait = optionalBoolean(p, "wait", "lock") ?? true;
    const held = await this.#d.locks.acquire(path, caller.name, wait, signal);
    return { held };
  }

  #unlock(caller: Peer, p: Params) {
    const path = requireString(p, "path", "unlock");
    this.#d.locks.release(path, caller.name);
    return {};
  }

  #log(caller: Peer, p: Params) {
    const query: LogQuery = {};
    for (const name of ["plugin", "pid", "grep"] as const) {
      if (p[name] === undefined) continue;
      if (typeof p[name] !== "string") throw invalid(`core.log: "${name}" must be a string`);
      query[name] = p[name] as string;
    }
    for (const name of ["since", "until"] as const) {
      if (p[name] === undefined) continue;
      if (typeof p[name] !== "string" && typeof p[name] !== "number") {
        throw invalid(`core.log: "${name}" must be an ISO 8601 time, milliseconds, or an entry id`);
      }
      query[name] = p[name] as string | number;
    }
    if (p.limit !== undefined) {
      if (typeof p.limit !== "number") throw invalid(`core.log: "limit" must be a number`);
      query.limit = p.limit;
    }
    if (this.#d.ownEntriesOnly) query.pid = caller.name;
    try {
      return this.#d.journal.search(query); // {entries}, and `cut` when bounded
    } catch (e) {
      if (e instanceof QueryError) throw invalid(`core.log: ${e.message}`);
      throw e;
    }
  }

  #activate(p: Params) {
    const force = optionalBoolean(p, "force", "activate") ?? false;
    let items: ActivationItem[];
    if (p.plugins !== undefined) {
      if (p.plugin !== undefined || p.wasm !== undefined) {
        throw invalid(`core.activate takes "plugin" and "wasm", or "plugins", not both`);
      }
      if (!Array.isArray(p.plugins) || p.plugins.length === 0) {
        throw invalid(`core.activate: "plugins" must be a non-empty list of {plugin, wasm}`);
      }
      items = p.plugins.map((item, i) => {
        if (typeof item !== "object" || item === null) {
          throw invalid(`core.activate: plugins[${i}] must be {plugin, wasm}`);
        }
        const o = item as Params;
        return {
          plugin: requireString(o, "plugin", "activate"),
          wasm: requireString(o, "wasm", "activate"),
        };
      });
    } else {
      items = [{
        plugin: requireString(p, "plugin", "activate"),
        wasm: requireString(p, "wasm", "activate"),
      }];
    }
    return this.#world("activate").activation.activate(items, force);
  }

  #revert(p: Params) {
    const force = optionalBoolean(p, "force", "revert") ?? false;
    return this.#world("revert").activation.revert(requireString(p, "plugin", "revert"), force);
  }

  #exit() {
    const world = this.#world("exit");
    setTimeout(() => world.requestExit(), 0); // after the answer went out
    return {};
  }

  /** The world, or the refusal of a method that needs one. */
  #world(method: string): CoreWorld {
    if (this.#d.world) return this.#d.world;
    throw new RpcError(
      ErrorCode.NoSuchPlugin,
      `core.${method} does nothing ${this.#d.alone ?? "here: there are no other processes"}`,
    );
  }
}
