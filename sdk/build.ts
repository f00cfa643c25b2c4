/**
 * Builds the SDK's example and test plugins for `wasm32-wasip2`, for the
 * Deno tests in this folder. All of them share one target folder,
 * `sdk/target`, so the SDK's dependencies compile once.
 *
 * @module
 */
import { findWasmToolchain, WASM_TARGET } from "../core/cargo/toolchain.ts";

const SDK = new URL("./", import.meta.url).pathname;
/** The target folder shared by the SDK and its plugins. */
export const TARGET_DIR = `${SDK}target`;

/** The crates: plugin name in a test world → crate folder (`#bin` names one of its binaries). */
export const PLUGINS: Record<string, string> = {
  notes: `${SDK}../plugins/notes`,
  www: `${SDK}../plugins/www`,
  secrets: `${SDK}../plugins/secrets`,
  probe: `${SDK}test-plugins/probe`,
  client: `${SDK}test-plugins/client`,
  // one crate, two binaries: two versions of one plugin
  counter_v1: `${SDK}test-plugins/counter#counter_v1`,
  counter_v2: `${SDK}test-plugins/counter#counter_v2`,
};

const built = new Map<string, Promise<void>>();

async function build(dir: string): Promise<void> {
  const toolchain = await findWasmToolchain();
  const out = await new Deno.Command("cargo", {
    args: ["build", "--release", "--quiet", "--target", WASM_TARGET],
    cwd: dir,
    env: { ...toolchain.env, CARGO_TARGET_DIR: TARGET_DIR },
    stdout: "inherit",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(`cargo build in ${dir} failed:\n${new TextDecoder().decode(out.stderr)}`);
  }
}

/** The `.wasm` of a crate's binary: the one named, or the package's. */
async function wasmOf(dir: string, bin: string | undefined): Promise<string> {
  let name = bin;
  if (!name) {
    const manifest = await Deno.readTextFile(`${dir}/Cargo.toml`);
    name = manifest.match(/^name\s*=\s*"([^"]+)"/m)?.[1];
    if (!name) throw new Error(`no package name in ${dir}/Cargo.toml`);
  }
  return `${TARGET_DIR}/${WASM_TARGET}/release/${name}.wasm`;
}

/** The built `.wasm` of a plugin of {@linkcode PLUGINS} (built once per test process). */
export async function plugin(name: string): Promise<string> {
  const entry = PLUGINS[name];
  if (!entry) throw new Error(`no SDK plugin ${name}`);
  const [dir, bin] = entry.split("#");
  let done = built.get(dir);
  if (!done) {
    done = build(dir);
    built.set(dir, done);
  }
  await done;
  return await wasmOf(dir, bin);
}

/** Copies SDK plugins into a world: world plugin name → name in {@linkcode PLUGINS}. */
export async function install(root: string, plugins: Record<string, string>): Promise<void> {
  for (const [name, crate] of Object.entries(plugins)) {
    await Deno.mkdir(`${root}/plugins/${name}`, { recursive: true });
    await Deno.copyFile(await plugin(crate), `${root}/plugins/${name}/plugin.wasm`);
  }
}
