/**
 * Writes that a person expects to survive a power cut really reach the disk:
 * the system calls, seen with `strace`, sync the file before its rename and
 * the folder after it. An activation's `plugin.wasm`, and the SDK's
 * `write_atomic` in a plugin under WASI (its folder synced through
 * `wasi:filesystem`, which `std` cannot do). Ignored where `strace` is missing
 * (`.ci/run` installs it) or cannot trace (no ptrace in the container).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { sausageCommand } from "../core/host.ts";
import { findWasmToolchain, WASM_TARGET } from "../core/cargo/toolchain.ts";
import { initWorld } from "../core/init.ts";
import { installPlugin, TEST_CACHE_DIR } from "./world.ts";
import { testPlugin } from "./setup.ts";
import { needs } from "./tools.ts";

const SDK = new URL("../sdk/", import.meta.url).pathname;
const HOST = new URL("../core/host.ts", import.meta.url).href;

/** The syncs and renames of `command` and its threads, with the paths of their descriptors. */
async function traced(command: string[], env: Record<string, string> = {}): Promise<string[]> {
  const out = join(await Deno.makeTempDir({ prefix: "sausage-strace-" }), "trace");
  const run = await new Deno.Command("strace", {
    args: [
      "-f",
      "-y",
      "-qq",
      "-s",
      "512",
      "-e",
      "trace=fsync,fdatasync,rename,renameat,renameat2",
      "-o",
      out,
      "--",
      ...command,
    ],
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(run.stdout) + new TextDecoder().decode(run.stderr);
  assert.ok(run.success, `${command.join(" ")} failed:\n${text}`);
  const lines = (await Deno.readTextFile(out)).split("\n").filter(Boolean);
  await Deno.remove(join(out, ".."), { recursive: true });
  return lines;
}

/** The index of the first trace line that matches, after `from`; fails when none does. */
function find(lines: string[], what: RegExp, from = -1): number {
  const i = lines.findIndex((l, n) => n > from && what.test(l));
  assert.ok(i >= 0, `no ${what} after line ${from} in:\n${lines.join("\n")}`);
  return i;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

Deno.test({
  ...needs(
    ["strace"],
    "an activation syncs the new plugin.wasm before its rename, and its folder after",
  ),
}, async () => {
  const root = await Deno.makeTempDir({ prefix: "sausage-durable-world-" });
  try {
    await initWorld(root, { installAgent: false });
    await installPlugin(root, "notes", "notes_v1");
    await Deno.mkdir(join(root, "state", "builds"), { recursive: true });
    await Deno.copyFile(await testPlugin("notes_v2"), join(root, "state", "builds", "next.wasm"));
    const script = `
      import { Host } from ${JSON.stringify(HOST)};
      const host = await Host.start({ world: ${JSON.stringify(root)}, cacheDir: ${
      JSON.stringify(TEST_CACHE_DIR)
    }, services: false, installAgent: false, onNote: () => {} });
      await host.discovered;
      const r = await host.client("t").request("core.activate", { plugin: "notes", wasm: "/state/builds/next.wasm" });
      await host.shutdown();
      if (r.error) { console.error(JSON.stringify(r.error)); Deno.exit(1); }
    `;
    const lines = await traced([
      Deno.execPath(),
      "eval",
      "--unstable-worker-options",
      "--ext=ts",
      script,
    ]);
    const dir = escape(join(await Deno.realPath(root), "plugins", "notes"));
    const synced = find(
      lines,
      new RegExp(`fsync\\(\\d+<${dir}/\\.activating-[^>]*\\.wasm>\\) = 0`),
    );
    const renamed = find(
      lines,
      new RegExp(`rename[^(]*\\(.*\\.activating-[^"]*\\.wasm".*plugin\\.wasm".*= 0`),
      synced,
    );
    find(lines, new RegExp(`fsync\\(\\d+<${dir}>\\) = 0`), renamed);
  } finally {
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
});

Deno.test({
  ...needs(
    ["strace"],
    "the SDK's write_atomic under WASI syncs the file before its rename and the folder after, on the host",
  ),
}, async () => {
  const toolchain = await findWasmToolchain();
  // the SDK's runtime tests, as sdk/cargo_test.ts builds them (so mostly cached)
  const build = await new Deno.Command("cargo", {
    args: [
      "test",
      "--no-run",
      "--target",
      WASM_TARGET,
      "-p",
      "sausage-plugin",
      "--test",
      "runtime",
      "--message-format",
      "json",
    ],
    cwd: SDK,
    env: { ...toolchain.env, CARGO_TERM_COLOR: "never" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(build.success, new TextDecoder().decode(build.stderr));
  const wasm = new TextDecoder().decode(build.stdout).split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as { reason: string; executable?: string | null })
    .find((m) => m.reason === "compiler-artifact" && m.executable)?.executable;
  assert.ok(wasm, "cargo built no test executable");
  const lines = await traced([
    ...sausageCommand(["test", "--cache-dir", TEST_CACHE_DIR]),
    wasm,
    "--exact",
    "state_dir_and_write_atomic_work_in_the_test_world",
  ]);
  // the world of the test is a temporary folder; its /state/<plugin> is the test's
  const tmp = find(lines, /fsync\(\d+<[^>]*\/state\/[^/>]+\/\.data\.json\.[^>]*\.tmp>\) = 0/);
  const folder = lines[tmp].match(/<([^>]*\/state\/[^/>]+)\//)![1];
  const renamed = find(
    lines,
    /rename[^(]*\(.*\.data\.json\.[^"]*\.tmp".*"[^"]*data\.json".*= 0/,
    tmp,
  );
  find(lines, new RegExp(`fsync\\(\\d+<${escape(folder)}>\\) = 0`), renamed);
});
