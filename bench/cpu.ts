/**
 * How busy other programs kept the machine while a section ran: on a shared
 * machine, the share of CPU time that others took explains a slow run.
 * Linux only (`/proc/stat` and `/proc/self/stat`); elsewhere it is unknown.
 *
 * @example
 * ```ts
 * import { othersShare, sampleCpu } from "./cpu.ts";
 * const before = sampleCpu();
 * // ... measure ...
 * const share = othersShare(before, sampleCpu()); // e.g. 0.35, or undefined
 * ```
 *
 * @module
 */

/** CPU time counters, in clock ticks. */
export interface CpuSample {
  /** All CPUs, all states. */
  total: number;
  /** All CPUs, idle or waiting for I/O. */
  idle: number;
  /** This process and its waited-for children (user and system). */
  own: number;
}

/** Parses the first line of `/proc/stat` into total and idle ticks. */
export function parseProcStat(text: string): { total: number; idle: number } | undefined {
  const line = text.split("\n").find((l) => l.startsWith("cpu "));
  if (!line) return undefined;
  const f = line.trim().split(/\s+/).slice(1).map(Number);
  if (f.length < 4 || f.some((x) => !Number.isFinite(x))) return undefined;
  // user nice system idle iowait irq softirq steal (guest time is inside user already)
  const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
  return { total, idle: f[3] + (f[4] ?? 0) };
}

/** Parses `/proc/self/stat` into the ticks of this process and its children. */
export function parseSelfStat(text: string): number | undefined {
  const rest = text.slice(text.lastIndexOf(")") + 2).split(" ").map(Number);
  // fields 14 to 17 of proc(5): utime stime cutime cstime; `rest` starts at field 3
  const ticks = rest.slice(11, 15);
  if (ticks.length < 4 || ticks.some((x) => !Number.isFinite(x))) return undefined;
  return ticks.reduce((a, b) => a + b, 0);
}

/** Reads the counters now; undefined where `/proc` is not there. */
export function sampleCpu(): CpuSample | undefined {
  try {
    const stat = parseProcStat(Deno.readTextFileSync("/proc/stat"));
    const own = parseSelfStat(Deno.readTextFileSync("/proc/self/stat"));
    if (!stat || own === undefined) return undefined;
    return { ...stat, own };
  } catch {
    return undefined;
  }
}

/**
 * The share (0 to 1) of all CPU time between two samples that other
 * programs used: busy time minus this process's own.
 */
export function othersShare(
  a: CpuSample | undefined,
  b: CpuSample | undefined,
): number | undefined {
  if (!a || !b || b.total <= a.total) return undefined;
  const busy = (b.total - b.idle) - (a.total - a.idle);
  const own = b.own - a.own;
  return Math.min(1, Math.max(0, (busy - own) / (b.total - a.total)));
}
