/**
 * Finding the `wasm32-wasip2` toolchain and a WASI clang, with fake folder
 * layouts (scripts named `clang`, `llvm-ar`, `rustc`) and the real rustc.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { findWasmToolchain, ToolchainMissing } from "./toolchain.ts";

/** A temporary folder with executable scripts at the given paths. */
async function layout(scripts: Record<string, string>) {
  const root = await Deno.makeTempDir({ prefix: "sausage-toolchain-" });
  for (const [path, body] of Object.entries(scripts)) {
    await Deno.mkdir(join(root, path, ".."), { recursive: true });
    await Deno.writeTextFile(join(root, path), `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  }
  return { root, [Symbol.asyncDispose]: () => Deno.remove(root, { recursive: true }) };
}

/** The rustc with the wasm32-wasip2 standard library that this machine has. */
async function realRustc(): Promise<string> {
  const found = await findWasmToolchain();
  if (found.env.RUSTC) return found.env.RUSTC;
  const { stdout } = await new Deno.Command("sh", { args: ["-c", "command -v rustc"] }).output();
  return new TextDecoder().decode(stdout).trim();
}

Deno.test("with no usable toolchain, the error says what to install", async () => {
  // a rustc on the PATH without the wasm32-wasip2 standard library, and no prebuilt sysroot
  await using dir = await layout({ "bin/rustc": `echo ${"/nowhere"}` });
  const error = await findWasmToolchain({
    env: { PATH: join(dir.root, "bin") },
    prebuilt: join(dir.root, "none"),
    wasiSdk: join(dir.root, "none"),
  }).then(() => undefined, (e) => e);
  assert.ok(error instanceof ToolchainMissing, String(error));
  assert.match(error.message, /has no wasm32-wasip2 standard library/);
  assert.match(error.message, /rustup target add wasm32-wasip2/);

  const none = await findWasmToolchain({ env: { PATH: "" }, prebuilt: join(dir.root, "none") })
    .then(() => undefined, (e) => e);
  assert.ok(none instanceof ToolchainMissing);
  assert.match(none.message, /no rustc on the PATH.*rustup.*rustup target add wasm32-wasip2/);

  const badRustc = await findWasmToolchain({ env: { RUSTC: join(dir.root, "bin", "rustc") } })
    .then(() => undefined, (e) => e);
  assert.ok(badRustc instanceof ToolchainMissing);
  assert.match(badRustc.message, /RUSTC=.* has no wasm32-wasip2 .*rustup target add wasm32-wasip2/);
});

Deno.test("a WASI clang: from the environment, WASI_SDK_PATH, a prebuilt env.sh, or /opt/wasi-sdk", async () => {
  const rustc = await realRustc();
  await using dir = await layout({
    "wasi-sdk-path/bin/clang": "exit 0",
    "wasi-sdk-path/bin/llvm-ar": "exit 0",
    "opt-wasi-sdk/bin/clang": "exit 0",
    "opt-wasi-sdk/bin/llvm-ar": "exit 0",
    "no-clang/bin/llvm-ar": "exit 0",
  });
  const sdkPath = join(dir.root, "wasi-sdk-path");
  const optSdk = join(dir.root, "opt-wasi-sdk");
  const prebuilt = join(dir.root, "prebuilt");
  await Deno.mkdir(prebuilt);
  await Deno.writeTextFile(
    join(prebuilt, "env.sh"),
    `export RUSTC=${rustc}\nexport CC_wasm32_wasip2=/from/env.sh/clang AR_wasm32_wasip2=/from/env.sh/ar\n`,
  );
  const find = async (env: Record<string, string>, where: { prebuilt?: string } = {}) =>
    (await findWasmToolchain({
      env,
      prebuilt: where.prebuilt ?? join(dir.root, "none"),
      wasiSdk: optSdk,
    })).env;

  // set in the environment: kept as it is
  assert.deepEqual(
    await find({ RUSTC: rustc, CC_wasm32_wasip2: "/my/clang", WASI_SDK_PATH: sdkPath }),
    { RUSTC: rustc, CC_wasm32_wasip2: "/my/clang" },
  );
  // WASI_SDK_PATH
  const fromSdkPath = await find({ RUSTC: rustc, WASI_SDK_PATH: sdkPath });
  assert.equal(fromSdkPath.CC_wasm32_wasip2, join(sdkPath, "bin", "clang"));
  assert.equal(fromSdkPath.AR_wasm32_wasip2, join(sdkPath, "bin", "llvm-ar"));
  // the env.sh of the prebuilt sysroot, when WASI_SDK_PATH names none
  const fromScript = await find({ PATH: "", WASI_SDK_PATH: join(dir.root, "no-clang") }, {
    prebuilt,
  });
  assert.equal(fromScript.RUSTC, rustc);
  assert.equal(fromScript.CC_wasm32_wasip2, "/from/env.sh/clang");
  assert.equal(fromScript.AR_wasm32_wasip2, "/from/env.sh/ar");
  // WASI_SDK_PATH beats env.sh
  assert.equal(
    (await find({ PATH: "", WASI_SDK_PATH: sdkPath }, { prebuilt })).CC_wasm32_wasip2,
    join(sdkPath, "bin", "clang"),
  );
  // /opt/wasi-sdk, last
  const fromOpt = await find({ RUSTC: rustc });
  assert.equal(fromOpt.CC_wasm32_wasip2, join(optSdk, "bin", "clang"));
  assert.equal(fromOpt.AR_wasm32_wasip2, join(optSdk, "bin", "llvm-ar"));
  // none anywhere: not set
  const none = await findWasmToolchain({
    env: { RUSTC: rustc },
    prebuilt: join(dir.root, "none"),
    wasiSdk: join(dir.root, "none"),
  });
  assert.deepEqual(none.env, { RUSTC: rustc });
});
