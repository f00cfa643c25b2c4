/**
 * The results files under `bench/results/` that `deno task bench` and
 * `deno task faults` write: their names, the commit they measured, and an
 * atomic write.
 *
 * @module
 */
import { join } from "node:path";

/** The repository, where `git` is asked. */
const REPO_ROOT = new URL("../", import.meta.url).pathname;

/** The results file name for a start time and groups, e.g. `2026-01-02T03-04-05Z-host.json`. */
export function resultsFileName(start: Date, groups: string[]): string {
  const time = start.toISOString().replace(/\.\d+Z$/, "Z").replaceAll(":", "-");
  return `${time}-${[...new Set(groups)].join("+")}.json`;
}

/** The commit measured, and whether the work tree had changes (unknown without git). */
export async function gitState(): Promise<{ commit?: string; dirty?: boolean }> {
  try {
    const run = async (...args: string[]) => {
      const out = await new Deno.Command("git", { args, cwd: REPO_ROOT, stderr: "null" }).output();
      return out.success ? new TextDecoder().decode(out.stdout).trim() : undefined;
    };
    const commit = await run("rev-parse", "HEAD");
    const status = await run("status", "--porcelain", "--untracked-files=no");
    return { commit, dirty: status === undefined ? undefined : status !== "" };
  } catch {
    return {};
  }
}

/** Writes `data` as `dir/name` (JSON), through a temporary file; returns the path. */
export async function writeResults(dir: string, name: string, data: unknown): Promise<string> {
  await Deno.mkdir(dir, { recursive: true });
  const path = join(dir, name);
  const tmp = `${path}.tmp`;
  await Deno.writeTextFile(tmp, JSON.stringify(data, null, 2) + "\n");
  await Deno.rename(tmp, path);
  return path;
}
