/**
 * Finds a Rust toolchain that can build `wasm32-wasip2` components.
 *
 * In order: `RUSTC` (and `RUSTDOC`) from the environment; the `rustc` on the
 * PATH when it has the `wasm32-wasip2` standard library (`rustup target add
 * wasm32-wasip2`); a sysroot built by `toolchain/setup-rust-wasip2.sh` in
 * `/opt/rust-wasip2` (its `env.sh` is read, not sourced).
 *
 * @module
 */

/** The target every plugin is built for. */
export const WASM_TARGET = "wasm32-wasip2";

/** Where the toolchain setup script installs its sysroot by default. */
export const PREBUILT_SYSROOT = "/opt/rust-wasip2";

/** A toolchain that was found: the variables to pass to cargo. */
export interface WasmToolchain {
  /** Variables such as `RUSTC`, `RUSTDOC`, `CC_wasm32_wasip2`. */
  env: Record<string, string>;
  /** How it was found, for messages. */
  source: string;
}

/** Raised when no toolchain can build `wasm32-wasip2`; the message says what to install. */
export class ToolchainMissing extends Error {
  override name = "ToolchainMissing";
}

async function output(cmd: string, args: string[], env: Record<string, string> = {}) {
  try {
    const out = await new Deno.Command(cmd, { args, env, stdout: "piped", stderr: "piped" })
      .output();
    return out.success ? new TextDecoder().decode(out.stdout).trim() : null;
  } catch {
    return null;
  }
}

async function hasWasmStd(rustc: string): Promise<boolean> {
  const sysroot = await output(rustc, ["--print", "sysroot"]);
  if (!sysroot) return false;
  try {
    for await (const entry of Deno.readDir(`${sysroot}/lib/rustlib/${WASM_TARGET}/lib`)) {
      if (entry.name.startsWith("libstd-")) return true;
    }
  } catch {
    return false;
  }
  return false;
}

/** Reads `export NAME=value ...` lines of a generated env.sh. */
function parseEnvScript(text: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of text.split("\n")) {
    const m = line.match(/^\s*export\s+(.*)$/);
    if (!m) continue;
    for (const pair of m[1].split(/\s+/)) {
      const eq = pair.indexOf("=");
      if (eq > 0) env[pair.slice(0, eq)] = pair.slice(eq + 1);
    }
  }
  return env;
}

/** Finds a toolchain, or throws {@linkcode ToolchainMissing} with the fix. */
export async function findWasmToolchain(): Promise<WasmToolchain> {
  const fromEnv: Record<string, string> = {};
  for (const name of ["RUSTC", "RUSTDOC", "CC_wasm32_wasip2", "AR_wasm32_wasip2"]) {
    const value = Deno.env.get(name);
    if (value) fromEnv[name] = value;
  }
  if (fromEnv.RUSTC) {
    if (await hasWasmStd(fromEnv.RUSTC)) return { env: fromEnv, source: "RUSTC" };
    throw new ToolchainMissing(
      `RUSTC=${fromEnv.RUSTC} has no ${WASM_TARGET} standard library. ` +
        `Point RUSTC to a toolchain with it, or unset RUSTC and run: rustup target add ${WASM_TARGET}`,
    );
  }
  if (await hasWasmStd("rustc")) return { env: fromEnv, source: "rustc on PATH" };
  try {
    const script = await Deno.readTextFile(`${PREBUILT_SYSROOT}/env.sh`);
    const env = { ...parseEnvScript(script), ...fromEnv };
    if (env.RUSTC && await hasWasmStd(env.RUSTC)) {
      return { env, source: `${PREBUILT_SYSROOT}/env.sh` };
    }
  } catch {
    // not installed there
  }
  throw new ToolchainMissing(
    `No Rust toolchain with the ${WASM_TARGET} target was found. ` +
      `Install it with: rustup target add ${WASM_TARGET} ` +
      `(or set RUSTC and RUSTDOC to a toolchain that has it).`,
  );
}
