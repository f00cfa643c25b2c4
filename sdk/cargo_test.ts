/**
 * The Rust tests of the SDK and of its examples, so that `deno task test`
 * runs them too: the host-target tests of `sdk/` (the generator, the macros'
 * compile errors, the generated documents, the unused-import warnings), the
 * runtime's tests under WASI, and the examples' own tests, each test in its
 * own instance (`sausage test` as cargo's runner); and the runtime without
 * the runner (`sausage run` as cargo's runner), where a test answers the
 * core's calls itself.
 */
import assert from "node:assert/strict";
import { findWasmToolchain, WASM_TARGET } from "../core/cargo/toolchain.ts";
import { sausageCommand } from "../core/host.ts";
import { TEST_CACHE_DIR } from "../tests/world.ts";
import { PLUGINS, TARGET_DIR } from "./build.ts";

const SDK = new URL("./", import.meta.url).pathname;
const RUNNER = JSON.stringify(sausageCommand(["test", "--cache-dir", TEST_CACHE_DIR]));
/** `sausage run`: a plain WASI command runner, which sets no `SAUSAGE_PID`. */
const PLAIN_RUNNER = JSON.stringify(sausageCommand(["run", "--cache-dir", TEST_CACHE_DIR]));

async function cargo(
  args: string[],
  cwd: string,
  env: Record<string, string> = {},
  runner = RUNNER,
) {
  const toolchain = await findWasmToolchain();
  const out = await new Deno.Command("cargo", {
    args: ["--config", `target.${WASM_TARGET}.runner=${runner}`, ...args],
    cwd,
    env: {
      ...toolchain.env,
      CARGO_TERM_COLOR: "never",
      ...env,
    },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  assert.ok(out.success, `cargo ${args.join(" ")} in ${cwd} failed:\n${text}`);
  const passed = [...text.matchAll(/test result: ok\. (\d+) passed/g)]
    .reduce((sum, m) => sum + Number(m[1]), 0);
  return { text, passed };
}

Deno.test("sdk: cargo test on the host (generator, macros, compile errors, documents)", async () => {
  const { passed } = await cargo(["test", "--workspace"], SDK);
  assert.ok(passed > 50, `only ${passed} tests passed`);
});

Deno.test("sdk: the runtime's tests under WASI, one instance per test", async () => {
  const { text, passed } = await cargo(
    ["test", "--target", WASM_TARGET, "-p", "sausage-plugin"],
    SDK,
  );
  assert.match(text, /test result: ok\./);
  assert.ok(passed > 20, `only ${passed} tests passed`);
});

Deno.test("sdk: without the test runner, a test's own core answers core.* and refuses plugins", async () => {
  // tests/local_core.rs, all in one instance of `sausage run`; its tests are
  // ignored under `sausage test`, so --ignored runs exactly them (and
  // --nocapture shows the message of a panic, which aborts the instance)
  const { text, passed } = await cargo(
    [
      "test",
      "--target",
      WASM_TARGET,
      "-p",
      "sausage-plugin",
      "--test",
      "local_core",
      "--",
      "--ignored",
      "--nocapture",
    ],
    SDK,
    {},
    PLAIN_RUNNER,
  );
  assert.match(text, /calls_to_plugins_are_refused_and_say_why \.\.\. ok/);
  assert.match(text, /test result: ok\. \d+ passed; 0 failed; 0 ignored/);
  assert.ok(passed >= 8, `only ${passed} tests passed:\n${text}`);
});

for (const name of ["notes", "www", "secrets"]) {
  Deno.test(`${name}: the example's tests under WASI`, async () => {
    const { passed } = await cargo(["test", "--target", WASM_TARGET], PLUGINS[name], {
      CARGO_TARGET_DIR: TARGET_DIR,
    });
    assert.ok(passed > 0);
  });
}
