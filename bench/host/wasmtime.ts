/**
 * Sausage beside Wasmtime: the same components, a fresh instance per call.
 * Sausage's figure is a call from another process in the world, timed by
 * that process (as in the `latency` section); the baseline's is Wasmtime in
 * process (`bench/wasmtime/`: `InstancePre`, the pooling allocator, a fresh
 * store per call with stdin and stdout in memory, `wasi:cli/run`). Both are
 * measured in the same run, in blocks that alternate, and compared as
 * ratios of medians.
 *
 * Components: `probe` (raw JSON-RPC, no SDK), `sdk-probe` (the SDK's test
 * plugin) and `pinger` (raw, `bench/wasmtime/pinger/`), which also covers a
 * plugin that calls itself, from one process, call after call. A call of
 * `probe` from the console (the host's own client) is compared too.
 *
 * Then the profile of a call from a process, stage by stage
 * (`bench/host/profile.ts`), on a second host with profiling on.
 *
 * @module
 */
import { summarize } from "../stats.ts";
import type { Figure } from "../figures.ts";
import { benchWorld, call, CallFailed } from "../fixture.ts";
import { pick, type Section } from "../section.ts";
import { plugin as sdkPlugin } from "../../sdk/build.ts";
import {
  type BaselineCalls,
  type BaselineComponent,
  buildBaseline,
  buildPinger,
  WasmtimeBaseline,
} from "../wasmtime/baseline.ts";
import { shuffled } from "./latency.ts";
import { profileCalls } from "./profile.ts";
import { testPlugin } from "../../tests/setup.ts";
import type { Client } from "../../core/client.ts";

/** The goal of issue 15: a call from another process within 10 times of Wasmtime in process. */
export const RATIO_GOAL = 10;
/** The goal of issue 15 for a call from the console (the host's own client). */
export const CONSOLE_RATIO_GOAL = 8;

/** Calls of the loop on the fresh host (`sausage.cold`). */
const COLD_CALLS = 200;

const ENV: [string, string][] = [
  ["SAUSAGE_PID", "bench-1"],
  ["SAUSAGE_PARENT", "console"],
];

function request(method: string, params: Record<string, unknown>): string {
  return JSON.stringify({ jsonrpc: "2.0", id: "bench-1", method, params });
}

/** The Sausage side of each kind: a call from a fresh process of `probe` or `pinger`. */
interface Kind {
  /** Figure key. */
  key: string;
  label: string;
  /** The baseline's component for the ratio, if any. */
  baseline?: string;
  method: string;
  /** Samples (ms) from one call of the section's console. */
  measure(client: Client): Promise<number[]>;
}

/** `probe.call`: one call from a fresh process, timed by it (µs → ms). */
function viaProbe(method: string, params: Record<string, unknown>) {
  return async (client: Client) => {
    const result = await call(client, "probe.call", { method, params }) as {
      response?: { result?: unknown; error?: unknown };
      micros: number;
    };
    if (!result.response || result.response.error !== undefined) {
      throw new CallFailed(`the inner call ${method} failed: ${JSON.stringify(result)}`);
    }
    return [result.micros / 1000];
  };
}

/** A call from the console, the host's own client, timed around its promise (ms). */
function fromConsole(method: string, params: Record<string, unknown>) {
  return async (client: Client) => {
    const start = performance.now();
    await call(client, method, params);
    return [performance.now() - start];
  };
}

/** `pinger.loop`: `n` calls one after the other from one process, each timed by it. */
function viaPinger(method: string, n: number) {
  return async (client: Client) => {
    const result = await call(client, "pinger.loop", { method, n }) as { micros: number[] };
    if (!Array.isArray(result.micros) || result.micros.length !== n) {
      throw new CallFailed(`pinger.loop returned ${JSON.stringify(result)}`);
    }
    return result.micros.map((us) => us / 1000);
  };
}

export const wasmtime: Section = {
  name: "wasmtime",
  group: "host",
  summary: "a call from a process beside Wasmtime in process (InstancePre, pooling), as ratios",
  async run(ctx) {
    const warmup = pick(ctx, 60, 15);
    const rounds = pick(ctx, 300, 60);
    const blocks = pick(ctx, 6, 3);
    const baselineCalls = pick(ctx, 300, 100);
    const loopN = 10;

    const baselineBuild = await buildBaseline(ctx.progress);
    if ("skipped" in baselineBuild) ctx.progress(`wasmtime: ${baselineBuild.skipped}`);
    const pingerBuild = await buildPinger();
    if ("skipped" in pingerBuild) ctx.progress(`wasmtime: ${pingerBuild.skipped}`);
    const probeWasm = await testPlugin("probe");
    const sdkWasm = await sdkPlugin("probe");

    await using w = await benchWorld({ probe: "probe" }, {}, {
      sdkprobe: sdkWasm,
      ...("path" in pingerBuild ? { pinger: pingerBuild.path } : {}),
    });
    const client = w.host.client("console");

    const kinds: Kind[] = [
      {
        key: "raw",
        label: "probe (no SDK)",
        baseline: "probe",
        method: "probe.call {method: probe.echo} from a fresh process of probe",
        measure: viaProbe("probe.echo", {}),
      },
      {
        key: "sdk",
        label: "sdk-probe (SDK)",
        baseline: "sdkprobe",
        method: "probe.call {method: sdkprobe.echo {text}} from a fresh process of probe",
        measure: viaProbe("sdkprobe.echo", { text: "bench" }),
      },
      {
        key: "console",
        label: "probe (no SDK)",
        baseline: "probe",
        method: "probe.echo from the section's console client, in the host's process, timed " +
          "around the call's promise with performance.now()",
        measure: fromConsole("probe.echo", {}),
      },
    ];
    if ("path" in pingerBuild) {
      kinds.push(
        {
          key: "self",
          label: "pinger calls itself, fresh caller",
          baseline: "pinger",
          method: "pinger.loop {method: pinger.ping, n: 1}: a fresh process of pinger calls " +
            "pinger.ping once",
          measure: viaPinger("pinger.ping", 1),
        },
        {
          key: "loop",
          label: "pinger calls itself, one caller",
          baseline: "pinger",
          method: `pinger.loop {method: pinger.ping, n: ${loopN}}: one process of pinger calls ` +
            `pinger.ping ${loopN} times, one after the other`,
          measure: viaPinger("pinger.ping", loopN),
        },
        {
          key: "serve",
          label: "pinger, callees that stay",
          baseline: "pinger",
          method: `pinger.loop {method: pinger.serve, n: ${loopN}}: as loop, but each callee ` +
            "answers, then reads stdin until EOF (a plugin written as one loop over stdin), so " +
            "it lives until its caller ends",
          measure: viaPinger("pinger.serve", loopN),
        },
      );
    }

    await using baseline = "path" in baselineBuild
      ? WasmtimeBaseline.start(baselineBuild.path)
      : undefined;
    const components: BaselineComponent[] = [
      {
        name: "probe",
        path: probeWasm,
        request: request("echo", {}),
        expect: '"result":{}',
        env: [...ENV, ["SAUSAGE_PLUGIN", "probe"]],
      },
      {
        name: "sdkprobe",
        path: sdkWasm,
        request: request("echo", { text: "bench" }),
        expect: '"result":"bench"',
        env: [...ENV, ["SAUSAGE_PLUGIN", "sdkprobe"]],
      },
    ];
    if ("path" in pingerBuild) {
      components.push({
        name: "pinger",
        path: pingerBuild.path,
        request: request("ping", {}),
        expect: '"result":{}',
        env: [...ENV, ["SAUSAGE_PLUGIN", "pinger"]],
      });
    }
    const compileMs: Record<string, number> = {};
    if (baseline) {
      ctx.progress(`wasmtime: compiling ${components.length} components for the baseline`);
      for (const c of components) compileMs[c.name] = await baseline.load(c);
    }

    const samples = new Map<string, number[]>(kinds.map((k) => [k.key, []]));
    const round = async (i: number, keep: boolean) => {
      for (const kind of shuffled(kinds, i)) {
        const ms = await kind.measure(client);
        if (keep) samples.get(kind.key)!.push(...ms);
      }
    };
    // first, on the fresh host: what a plugin that times its own calls right after a start sees
    let cold: number[] | undefined;
    if ("path" in pingerBuild) {
      ctx.progress(`wasmtime: ${COLD_CALLS} calls from one process of pinger on the fresh host`);
      cold = await viaPinger("pinger.ping", COLD_CALLS)(client);
    }
    ctx.progress(
      `wasmtime: ${warmup} warm-up rounds, then ${rounds} rounds of ${kinds.length} calls` +
        (baseline
          ? `, with ${blocks} blocks of ${baselineCalls} Wasmtime calls per component`
          : ""),
    );
    for (let i = 0; i < warmup; i++) await round(i, false);
    const wt = new Map<string, BaselineCalls>(
      components.map((c) => [c.name, { total: [], instantiate: [], run: [], drop: [] }]),
    );
    if (baseline) {
      for (const c of components) await baseline.run(c.name, baselineCalls); // warm-up
    }
    const perBlock = Math.ceil(rounds / blocks);
    for (let b = 0; b < blocks; b++) {
      for (let i = b * perBlock; i < Math.min(rounds, (b + 1) * perBlock); i++) {
        await round(i, true);
      }
      if (!baseline) continue;
      for (const c of components) {
        const got = await baseline.run(c.name, baselineCalls);
        const into = wt.get(c.name)!;
        for (const stage of ["total", "instantiate", "run", "drop"] as const) {
          into[stage].push(...got[stage]);
        }
      }
    }

    const base = { runs: rounds, warmup };
    const figures: Figure[] = [];
    const baselineMs = new Map<string, number>();
    for (const c of components) {
      const calls = wt.get(c.name)!;
      if (calls.total.length === 0) continue;
      const total = summarize(calls.total);
      baselineMs.set(c.name, total.median / 1000);
      figures.push({
        name: `wasmtime.${c.name}`,
        label: `Wasmtime in process: ${c.name}`,
        unit: "µs",
        median: total.median,
        p99: total.p99,
        runs: calls.total.length,
        warmup: baselineCalls + 1,
        method: "bench/wasmtime: Component compiled once, InstancePre, pooling allocator; per " +
          "call a fresh Store and WasiCtx with the request in a MemoryInputPipe, stdout in a " +
          "MemoryOutputPipe, wasi:cli/run, then the store dropped; stdout checked per call",
        extra: {
          compileMs: compileMs[c.name],
          instantiate: summarize(calls.instantiate).median,
          run: summarize(calls.run).median,
          drop: summarize(calls.drop).median,
        },
        samples: calls.total,
      });
      for (const stage of ["instantiate", "run", "drop"] as const) {
        figures.push({
          name: `wasmtime.${c.name}.${stage}`,
          label: `  ${stage}`,
          unit: "µs",
          median: summarize(calls[stage]).median,
          p99: summarize(calls[stage]).p99,
          runs: calls[stage].length,
          warmup: baselineCalls + 1,
        });
      }
    }
    if (cold) {
      const s = summarize(cold);
      const tenth = Math.floor(cold.length / 10);
      figures.push({
        name: "sausage.cold",
        label: `Sausage, pinger calls itself ${COLD_CALLS} times on a fresh host`,
        unit: "ms",
        median: s.median,
        p99: s.p99,
        method: `pinger.loop {method: pinger.ping, n: ${COLD_CALLS}} as the first call of the ` +
          "section's host, before any warm-up: the workers' JIT is cold, as in a host that " +
          "`sausage call` starts for one call",
        extra: {
          firstTenth: summarize(cold.slice(0, tenth)).median,
          lastTenth: summarize(cold.slice(-tenth)).median,
        },
        samples: cold,
        runs: cold.length,
        warmup: 0,
      });
      const of = baselineMs.get("pinger");
      if (of !== undefined) {
        figures.push({
          name: "ratio.cold",
          label: "  Sausage / Wasmtime (pinger)",
          unit: "x",
          median: s.median / of,
          runs: cold.length,
          warmup: 0,
        });
      }
    }
    for (const kind of kinds) {
      const s = summarize(samples.get(kind.key)!);
      figures.push({
        name: `sausage.${kind.key}`,
        label: kind.key === "console"
          ? `Sausage, a call from the console: ${kind.label}`
          : `Sausage, a call from a process: ${kind.label}`,
        unit: "ms",
        median: s.median,
        p99: s.p99,
        method: kind.key === "console" ? kind.method : kind.method +
          "; the calling process times its request until the response with std::time::Instant",
        samples: samples.get(kind.key),
        ...base,
        runs: samples.get(kind.key)!.length,
      });
      const of = kind.baseline ? baselineMs.get(kind.baseline) : undefined;
      if (of !== undefined) {
        figures.push({
          name: `ratio.${kind.key}`,
          label: `  Sausage / Wasmtime (${kind.baseline})`,
          unit: "x",
          median: s.median / of,
          ...goalOf(kind.key),
          ...base,
        });
      }
    }
    // last, on a host of its own: profiling slows what it measures
    figures.push(
      ...await profileCalls(
        ctx.progress,
        pick(ctx, 200, 50),
        pick(ctx, 40, 15),
        "path" in pingerBuild ? pingerBuild.path : undefined,
      ),
    );
    return figures;
  },
};

/** The goal of a ratio, for the kinds that issue 15 names. */
function goalOf(key: string): Pick<Figure, "goal"> {
  if (key === "raw" || key === "sdk") return { goal: { op: "<=", value: RATIO_GOAL } };
  if (key === "console") return { goal: { op: "<=", value: CONSOLE_RATIO_GOAL } };
  return {};
}
