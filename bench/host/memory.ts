/**
 * Memory of idle processes: 100 `probe.never` processes that wait for EOF
 * on stdin, the growth of the resident set of this Deno process per
 * process. The plugin workers are threads of this process, so its RSS holds
 * them all.
 *
 * @module
 */
import type { Figure } from "../figures.ts";
import type { Response } from "../../core/jsonrpc.ts";
import { benchWorld, REPO_ROOT, until } from "../fixture.ts";
import { pick, type Section } from "../section.ts";
import { median } from "../stats.ts";

/** What `probe.never` logs when it waits for EOF on stdin. */
const WAITING_LINE = "probe: waiting for EOF";
/** Idle processes per round. */
export const IDLE_PROCESSES = 100;
/** Idle processes started and stopped before each reading. */
const WARMUP_PROCESSES = 4;
const MIB = 1024 * 1024;
/** Waits this long before each reading of the RSS, so that allocations settle. */
const SETTLE_MS = 200;

const settle = () => new Promise((r) => setTimeout(r, SETTLE_MS));

/** One reading, made in a fresh Deno process. */
export interface Reading {
  rssBeforeMiB: number;
  rssAfterMiB: number;
  perProcessMiB: number;
  mainHeapDeltaMiB: number;
  externalDeltaMiB: number;
  workers: number;
}

/**
 * Starts a host, warms its workers with a few idle processes, then reads the
 * RSS before and with {@linkcode IDLE_PROCESSES} idle processes. Meant for a
 * fresh process: memory that an allocator keeps after an earlier round would
 * be reused and hide the growth.
 */
export async function idleRound(): Promise<Reading> {
  await using w = await benchWorld({ probe: "probe" });
  const client = w.host.client("console");
  const host = w.host;
  const answers: Promise<Response>[] = [];
  /** Starts `n` processes of `probe.never` and waits until each says that it waits for EOF. */
  const startIdle = async (n: number) => {
    let early: Response | undefined;
    for (let i = 0; i < n; i++) {
      const answer = client.request("probe.never", {});
      answer.then((r) => early ??= r);
      answers.push(answer);
    }
    const waiting = () =>
      host.processes.list().filter((p) => host.journal.tail(p.pid).includes(WAITING_LINE)).length;
    await until(
      () => {
        if (early) throw new Error(`probe.never ended early: ${JSON.stringify(early)}`);
        return waiting() >= n;
      },
      30_000,
      `${n} probe.never processes waiting on stdin`,
    );
  };
  /** Stops them: EOF on stdin; their callers get -32002. */
  const stopAll = async () => {
    await Promise.all(host.processes.list().map((p) => host.processes.stop(p, "bench done")));
    for (const r of await Promise.all(answers.splice(0))) {
      if (r.error?.code !== -32002) throw new Error(`probe.never answered ${JSON.stringify(r)}`);
    }
  };
  // the workers load the glue and compile their code paths first
  await startIdle(WARMUP_PROCESSES);
  await stopAll();
  await settle();
  const before = Deno.memoryUsage();
  await startIdle(IDLE_PROCESSES);
  await settle();
  const after = Deno.memoryUsage();
  const workers = host.pool.workers;
  await stopAll();
  return {
    rssBeforeMiB: before.rss / MIB,
    rssAfterMiB: after.rss / MIB,
    perProcessMiB: (after.rss - before.rss) / MIB / IDLE_PROCESSES,
    mainHeapDeltaMiB: (after.heapUsed - before.heapUsed) / MIB,
    externalDeltaMiB: (after.external - before.external) / MIB,
    workers,
  };
}

/** Runs {@linkcode idleRound} in a fresh `deno` process. */
async function idleRoundInChild(): Promise<Reading> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "--unstable-worker-options", new URL(import.meta.url).pathname],
    cwd: REPO_ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  if (!out.success) {
    throw new Error(`the memory round failed:\n${text}${new TextDecoder().decode(out.stderr)}`);
  }
  return JSON.parse(text) as Reading;
}

export const memory: Section = {
  name: "memory",
  group: "host",
  summary: `RSS per idle process, with ${IDLE_PROCESSES} processes waiting on stdin`,
  async run(ctx) {
    const rounds = pick(ctx, 3, 1);
    const readings: Reading[] = [];
    for (let r = 0; r < rounds; r++) {
      ctx.progress(
        `memory: round ${r + 1} of ${rounds}, ${IDLE_PROCESSES} idle processes in a fresh deno`,
      );
      readings.push(await idleRoundInChild());
    }
    const perProcess = readings.map((r) => r.perProcessMiB);
    const figures: Figure[] = [{
      name: "memory.idle_process",
      label: "RSS per idle process",
      unit: "MiB",
      median: median(perProcess),
      runs: rounds,
      warmup: 0,
      method: `(RSS with ${IDLE_PROCESSES} probe.never processes waiting on stdin - ` +
        `RSS before) / ${IDLE_PROCESSES}; each round in a fresh deno process with a fresh host, ` +
        `warmed with ${WARMUP_PROCESSES} processes; ${SETTLE_MS} ms settle before each reading`,
      samples: perProcess,
      extra: { rounds: readings },
    }, {
      name: "memory.idle_host",
      label: "RSS of a host without processes",
      unit: "MiB",
      median: median(readings.map((r) => r.rssBeforeMiB)),
      runs: rounds,
      warmup: 0,
      method: "RSS of the fresh deno process with a started host, before the idle processes",
      samples: readings.map((r) => r.rssBeforeMiB),
    }];
    return figures;
  },
};

if (import.meta.main) {
  console.log(JSON.stringify(await idleRound()));
}
