/**
 * `deno task bench`: measures the host and prints a table of figures, then
 * writes them all to `bench/results/<time>-<groups>.json`. See
 * `bench/README.md` for what each figure means.
 *
 * ```text
 * deno task bench                      everything (about 85 s)
 * deno task bench --quick              fewer samples, shorter durations
 * deno task bench --only latency,ready some sections
 * deno task bench --list               the sections
 * ```
 *
 * @module
 */
import { join } from "node:path";
import { parseArgs } from "node:util";
import {
  describeMachine,
  type Figure,
  formatNumber,
  formatTable,
  goalMet,
  type SectionResult,
} from "./figures.ts";
import { othersShare, sampleCpu } from "./cpu.ts";
import { REPO_ROOT } from "./fixture.ts";
import { gitState, resultsFileName, writeResults } from "./results.ts";
import { activation } from "./host/activation.ts";
import { latency } from "./host/latency.ts";
import { locks } from "./host/locks.ts";
import { memory } from "./host/memory.ts";
import { preemption } from "./host/preemption.ts";
import { ready } from "./host/ready.ts";
import { throughput } from "./host/throughput.ts";
import { vfs } from "./host/vfs.ts";
import { interfaces } from "./interfaces_section.ts";
import { builds } from "./host/builds.ts";
import { agent } from "./host/agent.ts";
import { control } from "./host/control.ts";
import { mcp } from "./host/mcp.ts";
import { web } from "./host/web.ts";
import { wasmtime } from "./host/wasmtime.ts";
import { durability } from "./host/durability.ts";
import { journal } from "./host/journal.ts";
import { chain } from "./host/chain.ts";
import { transpileMemory } from "./host/transpile_memory.ts";
import type { Section } from "./section.ts";

/** Every section, in the order they run. Add new sections here. */
export const SECTIONS: Section[] = [
  latency,
  wasmtime,
  throughput,
  control,
  mcp,
  web,
  ready,
  memory,
  transpileMemory,
  vfs,
  locks,
  chain,
  preemption,
  activation,
  interfaces,
  builds,
  agent,
  durability,
  journal,
];

const RESULTS_DIR = join(REPO_ROOT, "bench", "results");

const USAGE = `Usage: deno task bench [options]

Measures the Sausage host: call latency, calls per second, time to ready,
memory per idle process, files from a plugin (against jco's preview2-shim),
locks, preemption, activation, builds and the journal, with baselines from the same run. Prints a
table and writes every figure to bench/results/<time>-<groups>.json.

Options:
  --quick          fewer samples and shorter durations (about 30 s)
  --only <names>   run only these sections (comma-separated, repeatable)
  --list           list the sections and exit
  --out <dir>      where the results file goes (default: bench/results)
  --no-save        print the table only
  -h, --help       this text

Sections: ${SECTIONS.map((s) => s.name).join(", ")}`;

/** Selects sections by name; throws with the known names for an unknown one. */
export function selectSections(only: string[] | undefined, all: Section[] = SECTIONS): Section[] {
  if (!only || only.length === 0) return all;
  const names = only.flatMap((o) => o.split(",")).map((n) => n.trim()).filter((n) => n);
  const unknown = names.filter((n) => !all.some((s) => s.name === n));
  if (unknown.length > 0) {
    throw new Error(
      `no section ${unknown.join(", ")}; the sections are ${all.map((s) => s.name).join(", ")}`,
    );
  }
  return all.filter((s) => names.includes(s.name));
}

function goalLines(results: SectionResult[]): string[] {
  const withGoals: Figure[] = results.flatMap((r) => r.figures).filter((f) => f.goal);
  return withGoals.map((f) => {
    const met = goalMet(f) ? "met    " : "NOT MET";
    const g = f.goal!;
    return `  ${met}  ${f.label.trim()}: ${formatNumber(f.median)} ${f.unit} ` +
      `(goal ${g.op} ${formatNumber(g.value)} ${f.unit})`;
  });
}

/** Runs the benchmark with command-line `args`; returns the exit code. */
export async function main(args: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args,
      options: {
        quick: { type: "boolean", default: false },
        only: { type: "string", multiple: true },
        list: { type: "boolean", default: false },
        out: { type: "string" },
        "no-save": { type: "boolean", default: false },
        help: { type: "boolean", short: "h", default: false },
      },
      allowPositionals: false,
    });
  } catch (e) {
    console.error(`bench: ${(e as Error).message}\n\n${USAGE}`);
    return 2;
  }
  const opts = parsed.values;
  if (opts.help) {
    console.log(USAGE);
    return 0;
  }
  if (opts.list) {
    const width = Math.max(...SECTIONS.map((s) => s.name.length));
    for (const s of SECTIONS) console.log(`${s.name.padEnd(width)}  ${s.group}  ${s.summary}`);
    return 0;
  }
  let sections: Section[];
  try {
    sections = selectSections(opts.only);
  } catch (e) {
    console.error(`bench: ${(e as Error).message}`);
    return 2;
  }

  const started = new Date();
  const t0 = performance.now();
  const machine = describeMachine();
  console.error(
    `bench: ${machine.cores} cores, deno ${machine.deno}, ${machine.os} ${machine.osRelease}` +
      (machine.loadavg ? `, load ${machine.loadavg.map((l) => l.toFixed(2)).join(" ")}` : "") +
      (opts.quick ? ", quick run" : ""),
  );
  const results: SectionResult[] = [];
  const failures: { section: string; error: string }[] = [];
  for (const section of sections) {
    const s0 = performance.now();
    const cpu0 = sampleCpu();
    try {
      const figures = await section.run({
        quick: opts.quick,
        progress: (text) => console.error(`bench: ${text}`),
      });
      results.push({
        section: section.name,
        figures,
        seconds: (performance.now() - s0) / 1000,
        othersCpu: othersShare(cpu0, sampleCpu()),
      });
    } catch (e) {
      const error = e instanceof Error ? (e.stack ?? e.message) : String(e);
      console.error(`bench: the section ${section.name} failed: ${error}`);
      failures.push({ section: section.name, error });
    }
  }
  const seconds = (performance.now() - t0) / 1000;

  console.log("");
  for (const line of formatTable(results)) console.log(line);
  const goals = goalLines(results);
  if (goals.length > 0) console.log(`\nGoals:\n${goals.join("\n")}`);
  console.log(`\n${seconds.toFixed(1)} s in all.`);

  if (!opts["no-save"]) {
    const data = {
      suite: "sausage-bench",
      date: started.toISOString(),
      quick: opts.quick,
      sections: sections.map((s) => s.name),
      machine,
      git: await gitState(),
      seconds,
      results,
      goals: results.flatMap((r) =>
        r.figures.filter((f) => f.goal).map((f) => ({
          section: r.section,
          name: f.name,
          median: f.median,
          unit: f.unit,
          goal: f.goal,
          met: goalMet(f),
        }))
      ),
      failures,
    };
    const file = resultsFileName(started, sections.map((s) => s.group));
    const path = await writeResults(opts.out ?? RESULTS_DIR, file, data);
    console.log(`Results: ${path}`);
  }
  return failures.length > 0 ? 1 : 0;
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
