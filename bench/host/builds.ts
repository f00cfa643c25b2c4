/**
 * `cargo.build` of the SDK example `notes` (issue of the builder):
 *
 * - the first build, with a cold target folder (a cache of its own): every
 *   dependency compiles, for the tests and the release build;
 * - a second build after a one-line change, in the same cache: only the
 *   plugin compiles again (goal: under 10 s);
 * - the runner's overhead per test: `sausage test` on a test binary of nine
 *   tests, against one `sausage test --list` of the same binary, divided by
 *   the number of tests (goal: under 50 ms).
 *
 * Not in `--quick`: the first build takes a minute or more.
 *
 * @module
 */
import { join } from "node:path";
import type { Figure } from "../figures.ts";
import { createWorld, removeWorld, startHost } from "../fixture.ts";
import type { Section } from "../section.ts";
import { summarize } from "../stats.ts";
import { sausageCommand } from "../../core/host.ts";
import { findWasmToolchain, WASM_TARGET } from "../../core/cargo/toolchain.ts";
import { TEST_CACHE_DIR } from "../../tests/world.ts";

const NOTES = new URL("../../plugins/notes/src/main.rs", import.meta.url).pathname;
const PLUGINS = new URL("../../tests/plugins/", import.meta.url).pathname;

async function writeSource(root: string, main: string): Promise<void> {
  const src = join(root, "plugins", "notes", "source");
  await Deno.mkdir(join(src, "src"), { recursive: true });
  await Deno.writeTextFile(join(src, "src", "main.rs"), main);
  await Deno.writeTextFile(
    join(src, "Cargo.toml"),
    `[package]\nname = "notes"\nversion = "0.1.0"\nedition = "2024"\n\n[dependencies]\nsausage-plugin = "0.1"\n`,
  );
}

/** The test binary of the test crate `testcrate` (built once). */
async function testBinary(): Promise<string> {
  const toolchain = await findWasmToolchain();
  const out = await new Deno.Command("cargo", {
    args: [
      "test",
      "--release",
      "--target",
      WASM_TARGET,
      "-p",
      "testcrate",
      "--bin",
      "testcrate",
      "--no-run",
      "--message-format",
      "json",
      "-q",
    ],
    cwd: PLUGINS,
    env: toolchain.env,
    stdout: "piped",
    stderr: "null",
  }).output();
  for (const line of new TextDecoder().decode(out.stdout).split("\n")) {
    if (!line.startsWith("{")) continue;
    const m = JSON.parse(line);
    if (m.reason === "compiler-artifact" && m.profile?.test && m.executable) return m.executable;
  }
  throw new Error("no test binary of testcrate");
}

async function time(args: string[]): Promise<number> {
  const [cmd, ...rest] = sausageCommand(args);
  const started = performance.now();
  await new Deno.Command(cmd, { args: rest, stdout: "null", stderr: "null" }).output();
  return performance.now() - started;
}

/** The builds section. */
export const builds: Section = {
  name: "builds",
  group: "builds",
  summary:
    "cargo.build: a first build, a second after a one-line change; the test runner's cost per test",
  async run(ctx) {
    const figures: Figure[] = [];
    const cache = await Deno.makeTempDir({ prefix: "sausage-bench-builds-" });
    const root = await createWorld({});
    const host = await startHost(root, { cacheDir: cache });
    try {
      const client = host.client("console");
      const main = await Deno.readTextFile(NOTES);
      await writeSource(root, main);
      if (!ctx.quick) {
        ctx.progress("the first build (every dependency compiles)");
        const t0 = performance.now();
        const first = await client.request("cargo.build", { plugin: "notes" });
        if (first.error) throw new Error(`the first build failed: ${first.error.message}`);
        figures.push({
          name: "first",
          label: "first build (cold cache)",
          unit: "s",
          median: (performance.now() - t0) / 1000,
          runs: 1,
          warmup: 0,
        });
      } else {
        await client.request("cargo.build", { plugin: "notes" });
      }
      const seconds: number[] = [];
      for (let i = 0; i < (ctx.quick ? 1 : 3); i++) {
        ctx.progress(`a second build after a one-line change (${i + 1})`);
        await writeSource(
          root,
          main.replace("Add a note at the end of the list.", `Add a note (${i}).`),
        );
        const t0 = performance.now();
        const r = await client.request("cargo.build", { plugin: "notes" });
        if (r.error) throw new Error(`the second build failed: ${r.error.message}`);
        seconds.push((performance.now() - t0) / 1000);
      }
      const s = summarize(seconds);
      figures.push({
        name: "second",
        label: "second build after a one-line change",
        unit: "s",
        median: s.median,
        runs: seconds.length,
        warmup: 0,
        goal: { op: "<=", value: 10 },
        samples: seconds,
      });
    } finally {
      await host.shutdown();
      await removeWorld(root);
      await Deno.remove(cache, { recursive: true }).catch(() => {});
    }

    ctx.progress("the test runner's cost per test");
    const binary = await testBinary();
    const cacheArgs = ["--cache-dir", TEST_CACHE_DIR];
    await time(["test", ...cacheArgs, binary]); // warm the component cache
    const all: number[] = [];
    const list: number[] = [];
    for (let i = 0; i < (ctx.quick ? 2 : 5); i++) {
      all.push(await time(["test", ...cacheArgs, binary, "--skip", "panics"]));
      list.push(await time(["test", ...cacheArgs, binary, "--list"]));
    }
    const tests = 8; // testcrate's tests, without the one that panics
    const perTest = (summarize(all).median - summarize(list).median) / tests;
    figures.push(
      {
        name: "runner.all",
        label: "sausage test: 8 tests, each in its own instance",
        unit: "ms",
        median: summarize(all).median,
        runs: all.length,
        warmup: 1,
      },
      {
        name: "runner.list",
        label: "  baseline: one instance (--list)",
        unit: "ms",
        median: summarize(list).median,
        runs: list.length,
        warmup: 1,
      },
      {
        name: "runner.per-test",
        label: "  runner's cost per test",
        unit: "ms",
        median: perTest,
        runs: all.length,
        warmup: 1,
        goal: { op: "<=", value: 50 },
      },
    );
    return figures;
  },
};
