/**
 * The WASI interfaces Sausage provides to plugins. A component that imports
 * anything else is refused before it runs, with the names of what is missing.
 *
 * @module
 */

import { NETWORK_INTERFACES } from "./network.ts";

/** Interface names without versions (jco's form of an import). */
export const PROVIDED_INTERFACES: ReadonlySet<string> = new Set([
  ...NETWORK_INTERFACES,
  "wasi:cli/environment",
  "wasi:cli/exit",
  "wasi:cli/stdin",
  "wasi:cli/stdout",
  "wasi:cli/stderr",
  "wasi:cli/terminal-input",
  "wasi:cli/terminal-output",
  "wasi:cli/terminal-stdin",
  "wasi:cli/terminal-stdout",
  "wasi:cli/terminal-stderr",
  "wasi:clocks/monotonic-clock",
  "wasi:clocks/wall-clock",
  "wasi:filesystem/preopens",
  "wasi:filesystem/types",
  "wasi:io/error",
  "wasi:io/poll",
  "wasi:io/streams",
  "wasi:random/insecure",
  "wasi:random/insecure-seed",
  "wasi:random/random",
]);
