/**
 * What the control endpoint adds to a call: `probe.echo` from the host's own
 * console client against the same call through the Unix socket
 * (PROTOCOL section 12), alternated call by call so that both see the same
 * machine. The client runs in the host's process, so the figure counts the
 * JSON lines and the socket on both sides, on one thread.
 *
 * @module
 */
import { ControlEndpoint } from "../../core/control.ts";
import { ControlClient } from "../../core/control_client.ts";
import type { Figure } from "../figures.ts";
import { benchWorld, call, CallFailed } from "../fixture.ts";
import { pick, type Section } from "../section.ts";
import { median, summarize } from "../stats.ts";

/** The goal: the endpoint adds at most this to a call, in milliseconds. */
export const ENDPOINT_OVERHEAD_GOAL_MS = 0.3;

export const control: Section = {
  name: "control",
  group: "host",
  summary: "a call through the control endpoint against the same call in process",
  async run(ctx) {
    const rounds = pick(ctx, 300, 60);
    const warmup = pick(ctx, 30, 10);
    // each call links its instance at its spawn: an instance linked ahead would be ready for
    // one call of a pair and not the other, depending on their order
    await using w = await benchWorld({ probe: "probe" }, { prepareAhead: false });
    const endpoint = await ControlEndpoint.listen(w.host);
    if (!endpoint) throw new Error("the control endpoint did not listen");
    const remote = await ControlClient.connect(w.root);
    if (!remote) throw new Error("cannot connect to the control endpoint");
    try {
      const local = w.host.client("console");
      const direct: number[] = [];
      const through: number[] = [];
      ctx.progress(`control: ${rounds} calls each way after ${warmup} of warm-up`);
      for (let i = 0; i < warmup + rounds; i++) {
        let t = performance.now();
        await call(local, "probe.echo", {});
        const a = performance.now() - t;
        t = performance.now();
        const response = await remote.request("probe.echo", {});
        const b = performance.now() - t;
        if (response.error) throw new CallFailed(`probe.echo: ${response.error.message}`);
        if (i >= warmup) {
          direct.push(a);
          through.push(b);
        }
      }
      const differences = through.map((b, i) => b - direct[i]);
      const figures: Figure[] = [
        {
          name: "control.in_process",
          label: "probe.echo from the host's console client",
          unit: "ms",
          median: median(direct),
          p99: summarize(direct).p99,
          runs: direct.length,
          warmup,
          samples: direct,
        },
        {
          name: "control.endpoint",
          label: "probe.echo through the control endpoint",
          unit: "ms",
          median: median(through),
          p99: summarize(through).p99,
          runs: through.length,
          warmup,
          samples: through,
        },
        {
          name: "control.overhead",
          label: "  added by the endpoint (median of pair differences)",
          unit: "ms",
          median: median(differences),
          runs: differences.length,
          warmup,
          goal: { op: "<=", value: ENDPOINT_OVERHEAD_GOAL_MS },
          method: "the two calls alternate; each pair's difference, then their median",
          samples: differences,
        },
      ];
      return figures;
    } finally {
      await remote.close();
      await endpoint.close();
    }
  },
};
