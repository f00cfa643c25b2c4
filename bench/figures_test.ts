import assert from "node:assert/strict";
import { type Figure, formatNumber, formatTable, goalMet } from "./figures.ts";
import { SECTIONS, selectSections } from "./main.ts";
import { resultsFileName } from "./results.ts";
import { medianOfMedians } from "./summarize.ts";
import { shuffled } from "./host/latency.ts";

const figure = (over: Partial<Figure> = {}): Figure => ({
  name: "call.console",
  label: "call from the console",
  unit: "ms",
  median: 1.8,
  p99: 4.25,
  runs: 100,
  warmup: 10,
  ...over,
});

Deno.test("a goal is met at or below (<=) or at or above (>=) its value", () => {
  assert.equal(goalMet(figure()), undefined);
  assert.equal(goalMet(figure({ goal: { op: "<=", value: 2 } })), true);
  assert.equal(goalMet(figure({ median: 2, goal: { op: "<=", value: 2 } })), true);
  assert.equal(goalMet(figure({ median: 2.01, goal: { op: "<=", value: 2 } })), false);
  assert.equal(goalMet(figure({ median: 500, goal: { op: ">=", value: 500 } })), true);
  assert.equal(goalMet(figure({ median: 499, goal: { op: ">=", value: 500 } })), false);
});

Deno.test("numbers are shown with a precision that suits their size", () => {
  assert.equal(formatNumber(1.23456), "1.23");
  assert.equal(formatNumber(12.345), "12.3");
  assert.equal(formatNumber(523.7), "524");
  assert.equal(formatNumber(undefined), "-");
});

Deno.test("the table has a header, a line per section and a row per figure", () => {
  const lines = formatTable([{
    section: "latency",
    figures: [
      figure({ goal: { op: "<=", value: 2 } }),
      figure({ name: "x", label: "x", p99: undefined }),
    ],
  }]);
  assert.match(lines[0], /^name\s+median\s+p99\s+unit\s+goal\s+met\?$/);
  assert.equal(lines[2], "latency");
  assert.match(lines[3], /^ {2}call from the console\s+1\.80\s+4\.25\s+ms\s+<= 2\.00\s+yes$/);
  assert.match(lines[4], /^ {2}x\s+1\.80\s+-\s+ms$/);
});

Deno.test("--only picks sections by name, and names the known ones for a typo", () => {
  assert.deepEqual(selectSections(undefined), SECTIONS);
  assert.deepEqual(selectSections(["ready,latency"]).map((s) => s.name), ["latency", "ready"]);
  assert.deepEqual(selectSections(["memory", "ready"]).map((s) => s.name), ["ready", "memory"]);
  assert.throws(() => selectSections(["latnecy"]), /no section latnecy; the sections are latency/);
});

Deno.test("the results file is named by time (no colons) and groups", () => {
  const at = new Date("2026-01-02T03:04:05.678Z");
  assert.equal(resultsFileName(at, ["host", "host"]), "2026-01-02T03-04-05Z-host.json");
  assert.equal(resultsFileName(at, ["host", "fs"]), "2026-01-02T03-04-05Z-host+fs.json");
});

Deno.test("the median of medians over runs, per figure", () => {
  const run = (m: number, p99?: number) => ({
    results: [{ section: "latency", figures: [figure({ median: m, p99 })] }],
  });
  const [r] = medianOfMedians([run(2, 10), run(1, 20), run(3)]);
  assert.equal(r.section, "latency");
  assert.equal(r.figures[0].median, 2);
  assert.equal(r.figures[0].p99, 15);
  assert.equal(r.figures[0].runs, 3);
});

Deno.test("latency rounds: a shuffle per seed, the same every time, of the same items", () => {
  const kinds = ["a", "b", "c", "d", "e"];
  assert.deepEqual(shuffled(kinds, 7), shuffled(kinds, 7));
  assert.deepEqual([...shuffled(kinds, 7)].sort(), kinds);
  const orders = new Set(Array.from({ length: 50 }, (_, i) => shuffled(kinds, i).join("")));
  assert.ok(orders.size > 20, `only ${orders.size} orders in 50 rounds`);
  const firsts = new Set(Array.from({ length: 50 }, (_, i) => shuffled(kinds, i)[0]));
  assert.equal(firsts.size, 5);
});
