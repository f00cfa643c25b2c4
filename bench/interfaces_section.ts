/**
 * The `interfaces` section: the compatibility check of a world of 50
 * plugins (see `interfaces_bench.ts`).
 *
 * @module
 */
import { benchInterfaces } from "./interfaces_bench.ts";
import type { Section } from "./section.ts";

/** The check of 50 plugins, cold and warm, and of one activation. */
export const interfaces: Section = {
  name: "interfaces",
  group: "interfaces",
  summary: "the compatibility check of a world of 50 plugins (cold, warm, one activation)",
  async run(ctx) {
    ctx.progress("checking a generated world of 50 plugins");
    const f = await benchInterfaces();
    const runs = f.runs ?? 0;
    const method =
      `checkWorld over ${f.plugins} plugins, ${f.imports} imports, ${f.methods} methods`;
    return [
      {
        name: "check.cold",
        label: "check of 50 plugins, new documents",
        unit: "ms",
        median: f["world.cold.ms"],
        runs,
        warmup: 5,
        method,
      },
      {
        name: "check.warm",
        label: "check of 50 plugins, known documents",
        unit: "ms",
        median: f["world.warm.ms"],
        runs,
        warmup: 5,
        method,
      },
      {
        name: "check.activation",
        label: "check of one new document",
        unit: "ms",
        median: f["activation.ms"],
        runs,
        warmup: 5,
        method,
      },
    ];
  },
};
