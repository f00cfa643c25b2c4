/**
 * Order statistics for benchmark samples: the median, percentiles by nearest
 * rank, and rates over fixed windows. Benchmarks report medians, never means:
 * one stall of a shared machine moves a mean, not a median.
 *
 * @example
 * ```ts
 * import { summarize } from "./stats.ts";
 * const s = summarize([2.1, 1.9, 2.0, 9.5]);
 * // s.median === 2.05, s.p99 === 9.5
 * ```
 *
 * @module
 */

/** A summary of a list of samples. */
export interface Summary {
  /** Number of samples. */
  n: number;
  median: number;
  /** 99th percentile, nearest rank (the largest sample when there are fewer than 100). */
  p99: number;
  min: number;
  max: number;
}

function _sorted(samples: readonly number[], what: string): number[] {
  if (samples.length === 0) throw new RangeError(`${what} of no samples`);
  for (const x of samples) {
    if (!Number.isFinite(x)) {
      throw new RangeError(`${what}: the sample ${x} is not a finite number`);
    }
  }
  return [...samples].sort((a, b) => a - b);
}

/**
 * The median: the middle sample, or the mean of the two middle ones.
 *
 * @example
 * ```ts
 * median([3, 1, 2]); // 2
 * median([4, 1, 3, 2]); // 2.5
 * ```
 */
export function median(samples: readonly number[]): number {
  const s = _sorted(samples, "median");
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/**
 * The `p`th percentile by nearest rank: the smallest sample such that at
 * least `p` percent of the samples are at or below it. Always a sample.
 *
 * @example
 * ```ts
 * percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 90); // 9
 * ```
 */
export function percentile(samples: readonly number[], p: number): number {
  if (!(p > 0 && p <= 100)) throw new RangeError(`percentile ${p} is not in (0, 100]`);
  const s = _sorted(samples, "percentile");
  const rank = Math.ceil((p / 100) * s.length);
  return s[Math.min(s.length, Math.max(1, rank)) - 1];
}

/** Median, p99, min and max of samples. */
export function summarize(samples: readonly number[]): Summary {
  const s = _sorted(samples, "summary");
  return {
    n: s.length,
    median: median(s),
    p99: percentile(s, 99),
    min: s[0],
    max: s[s.length - 1],
  };
}

/**
 * Events per second in consecutive windows of `windowMs` from `start` to
 * `end` (a last partial window is dropped). `times` are event times in the
 * same clock, e.g. `performance.now()`.
 *
 * @example
 * ```ts
 * ratesPerSecond([10, 20, 600, 700, 800], 0, 1000, 500); // [4, 6]
 * ```
 */
export function ratesPerSecond(
  times: readonly number[],
  start: number,
  end: number,
  windowMs: number,
): number[] {
  if (!(windowMs > 0)) throw new RangeError(`window ${windowMs} ms is not positive`);
  const count = Math.floor((end - start) / windowMs);
  const counts = new Array<number>(Math.max(0, count)).fill(0);
  for (const t of times) {
    const i = Math.floor((t - start) / windowMs);
    if (i >= 0 && i < count) counts[i]++;
  }
  return counts.map((c) => (c * 1000) / windowMs);
}
