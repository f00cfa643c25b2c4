/**
 * Finds a Rust toolchain that can build `wasm32-wasip2` components.
 *
 * In order: `RUSTC` (and `RUSTDOC`) from the environment; the `rustc` on the
 * PATH when it has the `wasm32-wasip2` standard library (`rustup target add
 * wasm32-wasip2`); a sysroot built by `toolchain/setup-rust-wasip2.sh` in
 * `/opt/rust-wasip2` (its `env.sh` is read, not sourced).
 *
 * A WASI clang for build scripts that compile C (`CC_wasm32_wasip2`,
 * `AR_wasm32_wasip2`), in order: those variables from the environment;
 * `$WASI_SDK_PATH/bin/clang` (and `llvm-ar`); the ones the `env.sh` above
 * names; a WASI SDK in `/opt/wasi-sdk`.
 *
 * @module
 */

/** The target every plugin is built for. */
export const WASM_TARGET = "wasm32-wasip2";

/** Where the toolchain setup script installs its sysroot by default. */
export const PREBUILT_SYSROOT = "/opt/rust-wasip2";

/** Where the WASI SDK's release archives are usually unpacked. */
export const WASI_SDK_DIR = "/opt/wasi-sdk";

/** Where to look; tests give their own. */
export interface ToolchainSearch {
  /** The environment (default: this process's). */
  env?: Record<string, string>;
  /** The folder of a prebuilt sysroot with an `env.sh` (default {@linkcode PREBUILT_SYSROOT}). */
  prebuilt?: string;
  /** A WASI SDK's folder (default {@linkcode WASI_SDK_DIR}). */
  wasiSdk?: string;
}

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

/** `name` in one of the folders of `path`, when it is an executable file there. */
async function which(name: string, path: string | undefined): Promise<string | undefined> {
  for (const dir of (path ?? "").split(":")) {
    if (dir && await isExecutable(`${dir}/${name}`)) return `${dir}/${name}`;
  }
  return undefined;
}

/** Whether `path` is a file someone may execute. */
export async function isExecutable(path: string): Promise<boolean> {
  try {
    const info = await Deno.stat(path);
    return info.isFile && ((info.mode ?? 0o111) & 0o111) !== 0;
  } catch {
    return false;
  }
}

/** `CC_wasm32_wasip2` and `AR_wasm32_wasip2` of a WASI SDK folder, when it has a clang. */
async function wasiSdkTools(dir: string | undefined): Promise<Record<string, string>> {
  if (!dir || !await isExecutable(`${dir}/bin/clang`)) return {};
  const tools: Record<string, string> = { CC_wasm32_wasip2: `${dir}/bin/clang` };
  if (await isExecutable(`${dir}/bin/llvm-ar`)) tools.AR_wasm32_wasip2 = `${dir}/bin/llvm-ar`;
  return tools;
}

const C_TOOLS = ["CC_wasm32_wasip2", "AR_wasm32_wasip2"];

/** Finds a toolchain, or throws {@linkcode ToolchainMissing} with the fix. */
export async function findWasmToolchain(search: ToolchainSearch = {}): Promise<WasmToolchain> {
  const get = (name: string) => search.env ? search.env[name] : Deno.env.get(name);
  const prebuilt = search.prebuilt ?? PREBUILT_SYSROOT;
  const fromEnv: Record<string, string> = {};
  for (const name of ["RUSTC", "RUSTDOC", ...C_TOOLS]) {
    const value = get(name);
    if (value) fromEnv[name] = value;
  }
  const found = await findRustc(fromEnv, get("PATH"), prebuilt);
  // a clang someone named beats one found on disk; env.sh's belongs to its sysroot
  if (!found.env.CC_wasm32_wasip2) {
    let tools = await wasiSdkTools(get("WASI_SDK_PATH"));
    if (!tools.CC_wasm32_wasip2 && found.script.CC_wasm32_wasip2) {
      tools = Object.fromEntries(
        C_TOOLS.flatMap((n) => found.script[n] ? [[n, found.script[n]]] : []),
      );
    }
    if (!tools.CC_wasm32_wasip2) tools = await wasiSdkTools(search.wasiSdk ?? WASI_SDK_DIR);
    Object.assign(found.env, tools);
  }
  return { env: found.env, source: found.source };
}

/** The rustc to use; `script` holds what a prebuilt sysroot's env.sh names. */
async function findRustc(
  fromEnv: Record<string, string>,
  path: string | undefined,
  prebuilt: string,
): Promise<{ env: Record<string, string>; source: string; script: Record<string, string> }> {
  if (fromEnv.RUSTC) {
    if (await hasWasmStd(fromEnv.RUSTC)) return { env: fromEnv, source: "RUSTC", script: {} };
    throw new ToolchainMissing(
      `RUSTC=${fromEnv.RUSTC} has no ${WASM_TARGET} standard library. ` +
        `Point RUSTC to a toolchain with it, or unset RUSTC and run: rustup target add ${WASM_TARGET}`,
    );
  }
  const rustc = await which("rustc", path);
  if (rustc && await hasWasmStd(rustc)) {
    return { env: fromEnv, source: "rustc on PATH", script: {} };
  }
  try {
    const script = parseEnvScript(await Deno.readTextFile(`${prebuilt}/env.sh`));
    if (script.RUSTC && await hasWasmStd(script.RUSTC)) {
      const env: Record<string, string> = { ...fromEnv, RUSTC: script.RUSTC };
      if (script.RUSTDOC && !fromEnv.RUSTDOC) env.RUSTDOC = script.RUSTDOC;
      return { env, source: `${prebuilt}/env.sh`, script };
    }
  } catch {
    // not installed there
  }
  throw new ToolchainMissing(
    `No Rust toolchain with the ${WASM_TARGET} target was found` +
      (rustc ? ` (${rustc} has no ${WASM_TARGET} standard library)` : " (no rustc on the PATH)") +
      `. Install Rust with rustup (https://rustup.rs), then run: rustup target add ${WASM_TARGET}. ` +
      `Or set RUSTC and RUSTDOC to a toolchain that has it.`,
  );
}
