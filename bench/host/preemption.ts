/**
 * Preemption: how much processes that compute forever delay a call to another
 * plugin, and how long `core.kill` takes to end such a process.
 *
 * A world of `probe` and `other` (the same test plugin in a second folder).
 * Each round runs three conditions, in an order shuffled per round (the same
 * in every run):
 *
 * - idle (the baseline): no spinner; calls of `other.echo`, then kills of
 *   `probe.never` processes that wait on stdin (a kill that needs no
 *   interrupt cell);
 * - spin: four `probe.spin` processes (a tight loop, no host call); calls of
 *   `other.echo`, then kills of one spinner at a time, each replaced at once,
 *   so that four spin at every kill;
 * - busy: the same with four `probe.busy` processes, whose loop reads the
 *   monotonic clock (a host call) every 10 000 iterations.
 *
 * @module
 */
import type { Response } from "../../core/jsonrpc.ts";
import type { Process } from "../../core/process.ts";
import type { Figure } from "../figures.ts";
import { benchWorld, call, CallFailed, until } from "../fixture.ts";
import { pick, type Section } from "../section.ts";
import { median, percentile, summarize } from "../stats.ts";
import { shuffled } from "./latency.ts";

/** Processes that compute at once in the spin and busy conditions. */
export const SPINNERS = 4;
/** What `probe.spin` logs just before its loop. */
const SPINNING_LINE = "probe: spinning";
/** What `probe.never` logs when it waits for EOF on stdin. */
const WAITING_LINE = "probe: waiting for EOF";
/** How long a spinner computes before the calls (or a kill) begin: a few 10 ms slices. */
const SETTLE_MS = 50;

type Condition = "idle" | "spin" | "busy";
const CONDITIONS: Condition[] = ["idle", "spin", "busy"];

/** A process started for a condition: spinners, or `probe.never` for the idle kills. */
interface Runner {
  process: Process;
  answer: Promise<Response>;
}

interface Kill {
  /** From sending `core.kill` until the caller of the killed process got its -32002 error. */
  error: number;
  /** Until the process left the table (its `ended` settled). */
  table: number;
  /** Until `core.kill` itself answered. */
  answer: number;
}

interface Samples {
  calls: Record<Condition, number[]>;
  kills: Record<Condition, Kill[]>;
  /** Plugin workers at the end of each block. */
  workers: Record<Condition, number[]>;
}

/** The goal for nine calls in ten to another plugin while spinners compute, in milliseconds. */
export const CALL_WITH_SPINNERS_GOAL_MS = 50;
/** The goal for the slowest `core.kill` of a spinner, in milliseconds. */
export const KILL_GOAL_MS = 100;

export const preemption: Section = {
  name: "preemption",
  group: "host",
  summary: `a call to another plugin while ${SPINNERS} processes spin, and core.kill of a spinner`,
  async run(ctx) {
    const warmupCalls = pick(ctx, 150, 50);
    const rounds = pick(ctx, 6, 2);
    const callsPerBlock = pick(ctx, 80, 30);
    const killsPerBlock = pick(ctx, 10, 4);
    await using w = await benchWorld({ probe: "probe", other: "probe" });
    const host = w.host;
    const client = host.client("console");
    let tag = 0;

    /** Starts one process of `probe.<method>` and waits until it runs its loop (or waits). */
    const start = async (condition: Condition): Promise<Runner> => {
      const t = ++tag;
      const [method, params, line] = condition === "spin"
        ? ["spin", { seed: t, tag: t }, SPINNING_LINE]
        : condition === "busy"
        ? ["busy", { ms: 3_600_000, tag: t }, undefined]
        : ["never", { tag: t }, WAITING_LINE];
      let early: Response | undefined;
      const answer = client.request(`probe.${method}`, params);
      answer.then((r) => early ??= r);
      let process: Process | undefined;
      await until(
        () => {
          if (early) throw new CallFailed(`probe.${method} ended early: ${JSON.stringify(early)}`);
          process ??= host.processes.list().find((p) =>
            p.plugin === "probe" && p.method === method && p.params.tag === t
          );
          return process !== undefined &&
            (line === undefined || host.journal.tail(process.pid).includes(line));
        },
        10_000,
        `probe.${method} running`,
      );
      return { process: process!, answer };
    };

    /** Kills a process; returns the times as its caller and the table see them. */
    const kill = async (r: Runner): Promise<Kill> => {
      let table = NaN;
      const t0 = performance.now();
      const killed = client.request("core.kill", { pid: r.process.pid });
      const left = r.process.ended.then(() => {
        table = performance.now() - t0;
      });
      const response = await r.answer;
      const error = performance.now() - t0;
      const k = await killed;
      const answer = performance.now() - t0;
      await left;
      const reason = (response.error?.data as { reason?: string } | undefined)?.reason;
      if (response.error?.code !== -32002 || reason !== "killed") {
        throw new CallFailed(`the killed process answered ${JSON.stringify(response)}`);
      }
      if (k.error) throw new CallFailed(`core.kill: ${k.error.code} ${k.error.message}`);
      if (host.processes.get(r.process.pid)) {
        throw new CallFailed(`${r.process.pid} is still in the table after its end`);
      }
      return { error, table, answer };
    };

    const echo = async (i: number): Promise<number> => {
      const t = performance.now();
      const result = await call(client, "other.echo", { i });
      const ms = performance.now() - t;
      if ((result as { i?: number }).i !== i) {
        throw new CallFailed(`other.echo returned ${JSON.stringify(result)}`);
      }
      return ms;
    };

    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

    /** One block of a condition: the calls, then the kills. */
    const block = async (condition: Condition, calls: number, kills: number, into?: Samples) => {
      const spinners: Runner[] = [];
      if (condition !== "idle") {
        for (let i = 0; i < SPINNERS; i++) spinners.push(await start(condition));
        await sleep(SETTLE_MS);
      }
      for (let i = 0; i < calls; i++) {
        const ms = await echo(i);
        into?.calls[condition].push(ms);
      }
      const alive = spinners.filter((s) => s.process.state === "running").length;
      if (alive !== spinners.length) {
        throw new CallFailed(`${spinners.length - alive} spinners ended during the calls`);
      }
      for (let i = 0; i < kills; i++) {
        let victim: Runner;
        if (condition === "idle") {
          victim = await start("idle");
        } else {
          victim = spinners.shift()!;
          // a kill lands anywhere in a 10 ms slice: vary how long the others computed
          await sleep(SETTLE_MS / 2 + ((i * 7) % 23));
        }
        const k = await kill(victim);
        into?.kills[condition].push(k);
        if (condition !== "idle") spinners.push(await start(condition));
      }
      into?.workers[condition].push(host.pool.workers);
      await Promise.all(spinners.map(kill));
    };

    const empty = <T>(): Record<Condition, T[]> => ({ idle: [], spin: [], busy: [] });
    const s: Samples = { calls: empty(), kills: empty(), workers: empty() };

    ctx.progress(
      `preemption: ${warmupCalls} warm-up calls and 1 warm-up round, then ${rounds} rounds of ` +
        `${callsPerBlock} calls and ${killsPerBlock} kills with 0 and ${SPINNERS} spinners`,
    );
    for (let i = 0; i < warmupCalls; i++) await echo(i);
    for (const condition of CONDITIONS) {
      await block(condition, Math.ceil(callsPerBlock / 2), Math.ceil(killsPerBlock / 2));
    }
    for (let round = 0; round < rounds; round++) {
      for (const condition of shuffled(CONDITIONS, round)) {
        await block(condition, callsPerBlock, killsPerBlock, s);
      }
    }
    if (host.processes.list().length > 0) {
      throw new Error(`${host.processes.list().length} processes left after the section`);
    }

    // warm-up: the calls before the first round, and the warm-up round of each condition
    const callBase = {
      runs: rounds * callsPerBlock,
      warmup: warmupCalls + Math.ceil(callsPerBlock / 2),
    };
    const killBase = { runs: rounds * killsPerBlock, warmup: Math.ceil(killsPerBlock / 2) };
    const idle = s.calls.idle;
    const callLabels: Record<Condition, [string, string]> = {
      idle: [
        "call to another plugin, no spinner (baseline)",
        "other.echo (the probe plugin in a second folder) until its answer, no other process",
      ],
      spin: [
        `call to another plugin, ${SPINNERS} spinners`,
        `other.echo until its answer while ${SPINNERS} probe.spin processes compute in a ` +
        "tight loop with no host call (instrumented loop checks only)",
      ],
      busy: [
        `call to another plugin, ${SPINNERS} spinners with host calls`,
        `other.echo until its answer while ${SPINNERS} probe.busy processes compute, reading ` +
        "the monotonic clock (a host call) every 10 000 iterations",
      ],
    };
    const killLabels: Record<Condition, [string, string]> = {
      idle: [
        "kill of a process waiting on stdin (baseline)",
        "core.kill of a probe.never process blocked on stdin, until its caller got -32002",
      ],
      spin: [
        "kill of a spinner",
        `core.kill of a probe.spin process while ${SPINNERS - 1} others spin, until its ` +
        "caller got -32002 (the loop check traps)",
      ],
      busy: [
        "kill of a spinner with host calls",
        `core.kill of a probe.busy process while ${SPINNERS - 1} others compute, until its ` +
        "caller got -32002",
      ],
    };

    const figures: Figure[] = [];
    for (const c of CONDITIONS) {
      const [label, method] = callLabels[c];
      const call = distribution(`call.${c}`, label, s.calls[c], callBase, method, {
        workers: s.workers[c],
      });
      // "a call to another plugin still answers within tens of milliseconds"
      if (c !== "idle") call[1].goal = { op: "<=", value: CALL_WITH_SPINNERS_GOAL_MS };
      figures.push(...call);
      if (c !== "idle") {
        figures.push({
          name: `ratio.call_${c}_idle`,
          label: `  ${c === "spin" ? "spinners" : "spinners with host calls"} / baseline`,
          unit: "x",
          median: median(s.calls[c]) / median(idle),
          method: "ratio of the medians; extra: ratios of p90, p99 and max",
          extra: {
            p90: percentile(s.calls[c], 90) / percentile(idle, 90),
            p99: percentile(s.calls[c], 99) / percentile(idle, 99),
            max: Math.max(...s.calls[c]) / Math.max(...idle),
          },
          ...callBase,
        });
      }
    }
    for (const c of CONDITIONS) {
      const [label, method] = killLabels[c];
      const kills = s.kills[c];
      const [main, , max] = distribution(
        `kill.${c}`,
        label,
        kills.map((k) => k.error),
        killBase,
        method,
        {
          leftTable: summary(kills.map((k) => k.table)),
          killAnswered: summary(kills.map((k) => k.answer)),
          workers: s.workers[c],
        },
      );
      // "core.kill ends a spinning process within 100 ms"
      max.goal = { op: "<=", value: KILL_GOAL_MS };
      figures.push(main, max);
    }
    return figures;
  },
};

/** Median, p90, p99, min and max. */
function summary(samples: number[]) {
  return { ...summarize(samples), p90: percentile(samples, 90) };
}

/**
 * A figure (median and p99, with p90 and max in `extra`) and two rows below
 * it for the table: its p90 and its max.
 */
function distribution(
  name: string,
  label: string,
  samples: number[],
  base: { runs: number; warmup: number },
  method: string,
  extra: Record<string, unknown> = {},
): [Figure, Figure, Figure] {
  const sum = summary(samples);
  return [
    {
      name,
      label,
      unit: "ms",
      median: sum.median,
      p99: sum.p99,
      method,
      samples,
      extra: { p90: sum.p90, min: sum.min, max: sum.max, ...extra },
      ...base,
    },
    { name: `${name}.p90`, label: "  p90", unit: "ms", median: sum.p90, ...base },
    { name: `${name}.max`, label: "  max", unit: "ms", median: sum.max, ...base },
  ];
}
