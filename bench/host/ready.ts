/**
 * Time from start to ready, with cached transpiles: in this process
 * (`Host.start()` of a world with a few plugins until the first call has
 * answered), and as a subprocess (`sausage call WORLD probe.echo` from the
 * spawn until its answer arrives on stdout), against a bare `deno` start
 * measured the same way.
 *
 * @module
 */
import { join } from "node:path";
import type { Figure } from "../figures.ts";
import { Host } from "../../core/host.ts";
import {
  call,
  createWorld,
  hostOptions,
  removeWorld,
  REPO_ROOT,
  TEST_CACHE_DIR,
} from "../fixture.ts";
import { pick, type Section } from "../section.ts";
import { summarize } from "../stats.ts";

/** The goal from start to the first answer, in milliseconds. */
export const READY_GOAL_MS = 300;

/** The plugins of the world: a few, and different components. */
const PLUGINS = { probe: "probe", echo: "probe", fsprobe: "fsprobe", sqlprobe: "sqlprobe" };

/** `deno` and its arguments for `sausage`, as the `sausage` task in deno.json runs it. */
export async function sausageCommand(): Promise<string[]> {
  const config = JSON.parse(await Deno.readTextFile(join(REPO_ROOT, "deno.json")));
  const task = String(config.tasks?.sausage ?? "");
  // the task caches the module graphs first (`deno cache ... &&`); the run is its last command
  const words = (task.split(" && ").at(-1) ?? "").split(/\s+/).filter((w) => w !== "");
  if (words[0] !== "deno" || words[1] !== "run" || !words.at(-1)?.endsWith(".ts")) {
    throw new Error(`the sausage task in deno.json is not "deno run ... main.ts": ${task}`);
  }
  return words.slice(1);
}

interface Spawned {
  /** From the spawn to the first byte on stdout. */
  firstOutput: number;
  /** From the spawn to the exit. */
  exit: number;
  stdout: string;
}

/** Runs `deno args...` in the repository, timing the first stdout bytes and the exit. */
async function spawnTimed(args: string[]): Promise<Spawned> {
  const start = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args,
    cwd: REPO_ROOT,
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).spawn();
  let firstOutput = NaN;
  let seen = false;
  let stdout = "";
  const decoder = new TextDecoder();
  const stderr = new Response(child.stderr).text();
  for await (const chunk of child.stdout) {
    if (!seen) firstOutput = performance.now() - start;
    seen = true;
    stdout += decoder.decode(chunk, { stream: true });
  }
  stdout += decoder.decode();
  const status = await child.status;
  const exit = performance.now() - start;
  if (!status.success) {
    throw new Error(
      `deno ${args.join(" ")} exited with ${status.code}\n${stdout}\n${await stderr}`,
    );
  }
  await stderr;
  return { firstOutput, exit, stdout };
}

export const ready: Section = {
  name: "ready",
  group: "host",
  summary: "start to the first answer with cached transpiles: in-process and as a subprocess",
  async run(ctx) {
    const warmup = 1;
    const runs = pick(ctx, 10, 3);
    const spawnRuns = pick(ctx, 8, 3);
    const root = await createWorld(PLUGINS);
    try {
      // in this process
      ctx.progress(`ready: Host.start() and a first call, ${warmup} + ${runs} times`);
      const total: number[] = [];
      const start: number[] = [];
      const first: number[] = [];
      for (let i = 0; i < warmup + runs; i++) {
        const t0 = performance.now();
        // as a user's start: the shipped agent installed, the discovery left to run
        const host = await Host.start(hostOptions(root));
        await host.servicesStarted;
        const t1 = performance.now();
        await call(host.client("console"), "probe.echo", {});
        const t2 = performance.now();
        await host.shutdown();
        if (i < warmup) continue;
        total.push(t2 - t0);
        start.push(t1 - t0);
        first.push(t2 - t1);
      }

      // as subprocesses, against a bare deno start
      const sausage = await sausageCommand();
      const callArgs = [
        ...sausage,
        "call",
        root,
        "probe.echo",
        "{}",
        "--cache-dir",
        TEST_CACHE_DIR,
      ];
      const hello = join(root, "hello.ts");
      await Deno.writeTextFile(hello, 'console.log("{}");\n');
      const bareArgs = [...sausage.slice(0, -1), hello];
      ctx.progress(
        `ready: sausage call and a bare deno, ${warmup} + ${spawnRuns} times each, alternating`,
      );
      const sub: Spawned[] = [];
      const bare: Spawned[] = [];
      for (let i = 0; i < warmup + spawnRuns; i++) {
        const s = await spawnTimed(callArgs);
        const b = await spawnTimed(bareArgs);
        for (const x of [s, b]) {
          if (JSON.stringify(JSON.parse(x.stdout)) !== "{}") {
            throw new Error(`expected {} on stdout, got ${x.stdout}`);
          }
        }
        if (i < warmup) continue;
        sub.push(s);
        bare.push(b);
      }

      const inProcess = summarize(total);
      const subFirst = summarize(sub.map((s) => s.firstOutput));
      const bareFirst = summarize(bare.map((s) => s.firstOutput));
      const goal = { op: "<=" as const, value: READY_GOAL_MS };
      const figures: Figure[] = [
        {
          name: "ready.in_process",
          label: "ready, in-process",
          unit: "ms",
          median: inProcess.median,
          p99: inProcess.p99,
          runs,
          warmup,
          goal,
          method: `Host.start() of a world with ${Object.keys(PLUGINS).length} plugins, ` +
            "its services, and one probe.echo answered; modules already loaded, wasm already " +
            "compiled once in this process",
          samples: total,
          extra: { hostStart: summarize(start), firstCall: summarize(first) },
        },
        {
          name: "ready.in_process.start",
          label: "  of which Host.start()",
          unit: "ms",
          median: summarize(start).median,
          p99: summarize(start).p99,
          runs,
          warmup,
          samples: start,
        },
        {
          name: "ready.in_process.first_call",
          label: "  of which the first call",
          unit: "ms",
          median: summarize(first).median,
          p99: summarize(first).p99,
          runs,
          warmup,
          samples: first,
        },
        {
          name: "ready.subprocess",
          label: "ready, subprocess (sausage call)",
          unit: "ms",
          median: subFirst.median,
          p99: subFirst.p99,
          runs: spawnRuns,
          warmup,
          goal,
          method: `deno ${sausage.join(" ")} call WORLD probe.echo {} --cache-dir CACHE: ` +
            "from the spawn to the answer on stdout",
          samples: sub.map((s) => s.firstOutput),
          extra: { exitMs: summarize(sub.map((s) => s.exit)) },
        },
        {
          name: "baseline.deno_start",
          label: "baseline: bare deno start",
          unit: "ms",
          median: bareFirst.median,
          p99: bareFirst.p99,
          runs: spawnRuns,
          warmup,
          method: "the same deno run flags on a file that prints {}: from the spawn to stdout",
          samples: bare.map((s) => s.firstOutput),
          extra: { exitMs: summarize(bare.map((s) => s.exit)) },
        },
        {
          name: "ratio.subprocess_deno",
          label: "ready, subprocess / bare deno",
          unit: "x",
          median: subFirst.median / bareFirst.median,
          runs: spawnRuns,
          warmup,
        },
      ];
      return figures;
    } finally {
      await removeWorld(root);
    }
  },
};
