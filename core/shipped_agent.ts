/**
 * The agent the host ships (PROTOCOL section 2): the crate in
 * `plugins/agent/` of the repository and the component built from it,
 * `plugins/agent/dist/agent.wasm` (`deno task build:agent`). `sausage init`
 * installs both in a world, as `/plugins/agent/plugin.wasm` and
 * `/plugins/agent/source/`, and each host start of such a world brings them
 * to the host's version, until the world's agent is changed
 * (`core.activate`, a revert, a copy or an edit): then the host leaves it
 * alone and says so in the journal.
 *
 * `state/core/agent.json` records, by hash, what the host installed: a file
 * whose hash is neither that nor the shipped one was changed.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { dirname, join } from "node:path";
import { linkOrCopy } from "./activation.ts";
import { sha256Hex } from "./components/cache.ts";
import { AGENT_CRATE as CRATE, AGENT_WASM } from "./embedded.ts";
import type { Journal } from "./journal.ts";
import { AGENT_PLUGIN } from "./names.ts";
import type { World } from "./world.ts";

/** The agent's crate in the repository (or in the compiled executable). */
export const AGENT_CRATE: string = CRATE;

/** The files `deno task build:agent` writes, which the host ships. */
export const AGENT_DIST: string = join(AGENT_CRATE, "dist");

/** Prefix of the temporary files of an install; any that a crash leaves is removed later. */
const TEMP_PREFIX = ".sausage-agent-";

/** `plugins/agent/dist/agent.json`: what the shipped component was built from. */
export interface AgentManifest {
  /** {@linkcode agentSourceHash} of the source and the SDK it was built from. */
  source: string;
  /** The sha256 of `agent.wasm`. */
  wasm: string;
}

/** The agent as this host ships it. */
export interface ShippedAgent {
  /** The component. */
  wasm: Uint8Array;
  /** Its sha256. */
  wasmHash: string;
  /** The source files (see {@linkcode readAgentSource}). */
  source: Map<string, Uint8Array>;
  /** {@linkcode sourceHash} of the source files alone. */
  sourceHash: string;
}

/** Raised when the host has no built agent to ship; the message says how to build it. */
export class ShippedAgentMissing extends Error {
  override name = "ShippedAgentMissing";
}

/**
 * The source files of an agent crate: `Cargo.toml`, `Cargo.lock` and
 * everything under `src/`, by path with `/` (dot files and links are not
 * source). Empty when the folder has none of them.
 *
 * @example
 * ```ts
 * const files = await readAgentSource("/path/to/world/plugins/agent/source");
 * console.log([...files.keys()]); // ["Cargo.lock", "Cargo.toml", "src/main.rs"]
 * ```
 */
export async function readAgentSource(dir: string): Promise<Map<string, Uint8Array>> {
  const files = new Map<string, Uint8Array>();
  // only folder listings and reads: what the compiled executable's embedded files allow
  for (const e of await entriesOf(dir)) {
    if (e.isFile && (e.name === "Cargo.toml" || e.name === "Cargo.lock")) {
      files.set(e.name, await Deno.readFile(join(dir, e.name)));
    }
  }
  const walk = async (folder: string, rel: string) => {
    for (const e of await entriesOf(folder)) {
      if (e.name.startsWith(".")) continue;
      const path = join(folder, e.name);
      if (e.isDirectory) await walk(path, `${rel}/${e.name}`);
      else if (e.isFile) files.set(`${rel}/${e.name}`, await Deno.readFile(path));
    }
  };
  await walk(join(dir, "src"), "src");
  return files;
}

/**
 * A sha256 over source files: each path, length and content, in the order
 * of the paths (so a rename changes it); with `sdk`, also that SDK version
 * (see `cargo/sdk.ts` `sdkVersion`).
 *
 * @example
 * ```ts
 * const files = new Map([["src/main.rs", new TextEncoder().encode("fn main() {}\n")]]);
 * console.log(sourceHash(files).length); // 64
 * ```
 */
export function sourceHash(files: Map<string, Uint8Array>, sdk?: string): string {
  const hash = createHash("sha256");
  for (const [path, bytes] of [...files].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    hash.update(`${path}\0${bytes.length}\0`).update(bytes);
  }
  if (sdk !== undefined) hash.update(`sdk\0${sdk}`);
  return hash.digest("hex");
}

/**
 * The `source` of `agent.json`: the hash of the agent's source and of the
 * SDK it builds against, which both shape the component.
 *
 * @example
 * ```ts
 * import { sdkFiles, sdkVersion } from "./cargo/sdk.ts";
 * const hash = agentSourceHash(await readAgentSource(AGENT_CRATE), sdkVersion(await sdkFiles()));
 * console.log(hash === (await readAgentManifest()).source); // true when dist/ is fresh
 * ```
 */
export function agentSourceHash(files: Map<string, Uint8Array>, sdkVersion: string): string {
  return sourceHash(files, sdkVersion);
}

/**
 * Reads `plugins/agent/dist/agent.json`.
 *
 * @example
 * ```ts
 * const { wasm } = await readAgentManifest();
 * console.log(wasm); // the sha256 of dist/agent.wasm
 * ```
 */
export async function readAgentManifest(dist: string = AGENT_DIST): Promise<AgentManifest> {
  return JSON.parse(await Deno.readTextFile(join(dist, "agent.json"))) as AgentManifest;
}

/**
 * The agent this host ships: `dist/agent.wasm` and the crate's source.
 * Throws {@linkcode ShippedAgentMissing} when the component was never built.
 *
 * @example
 * ```ts
 * const agent = await shippedAgent();
 * console.log(agent.wasmHash, agent.source.size);
 * ```
 */
export async function shippedAgent(): Promise<ShippedAgent> {
  let wasm: Uint8Array;
  try {
    wasm = await Deno.readFile(AGENT_WASM);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
    throw new ShippedAgentMissing(
      `this host has no built agent (${AGENT_WASM} is missing): ` +
        "run `deno task build:agent` in the repository",
    );
  }
  const source = await readAgentSource(AGENT_CRATE);
  return { wasm, wasmHash: await sha256Hex(wasm), source, sourceHash: sourceHash(source) };
}

/** What the host installed in a world (`state/core/agent.json`); null: nothing yet. */
interface AgentRecord {
  wasm: string | null;
  source: string | null;
}

/** What became of one part of the agent: written, already the host's, or left alone. */
export type AgentPart = "installed" | "current" | "changed";

/** What {@linkcode installAgent} did. */
export interface AgentInstall {
  /** `plugins/agent/plugin.wasm`. */
  wasm: AgentPart;
  /** `plugins/agent/source/`. */
  source: AgentPart;
  /** When something was left alone: why, and how to get the host's agent back. */
  note?: string;
}

/** Options of {@linkcode installAgent}. */
export interface AgentInstallOptions {
  /** Where to write what was installed and what was left alone. */
  journal?: Journal;
  /** The agent to install (default: {@linkcode shippedAgent}). */
  shipped?: ShippedAgent;
}

/** The record of what the host installed in `world`. */
export function agentRecordPath(world: World): string {
  return join(world.coreStateDir, "agent.json");
}

/**
 * Installs the host's agent in a world, part by part: `plugin.wasm` when
 * it is missing or still the version the host installed last; each file of
 * `source/` (Cargo.toml, Cargo.lock, src/; nothing else there is touched)
 * when the folder has none of them or still the ones the host installed.
 * A part that is neither was changed, and stays as it is. Every file is
 * written under a temporary name and renamed, so `plugin.wasm` is always
 * whole; a running host sees the new version as an upgrade.
 *
 * @example
 * ```ts
 * import { World } from "./world.ts";
 * const done = await installAgent(new World("/path/to/world"));
 * console.log(done.wasm); // "installed", "current" or "changed"
 * ```
 */
export async function installAgent(
  world: World,
  options: AgentInstallOptions = {},
): Promise<AgentInstall> {
  const recordPath = agentRecordPath(world);
  const record = await readRecord(recordPath);
  const was: AgentRecord = record ?? { wasm: null, source: null };
  const shipped = options.shipped ?? await shippedAgent();
  const dir = world.pluginDir(AGENT_PLUGIN);
  const sourceDir = join(dir, "source");
  await Deno.mkdir(dir, { recursive: true });
  await removeLeftovers(dir, false);
  await removeLeftovers(sourceDir, true);
  await removeLeftovers(world.coreStateDir, false);
  const next: AgentRecord = { ...was };

  const wasmPath = join(dir, "plugin.wasm");
  const current = await fileHash(wasmPath);
  let wasm: AgentPart = "changed";
  if (current === shipped.wasmHash) wasm = "current";
  else if (current === null || current === was.wasm) {
    await replaceWasm(dir, shipped.wasm, current !== null);
    wasm = "installed";
  }
  if (wasm !== "changed") next.wasm = shipped.wasmHash;

  const files = await readAgentSource(sourceDir);
  const inWorld = files.size === 0 ? null : sourceHash(files);
  let source: AgentPart = "changed";
  if (inWorld === shipped.sourceHash) source = "current";
  else if (inWorld === null || inWorld === was.source) {
    await mirrorSource(sourceDir, shipped.source);
    source = "installed";
  }
  if (source !== "changed") next.source = shipped.sourceHash;

  if (record === null || next.wasm !== was.wasm || next.source !== was.source) {
    await Deno.mkdir(world.coreStateDir, { recursive: true });
    await writeAtomically(recordPath, new TextEncoder().encode(JSON.stringify(next) + "\n"));
  }
  const installed = [
    ...(wasm === "installed"
      ? [`plugins/agent/plugin.wasm (${short(current)} → ${short(shipped.wasmHash)})`]
      : []),
    ...(source === "installed" ? ["plugins/agent/source/"] : []),
  ];
  if (installed.length > 0) {
    options.journal?.event(
      null,
      AGENT_PLUGIN,
      `installed the host's agent: ${installed.join(", ")}`,
    );
  }
  const changed = [
    ...(wasm === "changed" ? ["plugins/agent/plugin.wasm"] : []),
    ...(source === "changed" ? ["plugins/agent/source/"] : []),
  ];
  if (changed.length === 0) return { wasm, source };
  const which = changed.join(" and ");
  const note =
    `the world's agent was changed (${which} ${
      changed.length > 1 ? "are" : "is"
    } not what the host installed: core.activate, a revert, a copy or an edit), so the host ` +
    `leaves it alone; to get the host's agent back, remove ${which} and restart the host ` +
    "(or run `sausage init`)";
  options.journal?.event(null, AGENT_PLUGIN, note);
  return { wasm, source, note };
}

async function readRecord(path: string): Promise<AgentRecord | null> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
  try {
    const r = JSON.parse(text);
    const hash = (v: unknown) => (typeof v === "string" ? v : null);
    return { wasm: hash(r?.wasm), source: hash(r?.source) };
  } catch {
    return { wasm: null, source: null }; // a torn record: nothing counts as the host's
  }
}

/** The sha256 of a file; null when there is none; `not a file` for a folder or a link. */
async function fileHash(path: string): Promise<string | null> {
  const info = await lstatOrNull(path);
  if (info === null) return null;
  if (!info.isFile) return "not a file";
  return await sha256Hex(await Deno.readFile(path));
}

/**
 * Puts `bytes` at `plugin.wasm` by a rename; the old file (when `keepPrev`)
 * becomes `plugin.prev.wasm`, as an activation leaves it, so `core.revert`
 * can go back.
 */
async function replaceWasm(dir: string, bytes: Uint8Array, keepPrev: boolean): Promise<void> {
  const current = join(dir, "plugin.wasm");
  const tmp = temporary(dir);
  const prevTmp = temporary(dir);
  try {
    await Deno.writeFile(tmp, bytes);
    if (keepPrev) {
      await linkOrCopy(current, prevTmp);
      await Deno.rename(prevTmp, join(dir, "plugin.prev.wasm"));
    }
    await Deno.rename(tmp, current);
  } finally {
    for (const t of [tmp, prevTmp]) await Deno.remove(t).catch(() => {});
  }
}

/**
 * Makes the source files of `sourceDir` those of `files`: each that differs
 * is replaced by a rename, and what `src/` holds beyond them is removed.
 * Dot files and links stay, as does everything outside Cargo.toml,
 * Cargo.lock and src/ (target/, imports/).
 */
async function mirrorSource(sourceDir: string, files: Map<string, Uint8Array>): Promise<void> {
  for (const [path, bytes] of files) {
    const target = join(sourceDir, ...path.split("/"));
    const info = await lstatOrNull(target);
    if (info?.isFile && sameBytes(await Deno.readFile(target), bytes)) continue;
    if (info?.isDirectory) await Deno.remove(target, { recursive: true });
    await Deno.mkdir(dirname(target), { recursive: true });
    await writeAtomically(target, bytes);
  }
  const prune = async (folder: string, rel: string) => {
    for (const e of await entriesOf(folder)) {
      if (e.name.startsWith(".")) continue;
      const path = join(folder, e.name);
      const sub = `${rel}/${e.name}`;
      if (e.isDirectory) {
        if ([...files.keys()].some((p) => p.startsWith(`${sub}/`))) await prune(path, sub);
        else await Deno.remove(path, { recursive: true });
      } else if (e.isFile && !files.has(sub)) await Deno.remove(path);
    }
  };
  await prune(join(sourceDir, "src"), "src");
}

/** Writes a file under a temporary name in its folder, then renames it into place. */
async function writeAtomically(path: string, bytes: Uint8Array): Promise<void> {
  const tmp = temporary(dirname(path));
  try {
    await Deno.writeFile(tmp, bytes);
    await Deno.rename(tmp, path);
  } catch (e) {
    await Deno.remove(tmp).catch(() => {});
    throw e;
  }
}

/** Removes the temporary files an interrupted install left in `dir` (and below, when `deep`). */
async function removeLeftovers(dir: string, deep: boolean): Promise<void> {
  for (const e of await entriesOf(dir)) {
    const path = join(dir, e.name);
    if (e.name.startsWith(TEMP_PREFIX)) await Deno.remove(path).catch(() => {});
    else if (deep && e.isDirectory && e.name !== "target") await removeLeftovers(path, true);
  }
}

function temporary(dir: string): string {
  return join(dir, `${TEMP_PREFIX}${crypto.randomUUID()}.tmp`);
}

async function lstatOrNull(path: string): Promise<Deno.FileInfo | null> {
  try {
    return await Deno.lstat(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound || e instanceof Deno.errors.NotADirectory) return null;
    throw e;
  }
}

/** The entries of a folder; none when it is missing or not a folder. */
async function entriesOf(dir: string): Promise<Deno.DirEntry[]> {
  try {
    return await Array.fromAsync(Deno.readDir(dir));
  } catch (e) {
    if (e instanceof Deno.errors.NotFound || e instanceof Deno.errors.NotADirectory) return [];
    throw e;
  }
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

const short = (hash: string | null) => (hash === null ? "none" : hash.slice(0, 12));
