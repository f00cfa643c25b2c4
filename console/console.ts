/**
 * The console of `sausage [WORLD]`: the person's way into a running world.
 *
 * With stdin a terminal it is interactive (see `terminal.ts`): a prompt with
 * line editing and history, calls side by side. Otherwise it reads a script
 * (see `script.ts`): one command a line, in order. The commands are in
 * `parse.ts`, what they print in `format.ts`, `methods.ts` (interfaces)
 * and `files.ts` (`ls`, `cat`).
 *
 * Colours are on when stdout is a terminal (or `FORCE_COLOR` is set) and
 * `NO_COLOR` is not.
 *
 * @module
 */
import pc from "picocolors";
import type { Host } from "../core/host.ts";
import { makeStyle } from "./format.ts";
import { runScript } from "./script.ts";
import { runTerminal } from "./terminal.ts";

/** Whether the console prints colours. */
export function colorsEnabled(): boolean {
  return pc.isColorSupported && (Deno.stdout.isTerminal() || !!Deno.env.get("FORCE_COLOR"));
}

/**
 * Runs the console on a started host until `quit`, Ctrl-D or the end of the
 * script, and returns the exit code: 0, 75 after `core.exit`, or 130/143
 * after SIGINT/SIGTERM. The caller shuts the host down.
 */
export async function runConsole(host: Host): Promise<number> {
  const client = host.client("console");
  const style = makeStyle(colorsEnabled());
  if (Deno.stdin.isTerminal()) return await runTerminal({ host, client, style });
  return await runScript({ host, client, style });
}
