/**
 * Routing (PROTOCOL sections 3.2 to 3.5): every message a peer sends goes
 * through {@linkcode Router.receive}.
 *
 * - A request to `plugin.method` starts a process attached to the caller;
 *   its answer returns with the caller's ID.
 * - A request to `core.method` is answered by the core API.
 * - A response from a process answers the call that started it, if its ID is
 *   exactly the process ID and no answer went before; anything else is
 *   dropped.
 * - A notification to `plugin.method` starts an attached process that gets
 *   the notification; `core.notify` reaches the caller of the process.
 * - A request the host refuses (no such plugin or method, bad params, an ID
 *   in flight) is journaled with its error (PROTOCOL section 7).
 *
 * @module
 */
import { type CallOptions, type CallRouter, type CoreApi, NO_ANSWER } from "./core_api.ts";
import {
  type Classified,
  classify,
  error,
  ErrorCode,
  type Id,
  idKey,
  notification,
  type Response,
  RpcError,
  tooDeep,
} from "./jsonrpc.ts";
import type { Journal } from "./journal.ts";
import { LimitError } from "./limits.ts";
import { CrashRefusal } from "./supervision.ts";
import { CORE, isPluginName, splitMethod } from "./names.ts";
import { type Peer, Process } from "./process.ts";
import type { ProcessManager } from "./process_table.ts";
import { valueTooDeep } from "../runtime/json_depth.ts";
import { answerBody } from "../protocol/answer.ts";

/** What a router routes between. */
export interface RouterOptions {
  processes: ProcessManager;
  journal: Journal;
  /** Makes the core API, which needs the router for the calls it makes (`core.call`). */
  core: (router: CallRouter) => CoreApi;
}

/** Routes messages between peers, processes and the core. */
export class Router implements CallRouter {
  readonly #processes: ProcessManager;
  readonly #journal: Journal;
  /** The core API, which answers `core.<method>`. */
  readonly core: CoreApi;

  constructor(options: RouterOptions) {
    this.#processes = options.processes;
    this.#journal = options.journal;
    this.core = options.core(this);
  }

  /** Handles the messages a process wrote, in order (the process table's `onMessages`). */
  receiveAll(from: Process, messages: unknown[]): void {
    for (const m of messages) this.receive(from, m);
  }

  /** Handles one message from `peer`. */
  receive(peer: Peer, message: unknown): void {
    // a process's lines were measured in its worker; other peers hand over values
    const c = !(peer instanceof Process) && valueTooDeep(message)
      ? tooDeep(message)
      : classify(message);
    switch (c.kind) {
      case "invalid":
        this.#invalid(peer, c);
        break;
      case "response":
        this.#response(peer, c.id, c.response);
        break;
      case "request":
        this.#request(peer, c.id, c.method, c.params);
        break;
      case "notification":
        this.#notification(peer, c.method, c.params);
        break;
    }
  }

  /**
   * Starts `method` for `caller`: the answer reaches `caller` with `id`
   * (no answer when `id` is undefined). Used for requests, `core.call` and
   * services.
   */
  async call(
    caller: Peer,
    id: Id | undefined,
    method: string,
    params: Record<string, unknown>,
    options: CallOptions = {},
  ): Promise<void> {
    const split = splitMethod(method);
    if (!split) {
      throw new RpcError(
        ErrorCode.MethodNotFound,
        `"${method}" is not a method name: use <plugin>.<method>, for example notes.add`,
      );
    }
    if (split.target === CORE) {
      if (id === undefined) return await this.core.notify(caller, split.method, params);
      const value = await this.#coreWithin(caller, id, split.method, params, options.timeoutMs);
      if (value !== NO_ANSWER) caller.deliver({ jsonrpc: "2.0", id, result: value ?? null });
      return;
    }
    const started = await this.#processes.start({
      plugin: split.target,
      method: split.method,
      params,
      parent: options.detach ? null : caller,
      caller,
      origin: id === undefined ? null : { peer: caller, id },
      timeoutMs: options.timeoutMs,
    });
    if (caller instanceof Process && id !== undefined) {
      const call = caller.outgoingCall(id);
      if (call) call.callee = started; // still unanswered
    }
  }

  /**
   * A core method's answer, or at the deadline -32006: a waiting `core.lock`
   * leaves its queue; another method runs on, and its late answer is dropped.
   */
  async #coreWithin(
    caller: Peer,
    id: Id,
    method: string,
    params: Record<string, unknown>,
    timeoutMs: number | undefined,
  ): Promise<unknown> {
    if (timeoutMs === undefined) return await this.core.request(caller, id, method, params);
    const abort = new AbortController();
    const answer = this.core.request(caller, id, method, params, abort.signal);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        abort.abort();
        reject(
          new RpcError(
            ErrorCode.Deadline,
            `core.${method}: no answer within the call's deadline of ${timeoutMs} ms (timeout_ms)` +
              (method === "lock" ? "; the lock was not taken" : "; its late answer is dropped"),
            { timeout_ms: timeoutMs },
          ),
        );
      }, timeoutMs);
    });
    try {
      return await Promise.race([answer, expired]);
    } finally {
      clearTimeout(timer);
    }
  }

  #invalid(peer: Peer, c: Extract<Classified, { kind: "invalid" }>): void {
    if (peer instanceof Process) {
      this.#journal.event(peer.pid, peer.plugin, `invalid message: ${c.error.message}`);
    }
    if (c.id !== undefined) peer.deliver(error(c.id, c.error));
  }

  #response(peer: Peer, id: Id, response: Response): void {
    if (!(peer instanceof Process)) return;
    if (id === peer.pid && this.#processes.answer(peer, answerBody(response))) return;
    const why = id === peer.pid ? "late (the call was answered already)" : "unknown";
    this.#journal.event(
      peer.pid,
      peer.plugin,
      `dropped a response with the ${why} id ${idKey(id)}`,
    );
  }

  #request(peer: Peer, id: Id, method: string, params: Record<string, unknown>): void {
    if (peer instanceof Process) {
      if (peer.state !== "running") {
        this.#journal.event(
          peer.pid,
          peer.plugin,
          `refused the call ${method}: the process is stopping`,
        );
        return;
      }
      if (!peer.reserveCall(id, method)) {
        const refusal = new RpcError(
          ErrorCode.InvalidRequest,
          `the id ${idKey(id)} is already in flight: use a new id per call`,
        );
        this.#refused(peer, method, params, refusal);
        peer.deliver(error(id, refusal));
        return;
      }
    }
    this.call(peer, id, method, params).catch((e) => {
      const refusal = toRpcError(e);
      // the process table journaled these, rate-limited (a limit) or counted (a refusal)
      if (!(e instanceof LimitError || e instanceof CrashRefusal)) {
        this.#refused(peer, method, params, refusal);
      }
      peer.deliver(error(id, refusal));
    });
  }

  /**
   * Journals a request the host answered with an error instead of running it:
   * under the caller's process (none for a client such as `console`) and the
   * plugin called, so `core.log` finds it by either.
   */
  #refused(peer: Peer, method: string, params: Record<string, unknown>, e: RpcError): void {
    const target = splitMethod(method)?.target;
    const caller = peer instanceof Process ? peer : null;
    const plugin = target !== undefined && target !== CORE && isPluginName(target)
      ? target
      : caller?.plugin ?? null;
    this.#journal.event(
      caller?.pid ?? null,
      plugin,
      `refused the call ${clip(method, 200)} ${clip(JSON.stringify(params) ?? "", 500)} ` +
        `from ${peer.name}: error ${e.code}: ${clip(e.message, 2000)}`,
    );
  }

  #notification(peer: Peer, method: string, params: Record<string, unknown>): void {
    this.call(peer, undefined, method, params).catch((e) => {
      // the process table journaled these, rate-limited (a limit) or counted (a refusal)
      if (e instanceof LimitError || e instanceof CrashRefusal) return;
      const text = `the notification ${method} failed: ${toRpcError(e).message}`;
      if (peer instanceof Process) this.#journal.event(peer.pid, peer.plugin, text);
      else this.#journal.event(null, null, `${peer.name}: ${text}`);
    });
  }

  /** `core.notify` from a process: to its caller, with the caller's request ID. */
  forwardNotify(from: Peer, name: string, params: unknown): void {
    if (!(from instanceof Process) || !from.origin || from.answered) return;
    from.origin.peer.deliver(
      notification("core.notify", { call: from.origin.id, name, params: params ?? {} }),
    );
  }
}

/** `text`, cut at `max` characters with a mark that says how long it was. */
function clip(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max)}… (${text.length} characters)` : text;
}

/** Any thrown value as a JSON-RPC error. */
export function toRpcError(e: unknown): RpcError {
  if (e instanceof RpcError) return e;
  const message = e instanceof Error ? e.message : String(e);
  return new RpcError(ErrorCode.InternalError, `internal error: ${message}`);
}
