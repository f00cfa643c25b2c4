/**
 * Services (PROTOCOL section 8): the calls in `config/boot.yaml`, made at
 * each start, in order, each a detached call with the parent `core`; a
 * service comes back after an upgrade of its plugin, and, after a backoff,
 * when a crash of its plugin worker ended it.
 *
 * @module
 */
import { parse } from "yaml";
import type { Journal } from "./journal.ts";
import type { Message, Response } from "./jsonrpc.ts";
import { CORE, splitMethod } from "./names.ts";
import type { Peer, Process, ProcessEnd } from "./process.ts";
import type { ProcessManager } from "./process_table.ts";
import { CrashRefusal } from "./supervision.ts";

/** One entry of boot.yaml. */
export interface Service {
  method: string;
  params: Record<string, unknown>;
}

/** Raised for a boot.yaml that cannot be read; the message says where. */
export class BootFileError extends Error {
  override name = "BootFileError";
}

/** Reads and checks `config/boot.yaml`. A missing file means no services. */
export async function readServices(path: string): Promise<Service[]> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return [];
    throw new BootFileError(`cannot read ${path}: ${(e as Error).message}`);
  }
  let value: unknown;
  try {
    value = parse(text);
  } catch (e) {
    throw new BootFileError(`${path} is not valid YAML: ${(e as Error).message}`);
  }
  if (value === null || value === undefined) return [];
  if (!Array.isArray(value)) {
    throw new BootFileError(`${path} must be a list of services (- method: ..., params: {...})`);
  }
  return value.map((entry, i) => {
    const where = `${path}, service ${i + 1}`;
    if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
      throw new BootFileError(`${where}: expected "method" and "params"`);
    }
    const { method, params } = entry as Record<string, unknown>;
    if (typeof method !== "string" || !method.includes(".")) {
      throw new BootFileError(
        `${where}: "method" must be <plugin>.<method>, for example www.start`,
      );
    }
    if (
      params !== undefined &&
      (typeof params !== "object" || params === null || Array.isArray(params))
    ) {
      throw new BootFileError(`${where}: "params" must be a mapping (params are by name)`);
    }
    return { method, params: (params ?? {}) as Record<string, unknown> };
  });
}

/** A service and the process that serves it now. */
interface Running {
  service: Service;
  process: Process | null;
  /** The last wait before a start after a crash of its worker, in ms (0: none yet). */
  delayMs: number;
  /** When its process started (`performance.now()`). */
  startedAt: number;
}

/** After this long without a result, a starting service is reported as slow. */
const SLOW_SERVICE_MS = 5000;

/**
 * Starts the services, in order, each a detached call with the parent
 * `core`, and starts a service again when the upgrade of its plugin ended
 * its old process (PROTOCOL 3.7). The core restarts no other process.
 */
export class Services {
  readonly #processes: ProcessManager;
  readonly #journal: Journal;
  readonly #byPid = new Map<string, Running>();
  /** Old service processes whose end starts the service again (an upgrade). */
  readonly #restartOnEnd = new Set<string>();
  #nextId = 1;
  /** Starts waiting for their backoff (or a refusal) to end. */
  readonly #timers = new Set<ReturnType<typeof setTimeout>>();
  #closed = false;
  /** Told about each service that failed or became ready. */
  onProgress?: (text: string) => void;

  constructor(
    deps: { processes: ProcessManager; journal: Journal; onProgress?: (text: string) => void },
  ) {
    this.onProgress = deps.onProgress;
    this.#processes = deps.processes;
    this.#journal = deps.journal;
  }

  /** Starts each service, waiting for each result before the next. */
  async startAll(services: Service[]): Promise<void> {
    for (const service of services) {
      await this.#start({ service, process: null, delayMs: 0, startedAt: 0 });
    }
  }

  /** Cancels the starts that wait for a backoff (host shutdown). */
  close(): void {
    this.#closed = true;
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
  }

  /** Whether the process serves a service. */
  isService(pid: string): boolean {
    return this.#byPid.has(pid);
  }

  /**
   * After an upgrade: when the old process of a service ends, the service
   * starts again with the plugin's current version.
   */
  restartWhenEnded(process: Process): void {
    const running = this.#byPid.get(process.pid);
    if (!running || this.#restartOnEnd.has(process.pid)) return;
    this.#restartOnEnd.add(process.pid);
    process.ended.then(() => {
      this.#byPid.delete(process.pid);
      if (!this.#restartOnEnd.delete(process.pid) || !this.#processes.accepting) return;
      this.#journal.event(
        null,
        null,
        `service ${running.service.method}: starting again after the upgrade`,
      );
      this.#start(running);
    });
  }

  /** The process's version is current again (a revert): it serves on, and is not restarted. */
  cancelRestart(process: Process): void {
    this.#restartOnEnd.delete(process.pid);
  }

  /** A service of a plugin refused after crashes: tried again when the refusal ends. */
  #retryAfterRefusal(running: Running, refusal: CrashRefusal): void {
    const wait = Math.max(refusal.until - Date.now(), running.delayMs, 0) + 10;
    this.#journal.event(
      null,
      null,
      `service ${running.service.method}: trying again in ${Math.ceil(wait / 1000)} s, ` +
        "when its plugin's calls are accepted again",
    );
    this.#later(wait, () => this.#start(running));
  }

  /** Runs `start` after `ms`, unless the host stops first. */
  #later(ms: number, start: () => void): void {
    const timer = setTimeout(() => {
      this.#timers.delete(timer);
      if (!this.#closed && this.#processes.accepting) start();
    }, ms);
    this.#timers.add(timer);
  }

  /** Watches a service's process: a crash of its worker starts the service again. */
  #watch(running: Running, process: Process): void {
    process.ended.then((end) => {
      if (this.#restartOnEnd.has(process.pid)) return; // the upgrade starts it again
      this.#byPid.delete(process.pid);
      if (end.workerCrash && !this.#closed && this.#processes.accepting) {
        this.#restartAfterCrash(running, process, end);
      }
    });
  }

  /** 1 s, doubling up to 60 s; back to 1 s for a service that ran a while (the defaults). */
  #restartAfterCrash(running: Running, process: Process, end: ProcessEnd): void {
    const { restartDelayMs, maxRestartDelayMs, resetAfterMs } = this.#processes.supervision;
    const ran = performance.now() - running.startedAt;
    const delay = running.delayMs === 0 || ran >= resetAfterMs
      ? restartDelayMs
      : Math.min(running.delayMs * 2, maxRestartDelayMs);
    running.delayMs = delay;
    const crash = end.workerCrash!;
    const text = `service ${running.service.method} (${process.pid}) ended: its plugin worker ` +
      `${crash.worker} crashed (${crash.message}); starting it again in ${delay / 1000} s`;
    this.#journal.event(null, null, text);
    this.onProgress?.(text);
    this.#later(delay, () => {
      this.#journal.event(
        null,
        null,
        `service ${running.service.method}: starting again after the crash of its worker`,
      );
      this.#start(running);
    });
  }

  async #start(running: Running): Promise<void> {
    const { service } = running;
    this.#journal.event(null, null, `service ${service.method}: starting`);
    const split = splitMethod(service.method);
    const answer = Promise.withResolvers<Response>();
    const core: Peer = {
      name: "core",
      alive: true,
      deliver: (m: Message) => {
        if (!("method" in m)) answer.resolve(m);
      },
    };
    let error: string | undefined;
    try {
      if (!split || split.target === CORE) {
        throw new Error(`"${service.method}" is not a plugin method`);
      }
      const process = await this.#processes.start({
        plugin: split.target,
        method: split.method,
        params: service.params,
        parent: null,
        origin: { peer: core, id: this.#nextId++ },
      });
      running.process = process;
      running.startedAt = performance.now();
      this.#byPid.set(process.pid, running);
      this.#watch(running, process);
      // the next services, and `sausage call`, wait for this one: say so when it is slow
      const slow = setTimeout(() => {
        const text =
          `service ${service.method} (${process.pid}) is not ready after ${
            SLOW_SERVICE_MS / 1000
          } s: ` +
          "the services after it in boot.yaml and the first calls wait for its result";
        this.#journal.event(null, null, text);
        this.onProgress?.(text);
      }, SLOW_SERVICE_MS);
      const response = await answer.promise.finally(() => clearTimeout(slow));
      if (response.error) error = response.error.message;
    } catch (e) {
      error = e instanceof Error ? e.message : String(e);
      if (e instanceof CrashRefusal) this.#retryAfterRefusal(running, e);
    }
    const text = error
      ? `service ${service.method} failed: ${error}`
      : `service ${service.method}: ready`;
    this.#journal.event(null, null, text);
    this.onProgress?.(text);
  }
}
