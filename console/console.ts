/**
 * The console of `sausage [WORLD]`: the person's way into a running world.
 *
 * With stdin a terminal it is interactive (see `terminal.ts`): a prompt with
 * line editing and history, calls side by side. Otherwise it reads a script
 * (see `script.ts`): one command a line, in order. The commands are in
 * `parse.ts`, what they print in `format.ts`, `methods.ts` (interfaces),
 * `graph.ts` (`graph`), `markdown.ts` (the agent's answers) and
 * `file_text.ts` (`ls`, `cat`).
 *
 * Colours are on when stdout is a terminal (or `FORCE_COLOR` is set) and
 * `NO_COLOR` is not.
 *
 * @module
 */
import pc from "picocolors";
import type { HostView } from "../core/host_view.ts";
import { makeStyle } from "./format.ts";
import { runScript } from "./script.ts";
import { runTerminal } from "./terminal.ts";

/** Whether the console prints colours. */
export function colorsEnabled(): boolean {
  return pc.isColorSupported && (Deno.stdout.isTerminal() || !!Deno.env.get("FORCE_COLOR"));
}

/** Options of {@linkcode runConsole}. */
export interface ConsoleOptions {
  /** A second Ctrl-C while leaving: kill what still runs (the console's own host). */
  interrupt?: () => void;
}

/**
 * Runs the console on a host (its own, or one it attached to) until `quit`,
 * Ctrl-D or the end of the script, and returns the exit code: 0, 75 after
 * `core.exit`, 1 when an attached host went away, or 130/143 after
 * SIGINT/SIGTERM. The caller closes the view and shuts its host down.
 */
export async function runConsole(view: HostView, options: ConsoleOptions = {}): Promise<number> {
  const colors = colorsEnabled();
  const style = makeStyle(colors);
  if (Deno.stdin.isTerminal()) {
    return await runTerminal({ view, style, markdown: colors, ...options });
  }
  return await runScript({ view, style, markdown: colors, ...options });
}
