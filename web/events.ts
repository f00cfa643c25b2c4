/**
 * The page's live feed as server-sent events: `processes` (the whole list
 * each time it changes), `entry` (each journal entry as it is made) and
 * `graph` (the plugins changed: fetch `/graph` again). One journal follow,
 * one process poll and one plugin watch serve every open stream, and run
 * only while a stream is open, so each idle page costs a few bytes.
 *
 * @module
 */
import { type HostView, type PluginWatch, watchPlugins } from "../core/host_view.ts";
import { errorResponse } from "./http.ts";

/** The most event streams open at once; one more gets 503. */
export const MAX_EVENT_STREAMS = 64;

/** Bytes queued for a slow reader past which its entries are dropped (and counted). */
const MAX_QUEUED_BYTES = 4 * 1024 * 1024;

/** How often the process list is compared, in milliseconds. */
const PROCESS_POLL_MS = 200;

/** The shortest time between two writes of entries to a stream. */
const ENTRY_WINDOW_MS = 16;

/** A comment that keeps proxies from closing an idle stream. */
const KEEPALIVE_MS = 15_000;

/** A journal entry, as the view gives it. */
type Entry = Parameters<Parameters<HostView["follow"]>[0]>[0];

interface Stream {
  controller: ReadableStreamDefaultController<Uint8Array>;
  /** Entries left out since the reader fell behind. */
  dropped: number;
}

/** The event streams of one server. */
export class EventHub {
  readonly #view: HostView;
  readonly #streams = new Set<Stream>();
  readonly #encoder = new TextEncoder();
  readonly #max: number;
  #follow: Promise<{ close(): void }> | undefined;
  #watch: PluginWatch | undefined;
  #poll: ReturnType<typeof setTimeout> | undefined;
  #keepalive: ReturnType<typeof setInterval> | undefined;
  #processes = "";
  #pending: Uint8Array[] = [];
  #lastFlush = -Infinity;
  #flushTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(view: HostView, options: { max?: number } = {}) {
    this.#view = view;
    this.#max = options.max ?? MAX_EVENT_STREAMS;
  }

  /** The number of open streams. */
  get size(): number {
    return this.#streams.size;
  }

  /** An event stream, or 503 when {@linkcode MAX_EVENT_STREAMS} are open. */
  open(): Response {
    if (this.#streams.size >= this.#max) {
      return errorResponse(
        503,
        `${this.#max} event streams are open, the most this server keeps: close a tab of the page`,
        { "retry-after": "5" },
      );
    }
    let stream: Stream;
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        stream = { controller, dropped: 0 };
        this.#streams.add(stream);
        this.#start();
        // the list now, so a new page need not wait for a change
        this.#view.processes().then((list) => this.#send(stream, "processes", list), () => {});
      },
      cancel: () => this.#remove(stream),
    }, new ByteLengthQueuingStrategy({ highWaterMark: 64 * 1024 }));
    return new Response(body, {
      headers: {
        "content-type": "text/event-stream; charset=utf-8",
        "cache-control": "no-store",
        "x-content-type-options": "nosniff",
      },
    });
  }

  /** Ends every stream and stops watching the host. */
  close(): void {
    for (const s of [...this.#streams]) {
      try {
        s.controller.close();
      } catch { /* already closed */ }
      this.#remove(s);
    }
  }

  #remove(stream: Stream | undefined): void {
    if (!stream || !this.#streams.delete(stream)) return;
    if (this.#streams.size === 0) this.#stop();
  }

  #send(stream: Stream, event: string, data: unknown): void {
    this.#write(stream, this.#encode(event, data), event === "entry" ? 1 : 0);
  }

  #encode(event: string, data: unknown): Uint8Array {
    return this.#encoder.encode(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  }

  /** Writes `bytes`, which hold `entries` journal entries (dropped when the reader is far behind). */
  #write(stream: Stream, bytes: Uint8Array, entries: number): void {
    if (!this.#streams.has(stream)) return;
    const c = stream.controller;
    if (entries > 0 && (c.desiredSize ?? 0) < -MAX_QUEUED_BYTES) {
      stream.dropped += entries; // a reader this far behind loses entries, never the host's memory
      return;
    }
    try {
      if (stream.dropped > 0) {
        c.enqueue(this.#encoder.encode(`event: gap\ndata: ${stream.dropped}\n\n`));
        stream.dropped = 0;
      }
      c.enqueue(bytes);
    } catch {
      this.#remove(stream); // the reader went away
    }
  }

  /** Encoded once, whatever the number of streams. */
  #broadcast(event: string, data: unknown): void {
    const bytes = this.#encode(event, data);
    for (const s of [...this.#streams]) this.#write(s, bytes, 0);
  }

  /**
   * An entry alone goes out at once; entries that follow within
   * {@linkcode ENTRY_WINDOW_MS} of a write wait for the window's end and go
   * together, one write to each stream, so a busy host writes to each page
   * at most about 60 times a second.
   */
  #entry(entry: Entry): void {
    this.#pending.push(this.#encode("entry", entry));
    if (this.#pending.length > 1) return;
    const wait = this.#lastFlush + ENTRY_WINDOW_MS - performance.now();
    const flush = () => {
      this.#lastFlush = performance.now();
      const parts = this.#pending;
      this.#pending = [];
      const bytes = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
      let at = 0;
      for (const p of parts) {
        bytes.set(p, at);
        at += p.byteLength;
      }
      for (const s of [...this.#streams]) this.#write(s, bytes, parts.length);
    };
    if (wait <= 0) queueMicrotask(flush); // the entries of this synchronous run go with it
    else this.#flushTimer = setTimeout(flush, wait);
  }

  #start(): void {
    if (this.#follow) return;
    this.#follow = this.#view.follow((entry) => this.#entry(entry));
    this.#watch = watchPlugins(this.#view, () => this.#broadcast("graph", {}));
    this.#processes = "";
    const poll = async () => {
      try {
        const list = await this.#view.processes();
        const text = JSON.stringify(list);
        if (text !== this.#processes) {
          const first = this.#processes === "";
          this.#processes = text;
          if (!first) this.#broadcast("processes", list);
        }
      } catch { /* a host that went away ends the server */ }
      if (this.#follow) this.#poll = setTimeout(poll, PROCESS_POLL_MS);
    };
    poll();
    this.#keepalive = setInterval(() => {
      for (const s of [...this.#streams]) {
        try {
          s.controller.enqueue(this.#encoder.encode(": keepalive\n\n"));
        } catch {
          this.#remove(s);
        }
      }
    }, KEEPALIVE_MS);
  }

  #stop(): void {
    const follow = this.#follow;
    this.#follow = undefined;
    follow?.then((f) => f.close(), () => {});
    this.#watch?.close();
    this.#watch = undefined;
    clearTimeout(this.#poll);
    clearInterval(this.#keepalive);
    clearTimeout(this.#flushTimer);
    this.#pending = [];
  }
}
