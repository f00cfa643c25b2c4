/**
 * The agent's own Rust tests (`#[cfg(test)]` in `src/`: the session store,
 * the context's repair and compaction, the providers' stream parsers, the
 * config), run under WASI on a stage of the crate with the SDK as the host
 * ships it, each test in its own instance (`sausage test` as cargo's runner).
 */
import assert from "node:assert/strict";
import { agentTestsUnderWasi } from "./wasi_tests.ts";

Deno.test("agent: its Rust tests under WASI, one instance per test", async () => {
  const { success, text } = await agentTestsUnderWasi();
  assert.ok(success, `cargo test of the agent failed:\n${text}`);
  const passed = Number(/test result: ok\. (\d+) passed/.exec(text)?.[1] ?? 0);
  assert.ok(passed >= 25, `only ${passed} tests passed:\n${text}`);
});
