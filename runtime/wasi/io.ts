/**
 * `wasi:io` 0.2: errors, pollables and byte streams.
 *
 * Streams are thin adapters over two small interfaces, {@linkcode ByteSource}
 * and {@linkcode ByteSink}, so that stdin, stdout, files and sockets share one
 * implementation of the WASI stream rules (non-blocking reads that may return
 * nothing, `check-write` budgets, `closed` as an error value).
 *
 * Functions that may wait (`blocking-*`, `poll`, `pollable.block`) return
 * promises; jco suspends the guest on them through JSPI.
 *
 * @module
 */

/** `wasi:io/error.error`: an opaque error with a debug string. */
export class IoError {
  readonly #message: string;
  constructor(message: string) {
    this.#message = message;
  }
  /** The message, for logs only: WASI gives it no meaning. */
  toDebugString(): string {
    return this.#message;
  }
}

/** `wasi:io/streams.stream-error`, thrown as a value. */
export type StreamError =
  | { tag: "last-operation-failed"; val: IoError }
  | { tag: "closed" };

/** The `closed` stream error. */
export const STREAM_CLOSED: StreamError = Object.freeze({ tag: "closed" }) as StreamError;

/** Makes a `last-operation-failed` stream error. */
export function streamFailure(message: string): StreamError {
  return { tag: "last-operation-failed", val: new IoError(message) };
}

/** `wasi:io/poll.pollable`: something that becomes ready once. */
export class Pollable {
  readonly #isReady: () => boolean;
  readonly #whenReady: () => Promise<void>;

  constructor(isReady: () => boolean, whenReady: () => Promise<void>) {
    this.#isReady = isReady;
    this.#whenReady = whenReady;
  }

  /** A pollable that is always ready. */
  static ready(): Pollable {
    return new Pollable(() => true, () => Promise.resolve());
  }

  /** Whether the event has happened. */
  ready(): boolean {
    return this.#isReady();
  }

  /** Waits until {@linkcode ready} is true. */
  async block(): Promise<void> {
    while (!this.#isReady()) await this.#whenReady();
  }

  /** A promise that settles when the pollable may have become ready. */
  whenReady(): Promise<void> {
    return this.#isReady() ? Promise.resolve() : this.#whenReady();
  }
}

/** `wasi:io/poll.poll`: waits until at least one pollable is ready. */
export async function poll(pollables: Pollable[]): Promise<Uint32Array> {
  if (pollables.length === 0) throw new Error("wasi:io/poll.poll: the list must not be empty");
  for (;;) {
    const ready: number[] = [];
    pollables.forEach((p, i) => {
      if (p.ready()) ready.push(i);
    });
    if (ready.length > 0) return new Uint32Array(ready);
    await Promise.race(pollables.map((p) => p.whenReady()));
  }
}

/** Where an input stream's bytes come from. */
export interface ByteSource {
  /**
   * Takes up to `max` bytes that are available now. Returns an empty array
   * when nothing is available yet, and `null` at the end of the stream.
   * Throws a {@linkcode StreamError} when the source failed.
   */
  read(max: number): Uint8Array | null;
  /** Settles when {@linkcode read} may return something new. */
  whenReadable(): Promise<void>;
  /** Whether a read would return data, the end or an error without waiting. */
  readable(): boolean;
  /** Called when the guest drops its last handle to the stream. */
  close?(): void;
}

/** Where an output stream's bytes go. */
export interface ByteSink {
  /** How many bytes may be written now (0: wait for {@linkcode whenWritable}). */
  capacity(): number;
  /** Takes the bytes. Throws a {@linkcode StreamError} on failure. */
  write(bytes: Uint8Array): void;
  /** Settles when the capacity may have grown. */
  whenWritable(): Promise<void>;
  /** Makes written bytes visible (a no-op for most sinks). */
  flush?(): void;
  /** Called when the guest drops its last handle to the stream. */
  close?(): void;
}

/** Largest single read we hand to a guest, whatever it asks for. */
const MAX_READ = 1 << 20;
/** `blocking-write-and-flush` may write at most this much (WASI: 4096). */
const MAX_BLOCKING_WRITE = 4096;

function clampLength(len: bigint): number {
  return len > BigInt(MAX_READ) ? MAX_READ : Number(len);
}

/** `wasi:io/streams.input-stream`. */
export class InputStream {
  readonly #source: ByteSource;

  constructor(source: ByteSource) {
    this.#source = source;
  }

  /** Non-blocking read: may return an empty list. */
  read(len: bigint): Uint8Array {
    if (len === 0n) return new Uint8Array(0);
    const bytes = this.#source.read(clampLength(len));
    if (bytes === null) throw STREAM_CLOSED;
    return bytes;
  }

  /** Reads at least one byte, waiting when none is available. */
  async blockingRead(len: bigint): Promise<Uint8Array> {
    if (len === 0n) return new Uint8Array(0);
    const max = clampLength(len);
    for (;;) {
      const bytes = this.#source.read(max);
      if (bytes === null) throw STREAM_CLOSED;
      if (bytes.length > 0) return bytes;
      await this.#source.whenReadable();
    }
  }

  /** Like {@linkcode read}, but drops the bytes. */
  skip(len: bigint): bigint {
    return BigInt(this.read(len).length);
  }

  /** Like {@linkcode blockingRead}, but drops the bytes. */
  async blockingSkip(len: bigint): Promise<bigint> {
    return BigInt((await this.blockingRead(len)).length);
  }

  /** Ready when a read would not return an empty list. */
  subscribe(): Pollable {
    return new Pollable(() => this.#source.readable(), () => this.#source.whenReadable());
  }

  [Symbol.dispose](): void {
    this.#source.close?.();
  }
}

/** `wasi:io/streams.output-stream`. */
export class OutputStream {
  readonly #sink: ByteSink;

  constructor(sink: ByteSink) {
    this.#sink = sink;
  }

  /** How many bytes {@linkcode write} accepts now. */
  checkWrite(): bigint {
    return BigInt(this.#sink.capacity());
  }

  /** Writes bytes; the guest must have checked the budget first. */
  write(contents: Uint8Array): void {
    if (contents.length > this.#sink.capacity()) {
      throw streamFailure("write exceeds the permitted budget (call check-write first)");
    }
    this.#sink.write(contents.slice());
  }

  /** Writes up to 4096 bytes, waiting for capacity as needed. */
  async blockingWriteAndFlush(contents: Uint8Array): Promise<void> {
    if (contents.length > MAX_BLOCKING_WRITE) {
      throw streamFailure("blocking-write-and-flush takes at most 4096 bytes");
    }
    let rest = contents.slice();
    while (rest.length > 0) {
      let room = this.#sink.capacity();
      while (room === 0) {
        await this.#sink.whenWritable();
        room = this.#sink.capacity();
      }
      const n = Math.min(room, rest.length);
      this.#sink.write(rest.subarray(0, n));
      rest = rest.subarray(n);
    }
    this.#sink.flush?.();
  }

  /** Starts a flush; our sinks flush at once. */
  flush(): void {
    this.#sink.flush?.();
  }

  /** Flushes and waits until written bytes are accepted. */
  async blockingFlush(): Promise<void> {
    this.#sink.flush?.();
    while (this.#sink.capacity() === 0) await this.#sink.whenWritable();
  }

  /** Ready when {@linkcode checkWrite} is above zero. */
  subscribe(): Pollable {
    return new Pollable(() => this.#sink.capacity() > 0, () => this.#sink.whenWritable());
  }

  /** Writes `len` zero bytes within the budget. */
  writeZeroes(len: bigint): void {
    this.write(new Uint8Array(Number(len)));
  }

  /** Writes up to 4096 zero bytes, waiting for capacity. */
  blockingWriteZeroesAndFlush(len: bigint): Promise<void> {
    return this.blockingWriteAndFlush(new Uint8Array(Number(len)));
  }

  /** Moves what is available from `src`, within the budget. */
  splice(src: InputStream, len: bigint): bigint {
    const room = BigInt(this.#sink.capacity());
    const bytes = src.read(len < room ? len : room);
    if (bytes.length > 0) this.#sink.write(bytes);
    return BigInt(bytes.length);
  }

  /** Moves at least one byte from `src`, waiting as needed. */
  async blockingSplice(src: InputStream, len: bigint): Promise<bigint> {
    while (this.#sink.capacity() === 0) await this.#sink.whenWritable();
    const room = BigInt(this.#sink.capacity());
    const bytes = await src.blockingRead(len < room ? len : room);
    this.#sink.write(bytes);
    return BigInt(bytes.length);
  }

  [Symbol.dispose](): void {
    this.#sink.close?.();
  }
}

/**
 * `promise`, until `signal` aborts: then a promise that never settles.
 *
 * Every wait of a process goes through this with the process's kill signal.
 * A killed guest cannot always be unwound (jco swallows the error of an
 * async import that has no `result` type), so it is abandoned instead: its
 * suspended stack never resumes and is garbage once nothing refers to it.
 */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  if (signal.aborted) return new Promise<T>(() => {});
  return new Promise<T>((resolve, reject) => {
    promise.then(
      (v) => signal.aborted || resolve(v),
      (e) => signal.aborted || reject(e),
    );
  });
}

/** Bytes waiting to be read, in the chunks they came in; reads take from the front. */
export class ByteQueue {
  #chunks: Uint8Array[] = [];
  #size = 0;

  /** The bytes waiting. */
  get size(): number {
    return this.#size;
  }

  /** Whether nothing waits. */
  get empty(): boolean {
    return this.#chunks.length === 0;
  }

  push(bytes: Uint8Array): void {
    this.#chunks.push(bytes);
    this.#size += bytes.length;
  }

  /** At most `max` bytes from the front, or null when nothing waits. */
  take(max: number): Uint8Array | null {
    const first = this.#chunks[0];
    if (first === undefined) return null;
    let out = first;
    if (first.length <= max) this.#chunks.shift();
    else {
      out = first.subarray(0, max);
      this.#chunks[0] = first.subarray(max);
    }
    this.#size -= out.length;
    return out;
  }

  clear(): void {
    this.#chunks = [];
    this.#size = 0;
  }
}

/**
 * The wake-up side of a source or sink: every waiter shares one promise,
 * settled at the next {@linkcode notify}.
 *
 * The promise also settles by itself after a second. A guest that polls an
 * idle stream with a timer again and again would otherwise pile up a
 * reaction on it per poll, forever; a spurious wake-up is allowed (a poller
 * checks readiness again), a growing heap is not.
 */
export class Signal {
  #pending:
    | { promise: Promise<void>; resolve: () => void; timer: ReturnType<typeof setTimeout> }
    | null = null;

  /** A promise that settles at the next {@linkcode notify} (or within a second). */
  wait(): Promise<void> {
    if (!this.#pending) {
      const { promise, resolve } = Promise.withResolvers<void>();
      const timer = setTimeout(() => this.notify(), REFRESH_MS);
      Deno.unrefTimer(timer);
      this.#pending = { promise, resolve, timer };
    }
    return this.#pending.promise;
  }

  /** Wakes every waiter. */
  notify(): void {
    const pending = this.#pending;
    if (!pending) return;
    this.#pending = null;
    clearTimeout(pending.timer);
    pending.resolve();
  }
}

/** A wait with nothing to wake it still settles this often (see {@linkcode Signal}). */
const REFRESH_MS = 1000;

/** The `wasi:io` interfaces, as jco expects them. */
export function ioImports(): Record<string, Record<string, unknown>> {
  return {
    "wasi:io/error": { Error: IoError },
    "wasi:io/poll": { Pollable, poll },
    "wasi:io/streams": { InputStream, OutputStream },
  };
}
