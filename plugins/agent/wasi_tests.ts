/**
 * Runs the agent's Rust tests under WASI: `cargo test` on a stage of the
 * crate with the SDK as the host ships it, each test in its own instance
 * (`sausage test` as cargo's runner). The agent's unit tests and the
 * benchmark of its durable writes both go through it.
 *
 * @module
 */
import { join } from "node:path";
import { findWasmToolchain, WASM_TARGET } from "../../core/cargo/toolchain.ts";
import { sausageCommand } from "../../core/host.ts";
import { AGENT_CRATE } from "../../core/shipped_agent.ts";
import { TEST_CACHE_DIR } from "../../tests/world.ts";
import { sdkPatch, stageAgent } from "./build.ts";

/** What {@linkcode agentTestsUnderWasi} ran: cargo's success, its output, and the stage's folder. */
export interface WasiTestRun {
  success: boolean;
  /** stdout, then stderr. */
  text: string;
  /** The staged crate, which the tests see as their own folder. */
  stage: string;
}

/**
 * `cargo test` of the agent for `wasm32-wasip2`, `release` or not, with
 * `testArgs` after `--` (libtest's: a filter, `--ignored`…).
 *
 * @example
 * ```ts
 * const run = await agentTestsUnderWasi({ testArgs: ["context::"] });
 * if (!run.success) console.error(run.text);
 * ```
 */
export async function agentTestsUnderWasi(
  options: { release?: boolean; testArgs?: string[] } = {},
): Promise<WasiTestRun> {
  const targetDir = join(AGENT_CRATE, "target");
  const { stage, sdk } = await stageAgent(join(targetDir, "test-stage"));
  const runner = JSON.stringify(sausageCommand(["test", "--cache-dir", TEST_CACHE_DIR]));
  const toolchain = await findWasmToolchain();
  const out = await new Deno.Command("cargo", {
    args: [
      "test",
      ...(options.release ? ["--release"] : []),
      "--target",
      WASM_TARGET,
      ...sdkPatch(sdk),
      "--config",
      `target.${WASM_TARGET}.runner=${runner}`,
      ...(options.testArgs?.length ? ["--", ...options.testArgs] : []),
    ],
    cwd: stage,
    env: { ...toolchain.env, CARGO_TARGET_DIR: targetDir, CARGO_TERM_COLOR: "never" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  return { success: out.success, text, stage };
}
