/**
 * Long output through a pager, as git does: `$PAGER`, or `less -FRX` (quit
 * at once when it fits, keep the colours, leave the text on the screen).
 * Only the interactive console pages; a script's output never is.
 *
 * @module
 */
import { visibleLength } from "./markdown.ts";

/** The pager without `$PAGER`. */
export const DEFAULT_PAGER = "less -FRX";

/**
 * The pager's command line: `$PAGER`, else {@linkcode DEFAULT_PAGER`}; null
 * when `$PAGER` is empty or `cat` (no pager, as git has it).
 */
export function pagerCommand(pager: string | undefined = Deno.env.get("PAGER")): string | null {
  if (pager === undefined) return DEFAULT_PAGER;
  const command = pager.trim();
  return command === "" || command === "cat" ? null : command;
}

/** How many rows `text` takes on a screen `columns` wide (long lines wrap). */
export function screenRows(text: string, columns: number): number {
  const width = Math.max(1, columns);
  return text.split("\n").reduce(
    (rows, line) => rows + Math.max(1, Math.ceil(visibleLength(line) / width)),
    0,
  );
}

/**
 * Whether the program of the pager `command` is there (its first word that
 * is not a `NAME=value`, as `sh` finds it).
 *
 * @example
 * ```ts
 * await pagerFound("less -FRX"); // true where less is installed
 * await pagerFound("no-such-pager-anywhere"); // false
 * ```
 */
export async function pagerFound(command: string): Promise<boolean> {
  const program = command.trim().split(/\s+/).find((word) =>
    !/^[A-Za-z_][A-Za-z0-9_]*=/.test(word)
  );
  if (program === undefined) return false;
  try {
    const out = await new Deno.Command("sh", {
      args: ["-c", 'command -v "$1"', "sh", program],
      stdout: "null",
      stderr: "null",
    }).output();
    return out.success;
  } catch {
    return false;
  }
}

/**
 * Shows `text` in the pager `command` (run by `sh -c`, on this terminal)
 * and waits until the person leaves it. Returns false when the pager cannot
 * be started: the caller then prints the text itself.
 */
export async function runPager(command: string, text: string): Promise<boolean> {
  // a pager that is not there: the console says so in its own words, not sh's
  if (!await pagerFound(command)) return false;
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command("sh", {
      args: ["-c", command],
      stdin: "piped",
      stdout: "inherit",
      stderr: "inherit",
      env: Deno.env.get("LESS") === undefined ? { LESS: "FRX" } : {},
    }).spawn();
  } catch {
    return false;
  }
  const writer = child.stdin.getWriter();
  // the person may leave the pager before it read everything: the rest is not needed
  await writer.write(new TextEncoder().encode(text.endsWith("\n") ? text : `${text}\n`))
    .catch(() => {});
  await writer.close().catch(() => {});
  const status = await child.status;
  // 127: sh found no such program; the text was not shown
  return status.code !== 127;
}
