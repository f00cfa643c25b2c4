/**
 * The memory of a host that transpiles: a world of 100 plugins (`probe`, each
 * with a custom section of its own: 100 versions to transpile and discover,
 * of one shape, as plugins built with one SDK are), its host in a process of
 * its own (`memory_host.ts`) so that its RSS is the host's alone.
 *
 * - cold: an empty cache, from the start until the 100 are discovered: the
 *   peak RSS (`VmHWM`), then the RSS 80 s later, once the transpiler's
 *   thread has ended after its minute without work;
 * - warm: the same world and cache again (nothing to transpile or
 *   discover): the RSS once discovered.
 *
 * Goals: the idle RSS after the cold discovery at most 1.1 times the warm
 * one, the peak at most 2 times. Not in `--quick`: it waits 80 s.
 *
 * @module
 */
import { join } from "node:path";
import type { Figure } from "../figures.ts";
import { createWorld, removeWorld, REPO_ROOT } from "../fixture.ts";
import type { Section } from "../section.ts";
import { testPlugin } from "../../tests/setup.ts";
import { withCustomSection } from "../../core/components/wasm_sections.ts";

const PLUGINS = 100;
const IDLE_S = 80;

/** RSS and its peak of a process, in MiB. */
function memoryOf(pid: number): { rss: number; peak: number } {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  const mib = (key: string) => Number(status.match(new RegExp(`${key}:\\s+(\\d+)`))?.[1]) / 1024;
  return { rss: mib("VmRSS"), peak: mib("VmHWM") };
}

/** Starts a host on the world, waits until it has discovered its plugins, runs `then`, kills it. */
async function withHost<T>(
  world: string,
  cache: string,
  then: (pid: number) => Promise<T>,
): Promise<T> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--unstable-worker-options",
      join(REPO_ROOT, "bench", "host", "memory_host.ts"),
      world,
      cache,
    ],
    stdout: "piped",
    stderr: "null",
  }).spawn();
  try {
    let out = "";
    for await (const text of child.stdout.pipeThrough(new TextDecoderStream())) {
      out += text;
      if (out.includes("discovered")) break;
    }
    if (!out.includes("discovered")) throw new Error("the host ended before it discovered");
    return await then(child.pid);
  } finally {
    child.kill("SIGKILL");
    await child.status;
  }
}

/** The transpile memory section. */
export const transpileMemory: Section = {
  name: "transpile-memory",
  group: "host",
  summary: `RSS of a host that discovers ${PLUGINS} new plugins: its peak, ${IDLE_S} s later, ` +
    "against a warm start",
  async run(ctx) {
    if (ctx.quick) return [];
    const world = await createWorld({});
    const cache = await Deno.makeTempDir({ prefix: "sausage-bench-transpile-memory-" });
    try {
      const probe = await Deno.readFile(await testPlugin("probe"));
      for (let i = 0; i < PLUGINS; i++) {
        const dir = join(world, "plugins", `p${i}`);
        await Deno.mkdir(dir, { recursive: true });
        await Deno.writeFile(join(dir, "plugin.wasm"), withCustomSection(probe, `bench-${i}`));
      }
      ctx.progress(`transpile memory: a cold discovery of ${PLUGINS} plugins, then ${IDLE_S} s`);
      const cold = await withHost(world, cache, async (pid) => {
        const discovered = memoryOf(pid);
        await new Promise((r) => setTimeout(r, IDLE_S * 1000));
        return { peak: discovered.peak, idle: memoryOf(pid).rss };
      });
      ctx.progress("transpile memory: a warm start");
      const warm = await withHost(world, cache, (pid) => Promise.resolve(memoryOf(pid).rss));
      const mib = (name: string, label: string, value: number): Figure => ({
        name,
        label,
        unit: "MiB",
        median: value,
        runs: 1,
        warmup: 0,
      });
      return [
        mib("warm", `a warm start, ${PLUGINS} plugins discovered`, warm),
        mib("cold.peak", "  the peak of a cold discovery", cold.peak),
        mib("cold.idle", `  ${IDLE_S} s after it`, cold.idle),
        {
          name: "idle.ratio",
          label: `  ${IDLE_S} s after a cold discovery / warm`,
          unit: "x",
          median: cold.idle / warm,
          runs: 1,
          warmup: 0,
          goal: { op: "<=", value: 1.1 },
        },
        {
          name: "peak.ratio",
          label: "  the peak of a cold discovery / warm",
          unit: "x",
          median: cold.peak / warm,
          runs: 1,
          warmup: 0,
          goal: { op: "<=", value: 2 },
        },
      ];
    } finally {
      await removeWorld(world);
      await Deno.remove(cache, { recursive: true }).catch(() => {});
    }
  },
};
