/**
 * The latency of one call of a trivial method (`probe.echo`), each a fresh
 * process: from the console, and from another process. In the same rounds,
 * the baselines: the same calls on hosts without one of the cuts (nothing
 * linked ahead, the answer through the host's thread, a fresh instance for
 * every process), a round trip from a running process to the core, the same
 * component started straight on a worker pool, and the bare instantiation of
 * its core modules.
 *
 * @module
 */
import type { Client } from "../../core/client.ts";
import { median, percentile, summarize } from "../stats.ts";
import type { Figure } from "../figures.ts";
import { benchWorld, call, CallFailed } from "../fixture.ts";
import { pick, type Section } from "../section.ts";
import { testPlugin } from "../../tests/setup.ts";
import { PoolRunner } from "./baselines.ts";
import { instantiateCore } from "./bare_instances.ts";

/** The goal for one call, in milliseconds. */
export const CALL_GOAL_MS = 2;

/** A lock that a process takes and holds until it ends: a core method that answers at once. */
const ROUND_TRIP = { method: "core.lock", params: { path: "/bench/round-trip", wait: false } };

interface Samples {
  echo: number[];
  nested: number[];
  /** The inner call of `nested`, as the calling process timed it (monotonic clock). */
  inner: number[];
  /** `echo` and `nested`'s inner call on a host that links no instance ahead. */
  echoAtSpawn: number[];
  nestedAtSpawn: number[];
  innerAtSpawn: number[];
  /** `nested`'s inner call on a host that answers every call through its own thread. */
  nestedFar: number[];
  innerFar: number[];
  /** `echo` and `nested`'s inner call on a host that gives every process a fresh instance. */
  echoFresh: number[];
  nestedFresh: number[];
  innerFresh: number[];
  roundTrip: number[];
  pool: number[];
  instantiate: number[];
}

export const latency: Section = {
  name: "latency",
  group: "host",
  summary: "one call of probe.echo (a fresh process): from the console and from a process",
  async run(ctx) {
    const warmup = pick(ctx, 100, 20);
    const rounds = pick(ctx, 600, 80);
    await using w = await benchWorld({ probe: "probe" });
    const client = w.host.client("console");
    // the same world on a host that links each instance at its spawn: what linking ahead saves
    await using atSpawn = await benchWorld({ probe: "probe" }, { prepareAhead: false });
    const atSpawnClient = atSpawn.host.client("console");
    // and on a host that never puts a callee beside its caller: what the answer in the worker saves
    await using far = await benchWorld({ probe: "probe" }, { nearCaller: false });
    const farClient = far.host.client("console");
    // and on a host that links a fresh instance for each process: what reusing instances saves
    await using fresh = await benchWorld({ probe: "probe" }, { reuseInstances: false });
    const freshClient = fresh.host.client("console");
    await using pool = await PoolRunner.start(await testPlugin("probe"), w.root);

    const timed = async (
      method: string,
      params: Record<string, unknown>,
      check: Check,
      on = client,
    ) => {
      const start = performance.now();
      check(await call(on, method, params));
      return performance.now() - start;
    };
    let innerMs = 0;
    /** `probe.call` of `probe.echo` from the console of `on`; the inner call's time goes to `innerMs`. */
    const nestedFrom = (on: Client) =>
      timed("probe.call", { method: "probe.echo", params: {} }, (result) => {
        answered(result);
        innerMs = (result as { micros: number }).micros / 1000;
      }, on);
    const measure: Record<
      Exclude<keyof Samples, "inner" | "innerAtSpawn" | "innerFar" | "innerFresh">,
      () => Promise<number>
    > = {
      echo: () => timed("probe.echo", {}, isEmptyObject),
      nested: () => nestedFrom(client),
      roundTrip: () => timed("probe.call", ROUND_TRIP, answered),
      pool: () => pool.request("echo"),
      instantiate: () => Promise.resolve(instantiateCore(pool.component.modules)),
      echoAtSpawn: () => timed("probe.echo", {}, isEmptyObject, atSpawnClient),
      nestedAtSpawn: () => nestedFrom(atSpawnClient),
      nestedFar: () => nestedFrom(farClient),
      echoFresh: () => timed("probe.echo", {}, isEmptyObject, freshClient),
      nestedFresh: () => nestedFrom(freshClient),
    };
    const kinds = Object.keys(measure) as (keyof typeof measure)[];
    /** One measurement of each kind, in an order shuffled per round (the same in every run). */
    const round = async (i: number, into: Samples | null) => {
      for (const kind of shuffled(kinds, i)) {
        const ms = await measure[kind]();
        into?.[kind].push(ms);
        if (kind === "nested") into?.inner.push(innerMs);
        if (kind === "nestedAtSpawn") into?.innerAtSpawn.push(innerMs);
        if (kind === "nestedFar") into?.innerFar.push(innerMs);
        if (kind === "nestedFresh") into?.innerFresh.push(innerMs);
      }
    };

    ctx.progress(
      `latency: ${warmup} warm-up rounds, then ${rounds} rounds of ${kinds.length} measurements`,
    );
    for (let i = 0; i < warmup; i++) await round(i, null);
    // the host's workers ran 5 instances per round, the pool's worker 1: even out the JIT warm-up
    for (let i = 0; i < warmup * 4; i++) await pool.request("echo");
    const s: Samples = {
      echo: [],
      nested: [],
      inner: [],
      roundTrip: [],
      pool: [],
      instantiate: [],
      echoAtSpawn: [],
      nestedAtSpawn: [],
      innerAtSpawn: [],
      nestedFar: [],
      innerFar: [],
      echoFresh: [],
      nestedFresh: [],
      innerFresh: [],
    };
    for (let i = 0; i < rounds; i++) await round(i, s);

    const echo = summarize(s.echo);
    const nested = summarize(s.nested);
    const roundTrip = summarize(s.roundTrip);
    const poolRun = summarize(s.pool);
    const inst = summarize(s.instantiate);
    const inner = summarize(s.inner);
    const echoAtSpawn = summarize(s.echoAtSpawn);
    const innerAtSpawn = summarize(s.innerAtSpawn);
    const innerFar = summarize(s.innerFar);
    const echoFresh = summarize(s.echoFresh);
    const innerFresh = summarize(s.innerFresh);
    const byDifference = nested.median - echo.median;
    const trip = roundTrip.median - echo.median;
    const paired = s.nested.map((x, i) => x - s.echo[i]);
    const base = { runs: rounds, warmup };
    const figures: Figure[] = [
      {
        name: "call.console",
        label: "call from the console",
        unit: "ms",
        median: echo.median,
        p99: echo.p99,
        goal: { op: "<=", value: CALL_GOAL_MS },
        method: "host.client('console').request('probe.echo', {}) until its response",
        samples: s.echo,
        ...base,
      },
      {
        name: "call.process",
        label: "call from a process",
        unit: "ms",
        median: inner.median,
        p99: inner.p99,
        goal: { op: "<=", value: CALL_GOAL_MS },
        method: "probe.call {method: probe.echo}: the calling process times its request until " +
          "the response with std::time::Instant (wasi:clocks/monotonic-clock)",
        samples: s.inner,
        extra: {
          outer: nested,
          byDifference,
          pairedMedian: median(paired),
          pairedP99: percentile(paired, 99),
        },
        ...base,
      },
      {
        name: "baseline.console_at_spawn",
        label: "baseline: call from the console, nothing linked ahead",
        unit: "ms",
        median: echoAtSpawn.median,
        p99: echoAtSpawn.p99,
        method: "as call from the console, on a second host of the same world whose pool links " +
          "each instance (or takes one an earlier process left) at its spawn (prepareAhead: false)",
        samples: s.echoAtSpawn,
        ...base,
      },
      {
        name: "baseline.process_at_spawn",
        label: "baseline: call from a process, nothing linked ahead",
        unit: "ms",
        median: innerAtSpawn.median,
        p99: innerAtSpawn.p99,
        method: "as call from a process, on the host that links each instance at its spawn",
        samples: s.innerAtSpawn,
        ...base,
      },
      ratio(
        "ratio.console_ahead",
        "call from the console / nothing linked ahead",
        echo.median,
        echoAtSpawn,
        base,
      ),
      ratio(
        "ratio.process_ahead",
        "call from a process / nothing linked ahead",
        inner.median,
        innerAtSpawn,
        base,
      ),
      {
        name: "baseline.process_far",
        label: "baseline: call from a process, answered through the host's thread",
        unit: "ms",
        median: innerFar.median,
        p99: innerFar.p99,
        method: "as call from a process, on a third host whose pool never puts a callee on its " +
          "caller's worker (nearCaller: false): the answer takes two hops more",
        samples: s.innerFar,
        ...base,
      },
      ratio(
        "ratio.process_near",
        "call from a process / answered through the host's thread",
        inner.median,
        innerFar,
        base,
      ),
      {
        name: "baseline.console_fresh",
        label: "baseline: call from the console, a fresh instance for each process",
        unit: "ms",
        median: echoFresh.median,
        p99: echoFresh.p99,
        method: "as call from the console, on a fourth host whose processes never run on an " +
          "instance an earlier one left (reuseInstances: false): each is linked, ahead or not",
        samples: s.echoFresh,
        ...base,
      },
      {
        name: "baseline.process_fresh",
        label: "baseline: call from a process, a fresh instance for each process",
        unit: "ms",
        median: innerFresh.median,
        p99: innerFresh.p99,
        method: "as call from a process, on the host that links a fresh instance for each process",
        samples: s.innerFresh,
        ...base,
      },
      ratio(
        "ratio.console_reuse",
        "call from the console / a fresh instance for each process",
        echo.median,
        echoFresh,
        base,
      ),
      ratio(
        "ratio.process_reuse",
        "call from a process / a fresh instance for each process",
        inner.median,
        innerFresh,
        base,
      ),
      {
        name: "baseline.round_trip",
        label: "baseline: process to core round trip",
        unit: "ms",
        median: trip,
        p99: roundTrip.p99 - echo.median,
        method: "median of probe.call {method: core.lock, wait: false} minus the median of " +
          "probe.echo: one JSON-RPC request from a running instance, answered by the core at once",
        samples: s.roundTrip,
        ...base,
      },
      {
        name: "baseline.pool_run",
        label: "baseline: fresh instance on the pool alone",
        unit: "ms",
        median: poolRun.median,
        p99: poolRun.p99,
        method: "WorkerPool.spawn of probe, the world folder at / as `sausage run --dir` " +
          "gives it, the request on stdin, until the response; no router, no process table, " +
          "no journal, no /proc",
        samples: s.pool,
        ...base,
      },
      {
        name: "baseline.instantiate",
        label: "baseline: instantiate the core modules",
        unit: "ms",
        median: inst.median,
        p99: inst.p99,
        method: "new WebAssembly.Instance of each compiled core module of probe, no-op imports, " +
          "on the main thread: nothing runs",
        samples: s.instantiate,
        ...base,
      },
      ratio("ratio.console_pool", "call from the console / pool alone", echo.median, poolRun, base),
      ratio(
        "ratio.console_instantiate",
        "call from the console / instantiate",
        echo.median,
        inst,
        base,
      ),
      {
        name: "ratio.process_round_trip",
        label: "call from a process / round trip",
        unit: "x",
        median: inner.median / trip,
        ...base,
      },
    ];
    return figures;
  },
};

type Check = (result: unknown) => void;

/** A copy of `items` in an order that depends only on `seed` (Fisher-Yates, mulberry32). */
export function shuffled<T>(items: readonly T[], seed: number): T[] {
  let state = (seed * 0x9e3779b9) >>> 0;
  const random = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

function isEmptyObject(result: unknown): void {
  if (typeof result !== "object" || result === null || Object.keys(result).length !== 0) {
    throw new CallFailed(`probe.echo returned ${JSON.stringify(result)}, not {}`);
  }
}

/** probe.call returns the response it got: it must be a result, not an error or an EOF. */
function answered(result: unknown): void {
  const r = (result as { response?: { result?: unknown; error?: unknown } }).response;
  if (!r || r.error !== undefined || r.result === undefined) {
    throw new CallFailed(`the inner call failed: ${JSON.stringify(result)}`);
  }
}

function ratio(
  name: string,
  label: string,
  value: number,
  of: { median: number },
  base: { runs: number; warmup: number },
): Figure {
  return { name, label, unit: "x", median: value / of.median, ...base };
}
