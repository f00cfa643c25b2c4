/**
 * Upgrades (PROTOCOL 3.7): when a plugin's current version changes, new
 * calls get the new version at once (see `versions.ts`); each process of an
 * older version gets its grace period and is then stopped; a service comes
 * back on the new version when its old process has ended; and when the last
 * process of an older version has ended, a process of the new version gets
 * `rpc.retired {"previous": "<sha256>"}`, whose result goes to the journal.
 *
 * @module
 */
import type { LoadedComponent } from "./components/cache.ts";
import type { Discovery } from "./discovery.ts";
import type { Journal } from "./journal.ts";
import type { Message } from "./jsonrpc.ts";
import type { Peer, Process } from "./process.ts";
import type { ProcessManager } from "./process_table.ts";
import type { Services } from "./services.ts";
import { DEFAULT_GRACE_SECONDS } from "../protocol/limits.ts";
export { DEFAULT_GRACE_SECONDS };

/** The longest wait a timer can have (about 24.8 days); a longer grace period is cut to it. */
const MAX_TIMER_MS = 2 ** 31 - 1;

const short = (hash: string | undefined) => hash ? hash.slice(0, 12) : "none";

/** A process of a version that is no longer current, in its grace period. */
interface Leaving {
  process: Process;
  timer: ReturnType<typeof setTimeout>;
}

/** Runs upgrades. */
export class Upgrades {
  readonly #processes: ProcessManager;
  readonly #discovery: Discovery;
  readonly #services: Services;
  readonly #journal: Journal;
  /** Old processes by ID: each gets one grace period, however many upgrades follow. */
  readonly #leaving = new Map<string, Leaving>();
  /**
   * `plugin\0version` of the versions whose retirement is awaited, so each is
   * retired once; the token tells a wait that a revert cancelled.
   */
  readonly #retiring = new Map<string, symbol>();
  /** The current version of each upgraded plugin: the one `rpc.retired` goes to. */
  readonly #current = new Map<string, LoadedComponent>();

  constructor(deps: {
    processes: ProcessManager;
    discovery: Discovery;
    services: Services;
    journal: Journal;
  }) {
    this.#processes = deps.processes;
    this.#discovery = deps.discovery;
    this.#services = deps.services;
    this.#journal = deps.journal;
  }

  /** The grace period of a version: its `x-sausage-grace`, or 60 s. */
  graceSeconds(hash: string): number {
    const known = this.#discovery.known(hash);
    const grace = known?.ok ? known.document["x-sausage-grace"] : undefined;
    return typeof grace === "number" && Number.isFinite(grace) && grace >= 0
      ? grace
      : DEFAULT_GRACE_SECONDS;
  }

  /** A plugin's current version became `next` (it was `previous`). */
  upgraded(plugin: string, previous: string | undefined, next: LoadedComponent): void {
    if (previous === undefined) return; // the first version seen: nothing to retire
    this.#current.set(plugin, next);
    this.#journal.event(
      null,
      plugin,
      `upgrade ${plugin}: ${short(previous)} → ${short(next.hash)}`,
    );
    this.#discovery.discover(plugin, next).catch(() => {}); // for the graph and the next upgrade
    const mine = this.#processes.list().filter((p) => p.plugin === plugin);
    // a revert can make a leaving version current again: its processes stay
    for (const p of mine.filter((p) => p.version === next.hash)) this.#stay(p);
    const byVersion = new Map<string, Process[]>();
    for (const p of mine.filter((p) => p.version !== next.hash)) {
      byVersion.set(p.version, [...(byVersion.get(p.version) ?? []), p]);
      if (!this.#leaving.has(p.pid)) this.#leave(plugin, p);
    }
    // a revert: that version is current again, and new processes of it may start
    this.#retiring.delete(`${plugin}\0${next.hash}`);
    for (const [version, processes] of byVersion) {
      const key = `${plugin}\0${version}`;
      if (this.#retiring.has(key)) continue; // already awaited since an earlier upgrade
      const token = Symbol(key);
      this.#retiring.set(key, token);
      Promise.all(processes.map((p) => p.ended)).then(() => {
        if (this.#retiring.get(key) !== token) return; // cancelled by a revert
        this.#retiring.delete(key);
        this.#retire(plugin, version);
      });
    }
    if (!byVersion.has(previous)) this.#retire(plugin, previous);
  }

  /** An old process gets its grace period, and a service comes back when it ends. */
  #leave(plugin: string, p: Process): void {
    const grace = this.graceSeconds(p.version);
    this.#services.restartWhenEnded(p);
    const timer = setTimeout(() => {
      this.#leaving.delete(p.pid);
      this.#processes.stop(p, `upgrade of ${plugin}: its grace period of ${grace} s ended`);
    }, Math.min(grace * 1000, MAX_TIMER_MS));
    this.#leaving.set(p.pid, { process: p, timer });
    p.ended.then(() => {
      clearTimeout(timer);
      this.#leaving.delete(p.pid);
    });
  }

  /** A process whose version is current again: no grace period, no restart. */
  #stay(p: Process): void {
    const leaving = this.#leaving.get(p.pid);
    if (!leaving) return;
    clearTimeout(leaving.timer);
    this.#leaving.delete(p.pid);
    this.#services.cancelRestart(p);
  }

  /** Stops the grace timers (host shutdown stops the processes anyway). */
  close(): void {
    for (const { timer } of this.#leaving.values()) clearTimeout(timer);
    this.#leaving.clear();
  }

  /** The last process of `previous` has ended: tell the version that is current now. */
  async #retire(plugin: string, previous: string): Promise<void> {
    const next = this.#current.get(plugin);
    if (!this.#processes.accepting || !next || next.hash === previous) return;
    const answered = Promise.withResolvers<Message>();
    const core: Peer = { name: "core", alive: true, deliver: (m) => answered.resolve(m) };
    try {
      await this.#processes.start({
        plugin,
        method: "rpc.retired",
        params: { previous },
        parent: null,
        origin: { peer: core, id: 1 },
        component: next,
      });
    } catch (e) {
      this.#journal.event(
        null,
        plugin,
        `rpc.retired of ${plugin} not called: ${(e as Error).message}`,
      );
      return;
    }
    const answer = await answered.promise;
    const text = "error" in answer && answer.error
      ? `error ${answer.error.code}: ${answer.error.message}`
      : JSON.stringify("result" in answer ? answer.result : null);
    this.#journal.event(
      null,
      plugin,
      `rpc.retired {"previous": "${short(previous)}…"} of ${plugin}: ${text}`,
    );
  }
}
