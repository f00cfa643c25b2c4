/**
 * Combines several results files: for each figure, the median of the
 * medians of the runs. One run of a shared machine can be unlucky; the
 * median over a few runs is the figure to quote.
 *
 * ```text
 * deno run --allow-read bench/summarize.ts bench/results/2026-*-host.json
 * ```
 *
 * @module
 */
import { type Figure, formatTable, type SectionResult } from "./figures.ts";
import { median } from "./stats.ts";

/** The part of a results file this needs. */
export interface ResultsFile {
  date?: string;
  results: SectionResult[];
}

/**
 * One result per section and figure: the median of the medians (and of the
 * p99s) of all files that have it. `runs` becomes the number of files.
 */
export function medianOfMedians(files: ResultsFile[]): SectionResult[] {
  const sections = new Map<string, Map<string, Figure[]>>();
  for (const file of files) {
    for (const r of file.results) {
      const figures = sections.get(r.section) ?? new Map<string, Figure[]>();
      sections.set(r.section, figures);
      for (const f of r.figures) figures.set(f.name, [...(figures.get(f.name) ?? []), f]);
    }
  }
  return [...sections].map(([section, figures]) => ({
    section,
    figures: [...figures.values()].map((runs) => {
      const p99s = runs.map((f) => f.p99).filter((p): p is number => p !== undefined);
      return {
        name: runs[0].name,
        label: runs[0].label,
        unit: runs[0].unit,
        median: median(runs.map((f) => f.median)),
        p99: p99s.length > 0 ? median(p99s) : undefined,
        runs: runs.length,
        warmup: 0,
        goal: runs[0].goal,
        samples: runs.map((f) => f.median),
      };
    }),
  }));
}

if (import.meta.main) {
  if (Deno.args.length === 0 || Deno.args.includes("--help") || Deno.args.includes("-h")) {
    console.log("Usage: deno run --allow-read bench/summarize.ts RESULTS.json...");
    console.log("Prints, for each figure, the median of its medians (and p99s) over the files.");
    Deno.exit(Deno.args.length === 0 ? 2 : 0);
  }
  const files: ResultsFile[] = [];
  for (const path of Deno.args) files.push(JSON.parse(await Deno.readTextFile(path)));
  console.log(`Median of medians over ${files.length} runs:\n`);
  for (const line of formatTable(medianOfMedians(files))) console.log(line);
  const all = medianOfMedians(files).flatMap((r) => r.figures);
  const spread = all.filter((f) => f.samples && f.samples.length > 1).map((f) =>
    `  ${f.label.trim()}: ${f.samples!.map((x) => x.toPrecision(3)).join(", ")}`
  );
  if (spread.length > 0) console.log(`\nMedians of each run:\n${spread.join("\n")}`);
}
