/**
 * `wasi:sockets` 0.2: `udp` and `udp-create-socket`, on `node:dgram`.
 *
 * Deno's own `Deno.listenDatagram` needs `--unstable-net` for the whole
 * host, and plugin workers run with `--unstable-worker-options` only;
 * `node:dgram` is stable and works in a worker whose permissions allow the
 * network.
 *
 * Choices, where `node:dgram` differs from the sockets of Wasmtime:
 *
 * - Binding is asynchronous in Node: `finish-bind` answers `would-block`
 *   until it has settled, and the socket's pollable becomes ready then.
 * - A "connected" stream (`stream` with a remote address) is kept here, not
 *   in the kernel: datagrams go to that address, datagrams from others are
 *   dropped. So ICMP errors are not reported, and the local address stays
 *   the bound one.
 * - Received datagrams wait in a queue of at most
 *   {@linkcode MAX_QUEUED_DATAGRAMS} (and {@linkcode MAX_QUEUED_BYTES});
 *   more are dropped, as a full kernel buffer drops them.
 * - Sends run in the background: `check-send` permits more while fewer than
 *   {@linkcode MAX_SENDS_IN_FLIGHT} are in flight. Errors that arrive after
 *   a send returned (e.g. no route) are lost, as for any UDP send.
 * - The hop limit and the buffer sizes are applied once the socket is bound
 *   (before, they are kept and applied at the bind).
 *
 * @module
 */
import dgram from "node:dgram";
import { Pollable } from "./io.ts";
import { type Closable, type NetworkProcess, Notifier } from "./network_process.ts";
import {
  checkAddress,
  checkBind,
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

/** `wasi:sockets/udp.incoming-datagram`. */
export interface IncomingDatagram {
  data: Uint8Array;
  remoteAddress: IpSocketAddress;
}

/** `wasi:sockets/udp.outgoing-datagram`. */
export interface OutgoingDatagram {
  data: Uint8Array;
  remoteAddress?: IpSocketAddress;
}

/** Received datagrams a socket keeps for the guest; later ones are dropped. */
export const MAX_QUEUED_DATAGRAMS = 1024;
/** Bytes of received datagrams a socket keeps for the guest. */
export const MAX_QUEUED_BYTES = 4 * 1024 * 1024;
/** Sends a socket may have in flight before `check-send` answers 0. */
export const MAX_SENDS_IN_FLIGHT = 64;
/** How long a closed socket waits for its sends in flight. */
const SEND_DRAIN_MS = 1000;
/** Datagrams one `check-send` permits (as in Wasmtime). */
const PERMIT = 16;
/** The largest payload of a UDP datagram over IPv4 and IPv6. */
const MAX_PAYLOAD: Record<IpAddressFamily, number> = { ipv4: 65507, ipv6: 65527 };

type _State =
  | { tag: "unbound" }
  | { tag: "bind-started"; socket: dgram.Socket; error: unknown; done: boolean }
  | { tag: "bound"; socket: dgram.Socket }
  | { tag: "closed" };

/** `wasi:sockets/udp.udp-socket`. */
export class UdpSocket implements Closable {
  readonly #process: NetworkProcess;
  readonly #family: IpAddressFamily;
  readonly #bindDone: Notifier;
  readonly #received: Notifier;
  readonly #sent: Notifier;
  #state: _State = { tag: "unbound" };
  #queue: IncomingDatagram[] = [];
  #queuedBytes = 0;
  /** Datagrams accepted and not yet handed to the system. */
  #inFlight = 0;
  #outbox: [Uint8Array, number, string][] = [];
  #sending = false;
  #remote: IpSocketAddress | null = null;
  /** Increases at each `stream`: older streams stop working. */
  #generation = 0;
  #hopLimit = 64;
  #receiveBuffer: bigint | null = null;
  #sendBuffer: bigint | null = null;
  #disposed = false;
  #closeAfterSends: (() => void) | null = null;

  /** Not for guests: sockets come from `create-udp-socket`. */
  constructor(token: symbol, process: NetworkProcess, family: IpAddressFamily) {
    if (token !== SOCKETS_TOKEN) throw new TypeError("UdpSocket has no public constructor");
    this.#process = process;
    this.#family = family;
    this.#bindDone = new Notifier(process);
    this.#received = new Notifier(process);
    this.#sent = new Notifier(process);
    process.track(this);
  }

  /** Begins binding to a local address; {@linkcode finishBind} takes the result. */
  startBind(network: unknown, localAddress: IpSocketAddress): void {
    checkBind(network, localAddress, this.#family);
    if (this.#state.tag !== "unbound") throw "invalid-state";
    const socket = dgram.createSocket({
      type: this.#family === "ipv4" ? "udp4" : "udp6",
      ipv6Only: this.#family === "ipv6",
    });
    const state: _State = { tag: "bind-started", socket, error: null, done: false };
    this.#state = state;
    const onError = (error: unknown) => {
      if (state.done) return; // errors of sends after the bind are lost, as for any UDP send
      state.done = true;
      state.error = error;
      this.#bindDone.notify();
    };
    socket.on("error", onError);
    socket.on("message", (message: Uint8Array, from: dgram.RemoteInfo) => {
      this.#receive(message, from);
    });
    const { hostname, port } = toHostAddress(localAddress);
    try {
      socket.bind({ address: hostname, port, exclusive: true }, () => {
        if (state.done) return;
        state.done = true;
        this.#bindDone.notify();
      });
    } catch (e) {
      onError(e);
    }
  }

  /** Completes {@linkcode startBind}, or `would-block` while it runs. */
  finishBind(): void {
    const state = this.#state;
    if (state.tag !== "bind-started") throw "not-in-progress";
    if (!state.done) throw "would-block";
    if (state.error !== null) {
      _close(state.socket);
      this.#state = { tag: "unbound" };
      throw socketErrorCode(state.error);
    }
    this.#state = { tag: "bound", socket: state.socket };
    this.#applyOptions(state.socket);
  }

  /** The streams of datagrams; with `remoteAddress`, only to and from that address. */
  stream(
    remoteAddress: IpSocketAddress | undefined,
  ): [IncomingDatagramStream, OutgoingDatagramStream] {
    if (this.#state.tag !== "bound") throw "invalid-state";
    if (remoteAddress !== undefined) {
      checkAddress(remoteAddress);
      if (
        !isUnicast(remoteAddress) || !isValidRemote(remoteAddress) ||
        !fitsFamily(remoteAddress, this.#family)
      ) throw "invalid-argument";
    }
    this.#remote = remoteAddress ?? null;
    if (this.#remote) {
      const remote = this.#remote;
      this.#queue = this.#queue.filter((d) => _sameAddress(d.remoteAddress, remote));
      this.#queuedBytes = this.#queue.reduce((n, d) => n + d.data.length, 0);
    }
    const generation = ++this.#generation;
    return [
      new IncomingDatagramStream(SOCKETS_TOKEN, this, generation),
      new OutgoingDatagramStream(SOCKETS_TOKEN, this, generation),
    ];
  }

  /** The bound address. */
  localAddress(): IpSocketAddress {
    const state = this.#state;
    if (state.tag !== "bound") throw "invalid-state";
    const { address, port } = state.socket.address();
    return fromHostAddress(address, port);
  }

  /** The address given to {@linkcode stream}. */
  remoteAddress(): IpSocketAddress {
    if (this.#state.tag !== "bound" || this.#remote === null) throw "invalid-state";
    return structuredClone(this.#remote);
  }

  /** The address family of the socket. */
  addressFamily(): IpAddressFamily {
    return this.#family;
  }

  /** The hop limit (TTL) of outgoing datagrams. */
  unicastHopLimit(): number {
    this.#open();
    return this.#hopLimit;
  }

  /** Sets the hop limit; 0 is `invalid-argument`. */
  setUnicastHopLimit(value: number): void {
    const state = this.#open();
    if (value === 0) throw "invalid-argument";
    if (state.tag === "bound") {
      try {
        state.socket.setTTL(value);
      } catch (e) {
        throw _optionError(e);
      }
    }
    this.#hopLimit = value;
  }

  /** The size of the receive buffer. */
  receiveBufferSize(): bigint {
    const state = this.#open();
    if (state.tag === "bound") return _reported(() => state.socket.getRecvBufferSize());
    return this.#receiveBuffer ?? 212992n / 2n;
  }

  /** Sets the size of the receive buffer (a hint); 0 is `invalid-argument`. */
  setReceiveBufferSize(value: bigint): void {
    const state = this.#open();
    const size = _bufferSize(value);
    if (state.tag === "bound") _apply(() => state.socket.setRecvBufferSize(size));
    this.#receiveBuffer = BigInt(size);
  }

  /** The size of the send buffer. */
  sendBufferSize(): bigint {
    const state = this.#open();
    if (state.tag === "bound") return _reported(() => state.socket.getSendBufferSize());
    return this.#sendBuffer ?? 212992n / 2n;
  }

  /** Sets the size of the send buffer (a hint); 0 is `invalid-argument`. */
  setSendBufferSize(value: bigint): void {
    const state = this.#open();
    const size = _bufferSize(value);
    if (state.tag === "bound") _apply(() => state.socket.setSendBufferSize(size));
    this.#sendBuffer = BigInt(size);
  }

  /** Ready when a bind has settled. */
  subscribe(): Pollable {
    return new Pollable(
      () => this.#state.tag !== "bind-started" || this.#state.done,
      () => this.#bindDone.wait(),
    );
  }

  #open(): _State {
    if (this.#state.tag === "closed") throw "invalid-state";
    return this.#state;
  }

  #applyOptions(socket: dgram.Socket): void {
    if (this.#hopLimit !== 64) _apply(() => socket.setTTL(this.#hopLimit));
    if (this.#receiveBuffer !== null) {
      _apply(() => socket.setRecvBufferSize(Number(this.#receiveBuffer)));
    }
    if (this.#sendBuffer !== null) _apply(() => socket.setSendBufferSize(Number(this.#sendBuffer)));
  }

  #receive(message: Uint8Array, from: dgram.RemoteInfo): void {
    if (this.#state.tag !== "bound" && this.#state.tag !== "bind-started") return;
    let remoteAddress: IpSocketAddress;
    try {
      remoteAddress = fromHostAddress(from.address, from.port);
    } catch {
      return;
    }
    if (this.#remote && !_sameAddress(remoteAddress, this.#remote)) return;
    if (
      this.#queue.length >= MAX_QUEUED_DATAGRAMS ||
      this.#queuedBytes + message.length > MAX_QUEUED_BYTES
    ) return;
    this.#queue.push({ data: new Uint8Array(message), remoteAddress });
    this.#queuedBytes += message.length;
    this.#received.notify();
  }

  // --- used by the streams

  /** @internal */
  _live(generation: number): boolean {
    return generation === this.#generation && this.#state.tag === "bound";
  }

  /** @internal */
  _take(max: number): IncomingDatagram[] {
    const out = this.#queue.splice(0, max);
    for (const d of out) this.#queuedBytes -= d.data.length;
    return out;
  }

  /** @internal */
  _hasDatagrams(): boolean {
    return this.#queue.length > 0;
  }

  /** @internal */
  _whenReceived(): Promise<void> {
    return this.#received.wait();
  }

  /** @internal */
  _room(): number {
    return Math.max(0, Math.min(PERMIT, MAX_SENDS_IN_FLIGHT - this.#inFlight));
  }

  /** @internal */
  _whenSent(): Promise<void> {
    return this.#sent.wait();
  }

  /** Sends one datagram; throws an `error-code` for a datagram that cannot be sent. */
  _send(datagram: OutgoingDatagram): void {
    const state = this.#state;
    if (state.tag !== "bound") throw "invalid-state";
    if (!(datagram.data instanceof Uint8Array)) throw "invalid-argument";
    if (datagram.data.length > MAX_PAYLOAD[this.#family]) throw "datagram-too-large";
    const given = datagram.remoteAddress;
    let to: IpSocketAddress;
    if (this.#remote) {
      if (given && !_sameAddress(given, this.#remote)) throw "invalid-argument";
      to = this.#remote;
    } else {
      if (!given) throw "invalid-argument";
      checkAddress(given);
      to = given;
    }
    if (!isUnicast(to) || !isValidRemote(to) || !fitsFamily(to, this.#family)) {
      throw "invalid-argument";
    }
    const { hostname, port } = toHostAddress(to);
    this.#inFlight++;
    this.#outbox.push([datagram.data, port, hostname]);
    this.#sendNext(state.socket);
  }

  /**
   * Sends queued datagrams one at a time: Node resolves the address of each
   * send asynchronously, and sends in flight together may leave out of order.
   */
  #sendNext(socket: dgram.Socket): void {
    if (this.#sending) return;
    const next = this.#outbox.shift();
    if (!next) {
      this.#closeAfterSends?.();
      return;
    }
    this.#sending = true;
    const done = () => {
      this.#sending = false;
      this.#inFlight--;
      this.#sent.notify();
      this.#sendNext(socket);
    };
    try {
      socket.send(next[0], next[1], next[2], done);
    } catch {
      // the socket closed under the send: the datagram is lost, as UDP allows
      done();
    }
  }

  /** Closes the host socket (the process ended), once the datagrams sent so far are out. */
  close(): void {
    const state = this.#state;
    this.#state = { tag: "closed" };
    this.#process.untrack(this);
    this.#queue = [];
    this.#queuedBytes = 0;
    if (state.tag === "bound" || state.tag === "bind-started") {
      if (this.#inFlight === 0) _close(state.socket);
      else {
        // a send is asynchronous in Node: closing now would drop what the guest sent last
        const timer = setTimeout(() => this.#closeAfterSends?.(), SEND_DRAIN_MS);
        this.#closeAfterSends = () => {
          clearTimeout(timer);
          this.#closeAfterSends = null;
          _close(state.socket);
        };
      }
    }
    this.#bindDone.notify();
    this.#received.notify();
    this.#sent.notify();
  }

  /** Called by jco when the guest drops the socket. */
  [Symbol.dispose](): void {
    if (this.#disposed) return;
    this.#disposed = true;
    this.#process.returnSocket();
    this.close();
  }
}

/** `wasi:sockets/udp.incoming-datagram-stream`. */
export class IncomingDatagramStream {
  readonly #socket: UdpSocket;
  readonly #generation: number;

  /** Not for guests: streams come from `udp-socket.stream`. */
  constructor(token: symbol, socket: UdpSocket, generation: number) {
    if (token !== SOCKETS_TOKEN) {
      throw new TypeError("IncomingDatagramStream has no public constructor");
    }
    this.#socket = socket;
    this.#generation = generation;
  }

  /** Up to `maxResults` datagrams that have arrived; an empty list when none has. */
  receive(maxResults: bigint): IncomingDatagram[] {
    if (!this.#socket._live(this.#generation)) throw "invalid-state";
    if (maxResults === 0n) return [];
    return this.#socket._take(maxResults > 1024n ? 1024 : Number(maxResults));
  }

  /** Ready when a datagram is waiting (or the stream no longer works). */
  subscribe(): Pollable {
    return new Pollable(
      () => this.#socket._hasDatagrams() || !this.#socket._live(this.#generation),
      () => this.#socket._whenReceived(),
    );
  }

  /** Called by jco when the guest drops the stream. */
  [Symbol.dispose](): void {}
}

/** `wasi:sockets/udp.outgoing-datagram-stream`. */
export class OutgoingDatagramStream {
  readonly #socket: UdpSocket;
  readonly #generation: number;
  #permitted = 0;

  /** Not for guests: streams come from `udp-socket.stream`. */
  constructor(token: symbol, socket: UdpSocket, generation: number) {
    if (token !== SOCKETS_TOKEN) {
      throw new TypeError("OutgoingDatagramStream has no public constructor");
    }
    this.#socket = socket;
    this.#generation = generation;
  }

  /** How many datagrams the next {@linkcode send} may take. */
  checkSend(): bigint {
    if (!this.#socket._live(this.#generation)) throw "invalid-state";
    this.#permitted = this.#socket._room();
    return BigInt(this.#permitted);
  }

  /** Sends datagrams; returns how many were sent (the first that fails ends the batch). */
  send(datagrams: OutgoingDatagram[]): bigint {
    if (!this.#socket._live(this.#generation)) throw "invalid-state";
    if (datagrams.length === 0) return 0n;
    if (datagrams.length > this.#permitted) {
      // WASI: sending more than check-send permitted traps
      throw new Error("wasi:sockets/udp send: more datagrams than check-send permitted");
    }
    this.#permitted = 0;
    let sent = 0;
    for (const datagram of datagrams) {
      try {
        this.#socket._send(datagram);
      } catch (e) {
        if (sent > 0) break; // WASI: once one was sent, no error is reported
        throw e;
      }
      sent++;
    }
    return BigInt(sent);
  }

  /** Ready when {@linkcode checkSend} would permit a datagram. */
  subscribe(): Pollable {
    return new Pollable(
      () => this.#socket._room() > 0 || !this.#socket._live(this.#generation),
      () => this.#socket._whenSent(),
    );
  }

  /** Called by jco when the guest drops the stream. */
  [Symbol.dispose](): void {}
}

function _sameAddress(a: IpSocketAddress, b: IpSocketAddress): boolean {
  return a.tag === b.tag && a.val.port === b.val.port &&
    a.val.address.every((x, i) => x === b.val.address[i]);
}

function _close(socket: dgram.Socket): void {
  try {
    socket.close();
  } catch {
    // Not running (the bind failed) or already closed.
  }
}

function _bufferSize(value: bigint): number {
  if (value === 0n) throw "invalid-argument";
  return value > 0x7fffffffn ? 0x7fffffff : Number(value);
}

/** Linux doubles a buffer size it is given; report it halved, as Wasmtime does. */
function _reported(get: () => number): bigint {
  try {
    return BigInt(Math.floor(get() / 2));
  } catch (e) {
    throw _optionError(e);
  }
}

/** Buffer sizes are hints: a refusal by the system is not an error (as in Wasmtime). */
function _apply(set: () => void): void {
  try {
    set();
  } catch {
    // The system keeps its own size.
  }
}

function _optionError(e: unknown): string {
  try {
    return socketErrorCode(e);
  } catch {
    return "not-supported";
  }
}

/** The `wasi:sockets/udp` and `udp-create-socket` interfaces of one process. */
export function udpInterfaces(process: NetworkProcess): Record<string, Record<string, unknown>> {
  return {
    "wasi:sockets/udp": { UdpSocket, IncomingDatagramStream, OutgoingDatagramStream },
    "wasi:sockets/udp-create-socket": {
      createUdpSocket(addressFamily: IpAddressFamily): UdpSocket {
        if (addressFamily !== "ipv4" && addressFamily !== "ipv6") throw "not-supported";
        process.takeSocket();
        return new UdpSocket(SOCKETS_TOKEN, process, addressFamily);
      },
    },
  };
}
