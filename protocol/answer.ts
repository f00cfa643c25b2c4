/**
 * The answer of a process (PROTOCOL 3.3): which line of its stdout answers
 * the call that started it, and how that answer reads to the caller.
 *
 * The router applies this rule on the host's thread, and a plugin worker
 * applies it when it hands an answer to a caller on the same worker
 * (`runtime/worker.ts`): one rule, so the two cannot disagree.
 *
 * @example
 * ```ts
 * const body = answerOf({ jsonrpc: "2.0", id: "probe-1", result: 1 }, "probe-1");
 * answerOf({ jsonrpc: "2.0", id: "probe-2", result: 1 }, "probe-1"); // undefined
 * answerResponse(7, body!); // { jsonrpc: "2.0", id: 7, result: 1 }
 * ```
 *
 * @module
 */

/** A JSON-RPC request ID. */
export type AnswerId = string | number | null;

/** What a process answers its call with: a result, or an error object. */
export type AnswerBody =
  | { result: unknown }
  | { error: { code: number; message: string; data?: unknown } };

/** The response a caller reads: its own request ID with the answer. */
export type AnswerResponse = { jsonrpc: "2.0"; id: AnswerId } & AnswerBody;

/**
 * The answer in `message`, one message of process `pid`: a response (an
 * object with an ID, a result or an error, and no method) whose ID is exactly
 * the PID. Undefined for anything else.
 */
export function answerOf(message: unknown, pid: string): AnswerBody | undefined {
  if (typeof message !== "object" || message === null || Array.isArray(message)) return undefined;
  const m = message as Record<string, unknown>;
  if ("method" in m || m.id !== pid || !("result" in m || "error" in m)) return undefined;
  return answerBody(m);
}

/**
 * Whether `message`, one message of a process before its answer, may make
 * the host write to the process's caller: `core.notify` does (PROTOCOL
 * 3.5), and so may `core.call` and a batch. Such a message must reach the
 * caller before the answer, so the answer then goes through the host too.
 */
export function mayReachCaller(message: unknown): boolean {
  if (typeof message !== "object" || message === null || Array.isArray(message)) return true;
  const method = (message as Record<string, unknown>).method;
  return method === "core.notify" || method === "core.call";
}

/** The body of a response: its error, or its result (`null` when it has none). */
export function answerBody(response: { result?: unknown; error?: unknown }): AnswerBody {
  return "error" in response && response.error !== undefined
    ? { error: response.error as { code: number; message: string } }
    : { result: response.result ?? null };
}

/** The response a caller reads for its request `id`. */
export function answerResponse(id: AnswerId, body: AnswerBody): AnswerResponse {
  return "error" in body
    ? { jsonrpc: "2.0", id, error: body.error }
    : { jsonrpc: "2.0", id, result: body.result ?? null };
}
