/**
 * What must hold after every attack: the host is up, another plugin answers
 * within 2 s, the bystanders started before the attack still run, `/proc`
 * and the locks are back to their count, the journal has every earlier entry,
 * and the host's memory and open files are back near where they were.
 *
 * @module
 */
import {
  eventually,
  fdsOf,
  type HostProcess,
  journalCountUpTo,
  journalMark,
  mib,
  rssOf,
} from "./harness.ts";
import type { HostState } from "./host.ts";

/** How far the RSS may stay above its value before an attack (after a collection). */
export const RSS_SLACK_BYTES = 160 * 2 ** 20;
/** How many more open files than before an attack are "near". */
export const FD_SLACK = 8;
/**
 * How long the RSS may take to come back: the linear memories of ended
 * processes go when their worker's isolate collects garbage, which an idle
 * worker does about 30 s later (the suite's `gc()` reaches only the host's
 * own thread).
 */
export const MEMORY_SETTLE_MS = 45_000;
/** How long the pool may take to stop its extra workers (it stops them after 30 s idle). */
export const POOL_SHRINK_MS = 40_000;
/** How long leftovers of an attack may take to go: a stop waits 5 s before its kill. */
export const SETTLE_MS = 15_000;

/** The state before an attack. */
export interface Baseline {
  rss: number;
  fds: number;
  pids: string[];
  locks: string[];
  bystanders: string[];
  /** Plugin workers: the pool grows under load and stops extra workers after 30 s idle. */
  workers: number;
  journal: { count: number; lastId: string | null };
}

/** One check's outcome. */
export interface CheckResult {
  name: string;
  ok: boolean;
  detail?: string;
}

const lockKey = (l: { path: string; holder: string }) => `${l.path} ${l.holder}`;

/** Takes the baseline: the journal flushed, garbage collected, the numbers read. */
export async function takeBaseline(h: HostProcess): Promise<Baseline> {
  await h.order({ op: "flush" });
  await h.order({ op: "gc" });
  await new Promise((r) => setTimeout(r, 100));
  const s = await h.state();
  return {
    rss: rssOf(h.pid) ?? 0,
    fds: fdsOf(h.pid) ?? 0,
    pids: s.processes.map((p) => p.pid).sort(),
    locks: s.locks.map(lockKey).sort(),
    bystanders: s.processes.filter((p) => p.plugin === "bystander").map((p) => p.pid),
    workers: s.workers,
    journal: journalMark(worldOf(h)),
  };
}

const worlds = new WeakMap<HostProcess, string>();

/** Notes which world a host runs (the journal checks read its file). */
export function setWorld(h: HostProcess, root: string): void {
  worlds.set(h, root);
}

function worldOf(h: HostProcess): string {
  const root = worlds.get(h);
  if (!root) throw new Error("no world noted for this host");
  return root;
}

const same = (a: string[], b: string[]) => a.length === b.length && a.every((x, i) => x === b[i]);

/** Runs every check against the baseline; a dead host fails all but the journal's. */
export async function runChecks(h: HostProcess, base: Baseline): Promise<CheckResult[]> {
  const out: CheckResult[] = [];
  const root = worldOf(h);
  let s: HostState | undefined;
  try {
    s = h.alive ? await h.state(2000) : undefined;
  } catch {
    s = undefined;
  }
  out.push({
    name: "host up",
    ok: s !== undefined,
    detail: s ? undefined : (h.tripped?.reason ?? "the host does not answer"),
  });
  if (!s) {
    for (const name of ["answers", "bystanders", "/proc", "locks", "memory", "files"]) {
      out.push({ name, ok: false, detail: "host down" });
    }
  } else {
    // another plugin answers within 2 s
    const started = performance.now();
    const echo = await h.call("other.echo", { still: "here" }, { timeoutMs: 2000 })
      .catch((e) => ({ error: String(e) }));
    const ms = performance.now() - started;
    const answered = "response" in echo &&
      JSON.stringify(echo.response?.result) === '{"still":"here"}';
    out.push({
      name: "answers",
      ok: answered && ms < 2000,
      detail: answered ? `${ms.toFixed(0)} ms` : JSON.stringify(echo).slice(0, 200),
    });
    const alive = new Set(s.processes.filter((p) => p.state === "running").map((p) => p.pid));
    const dead = base.bystanders.filter((p) => !alive.has(p));
    out.push({
      name: "bystanders",
      ok: dead.length === 0,
      detail: dead.length ? `ended: ${dead.join(", ")}` : undefined,
    });
    // /proc as a plugin sees it, and the process table: back to the bystanders
    let procDetail = "";
    const procBack = await eventually(async () => {
      const state = await h.state();
      const pids = state.processes.map((p) => p.pid).sort();
      const seen = await h.call("other.proc", {}, { timeoutMs: 5000 });
      const r = seen.response?.result as { pids: string[]; me: string } | undefined;
      const inProc = (r?.pids ?? []).filter((p) => p !== r?.me).sort();
      procDetail = `${pids.length} processes, /proc shows ${inProc.length}, ` +
        `before ${base.pids.length}`;
      return same(pids, base.pids) && same(inProc, base.pids);
    }, SETTLE_MS);
    out.push({ name: "/proc", ok: procBack, detail: procBack ? undefined : procDetail });
    let lockDetail = "";
    const locksBack = await eventually(async () => {
      const locks = (await h.state()).locks.map(lockKey).sort();
      const seen = await h.call("other.proc", {}, { timeoutMs: 5000 });
      const file =
        (seen.response?.result as { locks: { locks: { path: string; holder: string }[] } })
          ?.locks?.locks ?? [];
      lockDetail = `${locks.length} held (locks.json ${file.length}), before ${base.locks.length}`;
      return same(locks, base.locks) && same(file.map(lockKey).sort(), base.locks);
    }, SETTLE_MS);
    out.push({ name: "locks", ok: locksBack, detail: locksBack ? undefined : lockDetail });
    // extra workers hold memory and files until the pool stops them (30 s idle): wait for that
    let workers = 0;
    const poolBack = await eventually(async () => {
      workers = (await h.state()).workers;
      return workers <= base.workers;
    }, POOL_SHRINK_MS);
    const pool = poolBack ? "" : `; ${workers} plugin workers (before ${base.workers})`;
    let rss = 0;
    const memoryBack = await eventually(async () => {
      await h.order({ op: "gc" });
      rss = rssOf(h.pid) ?? Infinity;
      return rss <= base.rss + RSS_SLACK_BYTES;
    }, MEMORY_SETTLE_MS);
    out.push({
      name: "memory",
      ok: memoryBack,
      detail: `${mib(rss)} MiB (before ${mib(base.rss)})${pool}`,
    });
    let fds = 0;
    const filesBack = await eventually(() => {
      fds = fdsOf(h.pid) ?? Infinity;
      return fds <= base.fds + FD_SLACK;
    }, 5000);
    out.push({
      name: "files",
      ok: filesBack,
      detail: `${fds} open (before ${base.fds})${pool}`,
    });
  }
  // the journal: every entry before the attack is still there (read from the file)
  if (h.alive) await h.order({ op: "flush" }).catch(() => {});
  try {
    const kept = journalCountUpTo(root, base.journal.lastId);
    out.push({
      name: "journal",
      ok: kept === base.journal.count,
      detail: kept === base.journal.count
        ? undefined
        : `${kept} of ${base.journal.count} earlier entries`,
    });
  } catch (e) {
    out.push({ name: "journal", ok: false, detail: (e as Error).message });
  }
  return out;
}
