/**
 * `wasi:http/types` 0.2: requests, responses, bodies and their futures, for
 * outgoing requests (`http_outgoing.ts` sends them with `fetch`).
 *
 * A request body is written by the guest through an output stream into a
 * {@linkcode RequestBody}, which `fetch` pulls as a stream; a response body is
 * read through an input stream from the {@linkcode Exchange} of the request.
 * Incoming requests (a guest serving HTTP) are not offered: plugins serve
 * HTTP over sockets. Their resources exist only so that a component that
 * names them still links; nothing can make one.
 *
 * Conventions of jco: a `result` returns its value or throws the error (for
 * `result<T>` without an error type, any value); nested results are
 * `{ tag: "ok" | "err", val }`; `option` is `undefined`.
 *
 * @module
 */
import {
  type ByteSink,
  type ByteSource,
  InputStream,
  IoError,
  OutputStream,
  Pollable,
  Signal,
  STREAM_CLOSED,
  type StreamError,
} from "./io.ts";
import type { NetworkProcess } from "./network_process.ts";
import { Fields } from "./http_fields.ts";

export { Fields } from "./http_fields.ts";

/** `wasi:http/types.method`. */
export type Method =
  | { tag: "get" }
  | { tag: "head" }
  | { tag: "post" }
  | { tag: "put" }
  | { tag: "delete" }
  | { tag: "connect" }
  | { tag: "options" }
  | { tag: "trace" }
  | { tag: "patch" }
  | { tag: "other"; val: string };

/** `wasi:http/types.scheme`. */
export type Scheme = { tag: "HTTP" } | { tag: "HTTPS" } | { tag: "other"; val: string };

/** `wasi:http/types.DNS-error-payload`. */
export interface DnsErrorPayload {
  rcode?: string;
  infoCode?: number;
}

/** `wasi:http/types.TLS-alert-received-payload`. */
export interface TlsAlertReceivedPayload {
  alertId?: number;
  alertMessage?: string;
}

/** `wasi:http/types.field-size-payload`. */
export interface FieldSizePayload {
  fieldName?: string;
  fieldSize?: number;
}

/** `wasi:http/types.error-code`. */
export type HttpErrorCode =
  | { tag: "DNS-timeout" }
  | { tag: "DNS-error"; val: DnsErrorPayload }
  | { tag: "destination-not-found" }
  | { tag: "destination-unavailable" }
  | { tag: "destination-IP-prohibited" }
  | { tag: "destination-IP-unroutable" }
  | { tag: "connection-refused" }
  | { tag: "connection-terminated" }
  | { tag: "connection-timeout" }
  | { tag: "connection-read-timeout" }
  | { tag: "connection-write-timeout" }
  | { tag: "connection-limit-reached" }
  | { tag: "TLS-protocol-error" }
  | { tag: "TLS-certificate-error" }
  | { tag: "TLS-alert-received"; val: TlsAlertReceivedPayload }
  | { tag: "HTTP-request-denied" }
  | { tag: "HTTP-request-length-required" }
  | { tag: "HTTP-request-body-size"; val: bigint | undefined }
  | { tag: "HTTP-request-method-invalid" }
  | { tag: "HTTP-request-URI-invalid" }
  | { tag: "HTTP-request-URI-too-long" }
  | { tag: "HTTP-request-header-section-size"; val: number | undefined }
  | { tag: "HTTP-request-header-size"; val: FieldSizePayload | undefined }
  | { tag: "HTTP-request-trailer-section-size"; val: number | undefined }
  | { tag: "HTTP-request-trailer-size"; val: FieldSizePayload }
  | { tag: "HTTP-response-incomplete" }
  | { tag: "HTTP-response-header-section-size"; val: number | undefined }
  | { tag: "HTTP-response-header-size"; val: FieldSizePayload }
  | { tag: "HTTP-response-body-size"; val: bigint | undefined }
  | { tag: "HTTP-response-trailer-section-size"; val: number | undefined }
  | { tag: "HTTP-response-trailer-size"; val: FieldSizePayload }
  | { tag: "HTTP-response-transfer-coding"; val: string | undefined }
  | { tag: "HTTP-response-content-coding"; val: string | undefined }
  | { tag: "HTTP-response-timeout" }
  | { tag: "HTTP-upgrade-failed" }
  | { tag: "HTTP-protocol-error" }
  | { tag: "loop-detected" }
  | { tag: "configuration-error" }
  | { tag: "internal-error"; val: string | undefined };

/** A nested `result` as jco lifts it. */
export type Result<T, E> = { tag: "ok"; val: T } | { tag: "err"; val: E };

/** Guards the constructors of the resources the guest may not make. */
export const HTTP_TOKEN: unique symbol = Symbol("wasi:http");

/** The `error-code` behind the `io.error`s of body streams. */
const _streamCodes = new WeakMap<IoError, HttpErrorCode>();

/** A stream error that `http-error-code` maps back to `code`. */
export function httpStreamError(code: HttpErrorCode): StreamError {
  const error = new IoError(describeHttpError(code));
  _streamCodes.set(error, code);
  return { tag: "last-operation-failed", val: error };
}

/** `wasi:http/types.http-error-code`: the code behind a body stream's error. */
export function httpErrorCode(err: IoError): HttpErrorCode | undefined {
  return _streamCodes.get(err);
}

/** One line for logs and debug strings. */
export function describeHttpError(code: HttpErrorCode): string {
  if (!("val" in code) || code.val === undefined) return code.tag;
  return `${code.tag}: ${
    typeof code.val === "object" ? JSON.stringify(code.val, _bigints) : String(code.val)
  }`;
}

function _bigints(_key: string, value: unknown): unknown {
  return typeof value === "bigint" ? value.toString() : value;
}

// ---------------------------------------------------------------- request options

/** `wasi:http/types.request-options`: timeouts in nanoseconds. */
export class RequestOptions {
  #connect: bigint | undefined;
  #firstByte: bigint | undefined;
  #betweenBytes: bigint | undefined;

  /** Options without timeouts. */
  constructor() {}

  /** The time allowed to connect. */
  connectTimeout(): bigint | undefined {
    return this.#connect;
  }
  /** Sets the time allowed to connect. */
  setConnectTimeout(duration: bigint | undefined): void {
    this.#connect = duration;
  }
  /** The time allowed until the response starts. */
  firstByteTimeout(): bigint | undefined {
    return this.#firstByte;
  }
  /** Sets the time allowed until the response starts. */
  setFirstByteTimeout(duration: bigint | undefined): void {
    this.#firstByte = duration;
  }
  /** The time allowed between two chunks of the response body. */
  betweenBytesTimeout(): bigint | undefined {
    return this.#betweenBytes;
  }
  /** Sets the time allowed between two chunks of the response body. */
  setBetweenBytesTimeout(duration: bigint | undefined): void {
    this.#betweenBytes = duration;
  }
  /** Called by jco when the guest drops the options. */
  [Symbol.dispose](): void {}
}

// ---------------------------------------------------------------- outgoing request

const _METHOD_TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const _SCHEME = /^[A-Za-z][A-Za-z0-9+.\-]*$/;
/** A path and query: visible ASCII without the characters a URI never holds raw. */
const _PATH = /^[!$&'()*+,\-./0-9:;=?@A-Z_a-z~%\[\]]*$/;
/** host (a name, an IPv4 or a bracketed IPv6) and an optional port; no user part. */
const _AUTHORITY = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9\-._~!$&'()*+,;=%]+)(?::(\d{1,5}))?$/;

/** `wasi:http/types.outgoing-request`. */
export class OutgoingRequest {
  readonly #headers: Fields;
  #method: Method = { tag: "get" };
  #pathWithQuery: string | undefined;
  #scheme: Scheme | undefined;
  #authority: string | undefined;
  #body: RequestBody | null = null;
  readonly #process: NetworkProcess | null;

  /**
   * A GET request with `headers`, which become immutable. Guests call it
   * with the headers only: each process gets a subclass that adds its
   * `process` (see {@linkcode httpTypesInterface}).
   */
  constructor(headers: Fields, process?: NetworkProcess) {
    if (!(headers instanceof Fields)) throw new TypeError("outgoing-request needs fields");
    headers.freeze();
    this.#headers = headers;
    this.#process = process ?? null;
  }

  /** The body, once; fails when the `content-length` header is not a number. */
  body(): OutgoingBody {
    if (this.#body) throw undefined;
    const lengths = this.#headers.get("content-length");
    let declared: number | null = null;
    if (lengths.length > 0) {
      const text = new TextDecoder().decode(lengths[0]);
      if (lengths.length > 1 || !/^\d{1,15}$/.test(text)) throw undefined;
      declared = Number(text);
    }
    this.#body = new RequestBody(declared, this.#process);
    return new OutgoingBody(HTTP_TOKEN, this.#body);
  }

  /** The method. */
  method(): Method {
    return { ...this.#method };
  }
  /** Sets the method; a method name that is not a token fails. */
  setMethod(method: Method): void {
    if (method.tag === "other" && !_METHOD_TOKEN.test(method.val)) throw undefined;
    this.#method = { ...method };
  }
  /** The path and query. */
  pathWithQuery(): string | undefined {
    return this.#pathWithQuery;
  }
  /** Sets the path and query; characters a URI cannot hold fail. */
  setPathWithQuery(pathWithQuery: string | undefined): void {
    if (pathWithQuery !== undefined && !_PATH.test(pathWithQuery)) throw undefined;
    this.#pathWithQuery = pathWithQuery;
  }
  /** The scheme. */
  scheme(): Scheme | undefined {
    return this.#scheme ? { ...this.#scheme } : undefined;
  }
  /** Sets the scheme; an invalid scheme name fails. */
  setScheme(scheme: Scheme | undefined): void {
    if (scheme?.tag === "other" && !_SCHEME.test(scheme.val)) throw undefined;
    this.#scheme = scheme ? { ...scheme } : undefined;
  }
  /** The authority (host and port). */
  authority(): string | undefined {
    return this.#authority;
  }
  /** Sets the authority; a user part or a port beyond 65535 fails. */
  setAuthority(authority: string | undefined): void {
    if (authority !== undefined) {
      const m = _AUTHORITY.exec(authority);
      if (!m || (m[1] !== undefined && Number(m[1]) > 65535)) throw undefined;
    }
    this.#authority = authority;
  }
  /** The headers (immutable). */
  headers(): Fields {
    return this.#headers.frozenCopy();
  }

  /** What the handler sends. */
  parts(): {
    method: Method;
    scheme: Scheme | undefined;
    authority: string | undefined;
    pathWithQuery: string | undefined;
    headers: Fields;
    body: RequestBody | null;
  } {
    return {
      method: this.#method,
      scheme: this.#scheme,
      authority: this.#authority,
      pathWithQuery: this.#pathWithQuery,
      headers: this.#headers,
      body: this.#body,
    };
  }

  /** Called by jco when the guest drops the request. */
  [Symbol.dispose](): void {}
}

/** Bytes of a request body queued ahead of the network before the guest must wait. */
const BODY_WINDOW = 256 * 1024;
/** A body of known length up to this size may be sent in one piece, with its `content-length`. */
export const MAX_BUFFERED_BODY = 16 * 1024 * 1024;

/**
 * A request body between the guest's output stream and `fetch`.
 *
 * `fetch` cannot send a `content-length` with a streamed body. So a body of
 * declared length up to {@linkcode MAX_BUFFERED_BODY} is collected and sent
 * whole, as long as its process has room for it (`NetworkProcess.reserveBody`);
 * any other body streams (chunked), at most {@linkcode BODY_WINDOW} ahead of
 * the network.
 */
export class RequestBody {
  /** The `content-length` the guest declared, if any. */
  readonly declared: number | null;
  /** Whether the body is collected and sent whole rather than streamed. */
  readonly buffered: boolean;
  readonly #process: NetworkProcess | null;
  #chunks: Uint8Array[] = [];
  #queued = 0;
  #total = 0;
  #reserved = 0;
  #state: "open" | "finished" | "failed" = "open";
  #error: HttpErrorCode | null = null;
  readonly #signal = new Signal();

  constructor(declared: number | null, process: NetworkProcess | null) {
    this.declared = declared;
    this.#process = process;
    this.buffered = declared !== null && declared <= MAX_BUFFERED_BODY &&
      (process === null || process.reserveBody(declared));
    if (this.buffered && process) this.#reserved = declared!;
  }

  /** The error that ended the body, if any. */
  get error(): HttpErrorCode | null {
    return this.#error;
  }

  // --- the guest's side

  capacity(): number {
    if (this.#state === "failed") {
      throw this.#error ? httpStreamError(this.#error) : STREAM_CLOSED;
    }
    if (this.#state === "finished") throw STREAM_CLOSED;
    // a collected body takes all it declared (and one byte more, which fails the write)
    if (this.buffered) return Math.max(1, this.declared! - this.#total);
    return Math.max(0, BODY_WINDOW - this.#queued);
  }

  write(bytes: Uint8Array): void {
    this.capacity();
    if (this.declared !== null && this.#total + bytes.length > this.declared) {
      const code: HttpErrorCode = {
        tag: "HTTP-request-body-size",
        val: BigInt(this.#total + bytes.length),
      };
      this.fail(code);
      throw httpStreamError(code);
    }
    if (bytes.length === 0) return;
    this.#chunks.push(bytes);
    this.#queued += bytes.length;
    this.#total += bytes.length;
    this.#notify();
  }

  whenWritable(): Promise<void> {
    return this.#wait();
  }

  /** The guest finished the body; throws an error code when it is shorter than declared. */
  finish(trailers: Fields | undefined): void {
    if (this.#state === "failed") {
      throw this.#error ?? { tag: "internal-error", val: "the request was cancelled" };
    }
    if (this.#state === "finished") throw { tag: "internal-error", val: "body already finished" };
    if (this.declared !== null && this.#total !== this.declared) {
      const code: HttpErrorCode = { tag: "HTTP-request-body-size", val: BigInt(this.#total) };
      this.fail(code);
      throw code;
    }
    if (trailers && trailers.size > 0) {
      const code: HttpErrorCode = {
        tag: "internal-error",
        val: "request trailers cannot be sent by this host (fetch has no trailers)",
      };
      this.fail(code);
      throw code;
    }
    this.#state = "finished";
    this.#notify();
  }

  /** Ends the body with an error: the request fails, later writes fail. */
  fail(code: HttpErrorCode | null): void {
    if (this.#state !== "open") return;
    this.#state = "failed";
    this.#error = code;
    this.#chunks = [];
    this.#queued = 0;
    this.#unreserve();
    this.#notify();
  }

  /** Gives the process's room for collected bodies back. */
  #unreserve(): void {
    if (this.#reserved > 0) this.#process?.releaseBody(this.#reserved);
    this.#reserved = 0;
  }

  // --- the network's side

  /** The body as `fetch` reads it. */
  stream(): ReadableStream<Uint8Array> {
    return new ReadableStream<Uint8Array>({
      pull: async (controller) => {
        for (;;) {
          const chunk = this.#chunks.shift();
          if (chunk) {
            this.#queued -= chunk.length;
            controller.enqueue(chunk);
            this.#notify();
            return;
          }
          if (this.#state === "finished") {
            controller.close();
            return;
          }
          if (this.#state === "failed") {
            controller.error(new Error(this.#error ? describeHttpError(this.#error) : "cancelled"));
            return;
          }
          await this.#signal.wait();
        }
      },
      cancel: () => this.fail(null),
    }, { highWaterMark: 0 });
  }

  /** The whole body, once the guest has finished it; null when it failed. */
  async whole(): Promise<Uint8Array | null> {
    while (this.#state === "open") await this.#signal.wait();
    if (this.#state === "failed") return null;
    const out = new Uint8Array(this.#queued);
    let at = 0;
    for (const c of this.#chunks) {
      out.set(c, at);
      at += c.length;
    }
    this.#chunks = [];
    this.#queued = 0;
    this.#unreserve();
    return out;
  }

  #notify(): void {
    this.#process?.wake();
    this.#signal.notify();
  }

  #wait(): Promise<void> {
    const wait = this.#signal.wait();
    return this.#process ? this.#process.wait(wait) : wait;
  }
}

/** The output stream of a request body. */
class _BodySink implements ByteSink {
  readonly #body: RequestBody;
  constructor(body: RequestBody) {
    this.#body = body;
  }
  capacity(): number {
    return this.#body.capacity();
  }
  write(bytes: Uint8Array): void {
    this.#body.write(bytes);
  }
  whenWritable(): Promise<void> {
    return this.#body.whenWritable();
  }
}

/** `wasi:http/types.outgoing-body`. */
export class OutgoingBody {
  readonly #body: RequestBody;
  #streamTaken = false;
  #finished = false;

  /** Not for guests: bodies come from `outgoing-request.body`. */
  constructor(token: symbol, body: RequestBody) {
    if (token !== HTTP_TOKEN) throw new TypeError("OutgoingBody has no public constructor");
    this.#body = body;
  }

  /** The stream to write the body to, once. */
  write(): OutputStream {
    if (this.#streamTaken) throw undefined;
    this.#streamTaken = true;
    return new OutputStream(new _BodySink(this.#body));
  }

  /** Ends the body, with optional trailers; fails when it is shorter than its `content-length`. */
  static finish(this_: OutgoingBody, trailers: Fields | undefined): void {
    this_.#finished = true;
    this_.#body.finish(trailers);
  }

  /** Called by jco when the guest drops the body without finishing it: the request fails. */
  [Symbol.dispose](): void {
    if (!this.#finished) {
      this.#body.fail({ tag: "internal-error", val: "the request body was dropped unfinished" });
    }
  }
}

// ---------------------------------------------------------------- responses

/** The response side of one request in flight (made by `http_outgoing.ts`). */
export interface Exchange {
  /** The response head, or the error of the request; null while it is pending. */
  readonly head: Result<{ status: number; headers: Fields }, HttpErrorCode> | null;
  /** Settles when {@linkcode head} may have changed. */
  whenHead(): Promise<void>;
  /** The response body, once. */
  body(): ByteSource;
  /** Reads and drops the rest of the body; then {@linkcode trailers} is set. */
  finishBody(): void;
  /** The trailers' outcome (this host never has trailers), once the body has ended. */
  readonly trailers: Result<undefined, HttpErrorCode> | null;
  /** Settles when {@linkcode trailers} may have changed. */
  whenTrailers(): Promise<void>;
  /** The guest gave up the response: the request is cancelled. */
  abandon(): void;
}

/** `wasi:http/types.future-incoming-response`. */
export class FutureIncomingResponse {
  readonly #exchange: Exchange;
  #taken = false;

  /** Not for guests: futures come from `outgoing-handler.handle`. */
  constructor(token: symbol, exchange: Exchange) {
    if (token !== HTTP_TOKEN) {
      throw new TypeError("FutureIncomingResponse has no public constructor");
    }
    this.#exchange = exchange;
  }

  /** Ready when the response head or an error has arrived. */
  subscribe(): Pollable {
    return new Pollable(() => this.#exchange.head !== null, () => this.#exchange.whenHead());
  }

  /** The response or the error, once; `undefined` while pending. */
  get(): Result<Result<IncomingResponse, HttpErrorCode>, undefined> | undefined {
    const head = this.#exchange.head;
    if (head === null) return undefined;
    if (this.#taken) return { tag: "err", val: undefined };
    this.#taken = true;
    if (head.tag === "err") return { tag: "ok", val: head };
    const response = new IncomingResponse(HTTP_TOKEN, this.#exchange, head.val);
    return { tag: "ok", val: { tag: "ok", val: response } };
  }

  /** Called by jco when the guest drops the future. */
  [Symbol.dispose](): void {
    if (!this.#taken) this.#exchange.abandon();
  }
}

/** `wasi:http/types.incoming-response`. */
export class IncomingResponse {
  readonly #exchange: Exchange;
  readonly #status: number;
  readonly #headers: Fields;
  #consumed = false;

  /** Not for guests: responses come from `future-incoming-response.get`. */
  constructor(token: symbol, exchange: Exchange, head: { status: number; headers: Fields }) {
    if (token !== HTTP_TOKEN) throw new TypeError("IncomingResponse has no public constructor");
    this.#exchange = exchange;
    this.#status = head.status;
    this.#headers = head.headers;
  }

  /** The status code. */
  status(): number {
    return this.#status;
  }

  /** The headers (immutable). */
  headers(): Fields {
    return this.#headers.frozenCopy();
  }

  /** The body, once. */
  consume(): IncomingBody {
    if (this.#consumed) throw undefined;
    this.#consumed = true;
    return new IncomingBody(HTTP_TOKEN, this.#exchange);
  }

  /** Called by jco when the guest drops the response. */
  [Symbol.dispose](): void {
    if (!this.#consumed) this.#exchange.abandon();
  }
}

/** `wasi:http/types.incoming-body`. */
export class IncomingBody {
  readonly #exchange: Exchange;
  #streamTaken = false;
  #finished = false;

  /** Not for guests: bodies come from `incoming-response.consume`. */
  constructor(token: symbol, exchange: Exchange) {
    if (token !== HTTP_TOKEN) throw new TypeError("IncomingBody has no public constructor");
    this.#exchange = exchange;
  }

  /** The stream of the body, once. */
  stream(): InputStream {
    if (this.#streamTaken) throw undefined;
    this.#streamTaken = true;
    return new InputStream(this.#exchange.body());
  }

  /** Ends the body (what was not read is dropped); the trailers follow. */
  static finish(this_: IncomingBody): FutureTrailers {
    this_.#finished = true;
    this_.#exchange.finishBody();
    return new FutureTrailers(HTTP_TOKEN, this_.#exchange);
  }

  /** Called by jco when the guest drops the body: the rest is not read. */
  [Symbol.dispose](): void {
    if (!this.#finished) this.#exchange.abandon();
  }
}

/** `wasi:http/types.future-trailers`. */
export class FutureTrailers {
  readonly #exchange: Exchange;
  #taken = false;

  /** Not for guests: futures come from `incoming-body.finish`. */
  constructor(token: symbol, exchange: Exchange) {
    if (token !== HTTP_TOKEN) throw new TypeError("FutureTrailers has no public constructor");
    this.#exchange = exchange;
  }

  /** Ready when the body has ended. */
  subscribe(): Pollable {
    return new Pollable(
      () => this.#exchange.trailers !== null,
      () => this.#exchange.whenTrailers(),
    );
  }

  /** No trailers, or the error that ended the body, once; `undefined` while pending. */
  get(): Result<Result<Fields | undefined, HttpErrorCode>, undefined> | undefined {
    const trailers = this.#exchange.trailers;
    if (trailers === null) return undefined;
    if (this.#taken) return { tag: "err", val: undefined };
    this.#taken = true;
    return { tag: "ok", val: trailers };
  }

  /** Called by jco when the guest drops the future. */
  [Symbol.dispose](): void {
    if (this.#exchange.trailers === null) this.#exchange.abandon();
  }
}

// ---------------------------------------------------------------- the serving side

/** `wasi:http/types.outgoing-response`: a guest may build one, but has nowhere to send it. */
export class OutgoingResponse {
  readonly #headers: Fields;
  readonly #process: NetworkProcess | null;
  #status = 200;
  #body: RequestBody | null = null;

  /** A 200 response with `headers`, which become immutable. */
  constructor(headers: Fields, process?: NetworkProcess) {
    if (!(headers instanceof Fields)) throw new TypeError("outgoing-response needs fields");
    headers.freeze();
    this.#headers = headers;
    this.#process = process ?? null;
  }
  /** The status code. */
  statusCode(): number {
    return this.#status;
  }
  /** Sets the status code (100 to 999). */
  setStatusCode(statusCode: number): void {
    if (!Number.isInteger(statusCode) || statusCode < 100 || statusCode > 999) throw undefined;
    this.#status = statusCode;
  }
  /** The headers (immutable). */
  headers(): Fields {
    return this.#headers.frozenCopy();
  }
  /** The body, once. */
  body(): OutgoingBody {
    if (this.#body) throw undefined;
    this.#body = new RequestBody(null, this.#process);
    return new OutgoingBody(HTTP_TOKEN, this.#body);
  }
  /** Called by jco when the guest drops the response. */
  [Symbol.dispose](): void {}
}

/** `wasi:http/types.incoming-request`: never made here (no incoming handler). */
export class IncomingRequest {
  /** Not for guests. */
  constructor(token: symbol) {
    if (token !== HTTP_TOKEN) throw new TypeError("IncomingRequest has no public constructor");
    throw new TypeError("this host has no incoming HTTP handler");
  }
}

/** `wasi:http/types.response-outparam`: never made here (no incoming handler). */
export class ResponseOutparam {
  /** Not for guests. */
  constructor(token: symbol) {
    if (token !== HTTP_TOKEN) throw new TypeError("ResponseOutparam has no public constructor");
    throw new TypeError("this host has no incoming HTTP handler");
  }
  /** Unreachable: no outparam exists. */
  static set(_param: ResponseOutparam, _response: unknown): void {
    throw new TypeError("this host has no incoming HTTP handler");
  }
}

/**
 * The `wasi:http/types` interface of one process. The resources a guest
 * constructs (requests, responses) are subclasses that know the process:
 * their waits end with it, and their bodies count against its limits.
 */
export function httpTypesInterface(process: NetworkProcess): Record<string, unknown> {
  class ProcessOutgoingRequest extends OutgoingRequest {
    constructor(headers: Fields) {
      super(headers, process);
    }
  }
  class ProcessOutgoingResponse extends OutgoingResponse {
    constructor(headers: Fields) {
      super(headers, process);
    }
  }
  return {
    Fields,
    FutureIncomingResponse,
    FutureTrailers,
    IncomingBody,
    IncomingRequest,
    IncomingResponse,
    OutgoingBody,
    OutgoingRequest: ProcessOutgoingRequest,
    OutgoingResponse: ProcessOutgoingResponse,
    RequestOptions,
    ResponseOutparam,
    httpErrorCode,
  };
}
