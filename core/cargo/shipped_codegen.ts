/**
 * The import generator (`sausage-plugin-codegen`) as the host ships it:
 * built ahead into `sdk/dist/sausage-plugin-codegen.wasm`, so that a
 * plugin's `client.rs` is there on the first read after its activation,
 * even on a cache that never built anything. `sdk/dist/codegen.json` names
 * the hash of the crate's source it was built from; a world whose SDK has
 * the same generator source uses it, one with an edited generator builds
 * its own (`client_code.ts`).
 *
 * @module
 */
import { createHash } from "node:crypto";
import { join, relative } from "node:path";
import { CODEGEN_DIST } from "../embedded.ts";

/** The generator's crate, as a folder of an SDK. */
export const CODEGEN_CRATE = "sausage-plugin-codegen";

/** What `sdk/dist/codegen.json` says. */
export interface CodegenManifest {
  /** {@linkcode codegenSourceHash} of the SDK it was built from. */
  source: string;
  /** The sha256 of `sausage-plugin-codegen.wasm`. */
  wasm: string;
}

/**
 * A hash of the generator's source in an SDK folder: its `Cargo.toml` and
 * every file under `src/`.
 *
 * @example
 * ```ts
 * import { SDK_DIR } from "../embedded.ts";
 * const hash = await codegenSourceHash(SDK_DIR);
 * console.log(hash.length); // 64
 * ```
 */
export async function codegenSourceHash(sdkDir: string): Promise<string> {
  const crate = join(sdkDir, CODEGEN_CRATE);
  const files: string[] = [join(crate, "Cargo.toml")];
  const walk = async (dir: string) => {
    for await (const e of Deno.readDir(dir)) {
      if (e.isDirectory) await walk(join(dir, e.name));
      else if (e.isFile) files.push(join(dir, e.name));
    }
  };
  await walk(join(crate, "src"));
  const hash = createHash("sha256");
  for (const file of files.map((f) => relative(crate, f)).sort()) {
    const bytes = await Deno.readFile(join(crate, file));
    hash.update(`${file.replaceAll("\\", "/")}\0${bytes.length}\0`).update(bytes);
  }
  return hash.digest("hex");
}

/** Reads `codegen.json` of a dist folder. */
export async function readCodegenManifest(dist: string = CODEGEN_DIST): Promise<CodegenManifest> {
  return JSON.parse(await Deno.readTextFile(join(dist, "codegen.json"))) as CodegenManifest;
}

/**
 * The shipped generator when the SDK at `sdkDir` has the source it was
 * built from; undefined when that source was edited (or nothing was
 * shipped).
 */
export async function shippedGenerator(
  sdkDir: string,
  dist: string = CODEGEN_DIST,
): Promise<Uint8Array | undefined> {
  let manifest: CodegenManifest;
  let wasm: Uint8Array;
  try {
    manifest = await readCodegenManifest(dist);
    wasm = await Deno.readFile(join(dist, `${CODEGEN_CRATE}.wasm`));
  } catch {
    return undefined;
  }
  if (manifest.source !== await codegenSourceHash(sdkDir).catch(() => "")) return undefined;
  const hash = createHash("sha256").update(wasm).digest("hex");
  return hash === manifest.wasm ? wasm : undefined;
}
