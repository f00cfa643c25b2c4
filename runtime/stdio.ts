/**
 * The standard streams of a process inside a plugin worker.
 *
 * - {@linkcode StdinSource}: bytes the host sends, then EOF.
 * - {@linkcode MessageLineSink}: stdout in JSON-RPC mode. Lines are split and
 *   parsed here, in the worker, so the host thread only sees messages.
 * - {@linkcode LogLineSink}: stderr lines for the journal, cut to a maximum
 *   length and rate-limited.
 * - {@linkcode RawSink}: bytes passed through unchanged (`sausage run`).
 *
 * @module
 */
import {
  abortable,
  ByteQueue,
  type ByteSink,
  type ByteSource,
  Signal,
  STREAM_CLOSED,
} from "./wasi/io.ts";
import { LOG_LINES_PER_SECOND, MAX_LOG_LINE_BYTES, MAX_MESSAGE_BYTES } from "./messages.ts";
import { jsonTextTooDeep } from "./json_depth.ts";

/** Stdin of a process: chunks from the host, then EOF. */
export class StdinSource implements ByteSource {
  readonly #queue = new ByteQueue();
  #ended = false;
  readonly #signal = new Signal();
  readonly #kill: AbortSignal | undefined;
  readonly #maxBytes: number;
  readonly #onOverflow: (() => void) | undefined;

  /**
   * `kill` aborts every wait for input (the process was killed). Bytes that
   * would make more than `maxBytes` wait unread are not kept: `onOverflow`
   * is called instead (the process is killed), and the stream ends.
   */
  constructor(kill?: AbortSignal, maxBytes = Infinity, onOverflow?: () => void) {
    this.#kill = kill;
    this.#maxBytes = maxBytes;
    this.#onOverflow = onOverflow;
  }

  /** Bytes the host sent that the process has not read yet. */
  get unread(): number {
    return this.#queue.size;
  }

  /** Adds bytes from the host. */
  push(bytes: Uint8Array): void {
    if (this.#ended || bytes.length === 0) return;
    if (this.#queue.size + bytes.length > this.#maxBytes) {
      this.#queue.clear();
      this.#ended = true;
      this.#signal.notify();
      this.#onOverflow?.();
      return;
    }
    this.#queue.push(bytes);
    this.#signal.notify();
  }

  /** Whether more bytes can come: no EOF yet, and no overflow. */
  get open(): boolean {
    return !this.#ended;
  }

  /** EOF: the host closed stdin (the process should stop). */
  end(): void {
    this.#ended = true;
    this.#signal.notify();
  }

  read(max: number): Uint8Array | null {
    return this.#queue.take(max) ?? (this.#ended ? null : new Uint8Array(0));
  }

  readable(): boolean {
    return this.#ended || !this.#queue.empty;
  }

  whenReadable(): Promise<void> {
    return this.readable() ? Promise.resolve() : abortable(this.#signal.wait(), this.#kill);
  }
}

/** Output sinks accept this much per `check-write`. */
const SINK_WINDOW = 64 * 1024;

/**
 * Splits bytes into lines; a line longer than `max` bytes calls
 * `onOverflow` once and is dropped (the stdout of a process, the lines of
 * the control endpoint).
 *
 * @example
 * ```ts
 * const lines: string[] = [];
 * const splitter = new LineSplitter(1024, (l) => lines.push(new TextDecoder().decode(l)), () => {});
 * splitter.push(new TextEncoder().encode("a\nb"));
 * splitter.finish(); // lines: ["a", "b"]
 * ```
 */
export class LineSplitter {
  #parts: Uint8Array[] = [];
  #length = 0;
  #overflowed = false;
  readonly #max: number;
  readonly #onLine: (line: Uint8Array) => void;
  readonly #onOverflow: () => void;

  constructor(max: number, onLine: (line: Uint8Array) => void, onOverflow: () => void) {
    this.#max = max;
    this.#onLine = onLine;
    this.#onOverflow = onOverflow;
  }

  push(bytes: Uint8Array): void {
    let start = 0;
    for (;;) {
      const nl = bytes.indexOf(0x0a, start);
      if (nl < 0) break;
      this.#append(bytes.subarray(start, nl));
      this.#emit();
      start = nl + 1;
    }
    if (start < bytes.length) this.#append(bytes.subarray(start));
  }

  /** Ends the stream: a last line without a newline still counts. */
  finish(): void {
    if (this.#length > 0 || this.#parts.length > 0) this.#emit();
  }

  #append(bytes: Uint8Array): void {
    if (this.#overflowed || bytes.length === 0) return;
    this.#length += bytes.length;
    if (this.#length > this.#max) {
      this.#overflowed = true;
      this.#parts = [];
      this.#onOverflow();
      return;
    }
    this.#parts.push(bytes.slice());
  }

  #emit(): void {
    const parts = this.#parts;
    const overflowed = this.#overflowed;
    this.#parts = [];
    this.#length = 0;
    this.#overflowed = false;
    if (overflowed) return;
    if (parts.length === 1) this.#onLine(parts[0]);
    else this.#onLine(concat(parts));
  }
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });
const lossyUtf8 = new TextDecoder("utf-8");

/**
 * Classifies one stdout line: a JSON-RPC message (an object with
 * `"jsonrpc": "2.0"`), a batch (an array: answered with -32600), or noise.
 */
export function parseMessageLine(line: Uint8Array): { message: unknown } | null {
  let text: string;
  try {
    text = strictUtf8.decode(line);
  } catch {
    return null; // not UTF-8, so not JSON
  }
  const trimmed = text.trim();
  if (trimmed === "") return null;
  const first = trimmed[0];
  if (first !== "{" && first !== "[") return null;
  // JSON.parse copes, but cloning or formatting a deep value overflows the stack
  if (jsonTextTooDeep(trimmed)) return null;
  let value: unknown;
  try {
    value = JSON.parse(trimmed);
  } catch {
    return null;
  }
  // a batch: an array of JSON-RPC messages (refused with -32600, never run)
  if (Array.isArray(value)) {
    return value.length > 0 && value.every(isRpcObject) ? { message: value } : null;
  }
  return isRpcObject(value) ? { message: value } : null;
}

function isRpcObject(value: unknown): boolean {
  return typeof value === "object" && value !== null && !Array.isArray(value) &&
    (value as { jsonrpc?: unknown }).jsonrpc === "2.0";
}

/** Where a worker's per-process output goes; batched by the worker. */
export interface OutputPort {
  message(message: unknown): void;
  discarded(): void;
  logLine(line: string): void;
  logDropped(count: number): void;
}

/** Stdout in JSON-RPC mode. Empty lines are separators, not noise. */
export class MessageLineSink implements ByteSink {
  readonly #splitter: LineSplitter;
  #closed = false;

  constructor(port: OutputPort, onOverflow: () => void) {
    this.#splitter = new LineSplitter(MAX_MESSAGE_BYTES, (line) => {
      if (isBlank(line)) return;
      const parsed = parseMessageLine(line);
      if (parsed) port.message(parsed.message);
      else port.discarded();
    }, onOverflow);
  }

  capacity(): number {
    return SINK_WINDOW;
  }

  write(bytes: Uint8Array): void {
    if (this.#closed) throw STREAM_CLOSED;
    this.#splitter.push(bytes);
  }

  whenWritable(): Promise<void> {
    return Promise.resolve();
  }

  /** The process ended: a last line without a newline is still read. */
  finish(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#splitter.finish();
  }

  /** The process was killed: nothing more is read. */
  abandon(): void {
    this.#closed = true;
  }
}

function isBlank(line: Uint8Array): boolean {
  for (const b of line) if (b !== 0x20 && b !== 0x09 && b !== 0x0d) return false;
  return true;
}

/** Stderr: one journal line per line, cut and rate-limited. */
export class LogLineSink implements ByteSink {
  readonly #port: OutputPort;
  #tokens = LOG_LINES_PER_SECOND * 2;
  #refilledAt = performance.now();
  #dropped = 0;
  #closed = false;
  #partial: Uint8Array[] = [];
  #partialLength = 0;
  #cut = 0;

  constructor(port: OutputPort) {
    this.#port = port;
  }

  capacity(): number {
    return SINK_WINDOW;
  }

  write(bytes: Uint8Array): void {
    if (this.#closed) throw STREAM_CLOSED;
    let start = 0;
    for (;;) {
      const nl = bytes.indexOf(0x0a, start);
      if (nl < 0) break;
      this.#append(bytes.subarray(start, nl));
      this.#line();
      start = nl + 1;
    }
    if (start < bytes.length) this.#append(bytes.subarray(start));
  }

  whenWritable(): Promise<void> {
    return Promise.resolve();
  }

  finish(): void {
    if (this.#closed) return;
    if (this.#partialLength > 0 || this.#cut > 0) this.#line();
    this.#closed = true;
    this.#reportDropped();
  }

  abandon(): void {
    this.#closed = true;
    this.#reportDropped();
  }

  #append(bytes: Uint8Array): void {
    const room = MAX_LOG_LINE_BYTES - this.#partialLength;
    if (bytes.length > room) {
      this.#cut += bytes.length - Math.max(room, 0);
      bytes = bytes.subarray(0, Math.max(room, 0));
    }
    if (bytes.length === 0) return;
    this.#partial.push(bytes.slice());
    this.#partialLength += bytes.length;
  }

  #line(): void {
    let text = lossyUtf8.decode(concat(this.#partial));
    if (text.endsWith("\r")) text = text.slice(0, -1);
    if (this.#cut > 0) text += ` … (${this.#cut} more bytes cut)`;
    this.#partial = [];
    this.#partialLength = 0;
    this.#cut = 0;
    if (!this.#take()) {
      this.#dropped++;
      return;
    }
    this.#reportDropped();
    this.#port.logLine(text);
  }

  #take(): boolean {
    const now = performance.now();
    const refill = ((now - this.#refilledAt) / 1000) * LOG_LINES_PER_SECOND;
    this.#tokens = Math.min(LOG_LINES_PER_SECOND * 2, this.#tokens + refill);
    this.#refilledAt = now;
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }

  #reportDropped(): void {
    if (this.#dropped === 0) return;
    this.#port.logDropped(this.#dropped);
    this.#dropped = 0;
  }
}

/** Bytes passed through unchanged. */
export class RawSink implements ByteSink {
  readonly #send: (bytes: Uint8Array) => void;
  #closed = false;

  constructor(send: (bytes: Uint8Array) => void) {
    this.#send = send;
  }

  capacity(): number {
    return SINK_WINDOW;
  }

  write(bytes: Uint8Array): void {
    if (this.#closed) throw STREAM_CLOSED;
    this.#send(bytes.slice());
  }

  whenWritable(): Promise<void> {
    return Promise.resolve();
  }

  finish(): void {
    this.#closed = true;
  }

  abandon(): void {
    this.#closed = true;
  }
}
