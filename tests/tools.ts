/**
 * The programs some tests drive besides Deno and Rust (README, Install): a
 * test whose program is missing is reported as ignored, with the command
 * that installs it in its name, rather than failing. `.ci/run` installs them
 * all, so CI runs every test.
 *
 * @module
 */

/** A program of the tests. */
export interface Tool {
  /** What the tests use it for. */
  for: string;
  /** The command that installs it on Debian and Ubuntu. */
  install: string;
  /** Where it is, or why it cannot be used here. */
  find(): { path: string } | { missing: string };
}

/** Whether `command` runs here with `args` and exits 0. */
function runs(command: string, args: string[]): boolean {
  try {
    return new Deno.Command(command, { args, stdout: "null", stderr: "null" }).outputSync()
      .success;
  } catch {
    return false;
  }
}

/** The first of `names` that is an executable file in `PATH`. */
export function onPath(...names: string[]): string | undefined {
  const dirs = (Deno.env.get("PATH") ?? "").split(":").filter((d) => d !== "");
  for (const name of names) {
    for (const dir of dirs) {
      try {
        const info = Deno.statSync(`${dir}/${name}`);
        if (info.isFile && ((info.mode ?? 0o111) & 0o111) !== 0) return `${dir}/${name}`;
      } catch { /* not here */ }
    }
  }
  return undefined;
}

/** The first of `names` on `PATH`, when `check` runs with it. */
function lookUp(names: string[], check: string[]): { path: string } | { missing: string } {
  const path = onPath(...names);
  if (!path) return { missing: `${names[0]} is not on PATH` };
  return runs(path, check) ? { path } : { missing: `${path} ${check.join(" ")} failed` };
}

/** A tool found by its names on `PATH`, and usable when `check` runs. */
function program(
  names: string[],
  install: string,
  purpose: string,
  check: string[] = ["--version"],
): Tool {
  return { for: purpose, install, find: () => lookUp(names, check) };
}

/** The programs of the tests, by name. */
export const TOOLS = {
  chromium: {
    for: "drives the web page (tests/web_test.ts, through playwright-core)",
    install: "apt-get install chromium (or set CHROMIUM to a Chromium or Chrome executable)",
    find() {
      const named = Deno.env.get("CHROMIUM");
      if (named) {
        return runs(named, ["--version"])
          ? { path: named }
          : { missing: `CHROMIUM=${named} does not run` };
      }
      return lookUp(["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"], [
        "--version",
      ]);
    },
  },
  tmux: program(
    ["tmux"],
    "apt-get install tmux",
    "the console in a real terminal (tests/console_pty_test.ts)",
    ["-V"],
  ),
  strace: {
    for: "sees that durable writes call fsync (tests/durability_test.ts)",
    install: "apt-get install strace",
    find() {
      if (Deno.build.os !== "linux") return { missing: "strace is for Linux" };
      const found = lookUp(["strace"], ["-e", "trace=none", "true"]);
      return "path" in found || !onPath("strace")
        ? found
        : { missing: "strace cannot trace here (no ptrace)" };
    },
  },
  script: program(
    ["script"],
    "apt-get install util-linux",
    "gives the console a pseudo-terminal (console/console_test.ts)",
  ),
  git: program(
    ["git"],
    "apt-get install git",
    "a world made inside a work tree (tests/cli_test.ts)",
  ),
} satisfies Record<string, Tool>;

/** The name of a program of the tests. */
export type ToolName = keyof typeof TOOLS;

const found = new Map<ToolName, { path: string } | { missing: string }>();

/** Where `tool` is, or why it cannot be used here (looked up once). */
export function findTool(tool: ToolName): { path: string } | { missing: string } {
  let where = found.get(tool);
  if (!where) found.set(tool, where = TOOLS[tool].find());
  return where;
}

/** The path of `tool`, or undefined when it is missing. */
export function toolPath(tool: ToolName): string | undefined {
  const where = findTool(tool);
  return "path" in where ? where.path : undefined;
}

/**
 * The `name` and `ignore` of a `Deno.test` that needs `tools`: ignored when
 * one is missing, and then its name says why and what installs it.
 *
 * @example
 * ```ts
 * Deno.test({ ...needs(["tmux"], "the console in a terminal"), fn() {} });
 * // where tmux is missing: "the console in a terminal ... ignored (tmux is not on PATH:
 * // apt-get install tmux)"
 * ```
 */
export function needs(tools: ToolName[], name: string): { name: string; ignore: boolean } {
  const missing = tools.flatMap((tool) => {
    const where = findTool(tool);
    return "missing" in where ? [`${where.missing}: ${TOOLS[tool].install}`] : [];
  });
  if (!missing.length) return { name, ignore: false };
  return { name: `${name} ... ignored (${missing.join("; ")})`, ignore: true };
}
