/**
 * Small HTTP helpers of the web server: JSON answers and errors with the
 * headers every answer carries, and a request body read within a limit.
 *
 * @module
 */

/** The most bytes of a request body (`POST /task`, `/call`, `/stop`). */
export const MAX_BODY_BYTES = 1024 * 1024;

/** A request that is refused: its status and the reason, for a JSON error body. */
export class HttpError extends Error {
  override name = "HttpError";
  constructor(readonly status: number, message: string, readonly headers: HeadersInit = {}) {
    super(message);
  }
}

/** The headers of every answer: no sniffing, no framing, no referrer (the token may be in the URL). */
export function baseHeaders(extra: HeadersInit = {}): Headers {
  const headers = new Headers(extra);
  headers.set("x-content-type-options", "nosniff");
  headers.set("x-frame-options", "DENY");
  headers.set("referrer-policy", "no-referrer");
  if (!headers.has("cache-control")) headers.set("cache-control", "no-store");
  return headers;
}

/** A JSON answer. */
export function json(body: unknown, status = 200, headers: HeadersInit = {}): Response {
  const h = baseHeaders(headers);
  h.set("content-type", "application/json; charset=utf-8");
  return new Response(JSON.stringify(body) + "\n", { status, headers: h });
}

/**
 * A JSON error body `{"error": message, "status": status}`.
 *
 * @example
 * ```ts
 * const refused = errorResponse(403, "no x-sausage-session header");
 * console.log(refused.status); // 403
 * ```
 */
export function errorResponse(
  status: number,
  message: string,
  headers: HeadersInit = {},
): Response {
  return json({ error: message, status }, status, headers);
}

/**
 * The body of `request` as a JSON object, at most `limit` bytes; throws an
 * {@linkcode HttpError} (413 over the limit, 400 when it is not a JSON object,
 * 415 when it is not sent as JSON).
 */
export async function readJsonObject(
  request: Request,
  limit: number = MAX_BODY_BYTES,
): Promise<Record<string, unknown>> {
  const type = request.headers.get("content-type") ?? "";
  if (type !== "" && !/^application\/json\b/i.test(type)) {
    throw new HttpError(415, `the body must be JSON (content-type: application/json), not ${type}`);
  }
  const tooLarge = () =>
    new HttpError(413, `the body is over ${limit} bytes: send a smaller request`);
  const declared = Number(request.headers.get("content-length") ?? "0");
  if (declared > limit) throw tooLarge();
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (request.body) {
    const reader = request.body.getReader();
    while (true) {
      const { value, done } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > limit) {
        await reader.cancel().catch(() => {});
        throw tooLarge();
      }
      chunks.push(value);
    }
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.byteLength;
  }
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch (e) {
    throw new HttpError(400, `the body is not JSON: ${(e as Error).message}`);
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new HttpError(400, "the body must be a JSON object");
  }
  return value as Record<string, unknown>;
}
