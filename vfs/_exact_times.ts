/**
 * Nanoseconds of timestamps set on host files. Deno sets and reads file
 * times in milliseconds only (`Deno.utimeSync` cuts a time to milliseconds,
 * `Deno.FileInfo` gives a `Date`), though the host's filesystem keeps
 * nanoseconds. So the host layer remembers the exact time it set, and reports
 * it while the host still shows the milliseconds it was given: a later change
 * of the file moves its time and the remembered one is dropped.
 *
 * @module
 */
import type { Stat, TimeSpec, Timestamp } from "./types.ts";

/** Files remembered per thread; the oldest is forgotten beyond. */
const MAX_FILES = 4096;

interface Exact {
  /** The milliseconds the host shows for the time set, and the time itself. */
  atime?: { ms: number; exact: Timestamp };
  mtime?: { ms: number; exact: Timestamp };
}

const _byFile = new Map<string, Exact>();

/** The milliseconds of a timestamp, as Deno passes them to the host (cut, not rounded). */
export function timestampMs(t: Timestamp): number {
  return t.seconds * 1000 + Math.floor(t.nanoseconds / 1e6);
}

/** A {@linkcode TimeSpec} as the `Date` the host calls take; `current` for `null`. */
export function hostDate(spec: TimeSpec, current: Date | null): Date {
  if (spec === "now") return new Date();
  if (spec === null) return current ?? new Date();
  if (typeof spec === "number") return new Date(spec);
  return new Date(timestampMs(spec));
}

/** Remembers the exact times just set on the file `stat` describes (after the call). */
export function rememberTimes(stat: Stat, atime: TimeSpec, mtime: TimeSpec): void {
  const key = `${stat.dev}:${stat.ino}`;
  const old = _byFile.get(key) ?? {};
  _byFile.delete(key);
  const entry: Exact = {
    atime: _entry(atime, stat.atimeMs, old.atime),
    mtime: _entry(mtime, stat.mtimeMs, old.mtime),
  };
  if (!entry.atime && !entry.mtime) return;
  _byFile.set(key, entry);
  if (_byFile.size > MAX_FILES) _byFile.delete(_byFile.keys().next().value!);
}

function _entry(
  spec: TimeSpec,
  shownMs: number | null,
  old: Exact["atime"],
): Exact["atime"] {
  if (spec === null) return old;
  if (typeof spec !== "object" || shownMs !== timestampMs(spec)) return undefined;
  return { ms: shownMs, exact: spec };
}

/** `stat` with the exact times remembered for its file, while the host still shows them. */
export function withExactTimes(stat: Stat): Stat {
  if (_byFile.size === 0) return stat;
  const entry = _byFile.get(`${stat.dev}:${stat.ino}`);
  if (!entry) return stat;
  const atime = entry.atime?.ms === stat.atimeMs ? entry.atime?.exact : undefined;
  const mtime = entry.mtime?.ms === stat.mtimeMs ? entry.mtime?.exact : undefined;
  if (!atime && !mtime) return stat;
  return {
    ...stat,
    ...(atime ? { atimeExact: atime } : {}),
    ...(mtime ? { mtimeExact: mtime } : {}),
  };
}
