/**
 * Builds the Rust test plugins in `tests/plugins/` for `wasm32-wasip2`.
 *
 * Cargo rebuilds only what changed, so this is cheap when nothing did. Tests
 * call {@linkcode testPlugin}; `deno task test` runs this file first so that
 * the build output is shown once, before the tests start.
 *
 * @module
 */
import { findWasmToolchain, WASM_TARGET } from "../core/cargo/toolchain.ts";

const PLUGINS_DIR = new URL("./plugins/", import.meta.url).pathname;
const OUT_DIR = `${PLUGINS_DIR}target/${WASM_TARGET}/release/`;

let built: Promise<void> | undefined;

async function build(quiet: boolean): Promise<void> {
  const toolchain = await findWasmToolchain();
  const out = await new Deno.Command("cargo", {
    args: ["build", "--release", "--target", WASM_TARGET, ...(quiet ? ["--quiet"] : [])],
    cwd: PLUGINS_DIR,
    env: toolchain.env,
    stdout: "inherit",
    stderr: quiet ? "piped" : "inherit",
  }).output();
  if (!out.success) {
    const detail = quiet ? new TextDecoder().decode(out.stderr) : "";
    throw new Error(`building the test plugins failed (cargo in ${PLUGINS_DIR})\n${detail}`);
  }
}

/** Builds the test plugins once per test process. */
export function buildTestPlugins(): Promise<void> {
  built ??= build(true);
  return built;
}

/** The path of the built test plugin `name` (built first when needed). */
export async function testPlugin(name: string): Promise<string> {
  await buildTestPlugins();
  return `${OUT_DIR}${name.replaceAll("-", "_")}.wasm`;
}

if (import.meta.main) {
  console.log("Building the test plugins for wasm32-wasip2…");
  await build(false);
}
