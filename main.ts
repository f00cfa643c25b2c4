/**
 * `sausage`: runs a world of small WebAssembly programs that an agent grows
 * by talking to it. See the README and `sausage --help`.
 *
 * @module
 */
import { main } from "./cli/cli.ts";

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
