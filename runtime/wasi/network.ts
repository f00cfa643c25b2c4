/**
 * The network of a process: `wasi:sockets` and `wasi:http` (outgoing).
 *
 * @module
 */

/** Interfaces of the network that Sausage provides (names without versions). */
export const NETWORK_INTERFACES: readonly string[] = [];

/** What the network of one process needs from its worker. */
export interface NetworkOptions {
  /** Aborts every wait of the process (it was killed). */
  kill?: AbortSignal;
  /** Runs when network I/O wakes the process (the worker notes a new task). */
  onWake?: () => void;
}

/** The network interfaces of one process. */
export function networkImports(_options: NetworkOptions): Record<string, Record<string, unknown>> {
  return {};
}

/** Closes every socket and request the process of `imports` still holds. */
export function releaseNetwork(_imports: object): void {}
