/**
 * The agent's own Rust tests (`#[cfg(test)]` in `src/`: the session store,
 * the context's repair and compaction, the providers' stream parsers, the
 * config), run under WASI on a stage of the crate with the SDK as the host
 * ships it, each test in its own instance (`sausage test` as cargo's runner).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { findWasmToolchain, WASM_TARGET } from "../../core/cargo/toolchain.ts";
import { sausageCommand } from "../../core/host.ts";
import { AGENT_CRATE } from "../../core/shipped_agent.ts";
import { TEST_CACHE_DIR } from "../../tests/world.ts";
import { sdkPatch, stageAgent } from "./build.ts";

Deno.test("agent: its Rust tests under WASI, one instance per test", async () => {
  const targetDir = join(AGENT_CRATE, "target");
  const { stage, sdk } = await stageAgent(join(targetDir, "test-stage"));
  const runner = JSON.stringify(sausageCommand(["test", "--cache-dir", TEST_CACHE_DIR]));
  const toolchain = await findWasmToolchain();
  const out = await new Deno.Command("cargo", {
    args: [
      "test",
      "--target",
      WASM_TARGET,
      ...sdkPatch(sdk),
      "--config",
      `target.${WASM_TARGET}.runner=${runner}`,
    ],
    cwd: stage,
    env: { ...toolchain.env, CARGO_TARGET_DIR: targetDir, CARGO_TERM_COLOR: "never" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  assert.ok(out.success, `cargo test of the agent failed:\n${text}`);
  const passed = Number(/test result: ok\. (\d+) passed/.exec(text)?.[1] ?? 0);
  assert.ok(passed >= 25, `only ${passed} tests passed:\n${text}`);
});
