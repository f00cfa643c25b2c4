/**
 * JSON-RPC 2.0 as Sausage speaks it: one message per line, `params` always an
 * object, no batches (PROTOCOL section 3.1), and the error codes of section 3.9.
 *
 * @module
 */

import { MAX_JSON_DEPTH } from "../runtime/json_depth.ts";

/** A JSON-RPC ID: the core keys pending requests by its exact JSON text. */
export type Id = string | number | null;

/** A request (with `id`) or a notification (without). */
export interface Request {
  jsonrpc: "2.0";
  id?: Id;
  method: string;
  params?: Record<string, unknown>;
}

/** The error object of a response. */
export interface ErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

/** A response: `result` or `error`. */
export interface Response {
  jsonrpc: "2.0";
  id: Id;
  result?: unknown;
  error?: ErrorObject;
}

/** Any message. */
export type Message = Request | Response;

/** The standard codes, and Sausage's own (PROTOCOL 3.9). */
export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  /** A generic server error: a call that failed in the core. */
  ServerError: -32000,
  /** There is no such plugin. */
  NoSuchPlugin: -32001,
  /** The process ended without an answer. */
  ProcessEnded: -32002,
  /** The activation was rejected. */
  ActivationRejected: -32003,
  /** `cargo.build` failed. */
  BuildFailed: -32004,
  /** An external MCP server could not be reached, or its tool failed (`mcp.call`). */
  McpServerFailed: -32005,
  /** The call's deadline (`timeout_ms` of `core.call`) passed before its answer. */
  Deadline: -32006,
} as const;

/** An error that becomes a JSON-RPC error response. */
export class RpcError extends Error {
  override name = "RpcError";
  readonly code: number;
  readonly data: unknown;

  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.code = code;
    this.data = data;
  }

  /** The error object of a response. */
  toObject(): ErrorObject {
    return this.data === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, data: this.data };
  }
}

/** The map key of an ID: its exact JSON text (`1` and `"1"` differ). */
export function idKey(id: Id | undefined): string {
  return JSON.stringify(id ?? null);
}

/** A success response. */
export function result(id: Id, value: unknown): Response {
  return { jsonrpc: "2.0", id, result: value === undefined ? null : value };
}

/** An error response. */
export function error(id: Id, e: RpcError | ErrorObject): Response {
  return { jsonrpc: "2.0", id, error: e instanceof RpcError ? e.toObject() : e };
}

/** A notification (a request without ID). */
export function notification(method: string, params: Record<string, unknown>): Request {
  return { jsonrpc: "2.0", method, params };
}

/** What a message from a process or a client is. */
export type Classified =
  | { kind: "request"; id: Id; method: string; params: Record<string, unknown> }
  | { kind: "notification"; method: string; params: Record<string, unknown> }
  | { kind: "response"; id: Id; response: Response }
  /** A message that gets an error response (when it has an ID) and nothing else. */
  | { kind: "invalid"; id: Id | undefined; error: RpcError };

function isId(v: unknown): v is Id {
  return v === null || typeof v === "string" || (typeof v === "number" && Number.isFinite(v));
}

/**
 * Classifies a parsed message: processes' stdout lines were already filtered
 * (objects with `"jsonrpc": "2.0"`, or batches); other peers may send anything.
 */
export function classify(value: unknown): Classified {
  if (Array.isArray(value)) {
    return {
      kind: "invalid",
      id: null,
      error: new RpcError(
        ErrorCode.InvalidRequest,
        "batches are not supported: send one message per line",
      ),
    };
  }
  if (typeof value !== "object" || value === null) {
    return {
      kind: "invalid",
      id: null,
      error: new RpcError(ErrorCode.InvalidRequest, "a message must be a JSON object"),
    };
  }
  const m = value as Record<string, unknown>;
  const hasId = "id" in m;
  if (hasId && !isId(m.id)) {
    return {
      kind: "invalid",
      id: null,
      error: new RpcError(ErrorCode.InvalidRequest, "the id must be a string, a number or null"),
    };
  }
  const id = m.id as Id;
  if ("method" in m) {
    if (typeof m.method !== "string" || m.method === "") {
      return {
        kind: "invalid",
        id: hasId ? id : undefined,
        error: new RpcError(ErrorCode.InvalidRequest, "the method must be a non-empty string"),
      };
    }
    const params = m.params;
    if (
      params !== undefined &&
      (typeof params !== "object" || params === null || Array.isArray(params))
    ) {
      return {
        kind: "invalid",
        id: hasId ? id : undefined,
        error: new RpcError(
          ErrorCode.InvalidParams,
          `params of ${m.method} must be an object (params are by name), not ${describe(params)}`,
        ),
      };
    }
    const p = (params ?? {}) as Record<string, unknown>;
    return hasId
      ? { kind: "request", id, method: m.method, params: p }
      : { kind: "notification", method: m.method, params: p };
  }
  if (hasId && ("result" in m || "error" in m)) {
    return { kind: "response", id, response: m as unknown as Response };
  }
  return {
    kind: "invalid",
    id: hasId ? id : null, // not a notification either: JSON-RPC answers with id null
    error: new RpcError(
      ErrorCode.InvalidRequest,
      "a message needs a method, or an id with a result or an error",
    ),
  };
}

/**
 * The refusal of a message nested deeper than {@linkcode MAX_JSON_DEPTH}
 * (PROTOCOL 3.1): -32600, with the message's ID when it has one.
 *
 * @example
 * ```ts
 * import { tooDeep } from "./jsonrpc.ts";
 * tooDeep({ jsonrpc: "2.0", id: 3, method: "a.b" }); // invalid, id 3, -32600
 * ```
 */
export function tooDeep(value: unknown): Extract<Classified, { kind: "invalid" }> {
  const m = typeof value === "object" && value !== null && !Array.isArray(value)
    ? value as Record<string, unknown>
    : {};
  return {
    kind: "invalid",
    id: isId(m.id) ? m.id : "method" in m && !("id" in m) ? undefined : null,
    error: new RpcError(
      ErrorCode.InvalidRequest,
      `the message nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`,
    ),
  };
}

function describe(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  return `a ${typeof v}`;
}
