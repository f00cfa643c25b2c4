/**
 * Chains of calls: `probe.tree {fan: 1, depth: d}` from the console, a
 * process that calls a process that calls ... d levels deep. The cost of a
 * hop is `(t(d) - t(0)) / d`, t(0) being one process that calls nobody, so
 * the call from the console itself is not in it. The world allows chains
 * of 64 (`call_depth: 100`; the default is 32). Goal: a hop at depth 64
 * costs at most 1.15 times one at depth 4.
 *
 * @module
 */
import { join } from "node:path";
import type { Figure } from "../figures.ts";
import { call, CallFailed, createWorld, removeWorld, startHost } from "../fixture.ts";
import { pick, type Section } from "../section.ts";
import { summarize } from "../stats.ts";
import { shuffled } from "./latency.ts";

const DEPTHS = [0, 1, 4, 16, 32, 64];

/** The chains section. */
export const chain: Section = {
  name: "chain",
  group: "host",
  summary: "a chain of calls d levels deep (probe.tree, fan 1): the cost of a hop at depth 1 to 64",
  async run(ctx) {
    const root = await createWorld({ probe: "probe" });
    await Deno.writeTextFile(join(root, "config", "limits.yaml"), "call_depth: 100\n");
    const host = await startHost(root);
    const rounds = pick(ctx, 40, 8);
    const warmup = 2;
    const samples = new Map<number, number[]>(DEPTHS.map((d) => [d, []]));
    try {
      const client = host.client("console");
      ctx.progress(`chains: ${warmup} + ${rounds} rounds of depths ${DEPTHS.join(", ")}`);
      for (let i = 0; i < warmup + rounds; i++) {
        for (const depth of shuffled(DEPTHS, i)) {
          const t0 = performance.now();
          const r = await call(client, "probe.tree", { fan: 1, depth }) as {
            leaves: number;
            failed: number;
          };
          const ms = performance.now() - t0;
          if (r.leaves !== 1 || r.failed !== 0) {
            throw new CallFailed(`probe.tree at depth ${depth} answered ${JSON.stringify(r)}`);
          }
          if (i >= warmup) samples.get(depth)!.push(ms);
        }
      }
    } finally {
      await host.shutdown();
      await removeWorld(root);
    }
    const base = summarize(samples.get(0)!).median;
    const hop = (d: number) => (summarize(samples.get(d)!).median - base) / d * 1000;
    const figures: Figure[] = [{
      name: "chain.d0",
      label: "one process that calls nobody (the baseline)",
      unit: "ms",
      median: base,
      runs: rounds,
      warmup,
      samples: samples.get(0),
    }];
    for (const d of DEPTHS.slice(1)) {
      figures.push({
        name: `chain.hop.d${d}`,
        label: `  a hop of a chain ${d} deep: (t(${d}) - t(0)) / ${d}`,
        unit: "µs",
        median: hop(d),
        runs: rounds,
        warmup,
      });
    }
    figures.push({
      name: "chain.ratio",
      label: "  a hop at depth 64 / at depth 4",
      unit: "x",
      median: hop(64) / hop(4),
      runs: rounds,
      warmup,
      goal: { op: "<=", value: 1.15 },
    });
    return figures;
  },
};
