/**
 * A {@linkcode FileSystem} served by another thread, over a synchronous
 * channel: a `SharedArrayBuffer` the client fills and then waits on with
 * `Atomics.wait`, while the serving thread answers on its own event loop.
 *
 * The client thread blocks for the round trip, so a remote layer suits
 * small, shared state (in-memory folders, generated files), not bulk data.
 * One request is in flight per channel, since the client waits for it. Data
 * goes in pieces of {@linkcode CHANNEL_DATA_BYTES}, and a listing in pages of
 * {@linkcode LISTING_PAGE_BYTES}, so that no folder is too large to list.
 *
 * @example The serving thread
 * ```ts
 * import { FileSystemServer, MemoryFileSystem, SyncChannel } from "./mod.ts";
 * const layers = new Map([["shared", new MemoryFileSystem()]]);
 * const channel = SyncChannel.create();
 * const server = new FileSystemServer((name) => layers.get(name));
 * const worker = new Worker(new URL("./client.ts", import.meta.url), { type: "module" });
 * worker.onmessage = (e) => {
 *   if (e.data === "vfs") server.serve(channel);
 * };
 * worker.postMessage({ channel: channel.buffer });
 * ```
 *
 * @example The client thread (`client.ts`, a worker)
 * ```ts
 * /// <reference lib="deno.worker" />
 * import { RemoteFileSystem, SyncChannel } from "./mod.ts";
 * self.onmessage = (e: MessageEvent<{ channel: SharedArrayBuffer }>) => {
 *   const channel = SyncChannel.attach(e.data.channel, () => self.postMessage("vfs"));
 *   const shared = new RemoteFileSystem(channel, "shared");
 *   shared.mkdir("/endpoints");
 * };
 * ```
 *
 * @module
 */
import { utf8Length } from "./_path.ts";
import {
  type DirEntry,
  type FileHandle,
  type FileKind,
  type FileSystem,
  isVfsErrorCode,
  type OpenOptions,
  type Stat,
  type TimeSpec,
  VfsError,
} from "./types.ts";

/** Bytes of data a channel carries per request or answer (plus the JSON). */
export const CHANNEL_DATA_BYTES = 1 << 20;
const HEADER_BYTES = 16;
const JSON_BYTES = 64 * 1024;
/**
 * Bytes of JSON in one page of a listing: a folder's entries come in pages
 * of about this much, taken from one snapshot of the folder.
 */
export const LISTING_PAGE_BYTES = 512 * 1024;
/** How long a client waits for an answer before it gives up with `EIO`. */
const WAIT_MS = 30_000;

// The state word (header[0]) and the request's number (header[3]). The
// server claims a request (REQUEST → ANSWERING) before it writes, and the
// client gives up only on a request that is not claimed (REQUEST → IDLE), so
// a late answer can never land on a later request.
const IDLE = 0;
const REQUEST = 1;
const ANSWER = 2;
const ANSWERING = 3;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** One side of a synchronous request channel. */
export class SyncChannel {
  /** The shared memory: header, JSON, data. */
  readonly buffer: SharedArrayBuffer;
  readonly #header: Int32Array;
  readonly #bytes: Uint8Array;
  readonly #notify: () => void;

  private constructor(buffer: SharedArrayBuffer, notify: () => void) {
    this.buffer = buffer;
    this.#header = new Int32Array(buffer, 0, HEADER_BYTES / 4);
    this.#bytes = new Uint8Array(buffer, HEADER_BYTES);
    this.#notify = notify;
  }

  /** A new channel, on the serving side. */
  static create(): SyncChannel {
    return new SyncChannel(
      new SharedArrayBuffer(HEADER_BYTES + JSON_BYTES + CHANNEL_DATA_BYTES),
      () => {},
    );
  }

  /** The client side of a channel; `notify` tells the serving thread a request waits. */
  static attach(buffer: SharedArrayBuffer, notify: () => void): SyncChannel {
    return new SyncChannel(buffer, notify);
  }

  /** Client: sends a request and blocks until the answer. */
  call(request: unknown, data?: Uint8Array): { answer: unknown; data: Uint8Array } {
    const header = this.#header;
    this.#write(request, data);
    header[3] = (header[3] + 1) | 0;
    Atomics.store(header, 0, REQUEST);
    this.#notify();
    const deadline = performance.now() + WAIT_MS;
    for (;;) {
      const state = Atomics.load(header, 0);
      if (state === ANSWER) break;
      if (state === ANSWERING) {
        // claimed by the server: the answer is being written
        Atomics.wait(header, 0, ANSWERING);
        continue;
      }
      // Not claimed yet. A wake-up here can be the late notify of the answer
      // before (the server stores the state, then notifies): wait again.
      const left = deadline - performance.now();
      if (left <= 0) {
        if (Atomics.compareExchange(header, 0, REQUEST, IDLE) !== REQUEST) continue;
        return {
          answer: { err: { code: "EIO", syscall: "remote", detail: "no answer in time" } },
          data: new Uint8Array(),
        };
      }
      Atomics.wait(header, 0, REQUEST, left);
    }
    const result = this.#read();
    Atomics.store(this.#header, 0, IDLE);
    return result;
  }

  /** Server: the waiting request and its number, or null when there is none. */
  take(): { request: unknown; data: Uint8Array; seq: number } | null {
    if (Atomics.load(this.#header, 0) !== REQUEST) return null;
    const seq = this.#header[3];
    const { answer, data } = this.#read();
    return { request: answer, data, seq };
  }

  /** Server: answers request `seq` and wakes the client (dropped if the client gave up). */
  answer(seq: number, answer: unknown, data?: Uint8Array): void {
    const header = this.#header;
    if (Atomics.compareExchange(header, 0, REQUEST, ANSWERING) !== REQUEST) return;
    if (header[3] !== seq) {
      // a later request: this answer is late, leave that one waiting
      Atomics.store(header, 0, REQUEST);
      return;
    }
    try {
      this.#write(answer, data);
    } catch (e) {
      // an answer that does not fit (a listing of tens of thousands of names)
      // is an error for this one call, never for the serving thread
      const detail = e instanceof Error ? e.message : String(e);
      this.#write({ err: { code: "EOVERFLOW", syscall: "remote", detail } });
    }
    Atomics.store(header, 0, ANSWER);
    Atomics.notify(header, 0);
  }

  /**
   * Writes a message: its JSON, then its data. JSON too large for its area
   * goes in the data area of a message without data (a long listing); the
   * length is then stored negated.
   */
  #write(value: unknown, data?: Uint8Array): void {
    const json = encoder.encode(JSON.stringify(value));
    const size = data?.length ?? 0;
    if (size > CHANNEL_DATA_BYTES) {
      throw new VfsError("EFBIG", "remote", undefined, "data too large");
    }
    if (json.length <= JSON_BYTES) {
      this.#bytes.set(json, 0);
      if (data) this.#bytes.set(data, JSON_BYTES);
      this.#header[1] = json.length;
      this.#header[2] = size;
    } else if (size === 0 && json.length <= CHANNEL_DATA_BYTES) {
      this.#bytes.set(json, JSON_BYTES);
      this.#header[1] = -json.length;
      this.#header[2] = 0;
    } else {
      throw new VfsError(
        "EOVERFLOW",
        "remote",
        undefined,
        `a message of ${json.length} bytes does not fit the channel`,
      );
    }
  }

  #read(): { answer: unknown; data: Uint8Array } {
    const jsonLength = this.#header[1];
    const size = this.#header[2];
    const json = jsonLength >= 0
      ? this.#bytes.slice(0, jsonLength)
      : this.#bytes.slice(JSON_BYTES, JSON_BYTES - jsonLength);
    const answer = JSON.parse(decoder.decode(json));
    return { answer, data: this.#bytes.slice(JSON_BYTES, JSON_BYTES + size) };
  }
}

type Answer = { ok: unknown } | {
  err: { code: string; syscall: string; path?: string; detail?: string };
};

function unwrap(result: { answer: unknown; data: Uint8Array }): unknown {
  const answer = result.answer as Answer;
  if ("err" in answer) {
    const { code, syscall, path, detail } = answer.err;
    throw new VfsError(isVfsErrorCode(code) ? code : "EIO", syscall, path, detail);
  }
  return answer.ok;
}

/** A layer whose operations run on the serving thread. */
export class RemoteFileSystem implements FileSystem {
  readonly readOnly: boolean;
  readonly #channel: SyncChannel;
  readonly #name: string;

  /** `name` selects the layer on the serving side. */
  constructor(channel: SyncChannel, name: string, options: { readOnly?: boolean } = {}) {
    this.#channel = channel;
    this.#name = name;
    this.readOnly = options.readOnly ?? false;
  }

  #call(op: string, args: unknown[], data?: Uint8Array): unknown {
    return unwrap(this.#channel.call({ fs: this.#name, op, args }, data));
  }

  stat(path: string): Stat {
    return this.#call("stat", [path]) as Stat;
  }
  lstat(path: string): Stat {
    return this.#call("lstat", [path]) as Stat;
  }
  realpath(path: string): string {
    return this.#call("realpath", [path]) as string;
  }
  /** The entries of the folder, read page by page from one snapshot of it. */
  readDir(path: string): DirEntry[] {
    let page = this.#call("readDir", [path]) as _Page;
    const entries = page.entries;
    while (page.more !== undefined) {
      page = this.#call(_MORE, [page.more]) as _Page;
      for (const entry of page.entries) entries.push(entry);
    }
    return entries;
  }
  open(path: string, options: OpenOptions): FileHandle {
    const opened = this.#call("open", [path, options]) as {
      id: number;
      kind: FileKind;
      path: string;
    };
    return new _RemoteHandle(this.#channel, this.#name, opened);
  }
  mkdir(path: string): void {
    this.#call("mkdir", [path]);
  }
  unlink(path: string): void {
    this.#call("unlink", [path]);
  }
  rmdir(path: string): void {
    this.#call("rmdir", [path]);
  }
  rename(from: string, to: string): void {
    this.#call("rename", [from, to]);
  }
  symlink(target: string, path: string): void {
    this.#call("symlink", [target, path]);
  }
  readlink(path: string): string {
    return this.#call("readlink", [path]) as string;
  }
  link(existing: string, newPath: string): void {
    this.#call("link", [existing, newPath]);
  }
  setTimes(path: string, atime: TimeSpec, mtime: TimeSpec, follow: boolean): void {
    this.#call("setTimes", [path, atime, mtime, follow]);
  }
}

/** One page of a listing; `more` names the listing to ask for the next page. */
interface _Page {
  entries: DirEntry[];
  more?: number;
}

/** The operation that asks for the next page of a listing. */
const _MORE = "readDirMore";

/** A listing being read page by page: its snapshot and where the next page starts. */
interface _Listing {
  id: number;
  entries: DirEntry[];
  next: number;
}

class _RemoteHandle implements FileHandle {
  readonly kind: FileKind;
  readonly path: string;
  readonly #channel: SyncChannel;
  readonly #name: string;
  readonly #id: number;

  constructor(
    channel: SyncChannel,
    name: string,
    opened: { id: number; kind: FileKind; path: string },
  ) {
    this.#channel = channel;
    this.#name = name;
    this.#id = opened.id;
    this.kind = opened.kind;
    this.path = opened.path;
  }

  #call(op: string, args: unknown[], data?: Uint8Array): { value: unknown; data: Uint8Array } {
    const result = this.#channel.call({ fs: this.#name, handle: this.#id, op, args }, data);
    return { value: unwrap(result), data: result.data };
  }

  read(buffer: Uint8Array, offset: number): number {
    const want = Math.min(buffer.length, CHANNEL_DATA_BYTES);
    const { data } = this.#call("read", [want, offset]);
    buffer.set(data);
    return data.length;
  }
  /** Writes in pieces; when a later piece fails, the bytes written so far are a short write. */
  write(data: Uint8Array, offset: number): number {
    let written = 0;
    while (written < data.length) {
      const piece = data.subarray(written, written + CHANNEL_DATA_BYTES);
      let n: number;
      try {
        n = this.#call("write", [offset + written], piece).value as number;
      } catch (e) {
        if (written > 0) return written;
        throw e;
      }
      written += n;
      if (n < piece.length) break;
    }
    return written;
  }
  append(data: Uint8Array): number {
    let done = 0;
    for (let at = 0; at < data.length || at === 0; at += CHANNEL_DATA_BYTES) {
      const chunk = data.subarray(at, at + CHANNEL_DATA_BYTES);
      const n = this.#call("append", [], chunk).value as number;
      done += n;
      if (n < chunk.length || data.length === 0) break;
    }
    return done;
  }
  setSize(size: number): void {
    this.#call("setSize", [size]);
  }
  stat(): Stat {
    return this.#call("stat", []).value as Stat;
  }
  sync(): void {
    this.#call("sync", []);
  }
  syncData(): void {
    this.#call("syncData", []);
  }
  setTimes(atime: TimeSpec, mtime: TimeSpec): void {
    this.#call("setTimes", [atime, mtime]);
  }
  close(): void {
    this.#call("close", []);
  }
}

const FS_OPS = new Set([
  "stat",
  "lstat",
  "realpath",
  "readDir",
  "open",
  "mkdir",
  "unlink",
  "rmdir",
  "rename",
  "symlink",
  "readlink",
  "link",
  "setTimes",
]);

/** Serves the layers of one thread to clients on other threads. */
export class FileSystemServer {
  readonly #resolve: (name: string) => FileSystem | undefined;
  readonly #handles = new WeakMap<SyncChannel, Map<number, FileHandle>>();
  /** The listing each channel is reading (its client reads the pages in one go). */
  readonly #listings = new WeakMap<SyncChannel, _Listing>();
  #nextHandle = 1;
  #nextListing = 1;

  /** `resolve` gives the layer for a name a client uses (undefined: `ENOENT`). */
  constructor(resolve: (name: string) => FileSystem | undefined) {
    this.#resolve = resolve;
  }

  /** Answers the request waiting on `channel`, if any. */
  serve(channel: SyncChannel): void {
    const taken = channel.take();
    if (!taken) return;
    const request = taken.request as { fs: string; op: string; args: unknown[]; handle?: number };
    let data: Uint8Array | undefined;
    let answer: Answer;
    try {
      const value = request.handle === undefined
        ? this.#fsOp(channel, request)
        : this.#handleOp(channel, request.handle, request.op, request.args, taken.data, (d) =>
          data = d);
      answer = { ok: value ?? null };
    } catch (e) {
      answer = e instanceof VfsError
        ? { err: { code: e.code, syscall: e.syscall, path: e.path } }
        : {
          err: {
            code: "EIO",
            syscall: request.op,
            detail: e instanceof Error ? e.message : String(e),
          },
        };
    }
    channel.answer(taken.seq, answer, data);
  }

  /** Closes every handle a channel left open (its client thread is gone). */
  drop(channel: SyncChannel): void {
    for (const handle of this.#handles.get(channel)?.values() ?? []) {
      try {
        handle.close();
      } catch {
        // already closed
      }
    }
    this.#handles.delete(channel);
    this.#listings.delete(channel);
  }

  #fsOp(channel: SyncChannel, request: { fs: string; op: string; args: unknown[] }): unknown {
    const fs = this.#resolve(request.fs);
    if (!fs) throw new VfsError("ENOENT", request.op, undefined, `no layer ${request.fs}`);
    if (request.op === _MORE) return this.#nextPage(channel, request.args[0] as number);
    if (!FS_OPS.has(request.op)) throw new VfsError("ENOTSUP", request.op);
    if (request.op === "readDir") {
      const listing = { id: this.#nextListing++, entries: fs.readDir(request.args[0] as string) };
      return this.#page(channel, { ...listing, next: 0 });
    }
    if (request.op === "open") {
      const [path, options] = request.args as [string, OpenOptions];
      const handle = fs.open(path, options);
      const id = this.#nextHandle++;
      let table = this.#handles.get(channel);
      if (!table) this.#handles.set(channel, table = new Map());
      table.set(id, handle);
      return { id, kind: handle.kind, path: handle.path };
    }
    // deno-lint-ignore no-explicit-any
    return (fs as any)[request.op](...request.args);
  }

  #nextPage(channel: SyncChannel, id: number): _Page {
    const listing = this.#listings.get(channel);
    if (listing?.id !== id) {
      throw new VfsError(
        "EIO",
        "readdir",
        undefined,
        "the listing was dropped; list the folder again",
      );
    }
    return this.#page(channel, listing);
  }

  /** The next page of `listing`; the listing is kept for the next one while entries remain. */
  #page(channel: SyncChannel, listing: _Listing): _Page {
    const { entries } = listing;
    let end = listing.next;
    // the first entry always goes: a name is at most 255 bytes
    for (
      let bytes = 0;
      end < entries.length && (end === listing.next || bytes < LISTING_PAGE_BYTES);
      end++
    ) {
      bytes += utf8Length(JSON.stringify(entries[end]!.name)) + 64;
    }
    const page = listing.next === 0 && end === entries.length
      ? entries
      : entries.slice(listing.next, end);
    listing.next = end;
    if (end < entries.length) {
      this.#listings.set(channel, listing);
      return { entries: page, more: listing.id };
    }
    this.#listings.delete(channel);
    return { entries: page };
  }

  #handleOp(
    channel: SyncChannel,
    id: number,
    op: string,
    args: unknown[],
    input: Uint8Array,
    output: (data: Uint8Array) => void,
  ): unknown {
    const table = this.#handles.get(channel);
    const handle = table?.get(id);
    if (!handle) throw new VfsError("EBADF", op);
    switch (op) {
      case "read": {
        const [want, offset] = args as [number, number];
        const buffer = new Uint8Array(Math.min(want, CHANNEL_DATA_BYTES));
        const n = handle.read(buffer, offset);
        output(buffer.subarray(0, n));
        return n;
      }
      case "write":
        return handle.write(input, args[0] as number);
      case "append":
        return handle.append(input);
      case "setSize":
        return handle.setSize(args[0] as number);
      case "stat":
        return handle.stat();
      case "sync":
        return handle.sync();
      case "syncData":
        return handle.syncData();
      case "setTimes":
        return handle.setTimes(args[0] as TimeSpec, args[1] as TimeSpec);
      case "close":
        table!.delete(id);
        return handle.close();
      default:
        throw new VfsError("ENOTSUP", op);
    }
  }
}
