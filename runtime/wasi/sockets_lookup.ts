/**
 * `wasi:sockets/ip-name-lookup` 0.2, with the system resolver.
 *
 * Names go through `node:dns` `lookup`, which calls `getaddrinfo`: it reads
 * `/etc/hosts` (so `localhost` works) and the system's resolver settings,
 * as the native programs of the machine do. `Deno.resolveDns` would ask DNS
 * servers directly and miss the hosts file.
 *
 * As in Wasmtime, a name is checked (and turned into punycode) by URL host
 * rules first, and an IP literal resolves to itself without a lookup.
 * At most `MAX_LOOKUPS_PER_PROCESS` lookups of a process run at once; more
 * fail with `temporary-resolver-failure` (a lookup cannot be cancelled, and
 * each one holds a thread of the host's resolver pool).
 *
 * @module
 */
import { lookup } from "node:dns";
import { Pollable } from "./io.ts";
import { type NetworkProcess, Notifier } from "./network_process.ts";
import {
  checkNetwork,
  type ErrorCode,
  type IpAddress,
  parseIp,
  SOCKETS_TOKEN,
} from "./sockets_network.ts";

/** `getaddrinfo` failures, by Node's code, to `error-code`s. */
const _LOOKUP_CODES: Record<string, ErrorCode> = {
  ENOTFOUND: "name-unresolvable",
  ENODATA: "name-unresolvable",
  EAI_NONAME: "name-unresolvable",
  EAI_NODATA: "name-unresolvable",
  EAI_ADDRFAMILY: "name-unresolvable",
  EAI_AGAIN: "temporary-resolver-failure",
  ETIMEOUT: "temporary-resolver-failure",
  ECONNREFUSED: "temporary-resolver-failure",
  EAI_FAIL: "permanent-resolver-failure",
  EAI_MEMORY: "out-of-memory",
  EACCES: "access-denied",
  EPERM: "access-denied",
};

/** `wasi:sockets/ip-name-lookup.resolve-address-stream`. */
export class ResolveAddressStream {
  readonly #done: Notifier;
  #addresses: IpAddress[] | null = null;
  #error: ErrorCode | null = null;
  #next = 0;

  /** Not for guests: streams come from `resolve-addresses`. */
  constructor(token: symbol, process: NetworkProcess, name: string | IpAddress) {
    if (token !== SOCKETS_TOKEN) {
      throw new TypeError("ResolveAddressStream has no public constructor");
    }
    this.#done = new Notifier(process);
    if (typeof name !== "string") {
      this.#addresses = [name];
      return;
    }
    lookup(name, { all: true, order: "verbatim" }, (err, found) => {
      process.returnLookup();
      if (err) {
        const code = (err as { code?: string }).code ?? "";
        this.#error = _LOOKUP_CODES[code] ?? "permanent-resolver-failure";
      } else {
        const seen = new Set<string>();
        this.#addresses = [];
        for (const { address } of found) {
          const ip = parseIp(address);
          if (ip === null || seen.has(address)) continue;
          seen.add(address);
          this.#addresses.push(ip);
        }
      }
      this.#done.notify();
    });
  }

  /** The next address; `undefined` after the last; `would-block` while the lookup runs. */
  resolveNextAddress(): IpAddress | undefined {
    if (this.#error !== null) throw this.#error;
    if (this.#addresses === null) throw "would-block";
    return this.#addresses[this.#next++];
  }

  /** Ready when the lookup has finished. */
  subscribe(): Pollable {
    return new Pollable(
      () => this.#addresses !== null || this.#error !== null,
      () => this.#done.wait(),
    );
  }

  /** Called by jco when the guest drops the stream (a running lookup finishes unseen). */
  [Symbol.dispose](): void {}
}

/**
 * Checks a name as a URL host and returns what to look up: a name in ASCII
 * (punycode), or the IP address it already is. Throws `invalid-argument`.
 */
export function checkName(name: string): string | IpAddress {
  if (name.length === 0 || name.length > 1024) throw "invalid-argument";
  const literal = parseIp(name);
  if (literal) return literal;
  // only a host: nothing a URL would read as a port, a path, a user or a query
  if (/[\s/?#@:\\[\]%]/.test(name)) throw "invalid-argument";
  let host: string;
  try {
    host = new URL(`http://${name}/`).hostname;
  } catch {
    throw "invalid-argument";
  }
  // the URL parser reads forms like "127.1" or "0x7f.1" as IPv4: they are literals too
  const parsed = parseIp(host);
  if (parsed) return parsed;
  if (host.length > 253) throw "invalid-argument"; // longer than DNS allows
  return host;
}

/** The `wasi:sockets/ip-name-lookup` interface of one process. */
export function lookupInterfaces(process: NetworkProcess): Record<string, Record<string, unknown>> {
  return {
    "wasi:sockets/ip-name-lookup": {
      ResolveAddressStream,
      resolveAddresses(network: unknown, name: string): ResolveAddressStream {
        checkNetwork(network);
        const target = checkName(name);
        if (typeof target === "string" && !process.takeLookup()) {
          throw "temporary-resolver-failure";
        }
        return new ResolveAddressStream(SOCKETS_TOKEN, process, target);
      },
    },
  };
}
