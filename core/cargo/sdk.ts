/**
 * The Rust SDK the host ships: the crates `sausage-plugin`,
 * `sausage-plugin-macros` and `sausage-plugin-codegen` from `sdk/`, as a
 * workspace of their own. `sausage init` and each host start install it in
 * the world at `/plugins/cargo/sdk/`, where `sausage-plugin = "0.1"` resolves
 * during `cargo.build`. A build takes the files from there into the cache,
 * named by their hash, so worlds with the same SDK share compiled crates.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { dirname, join, relative, sep as SEP } from "node:path";
import { MAX_SDK_BYTES } from "../../protocol/limits.ts";
import { SDK_CRATES as CRATES, SDK_DIR } from "../embedded.ts";

/** The crates of the SDK, as folders of `sdk/`. */
export const SDK_CRATES: readonly string[] = CRATES;

/** Folders of a crate that are not part of what a plugin builds against. */
const SKIPPED = new Set(["target", "tests", "ui-tests", "test-plugins"]);

/**
 * Reads the files under `dir` into `files` (paths relative to `root`),
 * without build output, dot files or links.
 */
async function readTree(root: string, dir: string, files: Map<string, Uint8Array>) {
  let bytes = 0;
  for (const data of files.values()) bytes += data.length;
  const walk = async (dir: string) => {
    for await (const e of Deno.readDir(dir)) {
      if (SKIPPED.has(e.name) || e.name.startsWith(".")) continue;
      const path = join(dir, e.name);
      if (e.isDirectory) await walk(path);
      else if (e.isFile) {
        const data = await Deno.readFile(path);
        bytes += data.length;
        if (bytes > MAX_SDK_BYTES) {
          throw new TooLarge(`more than ${MAX_SDK_BYTES >> 20} MiB of files`);
        }
        files.set(relative(root, path), data);
      }
    }
  };
  await walk(dir);
}

/** The SDK's files: path relative to the SDK root → content. */
export async function sdkFiles(): Promise<Map<string, Uint8Array>> {
  const files = new Map<string, Uint8Array>();
  const root = SDK_DIR;
  for (const crate of SDK_CRATES) await readTree(root, join(root, crate), files);
  files.set("README.md", await Deno.readFile(join(root, "README.md")));
  files.set(
    "Cargo.toml",
    new TextEncoder().encode(workspaceManifest(await Deno.readTextFile(join(root, "Cargo.toml")))),
  );
  return files;
}

/** The SDK's workspace manifest with only the shipped crates as members. */
export function workspaceManifest(text: string): string {
  return text.replace(
    /members\s*=\s*\[[^\]]*\]/,
    `members = [\n${SDK_CRATES.map((c) => `    "${c}",`).join("\n")}\n]`,
  ).replace(/^trybuild\s*=.*\n/m, "");
}

/** A short hash of all the SDK's files: the name of its copy in the cache. */
export function sdkVersion(files: Map<string, Uint8Array>): string {
  const hash = createHash("sha256");
  for (const [path, bytes] of [...files].sort(([a], [b]) => a.localeCompare(b))) {
    hash.update(`${path}\0${bytes.length}\0`).update(bytes);
  }
  return hash.digest("hex").slice(0, 16);
}

/**
 * Makes `dest` a mirror of the SDK: files that differ are replaced, files
 * that are not part of it are removed (so a build's warning about an edited
 * SDK ends with a host start). `target/` and dot files are left alone: they
 * hold build output and tools' state, never what a build reads. Returns the
 * number of files written or removed.
 */
export async function installSdk(dest: string, files?: Map<string, Uint8Array>): Promise<number> {
  const sdk = files ?? await sdkFiles();
  let changed = 0;
  try {
    // a file or a link where the folder belongs is not the SDK
    if (!(await Deno.lstat(dest)).isDirectory) {
      await Deno.remove(dest);
      changed++;
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  changed += await prune(dest, dest, sdk);
  for (const [path, bytes] of sdk) {
    const target = join(dest, path);
    try {
      const info = await Deno.lstat(target);
      // a link is replaced, never written through to what it points to
      if (info.isFile && sameBytes(await Deno.readFile(target), bytes)) continue;
      await Deno.remove(target, { recursive: true });
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    await Deno.mkdir(dirname(target), { recursive: true });
    await Deno.writeFile(target, bytes);
    changed++;
  }
  return changed;
}

/**
 * Removes what under `dir` is not a file of `sdk` (nor a folder holding one),
 * except `target/` and dot entries. Returns the number removed.
 */
async function prune(root: string, dir: string, sdk: Map<string, Uint8Array>): Promise<number> {
  let removed = 0;
  let entries: Deno.DirEntry[];
  try {
    entries = await Array.fromAsync(Deno.readDir(dir));
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return 0;
    throw e;
  }
  for (const e of entries) {
    if (e.name.startsWith(".") || e.name === "target") continue;
    const path = join(dir, e.name);
    const rel = relative(root, path);
    if (e.isDirectory && hasUnder(sdk, rel)) {
      removed += await prune(root, path, sdk);
    } else if (!(e.isFile && sdk.has(rel)) && !(e.isDirectory && hasUnder(sdk, rel))) {
      await Deno.remove(path, { recursive: true });
      removed++;
    }
  }
  return removed;
}

function hasUnder(sdk: Map<string, Uint8Array>, folder: string): boolean {
  const prefix = folder + SEP;
  for (const path of sdk.keys()) if (path.startsWith(prefix)) return true;
  return false;
}

/** The SDK the host ships, in the cache (installed when missing); its folder. */
export async function cachedSdk(cacheDir: string): Promise<string> {
  return await sdkInCache(cacheDir, await sdkFiles());
}

/**
 * A copy unused for this long is removed when another copy is made: each
 * edit of a world's SDK makes one, and the cache is shared by all worlds.
 */
export const SDK_COPY_KEPT_MS = 30 * 24 * 3600 * 1000;
/** A copy that never completed (its host died) is removed after a day. */
const INCOMPLETE_KEPT_MS = 24 * 3600 * 1000;

/**
 * A copy of an SDK's files in the cache, named by their hash; its folder.
 * Each use touches its `.complete` marker, the time that pruning reads.
 */
async function sdkInCache(cacheDir: string, files: Map<string, Uint8Array>): Promise<string> {
  const dir = join(cacheDir, "sdk", sdkVersion(files));
  const marker = join(dir, ".complete");
  try {
    const now = new Date();
    await Deno.utime(marker, now, now);
    return dir;
  } catch {
    // install it
  }
  await installSdk(dir, files);
  await Deno.writeTextFile(marker, "");
  await pruneSdkCopies(join(cacheDir, "sdk"), dir);
  return dir;
}

/**
 * Removes the copies under `sdkDir` other than `keep` that were last used
 * over {@linkcode SDK_COPY_KEPT_MS} ago (or never completed, a day ago).
 * The compiled crates of a removed copy are rebuilt if it comes back.
 */
export async function pruneSdkCopies(sdkDir: string, keep: string, now = Date.now()) {
  for await (const e of Deno.readDir(sdkDir)) {
    const dir = join(sdkDir, e.name);
    if (!e.isDirectory || dir === keep) continue;
    const used = await lastUse(dir);
    const limit = used.complete ? SDK_COPY_KEPT_MS : INCOMPLETE_KEPT_MS;
    if (now - used.at <= limit) continue;
    await Deno.remove(dir, { recursive: true }).catch(() => {}); // another host got there first
  }
}

async function lastUse(dir: string): Promise<{ complete: boolean; at: number }> {
  try {
    const info = await Deno.stat(join(dir, ".complete"));
    return { complete: true, at: info.mtime?.getTime() ?? 0 };
  } catch {
    const info = await Deno.stat(dir).catch(() => null);
    return { complete: false, at: info?.mtime?.getTime() ?? 0 };
  }
}

/** What a build compiles `sausage-plugin` from. */
export interface BuildSdk {
  /** The folder in the cache with the world's SDK files. */
  dir: string;
  /** The files of the world's SDK that differ from the SDK the host ships, or are not in it. */
  changed: string[];
}

/** The world's `/plugins/cargo/sdk/` cannot be built against; the message says why and the fix. */
export class SdkUnusable extends Error {
  override name = "SdkUnusable";
}

/** An SDK folder over {@linkcode MAX_SDK_BYTES}. */
class TooLarge extends Error {}

const REINSTALL = "restart the host or run `sausage init WORLD`, which install it again";

/**
 * The SDK a build uses: the files at `worldSdk` (`/plugins/cargo/sdk/`) as
 * they are, copied into the cache by their hash, so what an agent reads
 * there is what it builds against.
 */
export async function sdkForBuild(worldSdk: string, cacheDir: string): Promise<BuildSdk> {
  const files = new Map<string, Uint8Array>();
  try {
    await readTree(worldSdk, worldSdk, files);
  } catch (e) {
    if (e instanceof Deno.errors.NotADirectory) {
      throw new SdkUnusable(
        `/plugins/cargo/sdk is not a folder (a file is in its place): ${REINSTALL}`,
      );
    }
    if (e instanceof TooLarge) {
      throw new SdkUnusable(
        `/plugins/cargo/sdk/ holds ${e.message} (outside target/ and dot folders), more than an ` +
          `SDK does: remove what was added there, or ${REINSTALL}`,
      );
    }
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  if (!files.has(join("sausage-plugin", "Cargo.toml"))) {
    throw new SdkUnusable(
      `there is no SDK at /plugins/cargo/sdk/ (sausage-plugin/Cargo.toml is missing): ${REINSTALL}`,
    );
  }
  const shipped = await sdkFiles();
  const changed = [
    ...[...files].filter(([path, data]) => !sameBytes(shipped.get(path), data)).map(([p]) => p),
    ...[...shipped.keys()].filter((path) => !files.has(path)).map((p) => `${p} (missing)`),
  ].sort();
  return { dir: await sdkInCache(cacheDir, files), changed };
}

/**
 * The state of an SDK folder as the paths, sizes and modification times of
 * the files a build reads: cheap enough to check on each read of a
 * `client.rs`, and it changes with any edit.
 */
export function sdkFingerprint(dir: string): string {
  const parts: string[] = [];
  const walk = (dir: string) => {
    let entries: Deno.DirEntry[];
    try {
      entries = [...Deno.readDirSync(dir)];
    } catch (e) {
      parts.push(`${dir}: ${(e as Error).name}`);
      return;
    }
    for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      if (SKIPPED.has(e.name) || e.name.startsWith(".")) continue;
      const path = join(dir, e.name);
      if (e.isDirectory) walk(path);
      else if (e.isFile) {
        try {
          const info = Deno.statSync(path);
          parts.push(`${path}\0${info.size}\0${info.mtime?.getTime()}`);
        } catch {
          parts.push(`${path}\0gone`);
        }
      }
    }
  };
  walk(dir);
  return parts.join("\n");
}

function sameBytes(a: Uint8Array | undefined, b: Uint8Array): boolean {
  return a !== undefined && a.length === b.length && a.every((x, i) => x === b[i]);
}
