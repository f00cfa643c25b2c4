/**
 * `sausage --version`: Sausage's version, the commit it was built from when
 * known, and the versions of what it runs on (Deno, jco, the SDK).
 *
 * @module
 */
import { join } from "node:path";
import { sdkFiles, sdkVersion } from "../core/cargo/sdk.ts";
import { TRANSPILER_FINGERPRINT } from "../core/components/format.ts";
import { DENO_JSON, ROOT } from "../core/embedded.ts";

/** Sausage's own version: the release bumps it with the SDK's (`sdk/Cargo.toml`). */
export const SAUSAGE_VERSION = "0.1.0";

/** The versions `sausage --version` prints. */
export interface Versions {
  sausage: string;
  /** The Git commit of the source, when it runs from a checkout (or `SAUSAGE_COMMIT` says). */
  commit: string | null;
  deno: string;
  v8: string;
  typescript: string;
  /** `@bytecodealliance/jco`, from `deno.json`. */
  jco: string | null;
  /** `@bytecodealliance/jco-transpile`, which transpiles the plugins. */
  jcoTranspile: string | null;
  /** The SDK crates' version (`sdk/Cargo.toml`) and the hash of their files (the cache's name). */
  sdk: { version: string | null; files: string | null };
  /** What the component cache's entries are keyed by. */
  transpiler: string;
}

/** The version of an npm package in `deno.json`'s imports. */
export function importVersion(imports: Record<string, string>, name: string): string | null {
  const spec = imports[name];
  const m = spec?.match(/^npm:(?:@[^/]+\/)?[^@]+@(.+)$/);
  return m ? m[1] : null;
}

/** The commit of the Git checkout at `root`, read from its files (no `git` needed). */
export async function gitCommit(root: string): Promise<string | null> {
  try {
    let gitDir = join(root, ".git");
    const info = await Deno.stat(gitDir);
    if (info.isFile) {
      // a worktree: `.git` names the real folder
      const m = (await Deno.readTextFile(gitDir)).match(/^gitdir:\s*(.+)$/m);
      if (!m) return null;
      gitDir = m[1].trim().startsWith("/") ? m[1].trim() : join(root, m[1].trim());
    }
    const head = (await Deno.readTextFile(join(gitDir, "HEAD"))).trim();
    if (/^[0-9a-f]{40}$/.test(head)) return head;
    const ref = head.match(/^ref:\s*(.+)$/)?.[1];
    if (!ref) return null;
    // a worktree's refs live in the common folder
    const common = await Deno.readTextFile(join(gitDir, "commondir"))
      .then((c) => c.trim().startsWith("/") ? c.trim() : join(gitDir, c.trim()))
      .catch(() => gitDir);
    for (const dir of [gitDir, common]) {
      const loose = await Deno.readTextFile(join(dir, ref)).catch(() => null);
      if (loose) return loose.trim();
    }
    const packed = await Deno.readTextFile(join(common, "packed-refs")).catch(() => "");
    const line = packed.split("\n").find((l) => l.endsWith(` ${ref}`));
    return line ? line.split(" ")[0] : null;
  } catch {
    return null;
  }
}

/** Collects the versions. */
export async function versions(): Promise<Versions> {
  // deno.json is read, not imported: the root folder imports cli/, never the other way
  const imports = await Deno.readTextFile(DENO_JSON)
    .then((text) => JSON.parse(text).imports as Record<string, string>)
    .catch(() => ({} as Record<string, string>));
  let sdk: Versions["sdk"] = { version: null, files: null };
  try {
    const files = await sdkFiles();
    const manifest = new TextDecoder().decode(files.get("Cargo.toml"));
    const version = manifest.match(/\[workspace\.package\][^[]*?version\s*=\s*"([^"]+)"/)?.[1];
    sdk = { version: version ?? null, files: sdkVersion(files) };
  } catch {
    // not shipped with this build: the line says unknown
  }
  const commit = Deno.env.get("SAUSAGE_COMMIT") || await gitCommit(ROOT);
  return {
    sausage: SAUSAGE_VERSION,
    commit,
    deno: Deno.version.deno,
    v8: Deno.version.v8,
    typescript: Deno.version.typescript,
    jco: importVersion(imports, "@bytecodealliance/jco"),
    jcoTranspile: importVersion(imports, "@bytecodealliance/jco-transpile") ??
      TRANSPILER_FINGERPRINT.match(/jco-transpile@([^,\s]+)/)?.[1] ?? null,
    sdk,
    transpiler: TRANSPILER_FINGERPRINT,
  };
}

/** The text of `sausage --version`. */
export function formatVersions(v: Versions): string {
  const unknown = "unknown";
  return [
    `sausage ${v.sausage}${v.commit ? ` (commit ${v.commit.slice(0, 12)})` : ""}`,
    `deno ${v.deno} (v8 ${v.v8}, typescript ${v.typescript})`,
    `jco ${v.jco ?? unknown}, jco-transpile ${v.jcoTranspile ?? unknown}`,
    `sdk sausage-plugin ${v.sdk.version ?? unknown}` +
    (v.sdk.files ? ` (files ${v.sdk.files})` : ""),
  ].join("\n");
}
