/**
 * Calls per second with 1, 2 and 8 concurrent callers: each caller sends its
 * next `probe.echo` when its previous one answered, for a fixed duration
 * after a warm-up. Beside them, the ceiling of any host that makes a fresh
 * instance per call: bare instantiations of the same core modules, on one
 * thread and on one thread per core. Sausage's host reuses an instance an
 * earlier process left (`runtime/linked.ts`), so its calls may pass it.
 *
 * @module
 */
import type { Client } from "../../core/client.ts";
import { ComponentCache } from "../../core/components/cache.ts";
import { defaultPoolSize } from "../../core/pool.ts";
import type { Figure } from "../figures.ts";
import { benchWorld, call, TEST_CACHE_DIR } from "../fixture.ts";
import { instantiatedModules, instantiationCeiling } from "./bare_instances.ts";
import { pick, type Section } from "../section.ts";
import { median, ratesPerSecond, summarize } from "../stats.ts";

/** The goal of issue 15 with 8 callers on 2 cores, in calls per second. */
export const THROUGHPUT_GOAL = 3000;
/** Callers of each measurement. */
export const CALLERS = [1, 2, 8];
/** Rates are counted in windows of this length; the figure is their median. */
const WINDOW_MS = 500;

interface Load {
  /** Completion times of the calls that ended inside the window. */
  done: number[];
  /** Latency of each of those calls. */
  latency: number[];
  start: number;
  end: number;
}

/** Runs `callers` closed loops of calls from `start` until `end`. */
async function load(client: Client, callers: number, ms: number): Promise<Load> {
  const start = performance.now();
  const end = start + ms;
  const done: number[] = [];
  const latency: number[] = [];
  const loop = async () => {
    while (performance.now() < end) {
      const t = performance.now();
      await call(client, "probe.echo", {});
      const now = performance.now();
      if (now <= end) {
        done.push(now);
        latency.push(now - t);
      }
    }
  };
  await Promise.all(Array.from({ length: callers }, loop));
  return { done, latency, start, end };
}

export const throughput: Section = {
  name: "throughput",
  group: "host",
  summary: "calls per second with 1, 2 and 8 callers, each waiting for its previous answer",
  async run(ctx) {
    const warmupMs = pick(ctx, 1000, 300);
    const durationMs = pick(ctx, 3000, 1000);
    await using w = await benchWorld({ probe: "probe" });
    const client = w.host.client("console");
    const figures: Figure[] = [];
    for (const callers of CALLERS) {
      ctx.progress(
        `throughput: ${callers} caller${callers > 1 ? "s" : ""}, ` +
          `${warmupMs} ms warm-up, ${durationMs} ms measured`,
      );
      await load(client, callers, warmupMs);
      const l = await load(client, callers, durationMs);
      const rates = ratesPerSecond(l.done, l.start, l.end, WINDOW_MS);
      const lat = summarize(l.latency);
      figures.push({
        name: `throughput.callers_${callers}`,
        label: `calls/s, ${callers} caller${callers > 1 ? "s" : ""}`,
        unit: "calls/s",
        median: median(rates),
        runs: rates.length,
        warmup: Math.round(warmupMs / WINDOW_MS),
        goal: callers === 8 ? { op: ">=", value: THROUGHPUT_GOAL } : undefined,
        method: `closed loops of probe.echo for ${durationMs} ms after ${warmupMs} ms of ` +
          `warm-up; median of the rates in ${WINDOW_MS} ms windows`,
        samples: rates,
        extra: {
          calls: l.done.length,
          overallPerSecond: (l.done.length * 1000) / durationMs,
          latencyMs: lat,
          workers: w.host.pool.workers,
        },
      });
      figures.push({
        name: `throughput.callers_${callers}.latency`,
        label: `  latency under ${callers} caller${callers > 1 ? "s" : ""}`,
        unit: "ms",
        median: lat.median,
        p99: lat.p99,
        runs: lat.n,
        warmup: 0,
      });
    }
    const eight = figures.find((f) => f.name === "throughput.callers_8")!;
    figures.push(...await withoutReuse(ctx, eight, warmupMs, durationMs));
    const bare = await ceiling(ctx, w.root, durationMs);
    const all = bare.at(-1)!;
    figures.push(...bare, {
      name: "throughput.ratio_ceiling",
      label: "8 callers / bare instantiations",
      unit: "x",
      median: eight.median / all.median,
      runs: Math.min(eight.runs, all.runs),
      warmup: 0,
      method: "the host's calls against the most instances V8 makes here: a host that made a " +
        "fresh instance per call would stay well under 1; one that reuses them may pass it",
    });
    return figures;
  },
};

/**
 * The 8 callers again, on a host whose processes each get a fresh instance
 * (`reuseInstances: false`), and the ratio of `eight` to them: what reusing
 * the instances an earlier process left saves.
 */
async function withoutReuse(
  ctx: Parameters<Section["run"]>[0],
  eight: Figure,
  warmupMs: number,
  durationMs: number,
): Promise<Figure[]> {
  ctx.progress("throughput: 8 callers on a host without reuse");
  await using fresh = await benchWorld({ probe: "probe" }, { reuseInstances: false });
  const client = fresh.host.client("console");
  await load(client, 8, warmupMs);
  const l = await load(client, 8, durationMs);
  const rates = ratesPerSecond(l.done, l.start, l.end, WINDOW_MS);
  const rate = median(rates);
  return [{
    name: "throughput.callers_8_fresh",
    label: "baseline: calls/s, 8 callers, a fresh instance for each process",
    unit: "calls/s",
    median: rate,
    runs: rates.length,
    warmup: Math.round(warmupMs / WINDOW_MS),
    method: "as 8 callers, on a second host whose processes never run on an instance an " +
      "earlier one left (reuseInstances: false)",
    samples: rates,
  }, {
    name: "throughput.ratio_reuse",
    label: "8 callers / a fresh instance for each process",
    unit: "x",
    median: eight.median / rate,
    runs: Math.min(eight.runs, rates.length),
    warmup: 0,
  }];
}

/** Instantiations of the probe's core modules for the ceiling's warm-up, on each thread. */
const CEILING_WARMUP = 1500;

/**
 * The ceiling figures, measured right after the 8 callers for as long: bare
 * instantiations on one thread, then on as many threads as the pool has
 * workers by default.
 */
async function ceiling(
  ctx: Parameters<Section["run"]>[0],
  root: string,
  durationMs: number,
): Promise<Figure[]> {
  const path = `${root}/plugins/probe/plugin.wasm`;
  const component = await new ComponentCache(TEST_CACHE_DIR).load(await Deno.readFile(path), path);
  const modules = instantiatedModules(component.js, component.modules);
  const figures: Figure[] = [];
  for (const threads of [1, defaultPoolSize()]) {
    ctx.progress(`throughput: bare instantiations on ${threads} thread${threads > 1 ? "s" : ""}`);
    const windows = await instantiationCeiling(modules, {
      threads,
      ms: durationMs,
      windowMs: WINDOW_MS,
      warmup: CEILING_WARMUP,
    });
    figures.push({
      name: threads === 1 ? "throughput.ceiling_1" : "throughput.ceiling",
      label: `baseline: bare instantiations, ${threads} thread${threads > 1 ? "s" : ""}`,
      unit: "instances/s",
      median: median(windows),
      runs: windows.length,
      warmup: CEILING_WARMUP,
      method: `new WebAssembly.Instance of each core module a probe process instantiates ` +
        `(${Object.keys(modules).join(", ")}), linked crudely, no-op imports, nothing run, ` +
        `in a loop on ${threads} worker${threads > 1 ? "s" : ""} for ${durationMs} ms; ` +
        `median of the rates in ${WINDOW_MS} ms windows`,
      samples: windows,
      extra: { threads },
    });
  }
  return figures;
}
