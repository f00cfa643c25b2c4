/**
 * A scripted model server for tests: it speaks the streaming wire formats of
 * OpenAI chat completions and of Anthropic messages (server-sent events), and
 * answers each request with the next reply of a script, so that a client can
 * be tested against real-looking answers, refusals, errors and broken streams.
 *
 * ```ts
 * import { startModelServer } from "./model_server.ts";
 *
 * await using server = await startModelServer({
 *   api: "openai-chat-completions",
 *   script: [{ text: "Hello!" }],
 * });
 * const response = await fetch(`${server.url}/chat/completions`, {
 *   method: "POST",
 *   headers: { "content-type": "application/json" },
 *   body: JSON.stringify({ model: "gpt-4o", stream: true, messages: [{ role: "user", content: "Hi" }] }),
 * });
 * console.log(await response.text()); // data: {...}\n\n ... data: [DONE]\n\n
 * ```
 *
 * @module
 */
import { clearImmediate, setImmediate } from "node:timers";

/**
 * The wire format a {@linkcode ModelServer} speaks.
 *
 * @example
 * ```ts
 * const api: ModelApi = "anthropic-messages";
 * await using server = await startModelServer({ api, script: [{ text: "Hi" }] });
 * ```
 */
export type ModelApi = "openai-chat-completions" | "anthropic-messages";

/**
 * A tool call of a scripted reply.
 *
 * @example
 * ```ts
 * const call: ToolCallScript = { name: "read", arguments: { path: "/notes.txt" } };
 * const broken: ToolCallScript = { name: "read", arguments: '{"path": "/no' };
 * ```
 */
export interface ToolCallScript {
  /** The tool's name. */
  name: string;
  /** An object (sent as JSON), or a string sent verbatim (it may be invalid JSON). */
  arguments: unknown;
  /** The call's id; default `call_<random>` (OpenAI) or `toolu_<random>` (Anthropic). */
  id?: string;
}

/**
 * Odd behaviours of real providers and proxies, for streamed replies.
 *
 * @example
 * ```ts
 * const reply: Reply = { text: "héllo", quirks: { comments: true, splitBytes: 1 } };
 * ```
 */
export interface Quirks {
  /** SSE comment lines (`: keepalive`, `: OPENROUTER PROCESSING`) between events; Anthropic: also `event: ping` events. */
  comments?: boolean;
  /** Write the body in pieces of this many bytes, so that events split across reads (also inside a UTF-8 character). */
  splitBytes?: number;
  /** OpenAI: tool call deltas without `index` (a call's first delta has id and name, later fragments have neither). */
  omitIndex?: boolean;
  /** OpenAI (Ollama style): every tool call sent whole in one delta, all with index 0, each with its own id. */
  repeatIndex?: boolean;
  /** OpenAI: no `finish_reason` ever (the stream still ends with `[DONE]`); Anthropic: no `message_delta` and no `message_stop`. */
  noFinishReason?: boolean;
  /**
   * An error inside a 200 stream after `afterDeltas` content deltas (default 1), then the stream
   * ends. OpenAI: an OpenRouter-style chunk with an `error` member; Anthropic: an `event: error`
   * (type `overloaded_error`, or `code` when it is a string).
   */
  errorInStream?: { message: string; code?: number | string; afterDeltas?: number };
  /** OpenAI: no `data: [DONE]`. */
  noDone?: boolean;
  /** OpenAI: the final chunk with `choices: []` and `usage` when the request asks for it with `stream_options.include_usage` (default true). */
  usageChunk?: boolean;
}

/**
 * A normal answer: streamed in the provider's format when the request has `"stream": true`,
 * else one JSON message.
 *
 * @example
 * ```ts
 * const reply: StreamedReply = {
 *   reasoning: "The user greets me.",
 *   text: "Hello!",
 *   toolCalls: [{ name: "clock", arguments: {} }],
 *   usage: { input: 12, output: 5 },
 * };
 * ```
 */
export interface StreamedReply {
  /** Streamed as several deltas (pieces of about 8 characters). */
  text?: string;
  /** Streamed with their argument JSON split into several fragments. */
  toolCalls?: ToolCallScript[];
  /** OpenAI: `reasoning_content` deltas (DeepSeek style); Anthropic: a thinking block with `thinking_delta` and `signature_delta`. */
  reasoning?: string;
  /** Anthropic: the thinking block's signature (default a fixed base64 text). */
  signature?: string;
  /** Token counts; default estimates from the lengths of the request and of the reply. */
  usage?: { input: number; output: number };
  /** Odd behaviours of the stream. */
  quirks?: Quirks;
  /** Pause between writes, in milliseconds (default: only a turn of the event loop). */
  delayMs?: number;
  /** Overrides OpenAI's `finish_reason` / Anthropic's `stop_reason` (e.g. `"length"`, `"max_tokens"`). */
  finishReason?: string;
}

/**
 * A plain HTTP answer, as `application/json`. Without `body`, an error status (400 and up) gets
 * the provider's own error JSON for it, and any other status `{}`.
 *
 * @example
 * ```ts
 * const reply: PlainReply = { status: 429, headers: { "retry-after": "0" } };
 * ```
 */
export interface PlainReply {
  /** The HTTP status. */
  status: number;
  /** Extra response headers. */
  headers?: Record<string, string>;
  /** The body: a string is sent verbatim, an object as JSON. */
  body?: string | object;
}

/**
 * A stream written exactly as given, each string a separate write, as `text/event-stream`.
 *
 * @example
 * ```ts
 * const reply: RawReply = { raw: ["data: {not json\n\n", "data: [DONE]\n\n"] };
 * ```
 */
export interface RawReply {
  /** The pieces of the body. */
  raw: string[];
  /** The HTTP status (default 200). */
  status?: number;
  /** Pause between writes, in milliseconds. */
  delayMs?: number;
}

/**
 * The first half of the content deltas of `partial` (nothing of its finish), then an open
 * connection without writes until the client goes away or the server closes. A request without
 * `"stream": true` gets a {@linkcode HangReply} instead.
 *
 * @example
 * ```ts
 * const reply: PartialReply = { partial: { text: "a long answer that stops" }, thenHang: true };
 * ```
 */
export interface PartialReply {
  /** The reply to stream half of. */
  partial: StreamedReply;
  /** Always true. */
  thenHang: true;
}

/**
 * Text deltas forever, about 64 KiB per write, until the client disconnects (streamed even to a
 * request without `"stream": true`).
 *
 * @example
 * ```ts
 * const reply: EndlessReply = { endless: true };
 * ```
 */
export interface EndlessReply {
  /** Always true. */
  endless: true;
}

/**
 * A 200 event stream that carries nothing but keep-alives, forever: SSE comments (OpenAI, as
 * OpenRouter sends while a model works) or `ping` events (Anthropic), one every `everyMs`.
 *
 * @example
 * ```ts
 * const reply: KeepAliveReply = { keepAlive: true, everyMs: 100 };
 * ```
 */
export interface KeepAliveReply {
  /** Always true. */
  keepAlive: true;
  /** The pause between two keep-alives (default 200 ms). */
  everyMs?: number;
}

/**
 * One properly finished answer whose text totals this many bytes (ASCII), in deltas of 16 KiB.
 * The text repeats the 63-byte line `"The quick brown fox jumps over the lazy dog. 0123456789abcdef.\n"`.
 *
 * @example
 * ```ts
 * const reply: BigTextReply = { bigText: 50_000_000 };
 * ```
 */
export interface BigTextReply {
  /** The size of the text, in bytes. */
  bigText: number;
}

/**
 * A request accepted and never answered: not even the response head is sent.
 *
 * @example
 * ```ts
 * const reply: HangReply = { hang: true };
 * ```
 */
export interface HangReply {
  /** Always true. */
  hang: true;
}

/**
 * One turn of a script.
 *
 * @example
 * ```ts
 * const script: Reply[] = [
 *   { status: 529 },
 *   { toolCalls: [{ name: "read", arguments: { path: "a.txt" } }] },
 *   { text: "Done." },
 * ];
 * ```
 */
export type Reply =
  | StreamedReply
  | PlainReply
  | RawReply
  | PartialReply
  | EndlessReply
  | KeepAliveReply
  | BigTextReply
  | HangReply;

/**
 * A request as the server saw it.
 *
 * @example
 * ```ts
 * const script = (request: SeenRequest): Reply =>
 *   request.body.messages.length > 1 ? { text: "again" } : { text: "first" };
 * ```
 */
export interface SeenRequest {
  /** The server's API. */
  api: ModelApi;
  /** The URL path, like `/v1/chat/completions`. */
  path: string;
  /** The HTTP method. */
  method: string;
  /** The request headers, names in lower case. */
  headers: Record<string, string>;
  /** The parsed JSON body (the text when it is not JSON). */
  // deno-lint-ignore no-explicit-any
  body: any;
  /** When it arrived (`Date.now()`). */
  time: number;
  /** Its number, from 1. */
  n: number;
}

/**
 * Options of {@linkcode startModelServer}.
 *
 * @example
 * ```ts
 * const options: ModelServerOptions = {
 *   api: "anthropic-messages",
 *   script: [{ text: "Hi" }],
 *   token: "sk-ant-test",
 *   models: ["claude-test"],
 * };
 * ```
 */
export interface ModelServerOptions {
  /** The wire format. */
  api: ModelApi;
  /**
   * The replies. An array is consumed in order, one reply per request that the provider would
   * accept (refusals of `token`, `models` and `validate` consume none); past its end each request
   * gets a 500 "the script has no more replies (request N)". A function is called for each
   * accepted request.
   */
  script: Reply[] | ((request: SeenRequest) => Reply | Promise<Reply>);
  /** When set, a request without this key is refused with 401 (OpenAI: `Authorization: Bearer`; Anthropic: `x-api-key`). */
  token?: string;
  /** When set, a request for another model gets the provider's 404. */
  models?: string[];
  /** Refuse with 400 the requests that the real provider refuses (default true). */
  validate?: boolean;
}

/**
 * A running scripted model server. Close it (or `await using` it) before a test ends.
 *
 * @example
 * ```ts
 * await using server = await startModelServer({ api: "openai-chat-completions", script: [{ endless: true }] });
 * // ... a client reads a while and aborts ...
 * await server.finished(1);
 * console.log(server.disconnects); // 1
 * ```
 */
export interface ModelServer extends AsyncDisposable {
  /** The base URL as each SDK takes it: OpenAI `http://127.0.0.1:PORT/v1`, Anthropic `http://127.0.0.1:PORT`. */
  readonly url: string;
  /** The port listened on. */
  readonly port: number;
  /** Every request seen, in order of arrival. */
  readonly requests: SeenRequest[];
  /** Resolves once `n` requests have arrived; rejects after `ms` (default 10 s) or when the server closes. */
  waitForRequests(n: number, ms?: number): Promise<void>;
  /**
   * Resolves when the reply of request `n` (from 1) has started streaming its body, or has ended
   * without doing so (plain answers, the client going away, the server closing).
   */
  streaming(n: number): Promise<void>;
  /** Resolves when the reply of request `n` (from 1) has ended: sent whole, the client went away, or the server closed. */
  finished(n: number): Promise<void>;
  /**
   * How many connections the client closed while their reply's body was being written. (A client
   * giving up on a `hang` reply is not seen: without a response head, Deno.serve does not tell.)
   */
  readonly disconnects: number;
  /** Stops listening and ends every reply still running (hanging ones included). */
  close(): Promise<void>;
}

/**
 * Starts a scripted model server on 127.0.0.1, on a free port.
 *
 * @example
 * ```ts
 * import OpenAI from "openai";
 *
 * await using server = await startModelServer({
 *   api: "openai-chat-completions",
 *   script: [{ text: "It is sunny." }],
 * });
 * const client = new OpenAI({ baseURL: server.url, apiKey: "test" });
 * const stream = client.chat.completions.stream({
 *   model: "gpt-4o",
 *   messages: [{ role: "user", content: "Weather?" }],
 * });
 * const completion = await stream.finalChatCompletion();
 * console.log(completion.choices[0].message.content); // "It is sunny."
 * ```
 */
export function startModelServer(options: ModelServerOptions): Promise<ModelServer> {
  return Promise.resolve(new ScriptedServer(options));
}

// --- the server -------------------------------------------------------------

const encoder = new TextEncoder();
const TEXT_PIECE = 8;
const BIG_DELTA = 16 * 1024;
const ENDLESS_DELTA = 64 * 1024;
const BIG_LINE = "The quick brown fox jumps over the lazy dog. 0123456789abcdef.\n";
const DEFAULT_SIGNATURE =
  "EqQBCkYIBxgCKkBzYXVzYWdlIG1vZGVsIHNlcnZlciB0aGlua2luZyBzaWduYXR1cmUSDGZha2Utc2lnbmF0dXJlGgx0ZXN0LW9ubHk=";
const PING = 'event: ping\ndata: {"type": "ping"}\n\n';

interface Deferred {
  promise: Promise<void>;
  resolve(): void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => resolve = r);
  return { promise, resolve };
}

/** The errors the server gives a body stream it ends on close (kept out of the logs by `onError`). */
class ModelServerClosed extends Error {
  constructor() {
    super("the model server closed");
  }
}

/** The life of one reply: its timers, and whether the client or the server ended it. */
class ReplyState {
  stopped = false;
  byServer = false;
  onClientGone: () => void = () => {};
  controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  readonly #wakers = new Set<() => void>();
  readonly #stop = deferred();

  /** Waits `ms`, or one turn of the event loop (so that each write leaves on its own); ends early on stop. */
  pause(ms: number | undefined): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise<void>((resolve) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      let immediate: ReturnType<typeof setImmediate> | undefined;
      const wake = () => {
        this.#wakers.delete(wake);
        clearTimeout(timer);
        if (immediate !== undefined) clearImmediate(immediate);
        resolve();
      };
      if (ms && ms > 0) timer = setTimeout(wake, ms);
      else immediate = setImmediate(wake);
      this.#wakers.add(wake);
    });
  }

  /** Resolves when the reply is stopped. */
  stoppedPromise(): Promise<void> {
    return this.#stop.promise;
  }

  stop(byServer: boolean): void {
    if (this.stopped) return;
    this.stopped = true;
    this.byServer = byServer;
    for (const wake of [...this.#wakers]) wake();
    this.#stop.resolve();
    if (byServer && this.controller) {
      // An errored body drops the connection, as a server going away does.
      try {
        this.controller.error(new ModelServerClosed());
      } catch {
        // The body was already closed.
      }
    }
  }
}

interface Track {
  started: Deferred;
  finished: Deferred;
}

interface Waiter {
  n: number;
  resolve(): void;
  reject(error: Error): void;
  timer: ReturnType<typeof setTimeout>;
}

/** What a request is answered with, before it becomes a Response. */
type Answer =
  | { kind: "json"; status: number; headers?: Record<string, string>; body: string }
  | {
    kind: "stream";
    status: number;
    headers: Record<string, string>;
    pieces: Iterator<Uint8Array>;
    delayMs?: number;
    hangAtEnd?: boolean;
  }
  | { kind: "hang" };

/** What the renderers need of a request. */
interface Context {
  api: ModelApi;
  model: string;
  includeUsage: boolean;
  inputTokens: number;
  requestId: string;
  created: number;
  messageId: string;
  fingerprint: string;
}

class ScriptedServer implements ModelServer {
  readonly requests: SeenRequest[] = [];
  readonly url: string;
  readonly port: number;
  #disconnects = 0;
  #closing = false;
  #closed: Promise<void> | undefined;
  #next = 0;
  #count = 0;
  readonly #options: ModelServerOptions;
  readonly #server: Deno.HttpServer<Deno.NetAddr>;
  readonly #active = new Set<ReplyState>();
  readonly #tracks = new Map<number, Track>();
  readonly #waiters = new Set<Waiter>();
  /** Anthropic thinking signatures handed out → the thinking texts they sign. */
  readonly #signatures = new Map<string, Set<string>>();

  constructor(options: ModelServerOptions) {
    this.#options = options;
    this.#server = Deno.serve({
      hostname: "127.0.0.1",
      port: 0,
      automaticCompression: false,
      onListen() {},
      // Only body streams end up here: the ones this server errors on close.
      onError: () => new Response(null, { status: 500 }),
    }, (request, info) => this.#handle(request, info));
    this.port = this.#server.addr.port;
    const origin = `http://127.0.0.1:${this.port}`;
    this.url = options.api === "openai-chat-completions" ? `${origin}/v1` : origin;
  }

  get disconnects(): number {
    return this.#disconnects;
  }

  waitForRequests(n: number, ms = 10_000): Promise<void> {
    if (this.requests.length >= n) return Promise.resolve();
    if (this.#closing) return Promise.reject(new Error("the model server is closed"));
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        n,
        resolve: () => {
          clearTimeout(waiter.timer);
          this.#waiters.delete(waiter);
          resolve();
        },
        reject: (error) => {
          clearTimeout(waiter.timer);
          this.#waiters.delete(waiter);
          reject(error);
        },
        timer: setTimeout(() => {
          waiter.reject(
            new Error(`expected ${n} requests within ${ms} ms, saw ${this.requests.length}`),
          );
        }, ms),
      };
      this.#waiters.add(waiter);
    });
  }

  streaming(n: number): Promise<void> {
    return this.#closing ? Promise.resolve() : this.#track(n).started.promise;
  }

  finished(n: number): Promise<void> {
    return this.#closing ? Promise.resolve() : this.#track(n).finished.promise;
  }

  close(): Promise<void> {
    this.#closed ??= (async () => {
      this.#closing = true;
      for (const state of [...this.#active]) state.stop(true);
      for (const waiter of [...this.#waiters]) {
        waiter.reject(new Error("the model server closed"));
      }
      await this.#server.shutdown();
      for (const track of this.#tracks.values()) {
        track.started.resolve();
        track.finished.resolve();
      }
    })();
    return this.#closed;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  #track(n: number): Track {
    let track = this.#tracks.get(n);
    if (!track) {
      track = { started: deferred(), finished: deferred() };
      this.#tracks.set(n, track);
    }
    return track;
  }

  async #handle(request: Request, info: Deno.ServeHandlerInfo<Deno.NetAddr>): Promise<Response> {
    const n = ++this.#count;
    const track = this.#track(n);
    const state = new ReplyState();
    this.#active.add(state);
    state.onClientGone = () => {
      if (!this.#closing) this.#disconnects++;
    };
    // Settles whether or not the client read the whole reply.
    info.completed.catch(() => {}).finally(() => {
      state.stop(false);
      this.#active.delete(state);
      track.started.resolve();
      track.finished.resolve();
    });
    let answer: Answer;
    try {
      answer = await this.#answer(request, n);
    } catch (error) {
      // A broken script or a bug here: say so in the provider's shape rather than in a log.
      answer = jsonAnswer(500, serverError(this.#options.api, `model server: ${error}`));
    }
    if (this.#closing) state.stop(true);
    switch (answer.kind) {
      case "json":
        return new Response(answer.body, {
          status: answer.status,
          headers: { "content-type": "application/json", ...answer.headers },
        });
      case "hang":
        return await this.#hang(state);
      case "stream":
        return new Response(
          sseBody(answer.pieces, state, answer.delayMs, answer.hangAtEnd ?? false, () => {
            track.started.resolve();
          }),
          {
            status: answer.status,
            headers: {
              "content-type": "text/event-stream; charset=utf-8",
              "cache-control": "no-cache",
              ...answer.headers,
            },
          },
        );
    }
  }

  /**
   * Never answers, until the server closes; then the connection drops. (It does not watch
   * `request.signal`: reading it makes Deno.serve warn of its legacy abort behaviour.)
   */
  async #hang(state: ReplyState): Promise<Response> {
    await state.stoppedPromise();
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.error(new ModelServerClosed());
      },
    });
    return new Response(body);
  }

  async #answer(request: Request, n: number): Promise<Answer> {
    const api = this.#options.api;
    const url = new URL(request.url);
    const text = await request.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {
      // Kept as text: the checks below refuse it.
    }
    const seen: SeenRequest = {
      api,
      path: url.pathname,
      method: request.method,
      headers: Object.fromEntries(request.headers),
      body,
      time: Date.now(),
      n,
    };
    this.requests.push(seen);
    for (const waiter of [...this.#waiters]) {
      if (this.requests.length >= waiter.n) waiter.resolve();
    }
    if (this.#closing) return jsonAnswer(503, serverError(api, "the model server is closing"));

    const refusal = this.#refuse(seen, text);
    if (refusal) return refusal;

    let reply: Reply;
    const script = this.#options.script;
    if (typeof script === "function") {
      reply = await script(seen);
    } else if (this.#next < script.length) {
      reply = script[this.#next++];
    } else {
      return jsonAnswer(
        500,
        serverError(api, `the script has no more replies (request ${n})`),
      );
    }
    return this.#render(reply, seen);
  }

  /** The provider's refusals, before the model: routing, key, version, body, model, validation. */
  #refuse(seen: SeenRequest, text: string): Answer | undefined {
    const { api, token, models } = this.#options;
    const validate = this.#options.validate ?? true;
    const expected = api === "openai-chat-completions" ? "/v1/chat/completions" : "/v1/messages";
    if (seen.path !== expected || seen.method !== "POST") {
      return api === "openai-chat-completions"
        ? openaiError(404, `Invalid URL (${seen.method} ${seen.path})`, "invalid_request_error")
        : anthropicError(404, "not_found_error", "Not Found");
    }
    if (token !== undefined) {
      const refusal = api === "openai-chat-completions"
        ? openaiAuth(seen.headers["authorization"], token)
        : anthropicAuth(seen.headers, token);
      if (refusal) return refusal;
    }
    if (api === "anthropic-messages" && seen.headers["anthropic-version"] === undefined) {
      return anthropicError(400, "invalid_request_error", "anthropic-version: header is required");
    }
    if (!isObject(seen.body)) {
      return api === "openai-chat-completions"
        ? openaiError(
          400,
          "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)",
          "invalid_request_error",
        )
        : anthropicError(
          400,
          "invalid_request_error",
          text.trim() === ""
            ? "Request body is empty"
            : "There was an issue with the format of your request: invalid JSON",
        );
    }
    const body = seen.body;
    if (validate) {
      const missing = api === "openai-chat-completions"
        ? openaiRequired(body)
        : anthropicRequired(body);
      if (missing) return missing;
    }
    if (models !== undefined && !models.includes(String(body.model))) {
      return api === "openai-chat-completions"
        ? openaiModelNotFound(String(body.model))
        : anthropicError(404, "not_found_error", `model: ${body.model}`);
    }
    if (validate) {
      return api === "openai-chat-completions"
        ? openaiMessages(body)
        : anthropicMessages(body, this.#signatures);
    }
    return undefined;
  }

  #context(seen: SeenRequest): Context {
    const body: Record<string, unknown> = isObject(seen.body) ? seen.body : {};
    const api = this.#options.api;
    const options = isObject(body.stream_options) ? body.stream_options : {};
    return {
      api,
      model: typeof body.model === "string" ? body.model : "unknown",
      includeUsage: options.include_usage === true,
      inputTokens: estimateTokens(
        JSON.stringify(body.messages ?? "").length + JSON.stringify(body.system ?? "").length,
      ),
      requestId: randomRequestId(),
      created: Math.floor(Date.now() / 1000),
      messageId: api === "openai-chat-completions"
        ? `chatcmpl-${randomId(29)}`
        : `msg_01${randomId(22)}`,
      fingerprint: `fp_${randomHex(10)}`,
    };
  }

  #render(reply: Reply, seen: SeenRequest): Answer {
    const ctx = this.#context(seen);
    const streamed = isObject(seen.body) && seen.body.stream === true;
    const api = ctx.api;
    if ("status" in reply && !("raw" in reply)) return plainAnswer(reply, ctx);
    if ("raw" in reply) {
      return {
        kind: "stream",
        headers: requestIdHeader(api, ctx.requestId),
        status: reply.status ?? 200,
        pieces: reply.raw.map((piece) => encoder.encode(piece)).values(),
        delayMs: reply.delayMs,
      };
    }
    if ("hang" in reply) return { kind: "hang" };
    if ("partial" in reply) {
      if (!streamed) return { kind: "hang" };
      const frames = [...this.#frames(reply.partial, ctx, textPieces(reply.partial.text ?? ""))];
      const deltas = frames.filter((frame) => frame.kind === "delta").length;
      return {
        kind: "stream",
        headers: requestIdHeader(api, ctx.requestId),
        status: 200,
        pieces: toPieces(cutAfter(frames, Math.ceil(deltas / 2)), reply.partial.quirks ?? {}, ctx),
        delayMs: reply.partial.delayMs,
        hangAtEnd: true,
      };
    }
    if ("endless" in reply) {
      return {
        kind: "stream",
        headers: requestIdHeader(api, ctx.requestId),
        status: 200,
        pieces: toPieces(this.#frames({}, ctx, endlessPieces()), {}, ctx),
      };
    }
    if ("keepAlive" in reply) {
      const beat = api === "anthropic-messages" ? PING : ": keepalive\n\n";
      return {
        kind: "stream",
        headers: requestIdHeader(api, ctx.requestId),
        status: 200,
        pieces: (function* () {
          while (true) yield encoder.encode(beat);
        })(),
        delayMs: reply.everyMs ?? 200,
      };
    }
    if ("bigText" in reply) {
      const size = reply.bigText;
      if (!streamed) {
        return jsonAnswer(200, messageJson({ text: bigText(size) }, ctx, this.#signatures));
      }
      const usage = { input: ctx.inputTokens, output: estimateTokens(size) };
      return {
        kind: "stream",
        headers: requestIdHeader(api, ctx.requestId),
        status: 200,
        pieces: toPieces(this.#frames({ usage }, ctx, bigPieces(size)), {}, ctx),
      };
    }
    if (!streamed) {
      return jsonAnswer(
        200,
        messageJson(reply, ctx, this.#signatures),
        requestIdHeader(api, ctx.requestId),
      );
    }
    const quirks = reply.quirks ?? {};
    let frames: Iterable<Frame> = this.#frames(reply, ctx, textPieces(reply.text ?? ""));
    if (quirks.errorInStream) {
      frames = errorAfter(frames, quirks.errorInStream, ctx);
    }
    return {
      kind: "stream",
      headers: requestIdHeader(api, ctx.requestId),
      status: 200,
      pieces: toPieces(frames, quirks, ctx),
      delayMs: reply.delayMs,
    };
  }

  #frames(reply: StreamedReply, ctx: Context, text: Iterable<string>): Iterable<Frame> {
    return ctx.api === "openai-chat-completions"
      ? openaiFrames(reply, ctx, text)
      : anthropicFrames(reply, ctx, text, this.#signatures);
  }
}

/** A body that writes `pieces` one by one (each its own write), then ends or hangs. */
function sseBody(
  pieces: Iterator<Uint8Array>,
  state: ReplyState,
  delayMs: number | undefined,
  hangAtEnd: boolean,
  onFirstWrite: () => void,
): ReadableStream<Uint8Array> {
  let next = pieces.next();
  let first = true;
  return new ReadableStream<Uint8Array>({
    start(controller) {
      state.controller = controller;
      if (state.byServer) controller.error(new ModelServerClosed());
    },
    async pull(controller) {
      if (next.done) {
        if (!hangAtEnd) {
          controller.close();
          return;
        }
        await state.stoppedPromise();
        return;
      }
      if (!first) await state.pause(delayMs);
      if (state.stopped) return;
      first = false;
      controller.enqueue(next.value);
      onFirstWrite();
      next = pieces.next();
      // Ending right after the last write: a client that stops reading at the end is no disconnect.
      if (next.done && !hangAtEnd) controller.close();
    },
    cancel() {
      if (!state.stopped) state.onClientGone();
      state.stop(false);
    },
  }, { highWaterMark: 0 });
}

// --- frames -----------------------------------------------------------------

/** One SSE event; `delta` events carry content, `tail` ones finish the answer. */
interface Frame {
  kind: "head" | "delta" | "tail";
  text: string;
}

function* cutAfter(frames: Iterable<Frame>, deltas: number): Generator<Frame> {
  let seen = 0;
  if (deltas === 0) return;
  for (const frame of frames) {
    if (frame.kind === "tail") return;
    yield frame;
    if (frame.kind === "delta" && ++seen >= deltas) return;
  }
}

function* errorAfter(
  frames: Iterable<Frame>,
  error: NonNullable<Quirks["errorInStream"]>,
  ctx: Context,
): Generator<Frame> {
  const after = error.afterDeltas ?? 1;
  let seen = 0;
  for (const frame of frames) {
    if (frame.kind === "tail" || (frame.kind === "delta" && seen >= after)) break;
    yield frame;
    if (frame.kind === "delta") seen++;
  }
  yield { kind: "tail", text: errorFrame(error, ctx) };
}

function errorFrame(error: NonNullable<Quirks["errorInStream"]>, ctx: Context): string {
  if (ctx.api === "openai-chat-completions") {
    return data({
      id: ctx.messageId,
      object: "chat.completion.chunk",
      created: ctx.created,
      model: ctx.model,
      provider: "OpenAI",
      error: { code: error.code ?? "server_error", message: error.message },
      choices: [{
        index: 0,
        delta: { content: "" },
        finish_reason: "error",
        native_finish_reason: "error",
      }],
    });
  }
  return event("error", {
    type: "error",
    error: {
      type: typeof error.code === "string" ? error.code : "overloaded_error",
      message: error.message,
    },
    request_id: ctx.requestId,
  });
}

/** Comments, splitting and encoding: the frames as the pieces written. */
function* toPieces(frames: Iterable<Frame>, quirks: Quirks, ctx: Context): Generator<Uint8Array> {
  const split = quirks.splitBytes && quirks.splitBytes > 0 ? Math.floor(quirks.splitBytes) : 0;
  const texts = quirks.comments ? withComments(frames, ctx.api) : frameTexts(frames);
  for (const text of texts) {
    const bytes = encoder.encode(text);
    if (!split) {
      yield bytes;
      continue;
    }
    for (let i = 0; i < bytes.length; i += split) yield bytes.subarray(i, i + split);
  }
}

function* frameTexts(frames: Iterable<Frame>): Generator<string> {
  for (const frame of frames) yield frame.text;
}

function* withComments(frames: Iterable<Frame>, api: ModelApi): Generator<string> {
  yield api === "openai-chat-completions" ? ": OPENROUTER PROCESSING\n\n" : ": keepalive\n\n";
  let i = 0;
  for (const frame of frames) {
    // Between events only; for Anthropic, after message_start and its ping.
    if (i > 0 && i % 2 === 0) {
      yield api === "anthropic-messages" && i % 4 === 2 ? PING : ": keepalive\n\n";
    }
    yield frame.text;
    i++;
  }
}

function data(value: unknown): string {
  return `data: ${JSON.stringify(value)}\n\n`;
}

function event(type: string, value: unknown): string {
  return `event: ${type}\ndata: ${JSON.stringify(value)}\n\n`;
}

function* openaiFrames(
  reply: StreamedReply,
  ctx: Context,
  text: Iterable<string>,
): Generator<Frame> {
  const quirks = reply.quirks ?? {};
  const calls = (reply.toolCalls ?? []).map((call) => ({
    ...call,
    id: call.id ?? `call_${randomId(24)}`,
    args: argumentText(call.arguments),
  }));
  const reasoning = reply.reasoning ?? "";
  const base = {
    id: ctx.messageId,
    object: "chat.completion.chunk",
    created: ctx.created,
    model: ctx.model,
    service_tier: "default",
    system_fingerprint: ctx.fingerprint,
  };
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) =>
    data({
      ...base,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      ...(ctx.includeUsage ? { usage: null } : {}),
    });
  yield {
    kind: "head",
    text: chunk(
      reasoning
        ? { role: "assistant", content: null, reasoning_content: "" }
        : { role: "assistant", content: "", refusal: null },
    ),
  };
  let written = 0;
  for (const piece of textPieces(reasoning)) {
    yield { kind: "delta", text: chunk({ content: null, reasoning_content: piece }) };
  }
  for (const piece of text) {
    written += piece.length;
    yield {
      kind: "delta",
      text: chunk(reasoning ? { content: piece, reasoning_content: null } : { content: piece }),
    };
  }
  for (const [i, call] of calls.entries()) {
    if (quirks.repeatIndex) {
      const whole = {
        index: 0,
        id: call.id,
        type: "function",
        function: { name: call.name, arguments: call.args },
      };
      yield { kind: "delta", text: chunk({ tool_calls: [whole] }) };
      continue;
    }
    const index = quirks.omitIndex ? {} : { index: i };
    const start = {
      ...index,
      id: call.id,
      type: "function",
      function: { name: call.name, arguments: "" },
    };
    yield { kind: "delta", text: chunk({ tool_calls: [start] }) };
    for (const piece of argumentPieces(call.args)) {
      yield {
        kind: "delta",
        text: chunk({ tool_calls: [{ ...index, function: { arguments: piece } }] }),
      };
    }
  }
  const finish = reply.finishReason ?? (calls.length ? "tool_calls" : "stop");
  if (!quirks.noFinishReason) yield { kind: "tail", text: chunk({}, finish) };
  if (ctx.includeUsage && quirks.usageChunk !== false) {
    const usage = reply.usage ?? {
      input: ctx.inputTokens,
      output: estimateTokens(reasoning.length + written + argumentsLength(calls)),
    };
    yield {
      kind: "tail",
      text: data({ ...base, choices: [], usage: openaiUsage(usage, reasoning) }),
    };
  }
  if (!quirks.noDone) yield { kind: "tail", text: "data: [DONE]\n\n" };
}

function* anthropicFrames(
  reply: StreamedReply,
  ctx: Context,
  text: Iterable<string>,
  signatures: Map<string, Set<string>>,
): Generator<Frame> {
  const quirks = reply.quirks ?? {};
  const calls = (reply.toolCalls ?? []).map((call) => ({
    ...call,
    id: call.id ?? `toolu_01${randomId(22)}`,
    args: argumentText(call.arguments),
  }));
  const reasoning = reply.reasoning ?? "";
  const input = reply.usage?.input ?? ctx.inputTokens;
  yield {
    kind: "head",
    text: event("message_start", {
      type: "message_start",
      message: {
        id: ctx.messageId,
        type: "message",
        role: "assistant",
        model: ctx.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: {
          input_tokens: input,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
          cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
          output_tokens: 1,
          service_tier: "standard",
        },
      },
    }),
  };
  yield { kind: "head", text: PING };
  let index = 0;
  let written = 0;
  if (reasoning) {
    const signature = reply.signature ?? DEFAULT_SIGNATURE;
    remember(signatures, signature, reasoning);
    yield blockStart(index, { type: "thinking", thinking: "", signature: "" });
    for (const piece of textPieces(reasoning)) {
      yield blockDelta(index, { type: "thinking_delta", thinking: piece });
    }
    yield blockDelta(index, { type: "signature_delta", signature }, "head");
    yield blockStop(index++);
  }
  let textBlock = false;
  for (const piece of text) {
    if (!textBlock) {
      yield blockStart(index, { type: "text", text: "" });
      textBlock = true;
    }
    written += piece.length;
    yield blockDelta(index, { type: "text_delta", text: piece });
  }
  if (textBlock) yield blockStop(index++);
  for (const call of calls) {
    yield blockStart(index, { type: "tool_use", id: call.id, name: call.name, input: {} });
    // For an empty input the API sends one empty fragment.
    const args = call.args === "{}" ? "" : call.args;
    const pieces = args === "" ? [""] : argumentPieces(args);
    for (const piece of pieces) {
      yield blockDelta(index, { type: "input_json_delta", partial_json: piece });
    }
    yield blockStop(index++);
  }
  if (quirks.noFinishReason) return;
  const output = reply.usage?.output ??
    estimateTokens(reasoning.length + written + argumentsLength(calls));
  const stop = reply.finishReason ?? (calls.length ? "tool_use" : "end_turn");
  yield {
    kind: "tail",
    text: event("message_delta", {
      type: "message_delta",
      delta: { stop_reason: stop, stop_sequence: null },
      usage: {
        input_tokens: input,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        output_tokens: output,
      },
    }),
  };
  yield { kind: "tail", text: event("message_stop", { type: "message_stop" }) };
}

function blockStart(index: number, block: Record<string, unknown>): Frame {
  return {
    kind: "head",
    text: event("content_block_start", {
      type: "content_block_start",
      index,
      content_block: block,
    }),
  };
}

function blockDelta(
  index: number,
  delta: Record<string, unknown>,
  kind: Frame["kind"] = "delta",
): Frame {
  return {
    kind,
    text: event("content_block_delta", { type: "content_block_delta", index, delta }),
  };
}

function blockStop(index: number): Frame {
  return { kind: "head", text: event("content_block_stop", { type: "content_block_stop", index }) };
}

function remember(signatures: Map<string, Set<string>>, signature: string, thinking: string): void {
  let texts = signatures.get(signature);
  if (!texts) signatures.set(signature, texts = new Set());
  texts.add(thinking);
}

/** The whole answer as one JSON message, for requests without `"stream": true`. */
function messageJson(
  reply: StreamedReply,
  ctx: Context,
  signatures: Map<string, Set<string>>,
): unknown {
  const text = reply.text ?? "";
  const reasoning = reply.reasoning ?? "";
  const calls = reply.toolCalls ?? [];
  const output = estimateTokens(
    reasoning.length + text.length +
      argumentsLength(calls.map((call) => ({ args: argumentText(call.arguments) }))),
  );
  const usage = reply.usage ?? { input: ctx.inputTokens, output };
  if (ctx.api === "openai-chat-completions") {
    const message: Record<string, unknown> = {
      role: "assistant",
      content: text === "" && calls.length ? null : text,
      refusal: null,
      annotations: [],
    };
    if (reasoning) message.reasoning_content = reasoning;
    if (calls.length) {
      message.tool_calls = calls.map((call) => ({
        id: call.id ?? `call_${randomId(24)}`,
        type: "function",
        function: { name: call.name, arguments: argumentText(call.arguments) },
      }));
    }
    return {
      id: ctx.messageId,
      object: "chat.completion",
      created: ctx.created,
      model: ctx.model,
      choices: [{
        index: 0,
        message,
        logprobs: null,
        finish_reason: reply.finishReason ?? (calls.length ? "tool_calls" : "stop"),
      }],
      usage: openaiUsage(usage, reasoning),
      service_tier: "default",
      system_fingerprint: ctx.fingerprint,
    };
  }
  const content: unknown[] = [];
  if (reasoning) {
    const signature = reply.signature ?? DEFAULT_SIGNATURE;
    remember(signatures, signature, reasoning);
    content.push({ type: "thinking", thinking: reasoning, signature });
  }
  if (text) content.push({ type: "text", text });
  for (const call of calls) {
    let input: unknown = call.arguments;
    if (typeof input === "string") {
      try {
        input = JSON.parse(input);
      } catch {
        // Sent as given: the script asked for a broken input.
      }
    }
    content.push({
      type: "tool_use",
      id: call.id ?? `toolu_01${randomId(22)}`,
      name: call.name,
      input,
    });
  }
  return {
    id: ctx.messageId,
    type: "message",
    role: "assistant",
    model: ctx.model,
    content,
    stop_reason: reply.finishReason ?? (calls.length ? "tool_use" : "end_turn"),
    stop_sequence: null,
    usage: {
      input_tokens: usage.input,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
      output_tokens: usage.output,
      service_tier: "standard",
    },
  };
}

function openaiUsage(usage: { input: number; output: number }, reasoning: string): unknown {
  return {
    prompt_tokens: usage.input,
    completion_tokens: usage.output,
    total_tokens: usage.input + usage.output,
    prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
    completion_tokens_details: {
      reasoning_tokens: reasoning ? Math.min(usage.output, estimateTokens(reasoning.length)) : 0,
      audio_tokens: 0,
      accepted_prediction_tokens: 0,
      rejected_prediction_tokens: 0,
    },
  };
}

// --- text pieces --------------------------------------------------------------

/** Pieces of about `size` characters, never inside a surrogate pair. */
function textPieces(text: string, size = TEXT_PIECE): string[] {
  const chars = Array.from(text);
  const pieces: string[] = [];
  for (let i = 0; i < chars.length; i += size) pieces.push(chars.slice(i, i + size).join(""));
  return pieces;
}

/** At least three fragments for any but the shortest argument texts. */
function argumentPieces(args: string): string[] {
  const length = Array.from(args).length;
  return textPieces(args, Math.min(TEXT_PIECE, Math.max(1, Math.ceil(length / 3))));
}

function argumentText(args: unknown): string {
  return typeof args === "string" ? args : JSON.stringify(args ?? {});
}

function bigText(size: number): string {
  return BIG_LINE.repeat(Math.ceil(size / BIG_LINE.length)).slice(0, size);
}

/** The text of {@linkcode bigText} in deltas of `BIG_DELTA`, without building it whole. */
function* bigPieces(size: number): Generator<string> {
  const lines = BIG_LINE.repeat(Math.ceil(BIG_DELTA / BIG_LINE.length) + 1);
  for (let at = 0; at < size; at += BIG_DELTA) {
    const start = at % BIG_LINE.length;
    yield lines.slice(start, start + Math.min(BIG_DELTA, size - at));
  }
}

function* endlessPieces(): Generator<string> {
  const whole = BIG_LINE.repeat(Math.ceil(ENDLESS_DELTA / BIG_LINE.length));
  while (true) yield whole;
}

/** About four characters a token. */
function estimateTokens(characters: number): number {
  return Math.max(1, Math.ceil(characters / 4));
}

function argumentsLength(calls: { args: string }[]): number {
  return calls.reduce((sum, call) => sum + call.args.length, 0);
}

// --- errors and refusals -----------------------------------------------------

function jsonAnswer(status: number, body: unknown, headers?: Record<string, string>): Answer {
  return { kind: "json", status, body: JSON.stringify(body), headers };
}

function openaiError(
  status: number,
  message: string,
  type: string,
  param: string | null = null,
  code: string | null = null,
): Answer {
  return jsonAnswer(
    status,
    { error: { message, type, param, code } },
    requestIdHeader("openai-chat-completions", randomRequestId()),
  );
}

function anthropicError(status: number, type: string, message: string): Answer {
  const requestId = randomRequestId();
  return jsonAnswer(
    status,
    { type: "error", error: { type, message }, request_id: requestId },
    requestIdHeader("anthropic-messages", requestId),
  );
}

function serverError(api: ModelApi, message: string): unknown {
  return api === "openai-chat-completions"
    ? { error: { message, type: "server_error", param: null, code: null } }
    : { type: "error", error: { type: "api_error", message }, request_id: randomRequestId() };
}

function requestIdHeader(api: ModelApi, id: string): Record<string, string> {
  return api === "openai-chat-completions" ? { "x-request-id": id } : { "request-id": id };
}

/** A scripted `{status}` answer: the given body, or the provider's error for that status. */
function plainAnswer(reply: PlainReply, ctx: Context): Answer {
  const headers = { ...requestIdHeader(ctx.api, ctx.requestId), ...reply.headers };
  if (reply.body !== undefined || reply.status < 400) {
    const body = typeof reply.body === "string" ? reply.body : JSON.stringify(reply.body ?? {});
    return { kind: "json", status: reply.status, body, headers };
  }
  const status = reply.status;
  if (ctx.api === "openai-chat-completions") {
    const [message, type, code] = openaiDefault(status, ctx.model);
    return jsonAnswer(status, { error: { message, type, param: null, code } }, headers);
  }
  const [type, message] = anthropicDefault(status, ctx.model);
  return jsonAnswer(
    status,
    { type: "error", error: { type, message }, request_id: ctx.requestId },
    headers,
  );
}

function openaiDefault(status: number, model: string): [string, string, string | null] {
  switch (status) {
    case 400:
      return ["Invalid request.", "invalid_request_error", null];
    case 401:
      return [
        "Incorrect API key provided. You can find your API key at https://platform.openai.com/account/api-keys.",
        "invalid_request_error",
        "invalid_api_key",
      ];
    case 403:
      return ["You are not allowed to sample from this model", "invalid_request_error", null];
    case 404:
      return [
        `The model \`${model}\` does not exist or you do not have access to it.`,
        "invalid_request_error",
        "model_not_found",
      ];
    case 429:
      return [
        `Rate limit reached for ${model} in organization org-test on tokens per min (TPM): Limit 30000, Used 30000, Requested 1000. Please try again in 2s. Visit https://platform.openai.com/account/rate-limits to learn more.`,
        "tokens",
        "rate_limit_exceeded",
      ];
    case 500:
      return [
        "The server had an error while processing your request. Sorry about that!",
        "server_error",
        null,
      ];
    case 502:
    case 503:
    case 529:
      return ["The server is overloaded or not ready yet.", "server_error", null];
    default:
      return status >= 500
        ? [`The server had an error (HTTP ${status}).`, "server_error", null]
        : [`The request was refused (HTTP ${status}).`, "invalid_request_error", null];
  }
}

function anthropicDefault(status: number, model: string): [string, string] {
  switch (status) {
    case 400:
      return ["invalid_request_error", "Invalid request"];
    case 401:
      return ["authentication_error", "invalid x-api-key"];
    case 402:
      return ["billing_error", "Your credit balance is too low to access the Anthropic API."];
    case 403:
      return [
        "permission_error",
        "Your API key does not have permission to use the specified resource.",
      ];
    case 404:
      return ["not_found_error", `model: ${model}`];
    case 413:
      return ["request_too_large", "Request exceeds the maximum allowed number of bytes."];
    case 429:
      return [
        "rate_limit_error",
        "This request would exceed the rate limit for your organization of 50 requests per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits.",
      ];
    case 500:
      return ["api_error", "Internal server error"];
    case 529:
      return ["overloaded_error", "Overloaded"];
    default:
      return status >= 500
        ? ["api_error", "Internal server error"]
        : ["invalid_request_error", `The request was refused (HTTP ${status}).`];
  }
}

function openaiAuth(header: string | undefined, token: string): Answer | undefined {
  const match = header?.match(/^Bearer\s+(.*)$/i);
  if (!match) {
    return openaiError(
      401,
      "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username and password. You can obtain an API key from https://platform.openai.com/account/api-keys.",
      "invalid_request_error",
    );
  }
  const key = match[1].trim();
  if (key === token) return undefined;
  const shown = key.length > 12
    ? `${key.slice(0, 3)}${"*".repeat(key.length - 7)}${key.slice(-4)}`
    : key;
  return openaiError(
    401,
    `Incorrect API key provided: ${shown}. You can find your API key at https://platform.openai.com/account/api-keys.`,
    "invalid_request_error",
    null,
    "invalid_api_key",
  );
}

/** The key comes as `x-api-key`, or (as the current SDK sends it) as `Authorization: Bearer`. */
function anthropicAuth(headers: Record<string, string>, token: string): Answer | undefined {
  const bearer = headers["authorization"]?.match(/^Bearer\s+(.*)$/i)?.[1].trim();
  const key = headers["x-api-key"] ?? bearer;
  if (key === undefined) {
    return anthropicError(401, "authentication_error", "x-api-key header is required");
  }
  return key === token
    ? undefined
    : anthropicError(401, "authentication_error", "invalid x-api-key");
}

function openaiModelNotFound(model: string): Answer {
  return openaiError(
    404,
    `The model \`${model}\` does not exist or you do not have access to it.`,
    "invalid_request_error",
    null,
    "model_not_found",
  );
}

function openaiRequired(body: Record<string, unknown>): Answer | undefined {
  if (body.model === undefined || body.model === null || body.model === "") {
    return openaiError(400, "you must provide a model parameter", "invalid_request_error");
  }
  if (body.messages === undefined) {
    return openaiError(
      400,
      "Missing required parameter: 'messages'.",
      "invalid_request_error",
      "messages",
      "missing_required_parameter",
    );
  }
  if (!Array.isArray(body.messages)) {
    return openaiError(
      400,
      `Invalid type for 'messages': expected an array, but got ${typeof body.messages} instead.`,
      "invalid_request_error",
      "messages",
      "invalid_type",
    );
  }
  if (body.messages.length === 0) {
    return openaiError(
      400,
      "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
      "invalid_request_error",
      "messages",
      "empty_array",
    );
  }
  return undefined;
}

const OPENAI_ROLES = ["system", "developer", "user", "assistant", "tool", "function"];

/** Tool calls and tool messages must pair up, the way the API checks them. */
function openaiMessages(body: Record<string, unknown>): Answer | undefined {
  const messages = body.messages as unknown[];
  let pending: { at: number; ids: Set<string>; answered: Set<string> } | undefined;
  const dangling = () =>
    openaiError(
      400,
      `An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: ${
        [...pending!.ids].join(", ")
      }`,
      "invalid_request_error",
      `messages.[${pending!.at}].role`,
    );
  for (const [i, message] of messages.entries()) {
    if (!isObject(message)) {
      return openaiError(
        400,
        `Invalid type for 'messages[${i}]': expected an object, but got ${typeof message} instead.`,
        "invalid_request_error",
        `messages[${i}]`,
        "invalid_type",
      );
    }
    const role = message.role;
    if (typeof role !== "string" || !OPENAI_ROLES.includes(role)) {
      return openaiError(
        400,
        `Invalid value: '${role}'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.`,
        "invalid_request_error",
        `messages[${i}].role`,
        "invalid_value",
      );
    }
    if (role === "tool") {
      if (typeof message.tool_call_id !== "string") {
        return openaiError(
          400,
          "Missing parameter 'tool_call_id': messages with role 'tool' must have a 'tool_call_id'.",
          "invalid_request_error",
          `messages.[${i}].tool_call_id`,
        );
      }
      const id = message.tool_call_id;
      if (!pending || (!pending.ids.has(id) && !pending.answered.has(id))) {
        return openaiError(
          400,
          "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
          "invalid_request_error",
          `messages.[${i}].role`,
        );
      }
      pending.ids.delete(id);
      pending.answered.add(id);
      continue;
    }
    if (pending && pending.ids.size) return dangling();
    pending = undefined;
    if (role === "assistant" && Array.isArray(message.tool_calls) && message.tool_calls.length) {
      const ids = new Set<string>();
      for (const call of message.tool_calls) {
        if (isObject(call) && typeof call.id === "string") ids.add(call.id);
      }
      pending = { at: i, ids, answered: new Set() };
    }
  }
  if (pending && pending.ids.size) return dangling();
  return undefined;
}

function anthropicRequired(body: Record<string, unknown>): Answer | undefined {
  for (const field of ["model", "messages", "max_tokens"]) {
    if (body[field] === undefined) {
      return anthropicError(400, "invalid_request_error", `${field}: Field required`);
    }
  }
  if (!Array.isArray(body.messages)) {
    return anthropicError(400, "invalid_request_error", "messages: Input should be a valid list");
  }
  if (typeof body.max_tokens !== "number" || !Number.isInteger(body.max_tokens)) {
    return anthropicError(
      400,
      "invalid_request_error",
      "max_tokens: Input should be a valid integer",
    );
  }
  return undefined;
}

/** Blocks of a message's content (a string is one text block). */
function blocks(content: unknown): Record<string, unknown>[] {
  if (typeof content === "string") return content === "" ? [] : [{ type: "text", text: content }];
  return Array.isArray(content) ? content.filter(isObject) : [];
}

/** Roles, non-empty content, tool_use/tool_result pairs and untouched thinking blocks. */
function anthropicMessages(
  body: Record<string, unknown>,
  signatures: Map<string, Set<string>>,
): Answer | undefined {
  const messages = body.messages as unknown[];
  const invalid = (message: string) => anthropicError(400, "invalid_request_error", message);
  if (messages.length === 0) return invalid("messages: at least one message is required");
  for (const [i, message] of messages.entries()) {
    if (!isObject(message)) return invalid(`messages.${i}: Input should be a valid dictionary`);
    if (message.role !== "user" && message.role !== "assistant") {
      return invalid(`messages.${i}.role: Input should be 'user' or 'assistant'`);
    }
    const last = i === messages.length - 1;
    if (blocks(message.content).length === 0 && !(last && message.role === "assistant")) {
      return invalid(
        `messages.${i}: all messages must have non-empty content except for the optional final assistant message`,
      );
    }
  }
  if ((messages[0] as Record<string, unknown>).role !== "user") {
    return invalid('messages: first message must use the "user" role');
  }
  for (const [i, message] of (messages as Record<string, unknown>[]).entries()) {
    const content = blocks(message.content);
    if (message.role === "assistant") {
      for (const [j, block] of content.entries()) {
        if (block.type !== "thinking") continue;
        const texts = typeof block.signature === "string"
          ? signatures.get(block.signature)
          : undefined;
        if (!texts || typeof block.thinking !== "string" || !texts.has(block.thinking)) {
          return invalid(`messages.${i}.content.${j}: Invalid \`signature\` in \`thinking\` block`);
        }
      }
      const uses = content.filter((block) => block.type === "tool_use").map((block) =>
        String(block.id)
      );
      if (uses.length) {
        const next = messages[i + 1] as Record<string, unknown> | undefined;
        const answered = new Set(
          next?.role === "user"
            ? blocks(next.content).filter((b) => b.type === "tool_result").map((b) =>
              String(b.tool_use_id)
            )
            : [],
        );
        const missing = uses.filter((id) => !answered.has(id));
        if (missing.length) {
          return invalid(
            `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${
              missing.join(", ")
            }. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
          );
        }
      }
    } else {
      const previous = messages[i - 1] as Record<string, unknown> | undefined;
      const uses = new Set(
        previous?.role === "assistant"
          ? blocks(previous.content).filter((b) => b.type === "tool_use").map((b) => String(b.id))
          : [],
      );
      for (const [j, block] of content.entries()) {
        if (block.type === "tool_result" && !uses.has(String(block.tool_use_id))) {
          return invalid(
            `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${block.tool_use_id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`,
          );
        }
      }
    }
  }
  return undefined;
}

// --- small helpers ------------------------------------------------------------

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const ALPHANUMERIC = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

function randomId(length: number, alphabet = ALPHANUMERIC): string {
  const bytes = crypto.getRandomValues(new Uint8Array(length));
  return Array.from(bytes, (byte) => alphabet[byte % alphabet.length]).join("");
}

function randomHex(length: number): string {
  return randomId(length, "0123456789abcdef");
}

function randomRequestId(): string {
  return `req_${randomId(24)}`;
}
