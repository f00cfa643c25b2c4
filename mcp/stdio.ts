/**
 * MCP's stdio transport on Deno's files: one JSON-RPC message a line on
 * stdin and stdout. Unlike the SDK's Node transport, it answers a line that
 * is not a message (-32700, -32600) instead of dropping it, bounds a line at
 * 16 MiB like every other wire of Sausage (PROTOCOL 3.1), and reports the end
 * of stdin as the end of the connection.
 *
 * It works on sources and sinks of bytes (`read` and `write`, as of a file)
 * rather than pipes of web streams: a call's message crosses a few functions
 * instead of a stream's queues, which is most of what an in-process
 * transport costs a call (`bench/host/mcp.ts`). Stdin is still read through
 * its stream, whose reads can be cancelled; stdout is written with `write`.
 *
 * @module
 */
// @ts-types="@modelcontextprotocol/sdk/shared/transport"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import { type JSONRPCMessage, JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js";

/** The longest line read. */
export const MAX_LINE_BYTES = 16 * 1024 * 1024;

/** What the transport reads from: `Deno.stdin`, or one end of a {@linkcode bytePipe}. */
export interface ByteSource {
  /** Reads into `buffer`; the count read, or null at the end. */
  read(buffer: Uint8Array): Promise<number | null>;
  /** Stops reading: a read that waits ends (with null, or an error). */
  close?(): void;
}

/** What the transport writes to: `Deno.stdout`, or one end of a {@linkcode bytePipe}. */
export interface ByteSink {
  /** Writes some of `bytes`; the count written. */
  write(bytes: Uint8Array): Promise<number>;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const READ_BUFFER_BYTES = 64 * 1024;

/**
 * A transport over a source and a sink of bytes (stdin and stdout by default).
 *
 * @example
 * ```ts
 * import type { HostView } from "../core/host_view.ts";
 * import { createMcpServer } from "./server.ts";
 * declare const view: HostView;
 * const server = createMcpServer(view);
 * await server.connect(new StdioTransport());
 * ```
 */
export class StdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  readonly #source: ByteSource;
  readonly #sink: ByteSink;
  /** The writes in order: a line is written whole before the next one starts. */
  #writing: Promise<void> = Promise.resolve();
  #started = false;
  #closed = false;

  constructor(
    source: ByteSource = streamSource(Deno.stdin.readable),
    sink: ByteSink = Deno.stdout,
  ) {
    this.#source = source;
    this.#sink = sink;
  }

  start(): Promise<void> {
    if (this.#started) throw new Error("this transport was started already");
    this.#started = true;
    this.#read().catch((e) => this.onerror?.(e as Error)).finally(() => this.close());
    return Promise.resolve();
  }

  /** Writes one line; rejects when it cannot be written (the connection is then closed). */
  send(message: JSONRPCMessage): Promise<void> {
    if (this.#closed) return Promise.reject(new Error("the stdio transport is closed"));
    const line = encoder.encode(JSON.stringify(message) + "\n");
    const written = this.#writing.then(() => this.#writeAll(line));
    // the next line waits for this one, written or not
    this.#writing = written.catch(() => {});
    return written.catch((e) => {
      // a writer that is gone (stdout closed) ends the connection: a request would never be answered
      this.onerror?.(e as Error);
      this.close();
      throw e;
    });
  }

  /**
   * Stops reading and writing; `onclose` is called once. The source is
   * closed: that ends a read that waits, which would otherwise keep the
   * process alive.
   */
  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
    try {
      this.#source.close?.();
    } catch {
      // closed already
    }
    this.onclose?.();
    return Promise.resolve();
  }

  async #writeAll(bytes: Uint8Array): Promise<void> {
    let at = 0;
    while (at < bytes.length) at += await this.#sink.write(at === 0 ? bytes : bytes.subarray(at));
  }

  async #read(): Promise<void> {
    const buffer = new Uint8Array(READ_BUFFER_BYTES);
    let chunks: Uint8Array[] = [];
    let size = 0;
    let skipping = false; // inside a line that is too long
    for (;;) {
      let n: number | null;
      try {
        n = await this.#source.read(buffer);
      } catch (e) {
        if (this.#closed) return; // the read that close() ended
        throw e;
      }
      if (n === null || this.#closed) return;
      const value = buffer.subarray(0, n);
      let at = 0;
      while (at < value.length) {
        const nl = value.indexOf(10, at);
        const end = nl < 0 ? value.length : nl;
        if (!skipping) {
          // the buffer is read into again: a part of a line that waits for its end is copied
          chunks.push(nl < 0 ? value.slice(at, end) : value.subarray(at, end));
          size += end - at;
          if (size > MAX_LINE_BYTES) {
            skipping = true;
            chunks = [];
            size = 0;
          }
        }
        if (nl < 0) break;
        if (skipping) {
          skipping = false;
          this.#refuse(null, -32600, "a message is at most 16 MiB; this line was longer");
        } else {
          this.#line(concat(chunks, size));
        }
        if (this.#closed) return; // a message's handler closed the transport
        chunks = [];
        size = 0;
        at = nl + 1;
      }
    }
  }

  #line(bytes: Uint8Array): void {
    const text = decoder.decode(bytes).replace(/\r$/, "");
    if (text.trim() === "") return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (e) {
      this.#refuse(null, -32700, `not JSON: ${(e as Error).message}`);
      return;
    }
    if (Array.isArray(value)) {
      this.#refuse(null, -32600, "batches are not supported: send one message a line");
      return;
    }
    if (!plainMessage(value) && !JSONRPCMessageSchema.safeParse(value).success) {
      const id = (value as { id?: unknown })?.id;
      const usable = typeof id === "string" || typeof id === "number" ? id : null;
      // a response is never answered, even a broken one (two peers could loop); it is reported
      if (typeof value === "object" && value !== null && ("result" in value || "error" in value)) {
        this.onerror?.(new Error(`a response that is not JSON-RPC 2.0 was dropped: ${clip(text)}`));
        return;
      }
      this.#refuse(
        usable,
        -32600,
        'not a JSON-RPC 2.0 message: it needs "jsonrpc": "2.0" and a method, or a result or ' +
          "an error with an id",
      );
      return;
    }
    this.onmessage?.(value as JSONRPCMessage);
  }

  #refuse(id: string | number | null, code: number, message: string): void {
    // MCP's error without a known id leaves the id out (JSON-RPC 2.0 would send null, which MCP's
    // schema, and so the SDK's client, refuses)
    const error = { jsonrpc: "2.0", ...(id === null ? {} : { id }), error: { code, message } };
    this.send(error as JSONRPCMessage).catch(() => {}); // reported by send
  }
}

/**
 * A source on a readable stream, whose close cancels a read that waits.
 * Stdin is read this way: `Deno.stdin.read` cannot be cancelled, and one
 * that waits keeps the process alive after the transport closed.
 */
export function streamSource(readable: ReadableStream<Uint8Array>): ByteSource {
  const reader = readable.getReader();
  let rest: Uint8Array = new Uint8Array(0);
  return {
    async read(buffer) {
      if (rest.length === 0) {
        const { value, done } = await reader.read();
        if (done) return null;
        rest = value;
      }
      const n = Math.min(rest.length, buffer.length);
      buffer.set(rest.subarray(0, n));
      rest = rest.subarray(n);
      return n;
    },
    close() {
      reader.cancel().catch(() => {});
    },
  };
}

/**
 * Two connected ends in memory: what one writes, the other reads. For a
 * client and a server in one process (the benchmark, tests).
 *
 * @example
 * ```ts
 * const [a, b] = bytePipe();
 * await a.write(new TextEncoder().encode("hi\n"));
 * const buffer = new Uint8Array(16);
 * const n = await b.read(buffer); // 3
 * ```
 */
export function bytePipe(): [PipeEnd, PipeEnd] {
  const ab = new ByteQueue();
  const ba = new ByteQueue();
  const end = (from: ByteQueue, to: ByteQueue): PipeEnd => ({
    read: (buffer) => from.read(buffer),
    write: (bytes) => to.write(bytes),
    close: () => {
      from.end();
      to.end();
    },
  });
  return [end(ba, ab), end(ab, ba)];
}

/** One end of a {@linkcode bytePipe}; its `close` ends both directions, as a socket's does. */
export interface PipeEnd extends ByteSource, ByteSink {
  close(): void;
}

/** One direction of a {@linkcode bytePipe}. */
class ByteQueue {
  readonly #chunks: Uint8Array[] = [];
  #waiting?: () => void;
  #ended = false;

  write(bytes: Uint8Array): Promise<number> {
    if (this.#ended) return Promise.reject(new Error("the other end of the pipe is closed"));
    this.#chunks.push(bytes.slice());
    this.#wake();
    return Promise.resolve(bytes.length);
  }

  /** The end: reads give null once what was written is read, writes fail. */
  end(): void {
    this.#ended = true;
    this.#wake();
  }

  #wake(): void {
    this.#waiting?.();
    this.#waiting = undefined;
  }

  async read(buffer: Uint8Array): Promise<number | null> {
    while (this.#chunks.length === 0) {
      if (this.#ended) return null;
      await new Promise<void>((resolve) => this.#waiting = resolve);
    }
    const chunk = this.#chunks[0];
    const n = Math.min(chunk.length, buffer.length);
    buffer.set(chunk.subarray(0, n));
    if (n === chunk.length) this.#chunks.shift();
    else this.#chunks[0] = chunk.subarray(n);
    return n;
  }
}

/**
 * True for a message in the plainest form of each kind, which
 * `JSONRPCMessageSchema` accepts: checked by hand, so that a call's messages
 * skip the schema's union (the SDK checks each kind again). Anything else
 * (a `_meta`, a field too many) goes to the schema for its verdict.
 */
function plainMessage(value: unknown): boolean {
  if (!isObject(value) || value.jsonrpc !== "2.0") return false;
  const keys = Object.keys(value);
  if (typeof value.method === "string") {
    const request = "id" in value;
    if (request && !isId(value.id)) return false;
    if (!keys.every((k) => k === "jsonrpc" || k === "method" || k === "params" || k === "id")) {
      return false;
    }
    return value.params === undefined && !("params" in value) ||
      isObject(value.params) && !("_meta" in value.params);
  }
  if ("result" in value) {
    return keys.length === 3 && isId(value.id) && isObject(value.result) &&
      !("_meta" in value.result);
  }
  if ("error" in value) {
    const error = value.error;
    return keys.every((k) => k === "jsonrpc" || k === "id" || k === "error") &&
      (!("id" in value) || isId(value.id)) && isObject(error) &&
      Number.isSafeInteger(error.code) && typeof error.message === "string" &&
      Object.keys(error).every((k) => k === "code" || k === "message" || k === "data");
  }
  return false;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The SDK's ids and codes are zod's `int()`: safe integers only (a larger one is not exact). */
function isId(id: unknown): boolean {
  return typeof id === "string" || Number.isSafeInteger(id);
}

/** A line cut for an error message. */
function clip(text: string): string {
  return text.length > 200 ? `${text.slice(0, 200)}… (${text.length} characters)` : text;
}

function concat(chunks: Uint8Array[], size: number): Uint8Array {
  if (chunks.length === 1) return chunks[0];
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}
