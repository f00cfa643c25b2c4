/**
 * A call from a process, stage by stage: `probe.call {method: probe.echo}`
 * from the console starts a caller P, whose request starts the callee Q. A
 * host with profiling on (`runtime/profile.ts`) marks each stage on its
 * thread and its plugin workers; this turns the marks of each round into the
 * time of each stage, and counts the WASI calls (core imports, jco's glue
 * included) Q makes. Profiling wraps the imports with timers, so the whole
 * is somewhat slower than the `latency` section's figure; the stages show
 * where the time goes.
 *
 * @module
 */
import { summarize } from "../stats.ts";
import type { Client } from "../../core/client.ts";
import type { Figure } from "../figures.ts";
import { benchWorld, call, CallFailed } from "../fixture.ts";
import {
  enableProfile,
  type ImportCalls,
  type Mark,
  PROFILE_CHANNEL,
  takeMarks,
  type WorkerProfile,
} from "../../runtime/profile.ts";

/** Who a stage begins and ends with: the caller P or the callee Q, and the mark. */
type At = readonly ["P" | "Q", string];

interface Stage {
  key: string;
  label: string;
  to: At;
  /**
   * The way of the answer the stage belongs to: through the host's thread,
   * or from Q's worker straight to P (both on one worker). A round that took
   * the other way counts the stage as zero.
   */
  way?: "host" | "worker";
}

/** The chain of a call, from P's request on its stdout to P reading the answer. */
const START: At = ["P", "w.message"];
const STAGES: Stage[] = [
  { key: "caller_write", label: "P's request line to its worker's post", to: ["P", "w.post"] },
  { key: "hop_up", label: "hop: P's worker to the host thread", to: ["P", "m.stdout"] },
  { key: "route", label: "routing: router, process table, spawn", to: ["Q", "m.spawn"] },
  { key: "hop_spawn", label: "hop: the spawn to Q's worker", to: ["Q", "w.spawn"] },
  { key: "instantiate", label: "Q linked, or taken linked ahead or reused", to: ["Q", "w.run"] },
  { key: "first_read", label: "Q's run to its request read", to: ["Q", "w.stdin.read"] },
  { key: "guest_answer", label: "Q's request read to its answer line", to: ["Q", "w.message"] },
  { key: "callee_post", label: "Q's answer line to its worker's post", to: ["Q", "w.post"] },
  {
    key: "answer_in_worker",
    label: "or: the answer written to P's stdin by their worker",
    to: ["P", "w.answer"],
    way: "worker",
  },
  {
    key: "hop_answer",
    label: "or: hop: Q's worker to the host thread",
    to: ["Q", "m.stdout"],
    way: "host",
  },
  {
    key: "route_answer",
    label: "    the answer routed to P's stdin",
    to: ["P", "m.write"],
    way: "host",
  },
  {
    key: "hop_down",
    label: "    hop: the host thread to P's worker",
    to: ["P", "w.stdin"],
    way: "host",
  },
  { key: "caller_read", label: "P resumes and reads the answer", to: ["P", "w.stdin.read"] },
];
/** What one round measured. */
interface Round {
  stages: Record<string, number>;
  /** The answer went from Q's worker to P without the host's thread. */
  inWorker: boolean;
  total: number;
  guestMicros: number;
  /** Q's request was in its stdin before Q's run began. */
  stdinFirst: boolean;
  /** Q waited on stdin (its first read suspended). */
  waited: boolean;
  tail: number;
  exit: number;
  /** From the spawn on the host thread to Q's request written (the same task). */
  requestOut: number;
  /** From the spawn's arrival in Q's worker to its request's. */
  requestIn: number;
  imports: ImportCalls[];
}

/**
 * The stages of one call from its marks. Each thread's clock is
 * `performance.timeOrigin + performance.now()`, and a thread reads its origin
 * when it starts: a thread preempted in between is off by the time it waited.
 * Marks are ordered only against marks of the same thread; a stage that
 * crosses threads is clipped at zero.
 */
function analyse(marks: Mark[], imports: ImportCalls[], p: string, q: string): Round {
  const of = { P: p, Q: q };
  /** The latest mark used so far, per thread. */
  const seen = new Map<string, number>();
  const find = (who: "P" | "Q", stage: string): number => {
    const pid = of[who];
    const hit = marks.find((m) =>
      m.pid === pid && m.stage === stage && m.at >= (seen.get(m.thread) ?? -Infinity)
    );
    if (!hit) throw new Error(`profile: no mark ${stage} of ${who} (${pid}) in order`);
    seen.set(hit.thread, Math.max(seen.get(hit.thread) ?? -Infinity, hit.at));
    return hit.at;
  };
  // P's first line out is its request; everything else follows it
  const t0 = find(...START);
  let t = t0;
  const stages: Record<string, number> = {};
  const inWorker = marks.some((m) => m.pid === p && m.stage === "w.answer");
  for (const stage of STAGES) {
    if (stage.way !== undefined && stage.way !== (inWorker ? "worker" : "host")) {
      stages[stage.key] = 0;
      continue;
    }
    const next = find(...stage.to);
    stages[stage.key] = Math.max(0, next - t);
    t = next;
  }
  // the chain starts and ends on P's worker: one clock
  const total = t - t0;
  seen.clear();
  const qSpawn = find("Q", "m.spawn");
  const qWrite = find("Q", "m.write");
  seen.clear();
  const qWorkerSpawn = find("Q", "w.spawn");
  const qStdin = find("Q", "w.stdin");
  seen.clear();
  const qRun = find("Q", "w.run");
  const qAnswer = find("Q", "w.message");
  const qReturned = find("Q", "w.returned");
  const qExit = marks.find((m) => m.pid === q && m.stage === "m.exit")?.at;
  if (qExit === undefined) throw new Error(`profile: no mark m.exit of Q (${q})`);
  return {
    stages,
    inWorker,
    total,
    guestMicros: 0,
    // on one clock, Q's worker's
    stdinFirst: qStdin <= qRun,
    waited: marks.some((m) => m.pid === q && m.stage === "w.stdin.wait"),
    tail: qReturned - qAnswer,
    // crosses threads
    exit: Math.max(0, qExit - qReturned),
    requestOut: qWrite - qSpawn,
    requestIn: qStdin - qWorkerSpawn,
    imports: imports.filter((i) => i.pid === q),
  };
}

/** Profiles `rounds` calls from a process after `warmup`; returns figures (µs). */
export async function profileCalls(
  progress: (text: string) => void,
  rounds: number,
  warmup: number,
  /** The `pinger` plugin, for the calls of one caller by the worker its callee ran on. */
  pinger?: string,
): Promise<Figure[]> {
  enableProfile(true);
  const channel = new BroadcastChannel(PROFILE_CHANNEL);
  const fromWorkers: Mark[] = [];
  const imports: ImportCalls[] = [];
  channel.onmessage = (e: MessageEvent<WorkerProfile>) => {
    fromWorkers.push(...e.data.marks);
    imports.push(...e.data.imports);
  };
  try {
    await using w = await benchWorld({ probe: "probe" }, {}, pinger ? { pinger } : {});
    const client = w.host.client("console");
    const once = async () => {
      const result = await call(client, "probe.call", { method: "probe.echo", params: {} }) as {
        response?: { result?: unknown };
        micros: number;
      };
      if (result.response?.result === undefined) {
        throw new CallFailed(`the inner call failed: ${JSON.stringify(result)}`);
      }
      return result.micros;
    };
    progress(`wasmtime: profile, ${warmup} warm-up calls, then ${rounds} profiled calls`);
    for (let i = 0; i < warmup; i++) await once();
    const measured: Round[] = [];
    for (let i = 0; i < rounds; i++) {
      await settle(() => takeMarks(), fromWorkers, imports);
      const micros = await once();
      const main: Mark[] = [];
      // P and Q are probe's, whatever else starts meanwhile (a service, a discovery)
      const spawned = () =>
        main.filter((m) => m.stage === "m.spawn" && m.pid.startsWith("probe-")).map((m) => m.pid);
      // both processes have ended, and their workers' marks have arrived
      const done = () => {
        main.push(...takeMarks());
        const [p, q] = spawned();
        if (!p || !q) return false;
        const ended = (pid: string) =>
          main.some((m) => m.pid === pid && m.stage === "m.exit") &&
          fromWorkers.some((m) => m.pid === pid && m.stage === "w.returned");
        return ended(p) && ended(q);
      };
      await until(done, 2000);
      const [p, q] = spawned();
      const all = [...main, ...fromWorkers].sort((a, b) => a.at - b.at);
      const round = analyse(all, imports, p, q);
      round.guestMicros = micros;
      measured.push(round);
    }
    const out = figures(measured, warmup);
    if (pinger) {
      out.push(...await byWorker(client, fromWorkers, imports, loopsFor(rounds)));
    }
    return out;
  } finally {
    enableProfile(false);
    channel.close();
  }
}

/** Loops of `pinger.loop` for {@linkcode byWorker}: about as many calls as the profile's rounds. */
function loopsFor(rounds: number): number {
  return Math.max(2, Math.round(rounds / LOOP_N));
}

const LOOP_N = 25;

/**
 * One process calls `pinger.ping` again and again (`pinger.loop`); each call
 * is split by where its callee ran: on the caller's own worker, or on
 * another. The pool puts a callee on its caller's worker unless that worker
 * computes or holds many more processes than another.
 */
async function byWorker(
  client: Client,
  fromWorkers: Mark[],
  imports: ImportCalls[],
  loops: number,
): Promise<Figure[]> {
  const same: number[] = [];
  const other: number[] = [];
  for (let l = 0; l < loops; l++) {
    await settle(() => takeMarks(), fromWorkers, imports);
    const result = await call(client, "pinger.loop", { method: "pinger.ping", n: LOOP_N }) as {
      micros: number[];
    };
    const main: Mark[] = [];
    const spawns = () => main.filter((m) => m.stage === "m.spawn").map((m) => m.pid);
    const threadOf = (pid: string) => fromWorkers.find((m) => m.pid === pid)?.thread;
    await until(() => {
      main.push(...takeMarks());
      const all = spawns();
      return all.length === LOOP_N + 1 && all.every((pid) => threadOf(pid) !== undefined);
    }, 2000);
    const [caller, ...callees] = spawns();
    callees.forEach((q, i) => {
      (threadOf(q) === threadOf(caller) ? same : other).push(result.micros[i]);
    });
  }
  const total = same.length + other.length;
  const figure = (key: string, label: string, micros: number[]): Figure => {
    const s = summarize(micros);
    return {
      name: `profile.loop.${key}`,
      label,
      unit: "µs",
      median: s.median,
      p99: s.p99,
      runs: micros.length,
      warmup: 0,
      extra: { share: micros.length / total },
    };
  };
  // a way no call took has no figure
  return [
    ...(other.length === 0 ? [] : [figure(
      "other_worker",
      `one caller, callee on another worker (${pct(other.length / total)} of calls)`,
      other,
    )]),
    ...(same.length === 0 ? [] : [figure(
      "same_worker",
      `one caller, callee on the caller's worker (${pct(same.length / total)})`,
      same,
    )]),
  ];
}

function pct(share: number): string {
  return `${Math.round(share * 100)} %`;
}

/** Empties what earlier rounds left. */
async function settle(take: () => Mark[], fromWorkers: Mark[], imports: ImportCalls[]) {
  await new Promise((r) => setTimeout(r, 2));
  take();
  fromWorkers.length = 0;
  imports.length = 0;
}

async function until(check: () => boolean, ms: number): Promise<void> {
  const deadline = performance.now() + ms;
  while (!check()) {
    if (performance.now() > deadline) {
      throw new Error(`profile: the marks of a round did not all arrive within ${ms} ms`);
    }
    await new Promise((r) => setTimeout(r, 1));
  }
}

function figures(rounds: Round[], warmup: number): Figure[] {
  const base = { runs: rounds.length, warmup };
  const us = (ms: number[]) => summarize(ms.map((x) => x * 1000));
  const out: Figure[] = [];
  const total = us(rounds.map((r) => r.total));
  const guest = summarize(rounds.map((r) => r.guestMicros));
  out.push({
    name: "profile.total",
    label: "profile: P's request line to P's read (profiling on)",
    unit: "µs",
    median: total.median,
    p99: total.p99,
    method: "the sum of the stages below, per call; profiling wraps every import with a timer",
    extra: { guestTimed: guest.median },
    ...base,
  });
  const inWorker = rounds.filter((r) => r.inWorker).length / rounds.length;
  out.push({
    name: "profile.answered_in_worker",
    label: "  share of calls whose answer skipped the host's thread",
    unit: "%",
    median: inWorker * 100,
    method: "Q ran on P's worker, which wrote Q's answer to P's stdin (the `or:` stages below " +
      "count zero in the rounds that took the other way)",
    ...base,
  });
  for (const stage of STAGES) {
    const s = us(rounds.map((r) => r.stages[stage.key]));
    out.push({
      name: `profile.${stage.key}`,
      label: `  ${stage.label}`,
      unit: "µs",
      median: s.median,
      p99: s.p99,
      ...base,
    });
  }
  const side = (key: string, label: string, ms: number[]) => {
    const s = us(ms);
    out.push({ name: `profile.${key}`, label, unit: "µs", median: s.median, p99: s.p99, ...base });
  };
  side(
    "request_out",
    "  beside: Q's spawn to its request written (host)",
    rounds.map((r) => r.requestOut),
  );
  side(
    "request_in",
    "  beside: the spawn's arrival to the request's (Q's worker)",
    rounds.map((r) => r.requestIn),
  );
  const tail = us(rounds.map((r) => r.tail));
  const exit = us(rounds.map((r) => r.exit));
  out.push(
    {
      name: "profile.callee_tail",
      label: "  after the answer: Q's run returns",
      unit: "µs",
      median: tail.median,
      p99: tail.p99,
      ...base,
    },
    {
      name: "profile.callee_exit",
      label: "  after the answer: Q's return to its exit on the host",
      unit: "µs",
      median: exit.median,
      p99: exit.p99,
      ...base,
    },
  );
  const share = (f: (r: Round) => boolean) => rounds.filter(f).length / rounds.length;
  // the WASI calls of Q: median count and time per call of Q, by import
  const names = [...new Set(rounds.flatMap((r) => r.imports.map((i) => i.name)))];
  const perImport = names.map((name) => {
    const calls = rounds.map((r) => r.imports.find((i) => i.name === name)?.calls ?? 0);
    const micros = rounds.map((r) => r.imports.find((i) => i.name === name)?.micros ?? 0);
    const suspending = rounds.some((r) => r.imports.some((i) => i.name === name && i.suspending));
    return {
      name,
      calls: summarize(calls).median,
      micros: summarize(micros).median,
      suspending,
    };
  }).sort((a, b) => b.micros - a.micros);
  const importMicros = summarize(
    rounds.map((r) => r.imports.filter((i) => !i.suspending).reduce((a, i) => a + i.micros, 0)),
  );
  const importCalls = summarize(
    rounds.map((r) => r.imports.reduce((a, i) => a + i.calls, 0)),
  );
  out.push({
    name: "profile.wasi",
    label: `  Q's WASI calls: ${importCalls.median} calls, time in the synchronous ones`,
    unit: "µs",
    median: importMicros.median,
    p99: importMicros.p99,
    method: "the core imports of Q's core modules, each wrapped with a timer (jco's lowering " +
      "and Sausage's WASI together); suspending imports (JSPI) are timed until they resume",
    extra: {
      perImport,
      requestBeforeRun: share((r) => r.stdinFirst),
      firstReadWaited: share((r) => r.waited),
    },
    ...base,
  });
  for (const i of perImport.slice(0, 8)) {
    out.push({
      name: `profile.wasi.${i.name}`,
      label: `    ${i.name.replace(/@[0-9.]+/, "")} ×${i.calls}${i.suspending ? " (JSPI)" : ""}`,
      unit: "µs",
      median: i.micros,
      ...base,
    });
  }
  return out;
}
