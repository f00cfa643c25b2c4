import assert from "node:assert/strict";
import fc from "fast-check";
import { median, percentile, ratesPerSecond, summarize } from "./stats.ts";

Deno.test("median of odd and even counts, in any order", () => {
  assert.equal(median([5]), 5);
  assert.equal(median([3, 1, 2]), 2);
  assert.equal(median([4, 1, 3, 2]), 2.5);
  assert.equal(median([-1, 10, 10, 10]), 10);
});

Deno.test("median does not reorder its input", () => {
  const xs = [3, 1, 2];
  median(xs);
  assert.deepEqual(xs, [3, 1, 2]);
});

Deno.test("percentile is a nearest-rank sample", () => {
  const xs = Array.from({ length: 100 }, (_, i) => i + 1);
  assert.equal(percentile(xs, 99), 99);
  assert.equal(percentile(xs, 50), 50);
  assert.equal(percentile(xs, 100), 100);
  assert.equal(percentile(xs, 0.5), 1);
  assert.equal(percentile([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 90), 9);
  // fewer than 100 samples: p99 is the largest
  assert.equal(percentile([7, 1, 3], 99), 7);
});

Deno.test("no samples, a bad percentile or a non-finite sample is an error", () => {
  assert.throws(() => median([]), RangeError);
  assert.throws(() => percentile([1], 0), RangeError);
  assert.throws(() => percentile([1], 101), RangeError);
  assert.throws(() => median([1, NaN]), /not a finite number/);
  assert.throws(() => summarize([Infinity]), RangeError);
});

Deno.test("summarize", () => {
  assert.deepEqual(summarize([2.1, 1.9, 2.0, 9.5]), {
    n: 4,
    median: 2.05,
    p99: 9.5,
    min: 1.9,
    max: 9.5,
  });
});

Deno.test("properties: min <= median <= p99 <= max, and the percentile is a sample", () => {
  fc.assert(
    fc.property(
      fc.array(fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e9, max: 1e9 }), {
        minLength: 1,
      }),
      fc.double({ min: 0.01, max: 100, noNaN: true }),
      (xs, p) => {
        const s = summarize(xs);
        assert.ok(s.min <= s.median && s.median <= s.p99 && s.p99 <= s.max);
        assert.ok(xs.includes(percentile(xs, p)));
        const below = xs.filter((x) => x <= percentile(xs, p)).length;
        assert.ok(below / xs.length >= p / 100 - 1e-9);
      },
    ),
  );
});

Deno.test("rates per second in windows; a last partial window is dropped", () => {
  assert.deepEqual(ratesPerSecond([10, 20, 600, 700, 800], 0, 1000, 500), [4, 6]);
  assert.deepEqual(ratesPerSecond([10, 20, 1100], 0, 1200, 500), [4, 0]);
  assert.deepEqual(ratesPerSecond([-5, 5], 0, 100, 100), [10]);
  assert.deepEqual(ratesPerSecond([1], 0, 50, 100), []);
  assert.throws(() => ratesPerSecond([], 0, 1, 0), RangeError);
});
