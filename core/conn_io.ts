/**
 * Reads and writes of a socket of the control endpoint with Deno's own
 * `read` and `write`, not its web streams: each stream step costs
 * promises and a turn of the event loop, which a call through the endpoint
 * pays twice each way (`deno task bench --only control`).
 *
 * @module
 */

/** The most bytes one read takes. */
const READ_BYTES = 64 * 1024;

/**
 * The first read's buffer: a connection that sends little (or nothing, in a
 * flood of them) holds 4 KiB, not 64; each read that fills it doubles it.
 */
const FIRST_READ_BYTES = 4 * 1024;

/**
 * Calls `onChunk` with each chunk read from `conn` until its end (or an
 * error, which ends it too). The chunk is the reader's own: copy it to keep it.
 *
 * @example
 * ```ts
 * declare const conn: Deno.Conn;
 * await readChunks(conn, (chunk) => console.log(chunk.length));
 * ```
 */
export async function readChunks(
  conn: Deno.Conn,
  onChunk: (chunk: Uint8Array) => void,
): Promise<void> {
  let buffer = new Uint8Array(FIRST_READ_BYTES);
  try {
    while (true) {
      const n = await conn.read(buffer);
      if (n === null) return;
      onChunk(buffer.subarray(0, n));
      if (n === buffer.length && buffer.length < READ_BYTES) {
        buffer = new Uint8Array(buffer.length * 2);
      }
    }
  } catch {
    // the other side went away: the end is what follows
  }
}

/**
 * Writes to `conn` in order, whole (a write may take only part of the
 * bytes), one write at a time.
 *
 * @example
 * ```ts
 * declare const conn: Deno.Conn;
 * const writer = new ConnWriter(conn);
 * await writer.write(new TextEncoder().encode("hello\n"));
 * ```
 */
export class ConnWriter {
  readonly #conn: Deno.Conn;
  #queue: Promise<void> = Promise.resolve();
  #failed = false;

  constructor(conn: Deno.Conn) {
    this.#conn = conn;
  }

  /** Resolves once `bytes` were written; rejects when the connection cannot be written. */
  write(bytes: Uint8Array): Promise<void> {
    const done = this.#queue.then(async () => {
      if (this.#failed) throw new Deno.errors.BrokenPipe("the connection is closed");
      let at = 0;
      try {
        while (at < bytes.length) at += await this.#conn.write(bytes.subarray(at));
      } catch (e) {
        this.#failed = true;
        throw e;
      }
    });
    this.#queue = done.catch(() => {});
    return done;
  }

  /** Resolves when what was queued was written (or failed). */
  flushed(): Promise<void> {
    return this.#queue;
  }
}
