/**
 * `cargo.build` of the SDK example `notes`, on a cache of its own (crates
 * already downloaded), measured against cargo by hand on the same machine in
 * the same run:
 *
 * - the first build on the empty cache (goal: under 60 s);
 * - a new plugin whose dependencies are compiled (goal: under 3 s);
 * - a one-line change through `cargo.build`, tests included, against the
 *   same change compiled by hand (`cargo test --no-run`, then `cargo build`,
 *   a copy of the same target folder): goal at most 1.2 times;
 * - two builds at once (two plugins, a one-line change each) against one:
 *   goal at most 1.5 times;
 * - `core.activate` of a new version until its `client.rs` is readable
 *   (goal: under 0.5 s);
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
import type { Client } from "../../core/client.ts";
import { findWasmToolchain, WASM_TARGET } from "../../core/cargo/toolchain.ts";
import { sdkForBuild } from "../../core/cargo/sdk.ts";
import { BUILD_SLOTS, BuildSlots, slotTarget } from "../../core/cargo/slots.ts";
import { sha256Hex } from "../../core/components/cache.ts";
import { TEST_CACHE_DIR } from "../../tests/world.ts";

const NOTES = new URL("../../plugins/notes/src/main.rs", import.meta.url).pathname;
const PLUGINS = new URL("../../tests/plugins/", import.meta.url).pathname;

/** Writes `plugins/<name>/source/` with the notes example, its doc line changed by `change`. */
async function writeSource(root: string, name: string, change = ""): Promise<string> {
  const src = join(root, "plugins", name, "source");
  await Deno.mkdir(join(src, "src"), { recursive: true });
  const main = await Deno.readTextFile(NOTES);
  await Deno.writeTextFile(
    join(src, "src", "main.rs"),
    change ? main.replace("Add a note at the end of the list.", `Add a note (${change}).`) : main,
  );
  await Deno.writeTextFile(
    join(src, "Cargo.toml"),
    `[package]\nname = "${name}"\nversion = "0.1.0"\nedition = "2024"\n\n[dependencies]\nsausage-plugin = "0.1"\n`,
  );
  return src;
}

async function build(client: Client, plugin: string): Promise<{ seconds: number; wasm: string }> {
  const t0 = performance.now();
  const r = await client.request("cargo.build", { plugin }, { timeoutMs: 900_000 });
  if (r.error) throw new Error(`cargo.build of ${plugin} failed: ${r.error.message}`);
  return { seconds: (performance.now() - t0) / 1000, wasm: (r.result as { wasm: string }).wasm };
}

/**
 * The same build by hand: `cargo test --no-run`, then `cargo build`, in a
 * folder of its own with its own copy of a target folder.
 */
class ByHand {
  constructor(
    readonly crate: string,
    readonly targetDir: string,
    readonly sdk: string,
    readonly env: Record<string, string>,
  ) {}

  async cargo(args: string[]): Promise<void> {
    const out = await new Deno.Command("cargo", {
      args: [
        ...args,
        "--release",
        "--target",
        WASM_TARGET,
        "--offline",
        "--quiet",
        "--config",
        `patch.crates-io.sausage-plugin.path=${JSON.stringify(join(this.sdk, "sausage-plugin"))}`,
      ],
      cwd: this.crate,
      env: { ...this.env, CARGO_TARGET_DIR: this.targetDir },
      stdout: "null",
      stderr: "piped",
    }).output();
    if (!out.success) throw new Error(`cargo ${args[0]}: ${new TextDecoder().decode(out.stderr)}`);
  }

  async build(): Promise<number> {
    const t0 = performance.now();
    await this.cargo(["test", "--no-run"]);
    await this.cargo(["build"]);
    return (performance.now() - t0) / 1000;
  }
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
  summary: "cargo.build: first, new plugin, one-line change vs by hand, two at once, client.rs; " +
    "the test runner's cost per test",
  async run(ctx) {
    const figures: Figure[] = [];
    const cache = await Deno.makeTempDir({ prefix: "sausage-bench-builds-" });
    const root = await createWorld({});
    const host = await startHost(root, { cacheDir: cache });
    const second = (name: string, label: string, samples: number[], goal?: number): Figure => ({
      name,
      label,
      unit: "s",
      median: summarize(samples).median,
      runs: samples.length,
      warmup: 0,
      samples,
      ...(goal === undefined ? {} : { goal: { op: "<=" as const, value: goal } }),
    });
    try {
      const client = host.client("console");
      await writeSource(root, "notes");
      ctx.progress("the first build on an empty cache (every dependency compiles)");
      const first = await build(client, "notes");
      if (!ctx.quick) {
        figures.push(second("first", "first build (empty cache)", [first.seconds], 60));
      }

      // the other slots start as copies of the first's (after a build, in the background)
      const slots = new BuildSlots(cache);
      for (let i = 0; i < BUILD_SLOTS; i++) await slots.fill(i);

      const fresh: number[] = [];
      for (let i = 0; i < (ctx.quick ? 1 : 3); i++) {
        ctx.progress(`a new plugin, dependencies compiled (${i + 1})`);
        await writeSource(root, `fresh${i}`);
        fresh.push((await build(client, `fresh${i}`)).seconds);
      }
      figures.push(second("new-plugin", "a new plugin (dependencies compiled)", fresh, 3));

      // by hand: the same source in a folder of its own, a copy of the slots' target folder
      const toolchain = await findWasmToolchain();
      const sdk = (await sdkForBuild(join(root, "plugins", "cargo", "sdk"), cache)).dir;
      const crate = join(cache, "by-hand", "notes");
      await Deno.mkdir(join(crate, "src"), { recursive: true });
      const handTarget = join(cache, "by-hand", "target");
      await new Deno.Command("cp", { args: ["-a", slotTarget(cache, 0), handTarget] }).output();
      const hand = new ByHand(crate, handTarget, sdk, toolchain.env);
      const src = join(root, "plugins", "notes", "source");
      await Deno.copyFile(join(src, "Cargo.toml"), join(crate, "Cargo.toml"));
      await Deno.writeTextFile(
        join(crate, "Cargo.toml"),
        `${await Deno.readTextFile(join(crate, "Cargo.toml"))}\n[workspace]\n`,
      );
      await Deno.copyFile(join(src, "Cargo.lock"), join(crate, "Cargo.lock"));
      const viaHost: number[] = [];
      const byHand: number[] = [];
      const rounds = ctx.quick ? 2 : 5;
      for (let i = 0; i <= rounds; i++) {
        ctx.progress(`a one-line change, through cargo.build and by hand (${i}/${rounds})`);
        await writeSource(root, "notes", `change ${i}`);
        await Deno.copyFile(join(src, "src", "main.rs"), join(crate, "src", "main.rs"));
        const h = (await build(client, "notes")).seconds;
        const b = await hand.build();
        if (i === 0) continue; // the first of each warms what the first build left cold
        viaHost.push(h);
        byHand.push(b);
      }
      const hostS = summarize(viaHost).median;
      const handS = summarize(byHand).median;
      figures.push(
        second("change.host", "one-line change through cargo.build (tests run)", viaHost),
        second("change.hand", "  baseline: by hand (cargo test --no-run; cargo build)", byHand),
        {
          name: "change.ratio",
          label: "  cargo.build / by hand",
          unit: "x",
          median: hostS / handS,
          runs: viaHost.length,
          warmup: 1,
          goal: { op: "<=", value: 1.2 },
        },
      );

      await writeSource(root, "other");
      await build(client, "other");
      const one: number[] = [];
      const both: number[] = [];
      for (let i = 0; i <= (ctx.quick ? 1 : 3); i++) {
        ctx.progress(`two builds at once, against one (${i})`);
        await writeSource(root, "notes", `alone ${i}`);
        const alone = (await build(client, "notes")).seconds;
        await writeSource(root, "notes", `together ${i}`);
        await writeSource(root, "other", `together ${i}`);
        const t0 = performance.now();
        await Promise.all([build(client, "notes"), build(client, "other")]);
        if (i === 0) continue;
        one.push(alone);
        both.push((performance.now() - t0) / 1000);
      }
      figures.push(
        second("parallel.one", "one build (a one-line change)", one),
        second("parallel.two", "two builds at once (both done)", both),
        {
          name: "parallel.ratio",
          label: "  two at once / one",
          unit: "x",
          median: summarize(both).median / summarize(one).median,
          runs: both.length,
          warmup: 1,
          goal: { op: "<=", value: 1.5 },
        },
      );

      const activations: number[] = [];
      const waits: number[] = [];
      for (let i = 0; i < (ctx.quick ? 2 : 5); i++) {
        ctx.progress(`core.activate until client.rs is readable (${i + 1})`);
        await writeSource(root, "notes", `activation ${i}`);
        const { wasm } = await build(client, "notes");
        const hash = await sha256Hex(await Deno.readFile(join(root, wasm)));
        const t0 = performance.now();
        const r = await client.request("core.activate", { plugin: "notes", wasm });
        if (r.error) throw new Error(`core.activate: ${r.error.message}`);
        const t1 = performance.now();
        while (host.clientCode.text("notes", hash) === undefined) {
          await new Promise((r) => setTimeout(r, 5));
        }
        activations.push(t1 - t0);
        waits.push(performance.now() - t1);
      }
      figures.push(
        {
          name: "activate",
          label: "core.activate of a new build (its first load, client.rs made)",
          unit: "ms",
          median: summarize(activations).median,
          runs: activations.length,
          warmup: 0,
          samples: activations,
        },
        {
          name: "client-rs",
          label: "  then until client.rs is readable",
          unit: "ms",
          median: summarize(waits).median,
          p99: Math.max(...waits),
          runs: waits.length,
          warmup: 0,
          samples: waits,
          goal: { op: "<=", value: 500 },
        },
      );
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
