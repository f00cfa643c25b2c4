/**
 * A benchmark section: one function that measures and returns figures.
 * `bench/main.ts` keeps the registry; add a section there to add figures.
 *
 * @example
 * ```ts
 * import type { Section } from "./section.ts";
 * export const nothing: Section = {
 *   name: "nothing",
 *   group: "host",
 *   summary: "measures nothing",
 *   async run(ctx) {
 *     ctx.progress("doing nothing");
 *     return [];
 *   },
 * };
 * ```
 *
 * @module
 */
import type { Figure } from "./figures.ts";

/** What a section gets from the runner. */
export interface BenchContext {
  /** A shorter run: fewer samples, shorter durations. */
  quick: boolean;
  /** Tells the person running the benchmark what happens now (stderr). */
  progress(text: string): void;
}

/** One benchmark section. */
export interface Section {
  /** The name for `--only`. */
  name: string;
  /** What it belongs to; the results file is named after the groups that ran. */
  group: string;
  /** One line for `--list`. */
  summary: string;
  run(ctx: BenchContext): Promise<Figure[]>;
}

/** Picks the full or the quick value of a setting. */
export function pick<T>(ctx: BenchContext, full: T, quick: T): T {
  return ctx.quick ? quick : full;
}
