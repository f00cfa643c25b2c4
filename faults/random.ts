/**
 * The randomized run: many calls drawn by a seeded generator from a mix of
 * healthy and faulty behaviours (crashes, hangs that are stopped, kills,
 * garbage, floods, limits), a few in flight at once. It counts the callers
 * that were answered (the goal: every one), the answers that were not what
 * the protocol promises, and what was left behind: processes, locks and
 * plugin workers (the goal: none).
 *
 * @module
 */
import type { CallAnswer, Order } from "./host.ts";
import { eventually, type HostProcess, journalLines, threadsOf } from "./harness.ts";
import type { Baseline } from "./checks.ts";

/** A seeded generator (mulberry32): the same seed draws the same calls. */
export function generator(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One drawn call. */
interface Draw {
  method: string;
  params: Record<string, unknown>;
  more?: Partial<Order>;
  /** Whether the answer is the one the protocol promises. */
  expect(a: CallAnswer): boolean;
}

/** A behaviour of the mix. */
interface Behaviour {
  name: string;
  faulty: boolean;
  weight: number;
  draw(rng: () => number, i: number): Draw;
}

const int = (rng: () => number, lo: number, hi: number) => lo + Math.floor(rng() * (hi - lo + 1));

function ended(reason: string) {
  return (a: CallAnswer) =>
    a.response?.error?.code === -32002 &&
    (a.response.error.data as { reason?: string })?.reason === reason;
}

const hasResult = (a: CallAnswer) => a.response !== undefined && !a.response.error;

/** The mix: weights are relative; about 40 % of the calls misbehave. */
export const MIX: Behaviour[] = [
  {
    name: "echo",
    faulty: false,
    weight: 30,
    draw: (_r, i) => ({
      method: "other.echo",
      params: { i },
      expect: (a) => (a.response?.result as { i?: number })?.i === i,
    }),
  },
  {
    name: "sleep",
    faulty: false,
    weight: 8,
    draw: (r) => ({ method: "other.sleep", params: { ms: int(r, 0, 20) }, expect: hasResult }),
  },
  {
    name: "nested call",
    faulty: false,
    weight: 8,
    draw: (_r, i) => ({
      method: "hostile.call",
      params: { method: "other.echo", params: { i } },
      expect: (a) =>
        (a.response?.result as { response?: { result?: { i?: number } } })?.response?.result
          ?.i === i,
    }),
  },
  {
    name: "lock",
    faulty: false,
    weight: 6,
    draw: (r) => ({
      method: "hostile.lock_cycle",
      params: { path: `/state/random-lock-${int(r, 0, 3)}` },
      expect: (a) => (a.response?.result as { held?: boolean })?.held === true,
    }),
  },
  {
    name: "small tree",
    faulty: false,
    weight: 3,
    draw: () => ({
      method: "hostile.tree",
      params: { fan: 2, depth: 3 },
      expect: (a) => (a.response?.result as { leaves?: number })?.leaves === 8,
    }),
  },
  {
    name: "panic",
    faulty: true,
    weight: 5,
    draw: () => ({ method: "hostile.panic", params: {}, expect: ended("trapped") }),
  },
  {
    name: "exit 1",
    faulty: true,
    weight: 4,
    draw: () => ({ method: "hostile.exit", params: { code: 1 }, expect: ended("exited") }),
  },
  {
    name: "hang, stopped",
    faulty: true,
    weight: 4,
    draw: (r) => ({
      method: "hostile.hang",
      params: {},
      more: { stopAfterMs: int(r, 10, 200) },
      expect: ended("exited"),
    }),
  },
  {
    name: "deaf hang, killed",
    faulty: true,
    weight: 3,
    draw: (r) => ({
      method: "hostile.hang",
      params: { deaf: true },
      more: { killAfterMs: int(r, 10, 200) },
      expect: ended("killed"),
    }),
  },
  {
    name: "spin, killed",
    faulty: true,
    weight: 4,
    draw: (r) => ({
      method: "hostile.spin",
      params: {},
      more: { killAfterMs: int(r, 10, 100) },
      expect: ended("killed"),
    }),
  },
  {
    name: "garbage",
    faulty: true,
    weight: 3,
    draw: () => ({ method: "hostile.garbage", params: { ms: 20 }, expect: hasResult }),
  },
  {
    name: "stdout flood",
    faulty: true,
    weight: 2,
    draw: () => ({ method: "hostile.stdout_flood", params: { mb: 1 }, expect: hasResult }),
  },
  {
    name: "stderr flood",
    faulty: true,
    weight: 2,
    draw: () => ({
      method: "hostile.stderr_flood",
      params: { lines: 500, len: 100 },
      expect: hasResult,
    }),
  },
  {
    name: "huge line",
    faulty: true,
    weight: 0.5,
    draw: () => ({ method: "hostile.huge_line", params: { mb: 17 }, expect: ended("killed") }),
  },
  {
    name: "notification flood",
    faulty: true,
    weight: 2,
    draw: () => ({
      method: "hostile.notify_flood",
      params: { method: "other.echo", params: {}, count: 50 },
      expect: (a) => a.response?.result === "sent",
    }),
  },
  {
    name: "tree past the limit",
    faulty: true,
    weight: 0.5,
    draw: () => ({
      method: "hostile.tree",
      params: { fan: 2, depth: 7 },
      expect: (a) => ((a.response?.result as { failed?: number })?.failed ?? 0) > 0,
    }),
  },
  {
    name: "too deep",
    faulty: true,
    weight: 0.5,
    draw: () => ({
      method: "hostile.tree",
      params: { fan: 1, depth: 40 },
      expect: (a) => (a.response?.result as { limit?: string })?.limit === "call_depth",
    }),
  },
  {
    name: "call, then exit",
    faulty: true,
    weight: 1,
    draw: () => ({
      method: "hostile.call_and_exit",
      params: { method: "other.hang", params: {} },
      expect: (a) => a.response?.result === "gone",
    }),
  },
  {
    name: "kill under a lock",
    faulty: true,
    weight: 1,
    draw: (r) => ({
      method: "hostile.locked_writer",
      params: { path: `/state/random-writer-${int(r, 0, 1)}.bin`, mb: 1 },
      more: { killAfterMs: int(r, 5, 50) },
      expect: ended("killed"),
    }),
  },
];

/** Picks a behaviour by weight. */
function pick(rng: () => number): Behaviour {
  const total = MIX.reduce((n, b) => n + b.weight, 0);
  let x = rng() * total;
  for (const b of MIX) {
    x -= b.weight;
    if (x < 0) return b;
  }
  return MIX[MIX.length - 1];
}

/** What a randomized run found. */
export interface RandomResult {
  seed: number;
  calls: number;
  faulty: number;
  answered: number;
  unanswered: number;
  /** Answered, but not as the protocol promises: by behaviour. */
  wrong: Record<string, number>;
  /** Examples of wrong answers. */
  examples: string[];
  byBehaviour: Record<string, number>;
  /** Median time of a call, by behaviour (ms). */
  medianMs: Record<string, number>;
  /** The journal's last lines of each leaked process. */
  leakedLog: Record<string, string[]>;
  leaked: { processes: string[]; locks: string[]; workers: number; threads: number };
  hostDied: boolean;
  seconds: number;
  ok: boolean;
}

/** Options of {@linkcode randomRun}. */
export interface RandomOptions {
  calls: number;
  seed: number;
  /** Calls in flight at once. */
  concurrency?: number;
  /** How long extra plugin workers may take to go (the pool stops them after 30 s idle). */
  workerWaitMs?: number;
  progress?: (text: string) => void;
}

/** Runs the randomized calls against a host that has its bystanders running. */
export async function randomRun(
  h: HostProcess,
  base: Baseline,
  options: RandomOptions,
  root?: string,
): Promise<RandomResult> {
  const started = performance.now();
  const rng = generator(options.seed);
  const draws = Array.from({ length: options.calls }, (_, i) => {
    const b = pick(rng);
    return { b, d: b.draw(rng, i) };
  });
  const baseState = await h.state();
  const baseThreads = threadsOf(h.pid) ?? 0;
  const result: RandomResult = {
    seed: options.seed,
    calls: options.calls,
    faulty: draws.filter((x) => x.b.faulty).length,
    answered: 0,
    unanswered: 0,
    wrong: {},
    examples: [],
    byBehaviour: {},
    medianMs: {},
    leakedLog: {},
    leaked: { processes: [], locks: [], workers: 0, threads: 0 },
    hostDied: false,
    seconds: 0,
    ok: false,
  };
  for (const { b } of draws) result.byBehaviour[b.name] = (result.byBehaviour[b.name] ?? 0) + 1;
  const times: Record<string, number[]> = {};
  let next = 0;
  const lane = async () => {
    while (next < draws.length) {
      const i = next++;
      const { b, d } = draws[i];
      let a: CallAnswer;
      try {
        a = await h.call(d.method, d.params, { timeoutMs: 30_000, ...d.more });
      } catch {
        result.unanswered++;
        if (!h.alive) result.hostDied = true;
        continue;
      }
      if (a.timeout) {
        result.unanswered++;
        if (result.examples.length < 10) result.examples.push(`${b.name}: no answer in 30 s`);
        continue;
      }
      result.answered++;
      (times[b.name] ??= []).push(a.ms);
      if (!d.expect(a)) {
        result.wrong[b.name] = (result.wrong[b.name] ?? 0) + 1;
        if (result.examples.length < 10) {
          result.examples.push(`${b.name}: ${JSON.stringify(a.response).slice(0, 200)}`);
        }
      }
      if ((i + 1) % 1000 === 0) options.progress?.(`${i + 1} of ${draws.length} calls`);
    }
  };
  await Promise.all(Array.from({ length: options.concurrency ?? 12 }, lane));
  for (const [name, ms] of Object.entries(times)) {
    ms.sort((x, y) => x - y);
    result.medianMs[name] = Math.round(ms[Math.floor(ms.length / 2)] * 10) / 10;
  }
  if (h.alive) {
    const pids = new Set(base.pids);
    const locks = new Set(base.locks);
    let leftover: string[] = [];
    let leftLocks: string[] = [];
    await eventually(async () => {
      const s = await h.state();
      leftover = s.processes.filter((p) => !pids.has(p.pid)).map((p) =>
        `${p.pid} ${p.method} ${p.state}`
      );
      leftLocks = s.locks.map((l) => `${l.path} ${l.holder}`).filter((l) => !locks.has(l));
      return leftover.length === 0 && leftLocks.length === 0;
    }, 15_000);
    result.leaked.processes = leftover;
    if (leftover.length > 0 && root) {
      await h.order({ op: "flush" }).catch(() => {});
      for (const p of leftover.slice(0, 5)) {
        const pid = p.split(" ")[0];
        result.leakedLog[pid] = journalLines(root, pid, 8);
      }
    }
    result.leaked.locks = leftLocks;
    let workers = 0;
    await eventually(async () => {
      workers = (await h.state()).workers - baseState.workers;
      return workers <= 0;
    }, options.workerWaitMs ?? 40_000);
    result.leaked.workers = Math.max(0, workers);
    result.leaked.threads = Math.max(0, (threadsOf(h.pid) ?? 0) - baseThreads);
  } else {
    result.hostDied = true;
  }
  result.seconds = (performance.now() - started) / 1000;
  result.ok = !result.hostDied && result.unanswered === 0 &&
    Object.keys(result.wrong).length === 0 && result.leaked.processes.length === 0 &&
    result.leaked.locks.length === 0 && result.leaked.workers === 0;
  return result;
}
