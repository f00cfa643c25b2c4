/**
 * `wasi:sockets` 0.2: `tcp` and `tcp-create-socket`, on Deno's TCP API.
 *
 * WASI's two-phase, non-blocking calls map onto Deno's promises: a `start-*`
 * call begins the work, the socket's pollable becomes ready when it has
 * settled, and `finish-*` (or `accept`) takes the result or fails with
 * `would-block`. A connection reads ahead into a bounded buffer and writes
 * from a bounded queue in the background, so the streams never block.
 *
 * Choices, where Deno's API is narrower than the sockets of Wasmtime:
 *
 * - `start-bind` binds and listens at once (`Deno.listen`), so that
 *   `local-address` reports the port at once and errors such as
 *   `address-in-use` come from the bind, as they should. Connections that
 *   arrive between `bind` and `listen` wait in the kernel's backlog. A
 *   `connect` after an explicit `bind` connects from a port the system picks.
 * - An IPv6 socket bound to `::` also accepts IPv4 (Deno does not set
 *   `IPV6_V6ONLY`); such peers show as IPv4-mapped IPv6 addresses.
 * - `TCP_NODELAY` is set on every connection: small request and answer
 *   writes are not held back (WASI has no option for it).
 * - `keep-alive-enabled` is applied; the keep-alive times and count, the hop
 *   limit, the buffer sizes and the backlog size are checked, clamped and
 *   reported as set, but Deno has no way to apply them.
 * - Closing a connection (the guest drops it, or the process ends) first
 *   sends what is still queued, as the kernel does for a closed socket, for
 *   at most {@linkcode DRAIN_TIMEOUT_MS}.
 * - At most `MAX_SOCKETS_PER_PROCESS` sockets per process and a budget per
 *   worker: beyond them, `create-tcp-socket` and `accept` fail with
 *   `new-socket-limit`.
 *
 * @module
 */
import {
  ByteQueue,
  type ByteSink,
  type ByteSource,
  InputStream,
  IoError,
  OutputStream,
  Pollable,
  STREAM_CLOSED,
  type StreamError,
} from "./io.ts";
import { type Closable, type NetworkProcess, Notifier } from "./network_process.ts";
import {
  checkAddress,
  checkBind,
  checkNetwork,
  type ErrorCode,
  fitsFamily,
  fromHostAddress,
  type IpAddressFamily,
  type IpSocketAddress,
  isUnicast,
  isValidRemote,
  socketErrorCode,
  SOCKETS_TOKEN,
  toHostAddress,
} from "./sockets_network.ts";

/** `wasi:sockets/tcp.shutdown-type`. */
export type ShutdownType = "receive" | "send" | "both";

/** What a connection reads ahead of the guest before it stops reading. */
const READ_AHEAD = 128 * 1024;
/** Size of one read from the host socket. */
const READ_CHUNK = 64 * 1024;
/** What the output stream of a connection accepts before the guest must wait. */
const WRITE_WINDOW = 128 * 1024;
/** Largest single write handed to the host socket (queued chunks are joined up to this). */
const WRITE_CHUNK = 128 * 1024;
/** How long a closed connection may take to send what is still queued. */
export const DRAIN_TIMEOUT_MS = 5000;

const NANOS_PER_SECOND = 1_000_000_000n;
/** Linux's limit for keep-alive times (in seconds) and count, which Wasmtime clamps to. */
const MAX_KEEPALIVE_SECONDS = 32767n;
const MAX_KEEPALIVE_COUNT = 127;

/** The error of a stream of a connection, with the socket error code as its message. */
function _streamFailure(e: unknown): StreamError {
  let code: ErrorCode;
  try {
    code = socketErrorCode(e);
  } catch {
    code = "unknown";
  }
  return { tag: "last-operation-failed", val: new IoError(code) };
}

/** An open connection: reads ahead, writes behind, closes when the socket and both streams are gone. */
class _Connection implements Closable {
  readonly conn: Deno.TcpConn;
  readonly #process: NetworkProcess;
  readonly #readable: Notifier;
  readonly #writable: Notifier;

  readonly #received = new ByteQueue();
  #readBuffer: Uint8Array | null = null;
  #reading = false;
  #eof = false;
  #readError: StreamError | null = null;
  #readShut = false;

  #queue: Uint8Array[] = [];
  #queued = 0;
  #writing = false;
  #writeError: StreamError | null = null;
  #writeShut = false;
  #writeClosed = false;
  /** Bytes accepted from the guest and bytes handed to the host, for flushes. */
  #accepted = 0;
  #sent = 0;
  #flushTo = 0;

  #refs = 3; // the socket and its two streams
  #closing = false;
  #drainTimer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;

  constructor(conn: Deno.TcpConn, process: NetworkProcess) {
    this.conn = conn;
    this.#process = process;
    this.#readable = new Notifier(process);
    this.#writable = new Notifier(process);
    try {
      conn.setNoDelay(true);
    } catch {
      // Not supported for this socket: Nagle's algorithm stays on.
    }
    process.track(this);
    this.#pump();
  }

  // --- reading

  read(max: number): Uint8Array | null {
    if (this.#readShut || this.#closed) return null;
    const out = this.#received.take(max);
    if (out !== null) {
      this.#pump();
      return out;
    }
    if (this.#readError) throw this.#readError;
    if (this.#eof) return null;
    this.#pump();
    return new Uint8Array(0);
  }

  readable(): boolean {
    return !this.#received.empty || this.#eof || this.#readError !== null || this.#readShut ||
      this.#closed;
  }

  whenReadable(): Promise<void> {
    if (this.readable()) return Promise.resolve();
    this.#pump();
    return this.#readable.wait();
  }

  /** Reads from the host while the buffer has room. */
  #pump(): void {
    if (this.#reading || this.#eof || this.#readError || this.#readShut || this.#closed) return;
    if (this.#received.size >= READ_AHEAD) return;
    this.#reading = true;
    // one read at a time per connection: its buffer is reused, what was read is copied out
    const buffer = this.#readBuffer ??= new Uint8Array(READ_CHUNK);
    this.conn.read(buffer).then(
      (n) => {
        this.#reading = false;
        if (this.#closed || this.#readShut) return;
        if (n === null) this.#eof = true;
        else {
          this.#received.push(buffer.slice(0, n));
        }
        this.#readable.notify();
        this.#pump();
      },
      (e) => {
        this.#reading = false;
        if (this.#closed || this.#readShut) return;
        this.#readError = _streamFailure(e);
        this.#readable.notify();
      },
    );
  }

  // --- writing

  capacity(): number {
    if (this.#writeError) throw this.#writeError;
    if (this.#writeShut || this.#closed) throw STREAM_CLOSED;
    if (this.#sent < this.#flushTo) return 0;
    return Math.max(0, WRITE_WINDOW - this.#queued);
  }

  write(bytes: Uint8Array): void {
    this.capacity();
    if (bytes.length === 0) return;
    this.#queue.push(bytes);
    this.#queued += bytes.length;
    this.#accepted += bytes.length;
    this.#drain();
  }

  /** Later `check-write`s answer 0 until everything written so far was handed to the host. */
  flush(): void {
    this.#flushTo = this.#accepted;
  }

  whenWritable(): Promise<void> {
    return this.#writable.wait();
  }

  async #drain(): Promise<void> {
    if (this.#writing) return;
    this.#writing = true;
    try {
      while (this.#queue.length > 0 && !this.#closed) {
        const chunk = this.#nextChunk();
        let n: number;
        try {
          n = await this.conn.write(chunk);
        } catch (e) {
          if (!this.#closed) {
            this.#writeError = (e as { code?: string }).code === "EPIPE"
              ? STREAM_CLOSED
              : _streamFailure(e);
          }
          this.#queue = [];
          this.#queued = 0;
          break;
        }
        this.#sent += n;
        this.#queued -= n;
        if (n < chunk.length) this.#queue.unshift(chunk.subarray(n));
        this.#writable.notify();
      }
      if (this.#writeShut && !this.#writeClosed && this.#queue.length === 0 && !this.#closed) {
        this.#writeClosed = true;
        await this.conn.closeWrite().catch(() => {});
      }
    } finally {
      this.#writing = false;
      this.#writable.notify();
      if (this.#closing && (this.#queue.length === 0 || this.#writeError)) this.#closeNow();
    }
  }

  /** The first queued chunk, joined with the next ones up to {@linkcode WRITE_CHUNK}. */
  #nextChunk(): Uint8Array {
    const first = this.#queue.shift()!;
    if (this.#queue.length === 0 || first.length >= WRITE_CHUNK) return first;
    let length = first.length;
    let count = 0;
    while (
      count < this.#queue.length && length + this.#queue[count].length <= WRITE_CHUNK
    ) length += this.#queue[count++].length;
    if (count === 0) return first;
    const joined = new Uint8Array(length);
    joined.set(first);
    let at = first.length;
    for (const part of this.#queue.splice(0, count)) {
      joined.set(part, at);
      at += part.length;
    }
    return joined;
  }

  // --- shutdown and close

  shutdown(how: ShutdownType): void {
    if (how !== "send") {
      this.#readShut = true;
      this.#received.clear();
      this.#readable.notify();
    }
    if (how !== "receive" && !this.#writeShut) {
      this.#writeShut = true;
      this.#writable.notify();
      this.#drain();
    }
  }

  /** One of the socket and its two streams was dropped. */
  release(): void {
    if (--this.#refs <= 0) this.close();
  }

  /** Closes after sending what is queued (at most {@linkcode DRAIN_TIMEOUT_MS}). */
  close(): void {
    if (this.#closing || this.#closed) return;
    this.#closing = true;
    this.#readShut = true;
    this.#received.clear();
    if (this.#queue.length === 0 && !this.#writing) {
      this.#closeNow();
      return;
    }
    this.#drainTimer = setTimeout(() => this.#closeNow(), DRAIN_TIMEOUT_MS);
  }

  #closeNow(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#drainTimer !== undefined) clearTimeout(this.#drainTimer);
    this.#process.untrack(this);
    this.#queue = [];
    this.#queued = 0;
    try {
      this.conn.close();
    } catch {
      // Already closed.
    }
    this.#readable.notify();
    this.#writable.notify();
  }
}

/** The input stream of a connection. */
class _TcpSource implements ByteSource {
  #connection: _Connection | null;
  constructor(connection: _Connection) {
    this.#connection = connection;
  }
  read(max: number): Uint8Array | null {
    return this.#connection ? this.#connection.read(max) : null;
  }
  readable(): boolean {
    return this.#connection ? this.#connection.readable() : true;
  }
  whenReadable(): Promise<void> {
    return this.#connection ? this.#connection.whenReadable() : Promise.resolve();
  }
  close(): void {
    this.#connection?.release();
    this.#connection = null;
  }
}

/** The output stream of a connection. */
class _TcpSink implements ByteSink {
  #connection: _Connection | null;
  constructor(connection: _Connection) {
    this.#connection = connection;
  }
  capacity(): number {
    if (!this.#connection) throw STREAM_CLOSED;
    return this.#connection.capacity();
  }
  write(bytes: Uint8Array): void {
    if (!this.#connection) throw STREAM_CLOSED;
    this.#connection.write(bytes);
  }
  whenWritable(): Promise<void> {
    return this.#connection ? this.#connection.whenWritable() : Promise.resolve();
  }
  flush(): void {
    this.#connection?.flush();
  }
  close(): void {
    this.#connection?.release();
    this.#connection = null;
  }
}

/** Accepts connections one ahead of the guest, so that its pollable can become ready. */
class _Acceptor implements Closable {
  readonly listener: Deno.TcpListener;
  readonly #process: NetworkProcess;
  readonly #ready: Notifier;
  #pending = false;
  #next: { conn: Deno.TcpConn } | { error: unknown } | null = null;
  #closed = false;

  constructor(listener: Deno.TcpListener, process: NetworkProcess) {
    this.listener = listener;
    this.#process = process;
    this.#ready = new Notifier(process);
  }

  start(): void {
    if (this.#pending || this.#next || this.#closed) return;
    this.#pending = true;
    this.listener.accept().then(
      (conn) => {
        this.#pending = false;
        if (this.#closed) {
          conn.close();
          return;
        }
        this.#next = { conn };
        this.#ready.notify();
      },
      (error) => {
        this.#pending = false;
        if (this.#closed) return;
        this.#next = { error };
        this.#ready.notify();
      },
    );
  }

  ready(): boolean {
    return this.#next !== null || this.#closed;
  }

  whenReady(): Promise<void> {
    if (this.ready()) return Promise.resolve();
    this.start();
    return this.#ready.wait();
  }

  /** The next accepted connection (or its error), or null; starts the one after it. */
  take(): { conn: Deno.TcpConn } | { error: unknown } | null {
    const next = this.#next;
    this.#next = null;
    this.start();
    return next;
  }

  /** Puts a connection back (the guest may not hold one more socket now). */
  putBack(next: { conn: Deno.TcpConn }): void {
    this.#next = next;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#process.untrack(this);
    if (this.#next && "conn" in this.#next) this.#next.conn.close();
    this.#next = null;
    try {
      this.listener.close();
    } catch {
      // Already closed.
    }
    this.#ready.notify();
  }
}

type _State =
  | { tag: "unbound" }
  | { tag: "bind-started"; acceptor: _Acceptor }
  | { tag: "bound"; acceptor: _Acceptor }
  | { tag: "listen-started"; acceptor: _Acceptor }
  | { tag: "listening"; acceptor: _Acceptor }
  | { tag: "connecting"; result: { conn: Deno.TcpConn } | { error: unknown } | null }
  | { tag: "connected"; connection: _Connection }
  | { tag: "closed" };

/** Options the guest sets; inherited by accepted sockets, as on Linux. */
interface _Options {
  keepAlive: boolean;
  keepAliveIdle: bigint;
  keepAliveInterval: bigint;
  keepAliveCount: number;
  hopLimit: number;
  receiveBuffer: bigint;
  sendBuffer: bigint;
  backlog: bigint;
}

/** Linux's defaults, reported until the guest sets a value. */
const _DEFAULTS: _Options = {
  keepAlive: false,
  keepAliveIdle: 7200n * NANOS_PER_SECOND,
  keepAliveInterval: 75n * NANOS_PER_SECOND,
  keepAliveCount: 9,
  hopLimit: 64,
  receiveBuffer: 65536n,
  sendBuffer: 8192n,
  backlog: 128n,
};

/** `wasi:sockets/tcp.tcp-socket`. */
export class TcpSocket implements Closable {
  readonly #process: NetworkProcess;
  readonly #family: IpAddressFamily;
  readonly #notifier: Notifier;
  readonly #options: _Options;
  #state: _State = { tag: "unbound" };
  #disposed = false;

  /** Not for guests: sockets come from `create-tcp-socket` and `accept`. */
  constructor(
    token: symbol,
    process: NetworkProcess,
    family: IpAddressFamily,
    options: _Options = _DEFAULTS,
  ) {
    if (token !== SOCKETS_TOKEN) throw new TypeError("TcpSocket has no public constructor");
    this.#process = process;
    this.#family = family;
    this.#notifier = new Notifier(process);
    this.#options = { ...options };
    process.track(this);
  }

  /** Binds to a local address (listening starts with {@linkcode startListen}). */
  startBind(network: unknown, localAddress: IpSocketAddress): void {
    checkBind(network, localAddress, this.#family);
    if (this.#state.tag !== "unbound") throw "invalid-state";
    let listener: Deno.TcpListener;
    try {
      listener = Deno.listen({ ...toHostAddress(localAddress), transport: "tcp" });
    } catch (e) {
      throw socketErrorCode(e);
    }
    this.#state = { tag: "bind-started", acceptor: new _Acceptor(listener, this.#process) };
    this.#process.track(this.#state.acceptor);
  }

  /** Completes {@linkcode startBind}. */
  finishBind(): void {
    if (this.#state.tag !== "bind-started") throw "not-in-progress";
    this.#state = { tag: "bound", acceptor: this.#state.acceptor };
  }

  /** Begins a connection to `remoteAddress`; {@linkcode finishConnect} takes the result. */
  startConnect(network: unknown, remoteAddress: IpSocketAddress): void {
    checkNetwork(network);
    checkAddress(remoteAddress);
    const state = this.#state;
    if (state.tag === "connecting") throw "concurrency-conflict";
    if (state.tag !== "unbound" && state.tag !== "bound") throw "invalid-state";
    if (
      !isUnicast(remoteAddress) || !isValidRemote(remoteAddress) ||
      !fitsFamily(remoteAddress, this.#family)
    ) throw "invalid-argument";
    if (state.tag === "bound") state.acceptor.close();
    const connecting: _State = { tag: "connecting", result: null };
    this.#state = connecting;
    Deno.connect({ ...toHostAddress(remoteAddress), transport: "tcp" }).then(
      (conn) => {
        if (this.#state !== connecting || this.#disposed) {
          conn.close();
          return;
        }
        connecting.result = { conn };
        this.#notifier.notify();
      },
      (error) => {
        connecting.result = { error };
        this.#notifier.notify();
      },
    );
  }

  /** The streams of the new connection, or `would-block` while it is being made. */
  finishConnect(): [InputStream, OutputStream] {
    const state = this.#state;
    if (state.tag !== "connecting") throw "not-in-progress";
    if (state.result === null) throw "would-block";
    if ("error" in state.result) {
      this.#state = { tag: "closed" };
      throw socketErrorCode(state.result.error);
    }
    const connection = this.#connect(state.result.conn);
    return [
      new InputStream(new _TcpSource(connection)),
      new OutputStream(new _TcpSink(connection)),
    ];
  }

  /** Starts listening on the bound address. */
  startListen(): void {
    const state = this.#state;
    if (state.tag === "listen-started") throw "concurrency-conflict";
    if (state.tag !== "bound") throw "invalid-state";
    this.#state = { tag: "listen-started", acceptor: state.acceptor };
  }

  /** Completes {@linkcode startListen}. */
  finishListen(): void {
    const state = this.#state;
    if (state.tag !== "listen-started") throw "not-in-progress";
    this.#state = { tag: "listening", acceptor: state.acceptor };
    state.acceptor.start();
  }

  /** A connection from the queue, or `would-block` when none is waiting. */
  accept(): [TcpSocket, InputStream, OutputStream] {
    const state = this.#state;
    if (state.tag !== "listening") throw "invalid-state";
    const next = state.acceptor.take();
    if (next === null) throw "would-block";
    if ("error" in next) {
      const code = socketErrorCode(next.error);
      // Linux reports errors of the new connection itself from accept: they mean it went away
      throw code === "connection-reset" || code === "remote-unreachable"
        ? "connection-aborted"
        : code;
    }
    try {
      this.#process.takeSocket();
    } catch (e) {
      state.acceptor.putBack(next);
      throw e;
    }
    const socket = new TcpSocket(SOCKETS_TOKEN, this.#process, this.#family, this.#options);
    const connection = socket.#connect(next.conn);
    return [
      socket,
      new InputStream(new _TcpSource(connection)),
      new OutputStream(new _TcpSink(connection)),
    ];
  }

  #connect(conn: Deno.TcpConn): _Connection {
    if (this.#options.keepAlive) {
      try {
        conn.setKeepAlive(true);
      } catch {
        // The option could not be set: the connection works without it.
      }
    }
    const connection = new _Connection(conn, this.#process);
    this.#state = { tag: "connected", connection };
    return connection;
  }

  /** The bound address. */
  localAddress(): IpSocketAddress {
    const state = this.#state;
    switch (state.tag) {
      case "bound":
      case "listen-started":
      case "listening": {
        const addr = state.acceptor.listener.addr as Deno.NetAddr;
        return fromHostAddress(addr.hostname, addr.port);
      }
      case "connected": {
        const addr = state.connection.conn.localAddr as Deno.NetAddr;
        return fromHostAddress(addr.hostname, addr.port);
      }
      default:
        throw "invalid-state";
    }
  }

  /** The address of the peer. */
  remoteAddress(): IpSocketAddress {
    const state = this.#state;
    if (state.tag !== "connected") throw "invalid-state";
    const addr = state.connection.conn.remoteAddr as Deno.NetAddr;
    return fromHostAddress(addr.hostname, addr.port);
  }

  /** Whether the socket listens. */
  isListening(): boolean {
    return this.#state.tag === "listening";
  }

  /** The address family of the socket. */
  addressFamily(): IpAddressFamily {
    return this.#family;
  }

  /** Sets the backlog of a socket that does not listen yet (Deno keeps its own). */
  setListenBacklogSize(value: bigint): void {
    if (value === 0n) throw "invalid-argument";
    const tag = this.#state.tag;
    if (tag === "listening") throw "not-supported";
    if (tag !== "unbound" && tag !== "bound" && tag !== "bind-started") throw "invalid-state";
    this.#options.backlog = value > 0x7fffffffn ? 0x7fffffffn : value;
  }

  /** Whether keep-alive probes are sent. */
  keepAliveEnabled(): boolean {
    this.#optionState();
    return this.#options.keepAlive;
  }

  /** Turns keep-alive probes on or off. */
  setKeepAliveEnabled(value: boolean): void {
    const state = this.#optionState();
    if (state.tag === "connected") {
      try {
        state.connection.conn.setKeepAlive(value);
      } catch (e) {
        throw socketErrorCode(e);
      }
    }
    this.#options.keepAlive = value;
  }

  /** Idle time before the first keep-alive probe, in nanoseconds. */
  keepAliveIdleTime(): bigint {
    this.#optionState();
    return this.#options.keepAliveIdle;
  }

  /** Sets the idle time (clamped to 1 s .. 32767 s). */
  setKeepAliveIdleTime(value: bigint): void {
    this.#optionState();
    this.#options.keepAliveIdle = _clampSeconds(value);
  }

  /** Time between keep-alive probes, in nanoseconds. */
  keepAliveInterval(): bigint {
    this.#optionState();
    return this.#options.keepAliveInterval;
  }

  /** Sets the time between probes (clamped to 1 s .. 32767 s). */
  setKeepAliveInterval(value: bigint): void {
    this.#optionState();
    this.#options.keepAliveInterval = _clampSeconds(value);
  }

  /** Probes sent before the connection is given up. */
  keepAliveCount(): number {
    this.#optionState();
    return this.#options.keepAliveCount;
  }

  /** Sets the number of probes (clamped to 1 .. 127). */
  setKeepAliveCount(value: number): void {
    this.#optionState();
    if (value === 0) throw "invalid-argument";
    this.#options.keepAliveCount = Math.min(value, MAX_KEEPALIVE_COUNT);
  }

  /** The hop limit (TTL) of outgoing packets. */
  hopLimit(): number {
    this.#optionState();
    return this.#options.hopLimit;
  }

  /** Sets the hop limit; 0 is `invalid-argument`. */
  setHopLimit(value: number): void {
    this.#optionState();
    if (value === 0) throw "invalid-argument";
    this.#options.hopLimit = value;
  }

  /** The size of the receive buffer. */
  receiveBufferSize(): bigint {
    this.#optionState();
    return this.#options.receiveBuffer;
  }

  /** Sets the size of the receive buffer (a hint); 0 is `invalid-argument`. */
  setReceiveBufferSize(value: bigint): void {
    this.#optionState();
    this.#options.receiveBuffer = _bufferSize(value);
  }

  /** The size of the send buffer. */
  sendBufferSize(): bigint {
    this.#optionState();
    return this.#options.sendBuffer;
  }

  /** Sets the size of the send buffer (a hint); 0 is `invalid-argument`. */
  setSendBufferSize(value: bigint): void {
    this.#optionState();
    this.#options.sendBuffer = _bufferSize(value);
  }

  /** Ready when a connect has settled or a connection is waiting to be accepted. */
  subscribe(): Pollable {
    return new Pollable(() => this.#ready(), () => this.#whenReady());
  }

  #ready(): boolean {
    const state = this.#state;
    if (state.tag === "connecting") return state.result !== null;
    if (state.tag === "listening") return state.acceptor.ready();
    return true;
  }

  #whenReady(): Promise<void> {
    const state = this.#state;
    if (state.tag === "listening") return state.acceptor.whenReady();
    if (state.tag === "connecting" && state.result === null) return this.#notifier.wait();
    return Promise.resolve();
  }

  /** Shuts down one or both directions of the connection. */
  shutdown(shutdownType: ShutdownType): void {
    const state = this.#state;
    if (state.tag !== "connected") throw "invalid-state";
    state.connection.shutdown(shutdownType);
  }

  /** Options may be read and set in every state but while connecting and after an error. */
  #optionState(): _State {
    const state = this.#state;
    if (state.tag === "connecting" || state.tag === "closed") throw "invalid-state";
    return state;
  }

  /** Closes the host socket now (the process ended). */
  close(): void {
    const state = this.#state;
    this.#state = { tag: "closed" };
    this.#process.untrack(this);
    switch (state.tag) {
      case "bind-started":
      case "bound":
      case "listen-started":
      case "listening":
        state.acceptor.close();
        break;
      case "connecting":
        if (state.result && "conn" in state.result) state.result.conn.close();
        break;
      case "connected":
        state.connection.close();
        break;
    }
  }

  /** Called by jco when the guest drops the socket. */
  [Symbol.dispose](): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#process.returnSocket();
    const state = this.#state;
    if (state.tag === "connected") {
      // the streams may outlive the socket: the connection closes with the last of them
      this.#state = { tag: "closed" };
      this.#process.untrack(this);
      state.connection.release();
      return;
    }
    this.close();
  }
}

function _clampSeconds(value: bigint): bigint {
  if (value <= 0n) throw "invalid-argument";
  const min = NANOS_PER_SECOND;
  const max = MAX_KEEPALIVE_SECONDS * NANOS_PER_SECOND;
  return value < min ? min : value > max ? max : value;
}

function _bufferSize(value: bigint): bigint {
  if (value === 0n) throw "invalid-argument";
  return value > 0x7fffffffn ? 0x7fffffffn : value;
}

/** The `wasi:sockets/tcp` and `tcp-create-socket` interfaces of one process. */
export function tcpInterfaces(process: NetworkProcess): Record<string, Record<string, unknown>> {
  return {
    "wasi:sockets/tcp": { TcpSocket },
    "wasi:sockets/tcp-create-socket": {
      createTcpSocket(addressFamily: IpAddressFamily): TcpSocket {
        if (addressFamily !== "ipv4" && addressFamily !== "ipv6") throw "not-supported";
        process.takeSocket();
        return new TcpSocket(SOCKETS_TOKEN, process, addressFamily);
      },
    },
  };
}
