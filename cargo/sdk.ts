/**
 * The Rust SDK the host ships: the crates `sausage-plugin`,
 * `sausage-plugin-macros` and `sausage-plugin-codegen` from `sdk/`, as a
 * workspace of their own. The host installs it in its cache (where
 * `sausage-plugin = "0.1"` resolves during `cargo.build`) and in each world
 * at `/plugins/cargo/sdk/` (where agents and people read it). Both are the
 * same files.
 *
 * @module
 */
import { dirname, join, relative } from "node:path";
import { sha256Hex } from "../core/components/cache.ts";

/** The crates of the SDK, as folders of `sdk/`. */
export const SDK_CRATES = ["sausage-plugin", "sausage-plugin-macros", "sausage-plugin-codegen"];

const SDK_ROOT = new URL("../sdk/", import.meta.url);

/** Folders of a crate that are not part of what a plugin builds against. */
const SKIPPED = new Set(["target", "tests", "ui-tests", "test-plugins"]);

/** The SDK's files: path relative to the SDK root → content. */
export async function sdkFiles(): Promise<Map<string, Uint8Array>> {
  const files = new Map<string, Uint8Array>();
  const root = SDK_ROOT.pathname;
  const walk = async (dir: string) => {
    for await (const e of Deno.readDir(dir)) {
      if (SKIPPED.has(e.name) || e.name.startsWith(".")) continue;
      const path = join(dir, e.name);
      if (e.isDirectory) await walk(path);
      else if (e.isFile) files.set(relative(root, path), await Deno.readFile(path));
    }
  };
  for (const crate of SDK_CRATES) await walk(join(root, crate));
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
export async function sdkVersion(files: Map<string, Uint8Array>): Promise<string> {
  const parts: Uint8Array[] = [];
  for (const [path, bytes] of [...files].sort(([a], [b]) => a.localeCompare(b))) {
    parts.push(new TextEncoder().encode(`${path}\0${bytes.length}\0`), bytes);
  }
  const all = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    all.set(p, at);
    at += p.length;
  }
  return (await sha256Hex(all)).slice(0, 16);
}

/**
 * Writes the SDK to `dest` (files that differ are replaced; others are left
 * alone). Returns the number of files written.
 */
export async function installSdk(dest: string, files?: Map<string, Uint8Array>): Promise<number> {
  const sdk = files ?? await sdkFiles();
  let written = 0;
  for (const [path, bytes] of sdk) {
    const target = join(dest, path);
    try {
      const now = await Deno.readFile(target);
      if (now.length === bytes.length && now.every((b, i) => b === bytes[i])) continue;
    } catch {
      // not there yet
    }
    await Deno.mkdir(dirname(target), { recursive: true });
    await Deno.writeFile(target, bytes);
    written++;
  }
  return written;
}

/** The SDK in the cache (installed when missing); its folder. */
export async function cachedSdk(cacheDir: string): Promise<string> {
  const files = await sdkFiles();
  const dir = join(cacheDir, "sdk", await sdkVersion(files));
  try {
    await Deno.stat(join(dir, ".complete"));
    return dir;
  } catch {
    // install it
  }
  await installSdk(dir, files);
  await Deno.writeTextFile(join(dir, ".complete"), "");
  return dir;
}
