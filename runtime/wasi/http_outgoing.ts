/**
 * `wasi:http/outgoing-handler` 0.2, on Deno's `fetch`.
 *
 * A request starts at `handle`. Its body streams to the network while the
 * guest writes it (chunked), except when the body is sent whole (see
 * `RequestBody`); the response body streams to the guest, read ahead at most
 * {@linkcode READ_AHEAD} bytes.
 *
 * Choices, where `fetch` differs from Wasmtime's client:
 *
 * - Redirects are not followed: the guest sees the 3xx response.
 * - A request without `accept-encoding` is sent with `identity`, so that the
 *   body arrives as the server sent it. When the guest asks for encodings,
 *   `fetch` decodes gzip and brotli itself: the guest gets the decoded body,
 *   without the `content-encoding` and `content-length` that described the
 *   encoded one.
 * - `fetch` does not tell when the connection is made: `connect-timeout` and
 *   `first-byte-timeout` together bound the wait for the response head
 *   (`connection-timeout` when only the first is set, else
 *   `connection-read-timeout`). `between-bytes-timeout` bounds each wait for
 *   a chunk of the response body.
 * - Response trailers are not exposed by `fetch`: `future-trailers` resolves
 *   to none once the body has ended. A request with trailers fails.
 * - A GET or HEAD request is sent once its body is finished, and only
 *   without one (`fetch` refuses a body for them). Ports that browsers block
 *   (`fetch`'s "bad ports") are refused with `HTTP-request-denied`.
 * - At most `MAX_REQUESTS_PER_PROCESS` requests in flight per process; more
 *   fail with `connection-limit-reached`.
 *
 * @module
 */
import { ByteQueue, type ByteSource, type StreamError } from "./io.ts";
import { type Closable, type NetworkProcess, Notifier } from "./network_process.ts";
import { Fields, fromByteString, toByteString } from "./http_fields.ts";
import {
  type Exchange,
  FutureIncomingResponse,
  HTTP_TOKEN,
  type HttpErrorCode,
  httpStreamError,
  type Method,
  OutgoingRequest,
  type RequestBody,
  RequestOptions,
  type Result,
} from "./http_types.ts";

/** What a response body reads ahead of the guest. */
const READ_AHEAD = 256 * 1024;

/** Methods `fetch` refuses to send. */
const _FORBIDDEN_METHODS = new Set(["CONNECT", "TRACE", "TRACK"]);
/** Encodings `fetch` decodes by itself unless the request asked for `identity`. */
const _DECODED = new Set(["gzip", "br"]);

function _methodName(method: Method): string {
  return method.tag === "other" ? method.val : method.tag.toUpperCase();
}

/** Milliseconds of a WASI duration (nanoseconds), at least 1. */
function _ms(ns: bigint): number {
  return Math.max(1, Number(ns / 1_000_000n));
}

/** One request in flight: the `fetch`, its timers, and the response body. */
class _Exchange implements Exchange, Closable {
  readonly #process: NetworkProcess;
  readonly #controller = new AbortController();
  readonly #headReady: Notifier;
  readonly #bodyReady: Notifier;
  readonly #betweenBytes: number | null;
  readonly #connectTimeout: bigint | undefined;
  readonly #firstByteTimeout: bigint | undefined;
  readonly #requestBody: RequestBody | null;
  #head: Result<{ status: number; headers: Fields }, HttpErrorCode> | null = null;
  #timeout: HttpErrorCode | null = null;
  #timer: ReturnType<typeof setTimeout> | undefined;

  #reader: ReadableStreamDefaultReader<Uint8Array> | null = null;
  readonly #received = new ByteQueue();
  #reading = false;
  #eof = false;
  #bodyError: HttpErrorCode | null = null;
  #discard = false;
  #trailers: Result<undefined, HttpErrorCode> | null = null;
  #done = false;

  constructor(
    process: NetworkProcess,
    options: RequestOptions | undefined,
    body: RequestBody | null,
  ) {
    this.#process = process;
    this.#headReady = new Notifier(process);
    this.#bodyReady = new Notifier(process);
    this.#requestBody = body;
    const between = options?.betweenBytesTimeout();
    this.#betweenBytes = between === undefined ? null : _ms(between);
    this.#connectTimeout = options?.connectTimeout();
    this.#firstByteTimeout = options?.firstByteTimeout();
    process.track(this);
  }

  /** Starts the request (for a body sent whole, once the guest has finished it). */
  async send(url: string, init: RequestInit): Promise<void> {
    if (this.#done) return;
    const connect = this.#connectTimeout;
    const firstByte = this.#firstByteTimeout;
    if (connect !== undefined || firstByte !== undefined) {
      const ms = _ms((connect ?? 0n) + (firstByte ?? 0n));
      const code: HttpErrorCode = firstByte === undefined
        ? { tag: "connection-timeout" }
        : { tag: "connection-read-timeout" };
      this.#timer = setTimeout(() => this.#abort(code), ms);
    }
    let response: Response;
    try {
      response = await fetch(url, { ...init, redirect: "manual", signal: this.#controller.signal });
    } catch (e) {
      this.#settle({
        tag: "err",
        val: this.#timeout ?? this.#requestBody?.error ?? fetchErrorCode(e),
      });
      return;
    }
    clearTimeout(this.#timer);
    if (this.#done) {
      response.body?.cancel().catch(() => {});
      return;
    }
    const decoded = init.headers instanceof Headers &&
      (init.headers.get("accept-encoding") ?? "identity").trim().toLowerCase() !== "identity";
    this.#reader = response.body ? response.body.getReader() : null;
    if (!this.#reader) this.#eof = true;
    this.#settle({
      tag: "ok",
      val: { status: response.status, headers: _responseFields(response, decoded) },
    });
    this.#pump();
  }

  /** Fails the request before it was sent. */
  fail(code: HttpErrorCode): void {
    this.#settle({ tag: "err", val: code });
  }

  #settle(head: Result<{ status: number; headers: Fields }, HttpErrorCode>): void {
    if (this.#head !== null) return;
    clearTimeout(this.#timer);
    this.#head = head;
    if (head.tag === "err") {
      this.#bodyError = head.val;
      this.#requestBody?.fail(head.val);
      this.#finish();
    }
    this.#headReady.notify();
  }

  #abort(code: HttpErrorCode): void {
    this.#timeout = code;
    this.#controller.abort();
  }

  // --- Exchange

  get head(): Result<{ status: number; headers: Fields }, HttpErrorCode> | null {
    return this.#head;
  }

  whenHead(): Promise<void> {
    return this.#head !== null ? Promise.resolve() : this.#headReady.wait();
  }

  body(): ByteSource {
    return {
      read: (max) => this.#read(max),
      readable: () => this.#readable(),
      whenReadable: () => this.#readable() ? Promise.resolve() : this.#bodyReady.wait(),
    };
  }

  finishBody(): void {
    this.#discard = true;
    this.#received.clear();
    this.#pump();
    this.#checkEnd();
  }

  get trailers(): Result<undefined, HttpErrorCode> | null {
    return this.#trailers;
  }

  whenTrailers(): Promise<void> {
    return this.#trailers !== null ? Promise.resolve() : this.#bodyReady.wait();
  }

  abandon(): void {
    if (this.#done) return;
    if (this.#head === null) this.#timeout = { tag: "internal-error", val: "cancelled" };
    this.close();
  }

  /** Cancels the request (the guest gave it up, or the process ended). */
  close(): void {
    if (this.#done) return;
    this.#controller.abort();
    this.#requestBody?.fail(null);
    this.#reader?.cancel().catch(() => {});
    this.#bodyError ??= { tag: "internal-error", val: "cancelled" };
    this.#finish();
    this.#headReady.notify();
    this.#bodyReady.notify();
  }

  // --- the response body

  #read(max: number): Uint8Array | null {
    const out = this.#received.take(max);
    if (out !== null) {
      this.#pump();
      this.#checkEnd();
      return out;
    }
    if (this.#bodyError) throw httpStreamError(this.#bodyError) as StreamError;
    if (this.#eof) return null;
    this.#pump();
    return new Uint8Array(0);
  }

  #readable(): boolean {
    return !this.#received.empty || this.#eof || this.#bodyError !== null;
  }

  #pump(): void {
    const reader = this.#reader;
    if (!reader || this.#reading || this.#eof || this.#bodyError || this.#done) return;
    if (this.#received.size >= READ_AHEAD) return;
    this.#reading = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    if (this.#betweenBytes !== null) {
      timer = setTimeout(() => {
        this.#bodyError ??= { tag: "connection-read-timeout" };
        reader.cancel().catch(() => {});
        this.#checkEnd();
        this.#bodyReady.notify();
      }, this.#betweenBytes);
    }
    reader.read().then(
      ({ done, value }) => {
        clearTimeout(timer);
        this.#reading = false;
        if (this.#bodyError) return;
        if (done) this.#eof = true;
        else if (!this.#discard && value.length > 0) {
          this.#received.push(value);
        }
        this.#checkEnd();
        this.#bodyReady.notify();
        this.#pump();
      },
      (e) => {
        clearTimeout(timer);
        this.#reading = false;
        this.#bodyError ??= this.#timeout ?? bodyErrorCode(e);
        this.#checkEnd();
        this.#bodyReady.notify();
      },
    );
  }

  /** The exchange ends when the body has ended (read to its end, or failed). */
  #checkEnd(): void {
    if (this.#trailers !== null) return;
    if (this.#bodyError) this.#trailers = { tag: "err", val: this.#bodyError };
    else if (this.#eof && (this.#discard || this.#received.empty)) {
      this.#trailers = { tag: "ok", val: undefined };
    } else return;
    this.#finish();
  }

  /** Frees the request's slot in its process (once). */
  #finish(): void {
    if (this.#done) return;
    this.#done = true;
    clearTimeout(this.#timer);
    this.#process.untrack(this);
    this.#process.returnRequest();
  }
}

/** The fields of a response, as the guest may see them. */
function _responseFields(response: Response, decoded: boolean): Fields {
  const encoding = (response.headers.get("content-encoding") ?? "").trim().toLowerCase();
  const dropEncoding = decoded && _DECODED.has(encoding);
  const entries: [string, Uint8Array][] = [];
  for (const [name, value] of response.headers) {
    if (dropEncoding && (name === "content-encoding" || name === "content-length")) continue;
    entries.push([name, fromByteString(value)]);
  }
  return Fields.received(entries);
}

/** The `error-code` of a failed `fetch`, from its message and cause. */
export function fetchErrorCode(e: unknown): HttpErrorCode {
  const err = e as { message?: string; cause?: { message?: string } };
  const whole = `${err?.message ?? e} ${err?.cause?.message ?? ""}`;
  // Deno's message quotes the URL ("error sending request for url (http://…)"): a host or path
  // named "tls" or "timed-out" must not decide the code, so the URL goes before any match
  const text = whole.replace(/\(?\b[a-z][a-z0-9+.-]*:\/\/[^\s)]*\)?/gi, "<url>");
  // errno values differ by OS; these are Linux's, and elsewhere the words below decide
  const errno = Deno.build.os === "linux" ? /\(os error (\d+)\)/.exec(text)?.[1] : undefined;
  const byErrno = errno === undefined ? undefined : OS_ERRORS[Number(errno)];
  if (byErrno !== undefined) return { tag: byErrno };
  const lower = text.toLowerCase();
  const has = (...parts: string[]) => parts.some((p) => lower.includes(p));
  if (has("dns error", "failed to lookup address", "name or service not known")) {
    const m = /failed to lookup address information: ([^\n]*)/i.exec(text);
    return { tag: "DNS-error", val: { rcode: m ? m[1].trim() : "NXDOMAIN", infoCode: undefined } };
  }
  if (has("connection refused")) return { tag: "connection-refused" };
  if (has("connection reset", "broken pipe", "connection aborted")) {
    return { tag: "connection-terminated" };
  }
  if (has("timed out")) return { tag: "connection-timeout" };
  if (has("network is unreachable", "no route to host", "host is unreachable")) {
    return { tag: "destination-unavailable" };
  }
  if (has("received fatal alert")) {
    const m = /received fatal alert: (\w+)/i.exec(text);
    return { tag: "TLS-alert-received", val: { alertId: undefined, alertMessage: m?.[1] } };
  }
  if (has("certificate", "unknownissuer", "unknown issuer")) {
    return { tag: "TLS-certificate-error" };
  }
  if (has("tls", "handshake", "corrupt message")) return { tag: "TLS-protocol-error" };
  if (has("are blocked", "bad port")) return { tag: "HTTP-request-denied" };
  if (has("method is forbidden", "invalid method")) return { tag: "HTTP-request-method-invalid" };
  if (has("invalid url", "url is invalid")) return { tag: "HTTP-request-URI-invalid" };
  if (has("connection closed before message completed", "incomplete", "unexpected eof")) {
    return { tag: "HTTP-response-incomplete" };
  }
  if (has("invalid http", "parse error", "invalid header", "invalid status")) {
    return { tag: "HTTP-protocol-error" };
  }
  return { tag: "internal-error", val: text.trim() };
}

/** Linux errno values of socket errors, and the `error-code` each one is. */
const OS_ERRORS: Readonly<
  Record<
    number,
    | "connection-refused"
    | "connection-terminated"
    | "connection-timeout"
    | "destination-unavailable"
  >
> = {
  111: "connection-refused", // ECONNREFUSED
  104: "connection-terminated", // ECONNRESET
  32: "connection-terminated", // EPIPE
  103: "connection-terminated", // ECONNABORTED
  110: "connection-timeout", // ETIMEDOUT
  101: "destination-unavailable", // ENETUNREACH
  113: "destination-unavailable", // EHOSTUNREACH
};

/** The `error-code` of a response body that failed while it was read. */
function bodyErrorCode(e: unknown): HttpErrorCode {
  const code = fetchErrorCode(e);
  // an error in the middle of a body means the body is incomplete, whatever the cause
  return code.tag === "internal-error" || code.tag === "connection-terminated"
    ? { tag: "HTTP-response-incomplete" }
    : code;
}

/** Sends a request whose body the guest has finished (or failed, when `bytes` is null). */
function _sendWhole(
  exchange: _Exchange,
  url: string,
  init: RequestInit,
  bytes: Uint8Array | null,
  body: RequestBody,
  bodyless: boolean,
): void {
  if (bytes === null) {
    exchange.fail(body.error ?? { tag: "internal-error", val: "the request body failed" });
  } else if (bodyless && bytes.length > 0) {
    // fetch refuses a body for GET and HEAD
    exchange.fail({ tag: "HTTP-request-method-invalid" });
  } else if (bodyless) {
    exchange.send(url, init);
  } else {
    exchange.send(url, { ...init, body: bytes as Uint8Array<ArrayBuffer> });
  }
}

/** Starts `request`; the future settles with the response head or the error. */
function handle(
  process: NetworkProcess,
  request: OutgoingRequest,
  options: RequestOptions | undefined,
): FutureIncomingResponse {
  if (!(request instanceof OutgoingRequest)) {
    throw new TypeError("handle needs an outgoing-request");
  }
  const parts = request.parts();
  const method = _methodName(parts.method);
  if (_FORBIDDEN_METHODS.has(method.toUpperCase())) throw { tag: "HTTP-request-method-invalid" };
  let scheme: string;
  if (parts.scheme === undefined || parts.scheme.tag === "HTTPS") scheme = "https";
  else if (parts.scheme.tag === "HTTP") scheme = "http";
  else throw { tag: "HTTP-protocol-error" };
  if (!parts.authority) throw { tag: "HTTP-request-URI-invalid" };
  let path = parts.pathWithQuery ?? "/";
  if (!path.startsWith("/")) path = `/${path}`;
  let url: string;
  try {
    url = new URL(`${scheme}://${parts.authority}${path}`).href;
  } catch {
    throw { tag: "HTTP-request-URI-invalid" };
  }
  const headers = new Headers();
  try {
    for (const [name, value] of parts.headers.entries()) headers.append(name, toByteString(value));
  } catch (e) {
    throw { tag: "internal-error", val: `a header was refused: ${(e as Error).message}` };
  }
  if (!headers.has("accept-encoding")) headers.set("accept-encoding", "identity");
  // fetch sets the length of a body it sends whole, and cannot send one with a stream
  headers.delete("content-length");
  if (!process.takeRequest()) throw { tag: "connection-limit-reached" };

  const body = parts.body;
  const exchange = new _Exchange(process, options, body);
  const bodyless = method === "GET" || method === "HEAD";
  const init: RequestInit = { method, headers };
  if (body === null) {
    exchange.send(url, init);
  } else if (bodyless || body.buffered) {
    body.whole().then((bytes) => _sendWhole(exchange, url, init, bytes, body, bodyless));
  } else {
    exchange.send(url, { ...init, body: body.stream(), duplex: "half" } as RequestInit);
  }
  return new FutureIncomingResponse(HTTP_TOKEN, exchange);
}

/** The `wasi:http/outgoing-handler` interface of one process. */
export function outgoingHandlerInterface(process: NetworkProcess): Record<string, unknown> {
  return {
    handle: (request: OutgoingRequest, options: RequestOptions | undefined) =>
      handle(process, request, options),
  };
}
