/**
 * `wasi:sockets` 0.2: `network` and `instance-network`, and what the other
 * socket interfaces share: addresses, their checks, and the mapping of host
 * errors to `error-code`s (as Wasmtime maps `errno`s).
 *
 * Conventions of jco: a `result` returns its value or throws the error code
 * string; addresses are `{ tag, val }` variants; `u64` is a bigint.
 *
 * @module
 */
import type { NetworkProcess } from "./network_process.ts";

/** `wasi:sockets/network.error-code`. */
export type ErrorCode =
  | "unknown"
  | "access-denied"
  | "not-supported"
  | "invalid-argument"
  | "out-of-memory"
  | "timeout"
  | "concurrency-conflict"
  | "not-in-progress"
  | "would-block"
  | "invalid-state"
  | "new-socket-limit"
  | "address-not-bindable"
  | "address-in-use"
  | "remote-unreachable"
  | "connection-refused"
  | "connection-reset"
  | "connection-aborted"
  | "datagram-too-large"
  | "name-unresolvable"
  | "temporary-resolver-failure"
  | "permanent-resolver-failure";

/** `wasi:sockets/network.ip-address-family`. */
export type IpAddressFamily = "ipv4" | "ipv6";

/** `wasi:sockets/network.ipv4-address`. */
export type Ipv4Address = [number, number, number, number];
/** `wasi:sockets/network.ipv6-address`. */
export type Ipv6Address = [number, number, number, number, number, number, number, number];

/** `wasi:sockets/network.ip-address`. */
export type IpAddress = { tag: "ipv4"; val: Ipv4Address } | { tag: "ipv6"; val: Ipv6Address };

/** `wasi:sockets/network.ipv4-socket-address`. */
export interface Ipv4SocketAddress {
  port: number;
  address: Ipv4Address;
}

/** `wasi:sockets/network.ipv6-socket-address`. */
export interface Ipv6SocketAddress {
  port: number;
  flowInfo: number;
  address: Ipv6Address;
  scopeId: number;
}

/** `wasi:sockets/network.ip-socket-address`. */
export type IpSocketAddress =
  | { tag: "ipv4"; val: Ipv4SocketAddress }
  | { tag: "ipv6"; val: Ipv6SocketAddress };

/** Guards the constructors of the resources: only this host makes them. */
export const SOCKETS_TOKEN: unique symbol = Symbol("wasi:sockets");

/** `wasi:sockets/network.network`: the capability to use the network. */
export class Network {
  /** The process the network belongs to. */
  readonly process: NetworkProcess;

  /** Not for guests: the network comes from `instance-network`. */
  constructor(token: symbol, process: NetworkProcess) {
    if (token !== SOCKETS_TOKEN) throw new TypeError("Network has no public constructor");
    this.process = process;
  }

  /** Called by jco when the guest drops the network. */
  [Symbol.dispose](): void {}
}

/** Throws `invalid-argument` unless `network` is a network handle. */
export function checkNetwork(network: unknown): void {
  if (!(network instanceof Network)) throw "invalid-argument";
}

/** A host address (`hostname` as Deno and Node take it) and port. */
export interface HostAddress {
  hostname: string;
  port: number;
}

/** The host form of a WASI socket address. */
export function toHostAddress(address: IpSocketAddress): HostAddress {
  if (address.tag === "ipv4") {
    return { hostname: address.val.address.join("."), port: address.val.port };
  }
  return { hostname: formatIpv6(address.val.address), port: address.val.port };
}

/** The WASI socket address of a host address; IPv4-mapped IPv6 stays IPv6 on an IPv6 socket. */
export function fromHostAddress(hostname: string, port: number): IpSocketAddress {
  const ip = parseIp(hostname);
  if (ip === null) throw new Error(`the host reported an address that is not an IP: ${hostname}`);
  if (ip.tag === "ipv4") return { tag: "ipv4", val: { port, address: ip.val } };
  return { tag: "ipv6", val: { port, flowInfo: 0, address: ip.val, scopeId: 0 } };
}

/** The family of a WASI socket address. */
export function familyOf(address: IpSocketAddress): IpAddressFamily {
  return address.tag;
}

/** Checks the shape of an address from a guest; `invalid-argument` when it is malformed. */
export function checkAddress(address: IpSocketAddress): void {
  const { port } = address.val;
  if (!Number.isInteger(port) || port < 0 || port > 0xffff) throw "invalid-argument";
}

/** Not multicast, not broadcast: an address a socket may bind or talk to. */
export function isUnicast(address: IpSocketAddress): boolean {
  if (address.tag === "ipv4") {
    const a = address.val.address;
    if (a[0] >= 224 && a[0] <= 239) return false;
    return !(a[0] === 255 && a[1] === 255 && a[2] === 255 && a[3] === 255);
  }
  const v4 = _mappedIpv4(address.val.address);
  if (v4) return isUnicast({ tag: "ipv4", val: { port: 0, address: v4 } });
  return (address.val.address[0] & 0xff00) !== 0xff00;
}

/** A remote address must name a host and a port. */
export function isValidRemote(address: IpSocketAddress): boolean {
  if (address.val.port === 0) return false;
  if (address.tag === "ipv4") return address.val.address.some((x) => x !== 0);
  const v4 = _mappedIpv4(address.val.address);
  if (v4) return v4.some((x) => x !== 0);
  return address.val.address.some((x) => x !== 0);
}

/**
 * Whether `address` fits a socket of `family`. IPv6 sockets refuse
 * IPv4-mapped and the deprecated IPv4-compatible addresses, as in Wasmtime.
 */
export function fitsFamily(address: IpSocketAddress, family: IpAddressFamily): boolean {
  if (address.tag !== family) return false;
  if (address.tag === "ipv4") return true;
  const a = address.val.address;
  if (_mappedIpv4(a)) return false;
  const compatible = a.slice(0, 6).every((x) => x === 0) &&
    !(a[6] === 0 && (a[7] === 0 || a[7] === 1));
  return !compatible;
}

/** The checks of `start-bind` common to TCP and UDP: the network, then the local address. */
export function checkBind(
  network: unknown,
  localAddress: IpSocketAddress,
  family: IpAddressFamily,
): void {
  checkNetwork(network);
  checkAddress(localAddress);
  if (!isUnicast(localAddress) || !fitsFamily(localAddress, family)) {
    throw "invalid-argument";
  }
}

/** The IPv4 address inside an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`), or null. */
function _mappedIpv4(a: Ipv6Address): Ipv4Address | null {
  if (a.slice(0, 5).some((x) => x !== 0) || a[5] !== 0xffff) return null;
  return [a[6] >> 8, a[6] & 0xff, a[7] >> 8, a[7] & 0xff];
}

/** An IPv6 address in its canonical text form (RFC 5952). */
export function formatIpv6(a: readonly number[]): string {
  // the longest run of two or more zero groups becomes "::"
  let best = -1;
  let bestLength = 1;
  for (let i = 0; i < 8;) {
    if (a[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && a[j] === 0) j++;
    if (j - i > bestLength) {
      best = i;
      bestLength = j - i;
    }
    i = j;
  }
  const hex = (xs: readonly number[]) => xs.map((x) => x.toString(16)).join(":");
  if (best < 0) return hex(a);
  return `${hex(a.slice(0, best))}::${hex(a.slice(best + bestLength))}`;
}

/** Parses an IPv4 or IPv6 literal (a zone suffix `%…` is dropped); null when it is neither. */
export function parseIp(text: string): IpAddress | null {
  const v4 = _parseIpv4(text);
  if (v4) return { tag: "ipv4", val: v4 };
  const v6 = _parseIpv6(text);
  return v6 ? { tag: "ipv6", val: v6 } : null;
}

function _parseIpv4(text: string): Ipv4Address | null {
  const parts = text.split(".");
  if (parts.length !== 4) return null;
  const out: number[] = [];
  for (const p of parts) {
    if (!/^(?:0|[1-9]\d{0,2})$/.test(p)) return null;
    const n = Number(p);
    if (n > 255) return null;
    out.push(n);
  }
  return out as Ipv4Address;
}

function _parseIpv6(input: string): Ipv6Address | null {
  let text = input;
  const zone = text.indexOf("%");
  if (zone >= 0) text = text.slice(0, zone);
  if (text.startsWith("[") && text.endsWith("]")) text = text.slice(1, -1);
  if (!/^[0-9a-fA-F:.]+$/.test(text)) return null;
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const groups = (s: string): number[] | null => {
    if (s === "") return [];
    const out: number[] = [];
    const parts = s.split(":");
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i];
      if (i === parts.length - 1 && p.includes(".")) {
        const v4 = _parseIpv4(p);
        if (!v4) return null;
        out.push((v4[0] << 8) | v4[1], (v4[2] << 8) | v4[3]);
      } else {
        if (!/^[0-9a-fA-F]{1,4}$/.test(p)) return null;
        out.push(parseInt(p, 16));
      }
    }
    return out;
  };
  const head = groups(halves[0]);
  const tail = halves.length === 2 ? groups(halves[1]) : [];
  if (!head || !tail) return null;
  if (halves.length === 1) return head.length === 8 ? (head as Ipv6Address) : null;
  const missing = 8 - head.length - tail.length;
  if (missing < 1) return null;
  return [...head, ...new Array(missing).fill(0), ...tail] as Ipv6Address;
}

/** `errno` names to `error-code`s, as Wasmtime maps them. */
const _CODES: Record<string, ErrorCode> = {
  EPERM: "access-denied",
  EACCES: "access-denied",
  EADDRINUSE: "address-in-use",
  EADDRNOTAVAIL: "address-not-bindable",
  ETIMEDOUT: "timeout",
  ECONNREFUSED: "connection-refused",
  ECONNRESET: "connection-reset",
  ECONNABORTED: "connection-aborted",
  EPIPE: "connection-reset",
  EINVAL: "invalid-argument",
  EHOSTUNREACH: "remote-unreachable",
  EHOSTDOWN: "remote-unreachable",
  ENETDOWN: "remote-unreachable",
  ENETUNREACH: "remote-unreachable",
  ENONET: "remote-unreachable",
  EISCONN: "invalid-state",
  ENOTCONN: "invalid-state",
  EDESTADDRREQ: "invalid-state",
  EMSGSIZE: "datagram-too-large",
  ENOMEM: "out-of-memory",
  ENOBUFS: "out-of-memory",
  EOPNOTSUPP: "not-supported",
  ENOPROTOOPT: "not-supported",
  EPFNOSUPPORT: "not-supported",
  EPROTONOSUPPORT: "not-supported",
  EPROTOTYPE: "not-supported",
  ESOCKTNOSUPPORT: "not-supported",
  EAFNOSUPPORT: "not-supported",
  // WASI 0.2 has no EMFILE for sockets: the closest is the socket limit
  EMFILE: "new-socket-limit",
  ENFILE: "new-socket-limit",
};

/** Deno's error classes without an `errno` name, by class name. */
const _BY_NAME: Record<string, ErrorCode> = {
  PermissionDenied: "access-denied",
  NotCapable: "access-denied",
  AddrInUse: "address-in-use",
  AddrNotAvailable: "address-not-bindable",
  TimedOut: "timeout",
  ConnectionRefused: "connection-refused",
  ConnectionReset: "connection-reset",
  ConnectionAborted: "connection-aborted",
  BrokenPipe: "connection-reset",
  NotConnected: "invalid-state",
  NetworkUnreachable: "remote-unreachable",
  InvalidData: "invalid-argument",
};

/**
 * The `error-code` of a host error (a Deno or Node error with an `errno`
 * name). A string is taken as a code already. Any other value is a bug: it
 * is thrown on, and jco turns it into a trap.
 */
export function socketErrorCode(e: unknown): ErrorCode {
  if (typeof e === "string") return e as ErrorCode;
  if (e instanceof Error) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && code in _CODES) return _CODES[code];
    if (e.name in _BY_NAME) return _BY_NAME[e.name];
    if (typeof code === "string" || _isDenoError(e)) return "unknown";
  }
  throw e;
}

function _isDenoError(e: Error): boolean {
  return Object.values(Deno.errors).some((cls) => e instanceof cls);
}

/** The `wasi:sockets/network` and `instance-network` interfaces of one process. */
export function networkInterfaces(
  process: NetworkProcess,
): Record<string, Record<string, unknown>> {
  const network = new Network(SOCKETS_TOKEN, process);
  return {
    "wasi:sockets/network": { Network },
    "wasi:sockets/instance-network": { instanceNetwork: () => network },
  };
}
