/**
 * What the cache folder holds, and keeping it bounded: `sausage cache`,
 * `sausage cache gc`, and the size limit applied after each `cargo.build`.
 *
 * The cache is shared by every world on the machine. Each entry records its
 * last use cheaply: a transpile's `.used` marker is written when a host
 * first loads it (once per host start), an SDK copy's `.complete` marker
 * when a build uses it, and `cargo/<target>/.sausage-used` after each build. An
 * rpc.discover document counts as used with the transpile of the same hash.
 *
 * @module
 */
import { join } from "node:path";
import { USED_MARKER } from "./cache.ts";

/** What `sausage cache gc` removes: entries no world has used for this long. */
export const UNUSED_KEPT_MS = 30 * 24 * 3600 * 1000;

/** The default size limit of the cache, applied after each build: 10 GiB. */
export const DEFAULT_CACHE_LIMIT_BYTES = 10 * 1024 ** 3;

/** The environment variable that sets the limit (`20GiB`, `500MiB`, a byte count, or `0` for none). */
export const CACHE_LIMIT_ENV = "SAUSAGE_CACHE_LIMIT";

/**
 * An entry used this recently may be in use by another host on the machine
 * (its workers import the transpile's glue file), so the limit keeps it.
 */
export const RECENT_USE_KEPT_MS = 24 * 3600 * 1000;

/** A build folder of a build that never cleaned up (its host died) is removed after a day. */
const STALE_WORK_MS = 24 * 3600 * 1000;

/** The marker a build touches in a cargo target folder. */
export const TARGET_USED_MARKER = ".sausage-used";

/** The kinds of entries, in the order `sausage cache` lists them. */
export const CACHE_KINDS = ["transpiles", "documents", "sdk", "cargo", "other"] as const;

/** One kind of entry. */
export type CacheKind = typeof CACHE_KINDS[number];

/** One entry of the cache: the unit that is removed whole. */
export interface CacheEntry {
  kind: CacheKind;
  /** Its path, relative to the cache folder (`components/<sha256>`). */
  path: string;
  bytes: number;
  /** Its last use, ms since the epoch. */
  lastUse: number;
}

/** What the cache holds. */
export interface CacheUsage {
  dir: string;
  /** False when the folder does not exist yet. */
  exists: boolean;
  entries: CacheEntry[];
  /** Bytes by kind. */
  bytes: Record<CacheKind, number>;
  total: number;
}

/** What a collection removed. */
export interface Collected {
  removed: CacheEntry[];
  freed: number;
  /** What the cache holds afterwards, in bytes. */
  left: number;
  /** Entries that could not be removed, with why. */
  failed: { path: string; why: string }[];
}

/** A limit that cannot be read; the message names the variable and the accepted forms. */
export class CacheLimitError extends Error {
  override name = "CacheLimitError";
}

const UNITS: Record<string, number> = {
  "": 1,
  b: 1,
  k: 1024,
  kb: 1000,
  kib: 1024,
  m: 1024 ** 2,
  mb: 1000 ** 2,
  mib: 1024 ** 2,
  g: 1024 ** 3,
  gb: 1000 ** 3,
  gib: 1024 ** 3,
  t: 1024 ** 4,
  tb: 1000 ** 4,
  tib: 1024 ** 4,
};

/**
 * Reads a size such as `10GiB`, `500 MB` or `123456`; `0` means no limit.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * assert.equal(parseSize("2GiB"), 2 * 1024 ** 3);
 * assert.equal(parseSize("1.5k"), 1536);
 * ```
 */
export function parseSize(text: string, what = CACHE_LIMIT_ENV): number {
  const m = text.trim().match(/^(\d+(?:\.\d+)?)\s*([a-zA-Z]*)$/);
  const unit = m ? UNITS[m[2].toLowerCase()] : undefined;
  if (!m || unit === undefined) {
    throw new CacheLimitError(
      `${what}=${text} is not a size: write a number of bytes, or one with a unit ` +
        `such as 500MiB, 10GiB or 2TB (0 turns the limit off)`,
    );
  }
  return Math.floor(Number(m[1]) * unit);
}

/** The cache's size limit in bytes: `SAUSAGE_CACHE_LIMIT`, else 10 GiB; 0 is none. */
export function cacheLimit(env: string | undefined = Deno.env.get(CACHE_LIMIT_ENV)): number {
  if (env === undefined || env.trim() === "") return DEFAULT_CACHE_LIMIT_BYTES;
  return parseSize(env);
}

/** Bytes in a human form: `1.5 GiB`. */
export function formatBytes(bytes: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let i = 0;
  while (value >= 1024 && i < units.length - 1) {
    value /= 1024;
    i++;
  }
  return i === 0 ? `${bytes} B` : `${value.toFixed(value < 10 ? 1 : 0)} ${units[i]}`;
}

/** The size of a file or folder (links are not followed), and its newest mtime. */
async function measure(path: string): Promise<{ bytes: number; mtime: number }> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.lstat(path);
  } catch {
    return { bytes: 0, mtime: 0 };
  }
  const own = { bytes: info.isDirectory ? 0 : info.size, mtime: info.mtime?.getTime() ?? 0 };
  if (!info.isDirectory) return own;
  let entries: Deno.DirEntry[];
  try {
    entries = await Array.fromAsync(Deno.readDir(path));
  } catch {
    return own; // unreadable: counted as empty
  }
  for (const e of entries) {
    const sub = await measure(join(path, e.name));
    own.bytes += sub.bytes;
  }
  return own;
}

async function mtimeOf(path: string): Promise<number | null> {
  try {
    return (await Deno.stat(path)).mtime?.getTime() ?? null;
  } catch {
    return null;
  }
}

async function list(dir: string): Promise<Deno.DirEntry[]> {
  try {
    return await Array.fromAsync(Deno.readDir(dir));
  } catch {
    return [];
  }
}

/** What the cache at `dir` holds, each entry with its size and last use. */
export async function cacheUsage(dir: string): Promise<CacheUsage> {
  const entries: CacheEntry[] = [];
  const add = async (kind: CacheKind, path: string, lastUse?: number | null) => {
    const m = await measure(join(dir, path));
    entries.push({ kind, path, bytes: m.bytes, lastUse: lastUse ?? m.mtime });
  };
  const exists = (await mtimeOf(dir)) !== null;
  const transpileUse = new Map<string, number>();
  for (const e of await list(join(dir, "components"))) {
    const path = join("components", e.name);
    // an unfinished write (.tmp-…) counts from its folder's time
    const made = await mtimeOf(join(dir, path, "meta.json"));
    const marked = await mtimeOf(join(dir, path, USED_MARKER));
    const used = made === null && marked === null ? null : Math.max(made ?? 0, marked ?? 0);
    if (used !== null) transpileUse.set(e.name, used);
    await add("transpiles", path, used);
  }
  for (const e of await list(join(dir, "discover"))) {
    const path = join("discover", e.name);
    const own = await mtimeOf(join(dir, path));
    const hash = e.name.replace(/\.json$/, "");
    await add("documents", path, Math.max(own ?? 0, transpileUse.get(hash) ?? 0));
  }
  for (const e of await list(join(dir, "sdk"))) {
    const path = join("sdk", e.name);
    await add("sdk", path, await mtimeOf(join(dir, path, ".complete")));
  }
  for (const e of await list(join(dir, "cargo"))) {
    const path = join("cargo", e.name);
    // the build slots' lock files: a few bytes, and never removed while a build may hold one
    if (e.name === "slots") continue;
    if (e.name === "work") {
      // each build's own folder, removed when the build ends
      for (const w of await list(join(dir, path))) await add("cargo", join(path, w.name));
      continue;
    }
    await add("cargo", path, await mtimeOf(join(dir, path, TARGET_USED_MARKER)));
  }
  const known = new Set(["components", "discover", "sdk", "cargo"]);
  for (const e of await list(dir)) {
    if (!known.has(e.name)) await add("other", e.name);
  }
  const bytes = Object.fromEntries(CACHE_KINDS.map((k) => [k, 0])) as Record<CacheKind, number>;
  for (const e of entries) bytes[e.kind] += e.bytes;
  const total = entries.reduce((sum, e) => sum + e.bytes, 0);
  return { dir, exists, entries, bytes, total };
}

/** Options of a collection. */
export interface CollectOptions {
  /** Now, ms since the epoch (tests give their own). */
  now?: number;
  /** Entries last used at or after this time are kept: what the running host uses. */
  inUseSince?: number;
}

/** Whether an entry may go at all: never what is in use, nor `other` (not Sausage's to remove). */
function removable(e: CacheEntry, now: number, inUseSince: number | undefined): boolean {
  if (e.kind === "other") return false;
  if (inUseSince !== undefined && e.lastUse >= inUseSince) return false;
  if (e.path.startsWith(join("cargo", "work"))) return now - e.lastUse > STALE_WORK_MS;
  return true;
}

async function removeAll(dir: string, doomed: CacheEntry[], usage: CacheUsage): Promise<Collected> {
  const removed: CacheEntry[] = [];
  const failed: { path: string; why: string }[] = [];
  for (const e of doomed) {
    try {
      await Deno.remove(join(dir, e.path), { recursive: true });
      removed.push(e);
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) continue; // another host got there first
      failed.push({ path: e.path, why: (err as Error).message });
    }
  }
  const freed = removed.reduce((sum, e) => sum + e.bytes, 0);
  return { removed, freed, left: usage.total - freed, failed };
}

/**
 * `sausage cache gc`: removes the entries no world has used for `maxAgeMs`
 * (default 30 days). A removed entry is made again when a world needs it.
 */
export async function collectUnused(
  dir: string,
  options: CollectOptions & { maxAgeMs?: number } = {},
): Promise<Collected> {
  const now = options.now ?? Date.now();
  const maxAge = options.maxAgeMs ?? UNUSED_KEPT_MS;
  const usage = await cacheUsage(dir);
  const doomed = usage.entries.filter((e) =>
    removable(e, now, options.inUseSince) && now - e.lastUse > maxAge
  );
  return await removeAll(dir, doomed, usage);
}

/**
 * Brings the cache under `limitBytes` by removing the least recently used
 * entries first. Entries used since `inUseSince`, or in the last
 * {@linkcode RECENT_USE_KEPT_MS}, stay: `left` may then stay above the limit.
 */
export async function enforceLimit(
  dir: string,
  limitBytes: number,
  options: CollectOptions = {},
): Promise<Collected> {
  const usage = await cacheUsage(dir);
  if (limitBytes <= 0 || usage.total <= limitBytes) {
    return { removed: [], freed: 0, left: usage.total, failed: [] };
  }
  const now = options.now ?? Date.now();
  const candidates = usage.entries
    .filter((e) => removable(e, now, options.inUseSince) && now - e.lastUse > RECENT_USE_KEPT_MS)
    .sort((a, b) => a.lastUse - b.lastUse);
  const doomed: CacheEntry[] = [];
  let total = usage.total;
  for (const e of candidates) {
    if (total <= limitBytes) break;
    doomed.push(e);
    total -= e.bytes;
  }
  return await removeAll(dir, doomed, usage);
}

/** When this process started, ms since the epoch: what it loaded since is in use. */
export const PROCESS_STARTED = Math.floor(performance.timeOrigin);

/**
 * After a build: records the use of the cargo target folder, then applies
 * the limit ({@linkcode cacheLimit}). Returns a warning for the build's
 * result when the cache stays over it, or when the limit cannot be read.
 */
export async function afterBuild(cacheDir: string, targetDir: string): Promise<string | null> {
  const now = new Date();
  await Deno.writeTextFile(join(targetDir, TARGET_USED_MARKER), "").catch(() => {});
  await Deno.utime(join(targetDir, TARGET_USED_MARKER), now, now).catch(() => {});
  let limit: number;
  try {
    limit = cacheLimit();
  } catch (e) {
    return (e as Error).message;
  }
  const done = await enforceLimit(cacheDir, limit, { inUseSince: PROCESS_STARTED });
  if (done.left > limit && limit > 0) {
    return `the cache ${cacheDir} holds ${formatBytes(done.left)}, over its limit of ` +
      `${formatBytes(limit)}, with what is in use: raise ${CACHE_LIMIT_ENV} or free disk space`;
  }
  return null;
}
