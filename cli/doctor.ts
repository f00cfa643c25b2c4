/**
 * `sausage doctor [WORLD]`: what Sausage needs on this machine, and the
 * health of a world. Each line is ok, a warning or an error, with the fix;
 * the exit code is the worst: 0 all ok, 4 warnings only, 1 an error.
 *
 * @module
 */
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import pc from "picocolors";
import {
  findWasmToolchain,
  isExecutable,
  ToolchainMissing,
  type ToolchainSearch,
  WASM_TARGET,
} from "../core/cargo/toolchain.ts";
import { cacheLimit, cacheUsage, formatBytes } from "../core/components/cache_gc.ts";
import { ControlClient } from "../core/control_client.ts";
import { type HostInfo, World, WorldError } from "../core/world.ts";
import type { GraphView } from "../core/graph.ts";
import { explainFsError, ownerProblem, writableProblem } from "./preflight.ts";

/** How bad one finding is. */
export type Level = "ok" | "warning" | "error";

/** One line of the report. */
export interface Finding {
  level: Level;
  /** What was checked: `toolchain`, `clang`, `cache`, `world`, `journal`, `lock`, `plugin`, `import`. */
  topic: string;
  text: string;
  /** What to do about it, for a warning or an error. */
  fix?: string;
}

/** The exit codes of `sausage doctor` (also in the README). */
export const DoctorExit = { Ok: 0, Error: 1, Warnings: 4 } as const;

/** Below this much free space in the cache's file system, a warning (cargo's crates take room). */
export const LOW_DISK_BYTES = 2 * 1024 ** 3;

/** Options of {@linkcode doctor}. */
export interface DoctorOptions {
  /** The world to check; none checks only the machine. */
  world?: string;
  cacheDir: string;
  /** Where the Rust toolchain is looked for (tests give their own). */
  toolchain?: ToolchainSearch;
  /** Starts a host of its own to discover the plugins when none runs the world (default true). */
  discover?: boolean;
}

/** The exit code for a list of findings: the worst. */
export function exitCodeOf(findings: Finding[]): number {
  if (findings.some((f) => f.level === "error")) return DoctorExit.Error;
  if (findings.some((f) => f.level === "warning")) return DoctorExit.Warnings;
  return DoctorExit.Ok;
}

async function run(cmd: string, args: string[]): Promise<string | null> {
  try {
    const out = await new Deno.Command(cmd, { args, stdout: "piped", stderr: "null" }).output();
    return out.success ? new TextDecoder().decode(out.stdout).trim() : null;
  } catch {
    return null;
  }
}

/** The Rust toolchain and the WASI clang. */
export async function checkToolchain(search: ToolchainSearch = {}): Promise<Finding[]> {
  try {
    const found = await findWasmToolchain(search);
    const rustc = found.env.RUSTC ?? "rustc";
    const version = await run(rustc, ["--version"]);
    const findings: Finding[] = [{
      level: "ok",
      topic: "toolchain",
      text: `${version ?? rustc} with the ${WASM_TARGET} target (${found.source})`,
    }];
    const cc = found.env.CC_wasm32_wasip2;
    if (cc && await isExecutable(cc)) {
      findings.push({ level: "ok", topic: "clang", text: `WASI clang ${cc}` });
    } else {
      findings.push({
        level: "warning",
        topic: "clang",
        text: cc
          ? `CC_wasm32_wasip2=${cc} is not an executable file`
          : "no WASI clang: crates that compile C in a build script (ring, zstd-sys, …) cannot build",
        fix: "install the WASI SDK (https://github.com/WebAssembly/wasi-sdk/releases) in " +
          "/opt/wasi-sdk, or set WASI_SDK_PATH to where it is",
      });
    }
    return findings;
  } catch (e) {
    if (!(e instanceof ToolchainMissing)) throw e;
    const installed = await run("rustup", ["--version"]) !== null;
    return [{
      level: "error",
      topic: "toolchain",
      text: `cargo.build cannot work: ${e.message}`,
      fix: installed
        ? `rustup target add ${WASM_TARGET}`
        : `curl --proto '=https' -sSf https://sh.rustup.rs | sh -s -- -y --target ${WASM_TARGET}`,
    }];
  }
}

/** Free bytes of the file system that holds `path` (its nearest existing folder), from `df`. */
export async function freeSpace(path: string): Promise<number | null> {
  let at = path;
  for (;;) {
    try {
      await Deno.stat(at);
      break;
    } catch {
      const up = join(at, "..");
      if (up === at) return null;
      at = up;
    }
  }
  const out = await run("df", ["-Pk", at]);
  const fields = out?.split("\n")[1]?.trim().split(/\s+/);
  const kib = fields ? Number(fields[3]) : NaN;
  return Number.isFinite(kib) ? kib * 1024 : null;
}

/** The cache's place, size, free space and permissions. */
export async function checkCache(dir: string): Promise<Finding[]> {
  const findings: Finding[] = [];
  const usage = await cacheUsage(dir);
  const free = await freeSpace(dir);
  const problem = await writableProblem(dir, "cache");
  findings.push(
    problem ? { level: "error", topic: "cache", text: problem.text, fix: problem.fix } : {
      level: "ok",
      topic: "cache",
      text: `${dir}: ${usage.exists ? formatBytes(usage.total) : "empty"}` +
        (free === null ? "" : `, ${formatBytes(free)} free`),
    },
  );
  let limit = 0;
  try {
    limit = cacheLimit();
  } catch (e) {
    findings.push({
      level: "error",
      topic: "cache",
      text: (e as Error).message,
      fix: "unset SAUSAGE_CACHE_LIMIT or set it to a size such as 10GiB",
    });
  }
  if (limit > 0 && usage.total > limit) {
    findings.push({
      level: "warning",
      topic: "cache",
      text: `the cache holds ${formatBytes(usage.total)}, over its limit of ${formatBytes(limit)}`,
      fix: "sausage cache gc (or raise SAUSAGE_CACHE_LIMIT)",
    });
  }
  if (free !== null && free < LOW_DISK_BYTES) {
    findings.push({
      level: "warning",
      topic: "disk",
      text: `only ${formatBytes(free)} free where the cache is: a cargo.build can fill it`,
      fix: `sausage cache gc --days 7, or free space on that disk, or use --cache-dir elsewhere`,
    });
  }
  return findings;
}

/** The journal: readable, and how much it holds. */
export function checkJournal(path: string): Finding {
  try {
    Deno.statSync(path);
  } catch {
    return { level: "ok", topic: "journal", text: "no journal yet (the first start makes it)" };
  }
  try {
    const db = new DatabaseSync(path, { readOnly: true });
    try {
      const row = db.prepare("SELECT count(*) AS n, max(time) AS last FROM entries").get() as {
        n: number;
        last: number | null;
      };
      return {
        level: "ok",
        topic: "journal",
        text: `${row.n} entries` +
          (row.last === null ? "" : `, the last at ${new Date(row.last).toISOString()}`),
      };
    } finally {
      db.close();
    }
  } catch (e) {
    return {
      level: "error",
      topic: "journal",
      text: `cannot read the journal ${path}: ${(e as Error).message}`,
      fix: `move it away (mv ${path} ${path}.broken) while no host runs: the next start begins ` +
        "a new one",
    };
  }
}

/** The host lock: free, held by a running host, or left by one that did not stop cleanly. */
export async function checkLock(world: World): Promise<Finding & { held: boolean }> {
  const path = join(world.coreStateDir, "host.lock");
  let file: Deno.FsFile;
  try {
    file = await Deno.open(path, { read: true });
  } catch {
    return { level: "ok", topic: "lock", text: "no host runs it", held: false };
  }
  try {
    const text = (await Deno.readTextFile(path)).trim();
    let info: HostInfo | null = null;
    try {
      info = text ? JSON.parse(text) as HostInfo : null;
    } catch {
      // a holder still writing, or a torn file: said as it is below
    }
    const who = info ? `process ${info.pid} on ${info.hostname}, started ${info.started}` : "?";
    if (!(await file.tryLock(true))) {
      return { level: "ok", topic: "lock", text: `run now by ${who}`, held: true };
    }
    await file.unlock();
    if (text === "") return { level: "ok", topic: "lock", text: "no host runs it", held: false };
    return {
      level: "warning",
      topic: "lock",
      text: `the last host (${who}) did not stop cleanly: it was killed or crashed`,
      fix: "nothing to do: the next start recovers (activations, processes' files); " +
        "if it happens often, read `sausage log WORLD` for its last entries",
      held: false,
    };
  } finally {
    file.close();
  }
}

/** The plugins that fail discovery and the imports that are broken, from the graph. */
export function checkGraph(graph: GraphView): Finding[] {
  const findings: Finding[] = [];
  let plugins = 0;
  for (const [name, plugin] of Object.entries(graph.plugins)) {
    plugins++;
    if (plugin.discovery !== "ok") {
      findings.push({
        level: "error",
        topic: "plugin",
        text: `${name}: ${plugin.discovery.replace(/^unavailable: /, "its discovery failed: ")}`,
        fix: `build it again (cargo.build) and activate it, or go back with core.revert ` +
          `{"plugin": "${name}"}`,
      });
    }
    for (const [provider, i] of Object.entries(plugin.imports)) {
      if (i.status !== "broken" && i.status !== "missing") continue;
      findings.push({
        level: "error",
        topic: "import",
        text: i.status === "missing"
          ? `${name} imports ${provider}, which does not exist`
          : `${name} imports ${provider}, which broke: ${i.problems.join(" ")}`,
        fix: i.status === "missing"
          ? `install /plugins/${provider}/plugin.wasm, or remove the import from ${name}`
          : `bring ${provider} back to what ${name} uses (core.revert), or rebuild ${name}`,
      });
    }
  }
  if (findings.length === 0) {
    findings.push({
      level: "ok",
      topic: "plugins",
      text: `${plugins} plugins discovered; ${graph.counts.imports.ok ?? 0} imports ok`,
    });
  }
  return findings;
}

/** The graph of the host that runs the world, or of a host started for it (no services). */
async function graphOf(
  world: World,
  cacheDir: string,
  held: boolean,
): Promise<GraphView | Finding> {
  if (held) {
    let remote: ControlClient | null = null;
    try {
      remote = await ControlClient.connect(world.root);
    } catch (e) {
      return { level: "warning", topic: "plugins", text: (e as Error).message };
    }
    if (!remote) {
      return {
        level: "warning",
        topic: "plugins",
        text: "the host that runs it has no control endpoint: its plugins were not checked",
      };
    }
    try {
      const file = await remote.read("/proc/core/graph.json");
      return JSON.parse(new TextDecoder().decode(file.bytes)) as GraphView;
    } finally {
      await remote.close();
    }
  }
  const { Host } = await import("../core/host.ts");
  const { removeStaleSocket } = await import("../core/control.ts");
  let host;
  try {
    host = await Host.start({ world: world.root, cacheDir, services: false, installAgent: false });
  } catch (e) {
    const why = explainFsError(e, world.root, "world");
    return {
      level: "error",
      topic: "world",
      text: `a host cannot start on it: ${why?.text ?? (e as Error).message}`,
      fix: why?.fix,
    };
  }
  try {
    await removeStaleSocket(host.world).catch(() => {});
    await host.discovered;
    return await host.graph.update();
  } finally {
    await host.shutdown();
  }
}

/** The world's findings. */
export async function checkWorld(
  root: string,
  cacheDir: string,
  discover = true,
): Promise<Finding[]> {
  const world = new World(root);
  try {
    await world.check();
  } catch (e) {
    if (!(e instanceof WorldError)) throw e;
    return [{ level: "error", topic: "world", text: e.message }];
  }
  const findings: Finding[] = [];
  const owner = await ownerProblem(world.root);
  if (owner) {
    findings.push({ level: owner.level, topic: "world", text: owner.text, fix: owner.fix });
  }
  const write = await writableProblem(world.root, "world");
  if (write) findings.push({ level: "error", topic: "world", text: write.text, fix: write.fix });
  if (!owner && !write) findings.push({ level: "ok", topic: "world", text: world.root });
  findings.push(checkJournal(world.journalPath));
  const lock = await checkLock(world);
  const { held: _, ...lockFinding } = lock;
  findings.push(lockFinding);
  if (!discover) return findings;
  if (write && !lock.held) {
    findings.push({
      level: "warning",
      topic: "plugins",
      text: "not checked: a host cannot run a world it cannot write",
    });
    return findings;
  }
  const graph = await graphOf(world, cacheDir, lock.held);
  if ("level" in graph) findings.push(graph);
  else findings.push(...checkGraph(graph));
  return findings;
}

/** Everything `sausage doctor` checks. */
export async function doctor(options: DoctorOptions): Promise<Finding[]> {
  const findings: Finding[] = [
    { level: "ok", topic: "deno", text: `Deno ${Deno.version.deno} on ${Deno.build.target}` },
  ];
  findings.push(...await checkToolchain(options.toolchain));
  findings.push(...await checkCache(options.cacheDir));
  if (options.world !== undefined) {
    findings.push(...await checkWorld(options.world, options.cacheDir, options.discover ?? true));
  }
  return findings;
}

/** The report as text: one line a finding, its fix under it. */
export function formatFindings(findings: Finding[], color = false): string {
  const c = pc.createColors(color);
  const mark = { ok: c.green("ok     "), warning: c.yellow("warning"), error: c.red("error  ") };
  const lines: string[] = [];
  for (const f of findings) {
    lines.push(`${mark[f.level]}  ${f.topic.padEnd(9)} ${f.text}`);
    if (f.fix) lines.push(`${" ".repeat(20)}${c.dim("fix:")} ${f.fix}`);
  }
  return lines.join("\n");
}
