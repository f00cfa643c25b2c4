/**
 * The network of a process: `wasi:sockets` and `wasi:http` (outgoing).
 *
 * Every process gets the network (PROTOCOL 3.8). The interfaces live beside
 * this file, one module each, as Wasmtime's host has them:
 *
 * - `sockets_network.ts`: `network`, `instance-network`, addresses, errors
 * - `sockets_tcp.ts`: `tcp`, `tcp-create-socket` (Deno's TCP API)
 * - `sockets_udp.ts`: `udp`, `udp-create-socket` (`node:dgram`)
 * - `sockets_lookup.ts`: `ip-name-lookup` (the system resolver)
 * - `http_fields.ts`, `http_types.ts`: `wasi:http/types`
 * - `http_outgoing.ts`: `outgoing-handler` (`fetch`)
 * - `network_process.ts`: what one process holds, its limits, its waits
 *
 * Every wait of a guest on the network ends with the process (its `kill`
 * signal), and every completion wakes the worker's scheduler. When the
 * process ends, {@linkcode releaseNetwork} closes what it still holds.
 *
 * @module
 */
import { NetworkProcess } from "./network_process.ts";
import { httpTypesInterface } from "./http_types.ts";
import { outgoingHandlerInterface } from "./http_outgoing.ts";
import { lookupInterfaces } from "./sockets_lookup.ts";
import { networkInterfaces } from "./sockets_network.ts";
import { tcpInterfaces } from "./sockets_tcp.ts";
import { udpInterfaces } from "./sockets_udp.ts";

/** Interfaces of the network that Sausage provides (names without versions). */
export const NETWORK_INTERFACES: readonly string[] = [
  "wasi:sockets/network",
  "wasi:sockets/instance-network",
  "wasi:sockets/tcp",
  "wasi:sockets/tcp-create-socket",
  "wasi:sockets/udp",
  "wasi:sockets/udp-create-socket",
  "wasi:sockets/ip-name-lookup",
  "wasi:http/types",
  "wasi:http/outgoing-handler",
];

/** What the network of one process needs from its worker. */
export interface NetworkOptions {
  /** Aborts every wait of the process (it was killed). */
  kill?: AbortSignal;
  /** Runs when network I/O wakes the process (the worker notes a new task). */
  onWake?: () => void;
}

/** The processes whose imports {@linkcode networkImports} made, to release them. */
const _processes = new WeakMap<object, NetworkProcess>();

/**
 * The network interfaces of one process.
 *
 * @example
 * ```ts
 * import { networkImports, releaseNetwork } from "./network.ts";
 * const kill = new AbortController();
 * const imports = networkImports({ kill: kill.signal });
 * // ... instantiate the component with { ...imports, ... }, run it, then:
 * releaseNetwork(imports);
 * ```
 */
export function networkImports(options: NetworkOptions): Record<string, Record<string, unknown>> {
  const process = new NetworkProcess(options);
  const imports = {
    ...networkInterfaces(process),
    ...tcpInterfaces(process),
    ...udpInterfaces(process),
    ...lookupInterfaces(process),
    "wasi:http/types": httpTypesInterface(process),
    "wasi:http/outgoing-handler": outgoingHandlerInterface(process),
  };
  _processes.set(imports, process);
  return imports;
}

/**
 * Closes every socket and request the process of `imports` still holds.
 * Call it when the process ends: a guest that exits drops nothing. What a
 * connection still has to send goes out first (briefly), as after a close.
 */
export function releaseNetwork(imports: object): void {
  _processes.get(imports)?.release();
}
