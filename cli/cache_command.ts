/**
 * `sausage cache` (what the cache holds, by kind) and `sausage cache gc`
 * (remove what no world has used for 30 days, then apply the size limit).
 *
 * @module
 */
import pc from "picocolors";
import {
  CACHE_KINDS,
  CACHE_LIMIT_ENV,
  type CacheKind,
  cacheLimit,
  CacheLimitError,
  cacheUsage,
  collectUnused,
  enforceLimit,
  formatBytes,
  parseSize,
  UNUSED_KEPT_MS,
} from "../core/components/cache_gc.ts";

/** What each kind is, for the person. */
const KIND_TEXT: Record<CacheKind, string> = {
  transpiles: "transpiled plugins (components/)",
  documents: "rpc.discover documents (discover/)",
  sdk: "SDK copies for builds (sdk/)",
  cargo: "cargo's compiled crates (cargo/)",
  other: "other files",
};

/** Output and colours of a cache command. */
export interface CacheCommandOptions {
  json?: boolean;
  color?: boolean;
  /** Prints a line (default: stdout). */
  print?: (line: string) => void;
}

/** A cache command that cannot run; the message says why and what to do. */
export class CacheCommandError extends Error {
  override name = "CacheCommandError";
}

function limitOrFail(text?: string): number {
  try {
    return text === undefined ? cacheLimit() : parseSize(text, "--max-size");
  } catch (e) {
    if (e instanceof CacheLimitError) throw new CacheCommandError(e.message);
    throw e;
  }
}

/** `sausage cache`: the folder, its size by kind, the limit. Returns the exit code. */
export async function showCache(dir: string, options: CacheCommandOptions = {}): Promise<number> {
  const print = options.print ?? console.log;
  const usage = await cacheUsage(dir);
  const limit = limitOrFail();
  const counts = Object.fromEntries(
    CACHE_KINDS.map((k) => [k, usage.entries.filter((e) => e.kind === k).length]),
  );
  if (options.json) {
    print(JSON.stringify({ ...usage, counts, limit }, null, 2));
    return 0;
  }
  const c = pc.createColors(options.color ?? false);
  print(`${c.bold("cache")} ${dir}${usage.exists ? "" : c.dim(" (not created yet)")}`);
  for (const kind of CACHE_KINDS) {
    if (kind === "other" && counts.other === 0) continue;
    print(
      `  ${formatBytes(usage.bytes[kind]).padStart(10)}  ${KIND_TEXT[kind]}, ${counts[kind]} ` +
        (counts[kind] === 1 ? "entry" : "entries"),
    );
  }
  print(
    `  ${formatBytes(usage.total).padStart(10)}  in all; limit ` +
      (limit > 0 ? formatBytes(limit) : "none") +
      c.dim(` (${CACHE_LIMIT_ENV}), applied after each build`),
  );
  const oldest =
    usage.entries.filter((e) => e.kind !== "other").sort((a, b) => a.lastUse - b.lastUse)[0];
  if (oldest) {
    print(
      c.dim(`  least recently used: ${oldest.path}, ${new Date(oldest.lastUse).toISOString()}`),
    );
  }
  return 0;
}

/**
 * `sausage cache gc`: removes the entries unused for `days` (default 30),
 * then the least recently used ones until the cache is under the limit.
 * Returns 0, or 1 when something could not be removed.
 */
export async function collectCache(
  dir: string,
  options: CacheCommandOptions & { days?: string; maxSize?: string } = {},
): Promise<number> {
  const print = options.print ?? console.log;
  let maxAgeMs = UNUSED_KEPT_MS;
  if (options.days !== undefined) {
    const days = Number(options.days);
    if (!Number.isFinite(days) || days < 0) {
      throw new CacheCommandError(`--days takes a number of days (0 or more), not ${options.days}`);
    }
    maxAgeMs = days * 24 * 3600 * 1000;
  }
  const limit = limitOrFail(options.maxSize);
  try {
    const stat = await Deno.stat(dir);
    if (!stat.isDirectory) throw new CacheCommandError(`${dir} is not a folder`);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) {
      print(options.json ? JSON.stringify({ removed: [], freed: 0, left: 0 }) : `${dir}: empty`);
      return 0;
    }
    throw e;
  }
  const old = await collectUnused(dir, { maxAgeMs });
  // this command runs no host: nothing is in use but what others used lately
  const limited = await enforceLimit(dir, limit);
  const removed = [...old.removed, ...limited.removed];
  const failed = [...old.failed, ...limited.failed];
  const freed = old.freed + limited.freed;
  if (options.json) {
    print(JSON.stringify({ removed, freed, left: limited.left, limit, failed }, null, 2));
  } else {
    const c = pc.createColors(options.color ?? false);
    for (const e of removed) {
      print(
        `removed ${e.path} (${formatBytes(e.bytes)}, last used ${
          new Date(e.lastUse).toISOString()
        })`,
      );
    }
    for (const f of failed) print(`${c.red("cannot remove")} ${f.path}: ${f.why}`);
    print(
      `freed ${formatBytes(freed)}; the cache ${dir} holds ${formatBytes(limited.left)}` +
        (limit > 0 ? ` (limit ${formatBytes(limit)})` : ""),
    );
    if (failed.length > 0) {
      print(`fix the permissions of ${dir} (it must be writable by this user), then run it again`);
    }
  }
  return failed.length > 0 ? 1 : 0;
}
