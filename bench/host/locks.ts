/**
 * `core.lock` and `core.unlock` from a plugin, timed by the plugin itself
 * (`fsbench.locks`, a loop of N calls after a warm-up, in one process), and
 * from the host's own client as a baseline.
 *
 * `core.unlock` is a notification: nothing answers it. The core handles the
 * messages of a process in the order they were written, so in a loop of
 * `core.lock {wait: false}` + `core.unlock` on one path, each lock is only
 * granted if the unlock before it took effect: its answer covers that unlock.
 * The plugin counts refusals; one would mean an unlock that was not handled
 * before the next lock, and fails the section.
 *
 * @module
 */
import type { Figure } from "../figures.ts";
import { benchWorld, call, CallFailed, until } from "../fixture.ts";
import { pick, type Section } from "../section.ts";
import { summarize } from "../stats.ts";
import type { Client } from "../../core/client.ts";
import { shuffled } from "./latency.ts";

/** The goal for a lock and an unlock from a plugin, in milliseconds. */
export const LOCK_GOAL_MS = 0.5;

type Kind = "pair" | "lock" | "trip" | "clientPair" | "clientLock";
const KINDS: Kind[] = ["pair", "lock", "trip", "clientPair", "clientLock"];

interface LoopAnswer {
  n: number;
  ns: number;
  refused: number;
}

/** Milliseconds per call of one `fsbench.locks` loop. */
async function pluginLoop(
  client: Client,
  mode: "pair" | "lock" | "trip",
  n: number,
  warmup: number,
  path: string,
): Promise<number> {
  const r = (await call(client, "fsbench.locks", { mode, n, warmup, path })) as LoopAnswer;
  if (r.n !== n || typeof r.ns !== "number") {
    throw new CallFailed(`fsbench.locks answered ${JSON.stringify(r)}`);
  }
  if (r.refused !== 0) {
    throw new CallFailed(
      `fsbench.locks ${mode}: ${r.refused} of ${n} locks refused: an unlock was not handled ` +
        "before the next lock of the same process",
    );
  }
  return r.ns / n / 1e6;
}

/** The same loops from a client of the host: milliseconds per call. */
async function clientLoop(
  client: Client,
  mode: "pair" | "lock",
  n: number,
  warmup: number,
  path: string,
): Promise<number> {
  let start = 0;
  const taken: string[] = [];
  for (let i = 0; i < warmup + n; i++) {
    if (i === warmup) start = performance.now();
    const p = mode === "pair" ? path : `${path}/${i}`;
    const r = (await call(client, "core.lock", { path: p, wait: false })) as { held?: boolean };
    if (r.held !== true) throw new CallFailed(`core.lock ${p} from a client was refused`);
    if (mode === "pair") client.notify("core.unlock", { path: p });
    else taken.push(p);
  }
  const ms = (performance.now() - start) / n;
  for (const p of taken) client.notify("core.unlock", { path: p });
  return ms;
}

export const locks: Section = {
  name: "locks",
  group: "host",
  summary: "core.lock and core.unlock from a plugin (timed by the plugin) and from a client",
  async run(ctx) {
    const n = pick(ctx, 500, 200);
    const inner = pick(ctx, 50, 20);
    const warmupRounds = 2;
    const rounds = pick(ctx, 9, 3);
    await using w = await benchWorld({ fsbench: "fsbench" });
    const client = w.host.client("console");
    const own = w.host.client("bench-locks");
    const measure: Record<Kind, (i: number) => Promise<number>> = {
      pair: (i) => pluginLoop(client, "pair", n, inner, `/bench/pair/${i}`),
      lock: (i) => pluginLoop(client, "lock", n, inner, `/bench/lock/${i}`),
      trip: (i) => pluginLoop(client, "trip", n, inner, `/bench/trip/${i}`),
      clientPair: (i) => clientLoop(own, "pair", n, inner, `/bench/client-pair/${i}`),
      clientLock: (i) => clientLoop(own, "lock", n, inner, `/bench/client-lock/${i}`),
    };
    const s: Record<Kind, number[]> = {
      pair: [],
      lock: [],
      trip: [],
      clientPair: [],
      clientLock: [],
    };
    ctx.progress(
      `locks: ${warmupRounds} + ${rounds} rounds of 5 loops of ${n} calls (${inner} not counted)`,
    );
    for (let i = 0; i < warmupRounds + rounds; i++) {
      for (const kind of shuffled(KINDS, i)) {
        const ms = await measure[kind](i);
        if (i >= warmupRounds) s[kind].push(ms);
      }
    }
    // a process's locks go when the core has seen it end, a moment after its answer
    await until(() => w.host.locks.snapshot().length === 0, 5000, "every lock released");

    const base = { runs: rounds, warmup: warmupRounds };
    const loop = `${n} calls after ${inner} not counted, in one process, timed by the plugin; ` +
      "the median over rounds of the time per call";
    const pair = summarize(s.pair);
    const lock = summarize(s.lock);
    const trip = summarize(s.trip);
    const clientPair = summarize(s.clientPair);
    const clientLock = summarize(s.clientLock);
    const figures: Figure[] = [
      {
        name: "plugin.lock_unlock",
        label: "lock + unlock from a plugin",
        unit: "ms",
        median: pair.median,
        p99: pair.p99,
        goal: { op: "<=", value: LOCK_GOAL_MS },
        method: `fsbench.locks pair: core.lock {path, wait: false} (granted only if the unlock ` +
          `before it took effect) then the notification core.unlock; ${loop}`,
        samples: s.pair,
        ...base,
      },
      {
        name: "plugin.lock",
        label: "  lock alone (a new path each time)",
        unit: "ms",
        median: lock.median,
        p99: lock.p99,
        method: `fsbench.locks lock: core.lock of a new path each time, all held until the ` +
          `process ends; ${loop}`,
        samples: s.lock,
        ...base,
      },
      {
        name: "plugin.unlock_by_difference",
        label: "  unlock (by difference)",
        unit: "ms",
        median: pair.median - lock.median,
        method: "median of lock + unlock minus the median of lock alone",
        ...base,
      },
      {
        name: "plugin.round_trip",
        label: "  baseline: refused lock (round trip)",
        unit: "ms",
        median: trip.median,
        p99: trip.p99,
        method: `fsbench.locks trip: core.lock {wait: false} of a path the process holds, ` +
          `refused at once: one request from a running process to the core and back; ${loop}`,
        samples: s.trip,
        ...base,
      },
      {
        name: "client.lock_unlock",
        label: "baseline: lock + unlock from a client",
        unit: "µs",
        median: clientPair.median * 1000,
        p99: clientPair.p99 * 1000,
        method: `host.client('bench-locks'): request core.lock {wait: false}, then notify ` +
          `core.unlock; ${n} pairs after ${inner}, per pair`,
        samples: s.clientPair.map((ms) => ms * 1000),
        ...base,
      },
      {
        name: "client.lock",
        label: "  lock alone from a client",
        unit: "µs",
        median: clientLock.median * 1000,
        p99: clientLock.p99 * 1000,
        method: `host.client('bench-locks'): request core.lock of a new path each time; ` +
          `${n} after ${inner}, per lock`,
        samples: s.clientLock.map((ms) => ms * 1000),
        ...base,
      },
      {
        name: "ratio.plugin_client",
        label: "lock + unlock: plugin / client",
        unit: "x",
        median: pair.median / clientPair.median,
        method: "what the process boundary (stdout, worker, router) adds to the core's own work",
        ...base,
      },
    ];
    return figures;
  },
};
