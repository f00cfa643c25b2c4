/**
 * MCP's stdio transport on Deno's files: one JSON-RPC message a line on
 * stdin and stdout. Unlike the SDK's Node transport, it answers a line that
 * is not a message (-32700, -32600) instead of dropping it, bounds a line at
 * 16 MiB like every other wire of Sausage (PROTOCOL 3.1), and reports the end
 * of stdin as the end of the connection.
 *
 * It reads and writes with `read` and `write` of a file rather than through
 * web streams: a call's message crosses a few functions instead of a stream's
 * queues, which is most of what the transport costs a call (`bench/host/mcp.ts`).
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

  constructor(source: ByteSource = Deno.stdin, sink: ByteSink = Deno.stdout) {
    this.#source = source;
    this.#sink = sink;
  }

  start(): Promise<void> {
    if (this.#started) throw new Error("this transport was started already");
    this.#started = true;
    this.#read().catch((e) => this.onerror?.(e as Error)).finally(() => this.close());
    return Promise.resolve();
  }

  send(message: JSONRPCMessage): Promise<void> {
    if (this.#closed) return Promise.resolve();
    const line = encoder.encode(JSON.stringify(message) + "\n");
    const written = this.#writing.then(() => this.#writeAll(line));
    this.#writing = written.catch((e) => this.onerror?.(e as Error));
    return this.#writing;
  }

  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#closed = true;
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
      const n = await this.#source.read(buffer);
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
      // a response is never answered, even a broken one (two peers could loop)
      if (typeof value === "object" && value !== null && ("result" in value || "error" in value)) {
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
    // the SDK's message type has no null id; JSON-RPC gives one to errors without an id
    this.send({ jsonrpc: "2.0", id, error: { code, message } } as unknown as JSONRPCMessage);
  }
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
export function bytePipe(): [ByteSource & ByteSink, ByteSource & ByteSink] {
  const ab = new ByteQueue();
  const ba = new ByteQueue();
  return [
    { read: (buffer) => ba.read(buffer), write: (bytes) => ab.write(bytes) },
    { read: (buffer) => ab.read(buffer), write: (bytes) => ba.write(bytes) },
  ];
}

/** One direction of a {@linkcode bytePipe}. */
class ByteQueue {
  readonly #chunks: Uint8Array[] = [];
  #waiting?: () => void;

  write(bytes: Uint8Array): Promise<number> {
    this.#chunks.push(bytes.slice());
    this.#waiting?.();
    this.#waiting = undefined;
    return Promise.resolve(bytes.length);
  }

  async read(buffer: Uint8Array): Promise<number | null> {
    while (this.#chunks.length === 0) {
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
      Number.isInteger(error.code) && typeof error.message === "string" &&
      Object.keys(error).every((k) => k === "code" || k === "message" || k === "data");
  }
  return false;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isId(id: unknown): boolean {
  return typeof id === "string" || Number.isInteger(id);
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
