/**
 * Supervision: what the core does when a plugin worker crashes. Every
 * process on the worker ends (see `pool.ts`); services that ended so start
 * again after a backoff (see `services.ts`); and a plugin that the crashes
 * point to, again and again, has its calls refused for a while. This module
 * holds the options and the ledger of crashes that decides the last part.
 *
 * @module
 */
import { ErrorCode, RpcError } from "./jsonrpc.ts";

/** How the core supervises services and crashes of plugin workers. */
export interface SupervisionOptions {
  /** The first wait before a service whose worker crashed starts again, in ms. */
  restartDelayMs: number;
  /** The wait doubles at each crash up to this, in ms. */
  maxRestartDelayMs: number;
  /** A service that ran this long before its worker crashed waits the first delay again, in ms. */
  resetAfterMs: number;
  /** Worker crashes within `crashWindowMs` that a plugin must be charged with to be refused. */
  crashLimit: number;
  /** The window of `crashLimit`, in ms. */
  crashWindowMs: number;
  /** How long the calls of such a plugin are refused, in ms. */
  refuseMs: number;
  /**
   * For tests only: a process that writes exactly this line to stderr makes
   * its worker throw an uncaught error, as a bug in the worker would.
   */
  crashMarker?: string;
}

/** The defaults: 1 s doubling to 60 s, reset after 60 s; 3 crashes in 60 s refuse 60 s. */
export const DEFAULT_SUPERVISION: Readonly<SupervisionOptions> = Object.freeze({
  restartDelayMs: 1000,
  maxRestartDelayMs: 60_000,
  resetAfterMs: 60_000,
  crashLimit: 3,
  crashWindowMs: 60_000,
  refuseMs: 60_000,
});

/** A plugin worker that crashed, as the processes on it see it. */
export interface WorkerCrash {
  /** The worker's number (as in its name, `sausage-plugins-<n>`). */
  worker: number;
  /** The error that ended it. */
  message: string;
  /** When, in ms since 1970. */
  at: number;
}

/** One crash in the ledger: who was on the worker. */
interface Entry {
  at: number;
  message: string;
  /** Plugins with a process on the worker; a plugin once refused is taken out. */
  plugins: Set<string>;
}

/** A plugin whose calls are refused. */
interface Refusal {
  until: number;
  crashes: number;
  last: string;
  /** Calls refused so far, journaled when the refusal ends. */
  refused: number;
}

/** What {@linkcode CrashLedger.record} decided. */
export interface CrashVerdict {
  /** The plugin charged with this crash alone (it was the only one on the worker), or null. */
  charged: string | null;
  /** A plugin whose calls are refused from now on, when the crash made it so. */
  refused?: { plugin: string; until: number; crashes: number };
}

/**
 * The error of a call to a plugin whose calls are refused after crashes of
 * its workers; `data` says why and when calls are accepted again.
 */
export class CrashRefusal extends RpcError {
  /** When calls are accepted again, in ms since 1970. */
  readonly until: number;

  constructor(plugin: string, what: string, refusal: Refusal, windowMs: number) {
    const seconds = Math.max(1, Math.ceil((refusal.until - Date.now()) / 1000));
    const until = new Date(refusal.until).toISOString();
    super(
      ErrorCode.ServerError,
      `${what} was refused: the processes of ${plugin} were on ${refusal.crashes} crashes of ` +
        `plugin workers within ${windowMs / 1000} s, and no other plugin was on all of them ` +
        `(the last: ${refusal.last}); calls of ${plugin} are accepted again at ${until} ` +
        `(in ${seconds} s), or at once after core.activate of a new version of ${plugin}`,
      {
        refused: "worker_crashes",
        plugin,
        crashes: refusal.crashes,
        until,
        last: refusal.last,
        accept: `wait until ${until}, or activate a new version of ${plugin} (core.activate)`,
      },
    );
    this.until = refusal.until;
  }
}

/**
 * Crashes of plugin workers in the last window, and the plugins refused for
 * them.
 *
 * A worker runs processes of several plugins, and a crash carries no name:
 * the guest that computed, the output of one process, or a message the host
 * sent to one may have caused it. So a crash is charged to a plugin alone
 * only when it had every process on the worker. Over several crashes the
 * culprit shows itself: a plugin that was on `crashLimit` crashes within the
 * window, with no other plugin on all of them, is refused for `refuseMs`.
 * Two plugins that are always together are both spared, rather than a
 * bystander blamed.
 */
export class CrashLedger {
  readonly #options: SupervisionOptions;
  #entries: Entry[] = [];
  readonly #refused = new Map<string, Refusal>();
  /** Told when a refusal ends by time or by a new version (for the journal). */
  onAccepted?: (plugin: string, refused: number, why: string) => void;

  constructor(options: SupervisionOptions) {
    this.#options = options;
  }

  /** Notes a crash of a worker that ran processes of `plugins`. */
  record(crash: WorkerCrash, plugins: Iterable<string>): CrashVerdict {
    const entry: Entry = { at: crash.at, message: crash.message, plugins: new Set(plugins) };
    const since = crash.at - this.#options.crashWindowMs;
    this.#entries = this.#entries.filter((e) => e.at > since && e.plugins.size > 0);
    this.#entries.push(entry);
    const verdict: CrashVerdict = {
      charged: entry.plugins.size === 1 ? [...entry.plugins][0] : null,
    };
    for (const plugin of entry.plugins) {
      const mine = this.#entries.filter((e) => e.plugins.has(plugin));
      if (mine.length < this.#options.crashLimit) continue;
      // the plugins on every one of these crashes: refused only when it stands alone
      const always = new Set(mine[0].plugins);
      for (const e of mine) for (const p of always) if (!e.plugins.has(p)) always.delete(p);
      if (always.size !== 1) continue;
      const until = crash.at + this.#options.refuseMs;
      this.#refused.set(plugin, { until, crashes: mine.length, last: crash.message, refused: 0 });
      // these crashes are paid for: they do not count again after the refusal
      for (const e of mine) e.plugins.delete(plugin);
      verdict.refused = { plugin, until, crashes: mine.length };
      break;
    }
    return verdict;
  }

  /**
   * The error for `what` (a call of `plugin`) while its calls are refused, or
   * undefined when they are accepted.
   */
  refusal(plugin: string, what: string): CrashRefusal | undefined {
    const refusal = this.#refused.get(plugin);
    if (!refusal) return undefined;
    if (Date.now() >= refusal.until) {
      this.#refused.delete(plugin);
      this.onAccepted?.(plugin, refusal.refused, "its refusal ended");
      return undefined;
    }
    refusal.refused++;
    return new CrashRefusal(plugin, what, refusal, this.#options.crashWindowMs);
  }

  /** A new version of `plugin` is current: its crashes and any refusal are forgotten. */
  forgive(plugin: string): void {
    const refusal = this.#refused.get(plugin);
    for (const e of this.#entries) e.plugins.delete(plugin);
    if (!refusal) return;
    this.#refused.delete(plugin);
    this.onAccepted?.(plugin, refusal.refused, "a new version is current");
  }
}
