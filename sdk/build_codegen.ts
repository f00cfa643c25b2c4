/**
 * Builds the import generator the host ships (`deno task build:codegen`):
 * `sausage-plugin-codegen` for `wasm32-wasip2` in release mode, into
 * `sdk/dist/sausage-plugin-codegen.wasm`, with `sdk/dist/codegen.json`
 * naming the hash of the source it was built from
 * (`core/cargo/client_code_test.ts` checks that it is fresh).
 *
 * @module
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import { findWasmToolchain, WASM_TARGET } from "../core/cargo/toolchain.ts";
import {
  CODEGEN_CRATE,
  type CodegenManifest,
  codegenSourceHash,
} from "../core/cargo/shipped_codegen.ts";
import { CODEGEN_DIST, SDK_DIR } from "../core/embedded.ts";
import { TARGET_DIR } from "./build.ts";

/** Builds the generator and writes it and its manifest to `dist`. */
export async function buildCodegen(dist: string = CODEGEN_DIST): Promise<CodegenManifest> {
  const toolchain = await findWasmToolchain();
  const source = await codegenSourceHash(SDK_DIR);
  const out = await new Deno.Command("cargo", {
    args: ["build", "--release", "--locked", "--target", WASM_TARGET, "-p", CODEGEN_CRATE],
    cwd: SDK_DIR,
    env: { ...toolchain.env, CARGO_TARGET_DIR: TARGET_DIR },
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  if (!out.success) throw new Error(`cargo build of ${CODEGEN_CRATE} failed`);
  const wasm = await Deno.readFile(
    join(TARGET_DIR, WASM_TARGET, "release", `${CODEGEN_CRATE}.wasm`),
  );
  const manifest = { source, wasm: createHash("sha256").update(wasm).digest("hex") };
  await Deno.mkdir(dist, { recursive: true });
  await Deno.writeFile(join(dist, `${CODEGEN_CRATE}.wasm`), wasm);
  await Deno.writeTextFile(join(dist, "codegen.json"), JSON.stringify(manifest, null, 2) + "\n");
  return manifest;
}

if (import.meta.main) {
  const manifest = await buildCodegen();
  console.log(`wrote sdk/dist/${CODEGEN_CRATE}.wasm (sha256 ${manifest.wasm})`);
}
