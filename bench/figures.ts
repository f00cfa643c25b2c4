/**
 * What a benchmark section returns, and how figures become a table and a
 * results file.
 *
 * @example
 * ```ts
 * import { type Figure, formatTable, goalMet } from "./figures.ts";
 * const f: Figure = {
 *   name: "call.console",
 *   label: "call from the console",
 *   unit: "ms",
 *   median: 1.8,
 *   p99: 4.2,
 *   runs: 500,
 *   warmup: 50,
 *   goal: { op: "<=", value: 2 },
 * };
 * goalMet(f); // true
 * console.log(formatTable([{ section: "latency", figures: [f] }]).join("\n"));
 * ```
 *
 * @module
 */

/** A target a figure should reach. */
export interface Goal {
  /** `<=`: at most `value` (times, memory); `>=`: at least `value` (rates). */
  op: "<=" | ">=";
  value: number;
}

/** One measured figure. */
export interface Figure {
  /** Stable key within its section, e.g. `call.console`. */
  name: string;
  /** What the table shows. */
  label: string;
  /** `ms`, `calls/s`, `MB`, `x` (a ratio). */
  unit: string;
  median: number;
  /** 99th percentile, when the figure has a distribution. */
  p99?: number;
  /** Measured samples (or windows, or rounds) behind the median. */
  runs: number;
  /** Runs made before measuring, not counted. */
  warmup: number;
  goal?: Goal;
  /** How it was measured, for the results file and the README. */
  method?: string;
  /** The raw samples, for the results file. */
  samples?: number[];
  /** Further numbers for the results file. */
  extra?: Record<string, unknown>;
}

/** The figures of one section. */
export interface SectionResult {
  section: string;
  figures: Figure[];
  /** Seconds the section took. */
  seconds?: number;
  /** Share (0 to 1) of the machine's CPU time that other programs used meanwhile. */
  othersCpu?: number;
}

/** Whether a figure meets its goal; undefined without a goal. */
export function goalMet(f: Figure): boolean | undefined {
  if (!f.goal) return undefined;
  return f.goal.op === "<=" ? f.median <= f.goal.value : f.median >= f.goal.value;
}

/**
 * A number in a width that suits its size: 1.234, 12.3, 1234.
 *
 * @example
 * ```ts
 * formatNumber(1.23456); // "1.23"
 * formatNumber(523.7); // "524"
 * ```
 */
export function formatNumber(x: number | undefined): string {
  if (x === undefined) return "-";
  if (!Number.isFinite(x)) return String(x);
  const a = Math.abs(x);
  if (a >= 100) return Math.round(x).toString();
  if (a >= 10) return x.toFixed(1);
  return x.toFixed(2);
}

function _goalText(g: Goal | undefined): string {
  if (!g) return "";
  return `${g.op === "<=" ? "<=" : ">="} ${formatNumber(g.value)}`;
}

function _metText(f: Figure): string {
  const met = goalMet(f);
  return met === undefined ? "" : met ? "yes" : "NO";
}

/** The table of all figures: name, median, p99, unit, goal, met?. One string per line. */
export function formatTable(results: SectionResult[]): string[] {
  const header = ["name", "median", "p99", "unit", "goal", "met?"];
  const rows: string[][] = [];
  const sectionRows = new Set<number>();
  for (const r of results) {
    sectionRows.add(rows.length);
    const others = r.othersCpu === undefined
      ? ""
      : `  (other programs used ${Math.round(r.othersCpu * 100)} % of the CPU meanwhile)`;
    rows.push([`${r.section}${others}`, "", "", "", "", ""]);
    for (const f of r.figures) {
      rows.push([
        `  ${f.label}`,
        formatNumber(f.median),
        formatNumber(f.p99),
        f.unit,
        _goalText(f.goal),
        _metText(f),
      ]);
    }
  }
  const figureRows = rows.filter((_, i) => !sectionRows.has(i));
  const widths = header.map((h, i) => Math.max(h.length, ...figureRows.map((r) => r[i].length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 1 || i === 2 ? c.padStart(widths[i]) : c.padEnd(widths[i])))
      .join("  ").trimEnd();
  const out = [line(header), widths.map((w) => "-".repeat(w)).join("  ")];
  rows.forEach((r, i) => out.push(sectionRows.has(i) ? r[0] : line(r)));
  return out;
}

/** The machine a run was made on. */
export interface Machine {
  cores: number;
  deno: string;
  v8: string;
  typescript: string;
  os: string;
  arch: string;
  osRelease: string;
  memoryMB?: number;
  /** Load averages (1, 5, 15 minutes) at the start: a busy shared machine shows here. */
  loadavg?: number[];
}

/** Describes this machine. */
export function describeMachine(): Machine {
  const machine: Machine = {
    cores: navigator.hardwareConcurrency,
    deno: Deno.version.deno,
    v8: Deno.version.v8,
    typescript: Deno.version.typescript,
    os: Deno.build.os,
    arch: Deno.build.arch,
    osRelease: Deno.osRelease(),
  };
  try {
    machine.memoryMB = Math.round(Deno.systemMemoryInfo().total / 1024 / 1024);
    machine.loadavg = Deno.loadavg();
  } catch {
    // not available on every system
  }
  return machine;
}
