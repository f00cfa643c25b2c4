/**
 * MCP's stdio transport on Deno's streams: one JSON-RPC message a line on
 * stdin and stdout. Unlike the SDK's Node transport, it answers a line that
 * is not a message (-32700, -32600) instead of dropping it, bounds a line at
 * 16 MiB like every other wire of Sausage (PROTOCOL 3.1), and reports the end
 * of stdin as the end of the connection.
 *
 * @module
 */
// @ts-types="@modelcontextprotocol/sdk/shared/transport"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import { type JSONRPCMessage, JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js";

/** The longest line read. */
export const MAX_LINE_BYTES = 16 * 1024 * 1024;

const encoder = new TextEncoder();

/**
 * A transport over a readable and a writable byte stream (stdin and stdout
 * by default).
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
  readonly #readable: ReadableStream<Uint8Array>;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  #reader?: ReadableStreamDefaultReader<Uint8Array>;
  #closed = false;

  constructor(
    readable: ReadableStream<Uint8Array> = Deno.stdin.readable,
    writable: WritableStream<Uint8Array> = Deno.stdout.writable,
  ) {
    this.#readable = readable;
    this.#writer = writable.getWriter();
  }

  start(): Promise<void> {
    this.#reader = this.#readable.getReader();
    this.#read().catch((e) => this.onerror?.(e as Error)).finally(() => this.close());
    return Promise.resolve();
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.#closed) return;
    // writes are queued by the writer, so lines never interleave
    await this.#writer.write(encoder.encode(JSON.stringify(message) + "\n")).catch((e) => {
      this.onerror?.(e as Error);
    });
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#reader?.cancel().catch(() => {});
    this.onclose?.();
  }

  async #read(): Promise<void> {
    const reader = this.#reader!;
    let chunks: Uint8Array[] = [];
    let size = 0;
    let skipping = false; // inside a line that is too long
    for (;;) {
      const { value, done } = await reader.read();
      if (done || this.#closed) return;
      let at = 0;
      while (at < value.length) {
        const nl = value.indexOf(10, at);
        const end = nl < 0 ? value.length : nl;
        if (!skipping) {
          chunks.push(value.subarray(at, end));
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
    const text = new TextDecoder().decode(bytes).replace(/\r$/, "");
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
    const parsed = JSONRPCMessageSchema.safeParse(value);
    if (!parsed.success) {
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
    this.onmessage?.(parsed.data);
  }

  #refuse(id: string | number | null, code: number, message: string): void {
    // the SDK's message type has no null id; JSON-RPC gives one to errors without an id
    this.send({ jsonrpc: "2.0", id, error: { code, message } } as unknown as JSONRPCMessage);
  }
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
