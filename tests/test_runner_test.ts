/**
 * `sausage test` as cargo's runner (PROTOCOL section 11): each test in its
 * own instance, libtest's report, fixtures, and the runner's small core.
 */
import assert from "node:assert/strict";
import { findWasmToolchain, WASM_TARGET } from "../core/cargo/toolchain.ts";
import { TEST_CACHE_DIR } from "./world.ts";

const PLUGINS = new URL("./plugins/", import.meta.url).pathname;
const MAIN = new URL("../main.ts", import.meta.url).pathname;
const RUNNER =
  `${Deno.execPath()} run --no-prompt --allow-all --unstable-worker-options ${MAIN} test --cache-dir ${TEST_CACHE_DIR}`;

async function cargo(...args: string[]) {
  const toolchain = await findWasmToolchain();
  const out = await new Deno.Command("cargo", {
    args: [
      ...args.slice(0, 1),
      "--release",
      "--target",
      WASM_TARGET,
      "-q",
      "-p",
      "testcrate",
      ...args.slice(1),
    ],
    cwd: PLUGINS,
    env: { ...toolchain.env, CARGO_TARGET_WASM32_WASIP2_RUNNER: RUNNER, NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

Deno.test("cargo test: each test in its own instance; a panic fails only its own test; libtest's report", async () => {
  const r = await cargo("test", "--bin", "testcrate");
  assert.equal(r.code, 101, r.stderr);
  for (
    const line of [
      "test tests::passes ... ok",
      "test tests::panics ... FAILED",
      "test tests::ignored ... ignored",
      "test tests::reads_a_fixture ... ok",
      "test tests::an_empty_world_of_its_own ... ok",
      "test tests::another_empty_world ... ok",
      "test tests::the_runner_answers_core_lock_and_refuses_plugins ... ok",
      "test tests::proc_shows_the_protocol ... ok",
      "test tests::should_panic ... ignored, #[should_panic] is not supported",
    ]
  ) {
    assert.ok(r.stdout.includes(line), `${line}\n---\n${r.stdout}`);
  }
  assert.match(r.stdout, /---- tests::panics stdout ----\nabout to fail\n[\s\S]*one is not two/);
  assert.match(
    r.stdout,
    /test result: FAILED\. 6 passed; 1 failed; 2 ignored; 0 measured; 0 filtered out/,
  );
  assert.match(r.stderr, /test failed/);
});

Deno.test("cargo test: name filters, --ignored, and tests/*.rs", async () => {
  const filtered = await cargo("test", "--bin", "testcrate", "--", "fixture");
  assert.equal(filtered.code, 0, filtered.stdout);
  assert.match(filtered.stdout, /running 1 test\ntest tests::reads_a_fixture \.\.\. ok/);
  assert.match(filtered.stdout, /1 passed; 0 failed; 0 ignored; 0 measured; 8 filtered out/);
  const ignored = await cargo("test", "--bin", "testcrate", "--", "--ignored");
  assert.match(ignored.stdout, /test tests::ignored \.\.\. ok/);
  const integration = await cargo("test", "--test", "integration");
  assert.equal(integration.code, 0);
  assert.match(integration.stdout, /test an_integration_test \.\.\. ok/);
});

Deno.test("cargo run goes through the runner as a plain command", async () => {
  const r = await cargo("run", "--bin", "testcrate");
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, "testcrate main\n");
});
