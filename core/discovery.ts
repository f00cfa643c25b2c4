/**
 * Discovery (PROTOCOL section 10.1): the core asks a plugin version for its
 * `rpc.discover` document in a process of its own, stops that process after
 * the answer, and gives up after 10 seconds.
 *
 * Documents are kept by the sha256 of the plugin file: in memory, and in the
 * cache folder, so that a host start does not ask again. A failed discovery
 * is kept in memory only (it may be passing).
 *
 * @module
 */
import { join } from "node:path";
import type { LoadedComponent } from "./components/cache.ts";
import type { Journal } from "./journal.ts";
import type { Message, Response } from "./jsonrpc.ts";
import type { Peer } from "./process.ts";
import type { ProcessManager } from "./process_table.ts";
import { DISCOVERY_TIMEOUT_MS } from "../protocol/limits.ts";
export { DISCOVERY_TIMEOUT_MS };

/** An OpenRPC document, as a plugin gave it. */
export type Document = Record<string, unknown> & { openrpc: string; methods: unknown[] };

/** The outcome of a discovery. */
export type Discovered =
  | { ok: true; document: Document }
  | { ok: false; reason: string };

/** Whether `value` looks like an OpenRPC document (the full check is the compatibility check's). */
function documentProblem(value: unknown): string | null {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return "its rpc.discover result is not an object";
  }
  const d = value as Record<string, unknown>;
  if (typeof d.openrpc !== "string") return 'its rpc.discover result has no "openrpc" version';
  if (!Array.isArray(d.methods)) return 'its rpc.discover result has no "methods" list';
  return null;
}

/** Discovers plugin versions, one process each. */
export class Discovery {
  readonly #processes: ProcessManager;
  readonly #journal: Journal;
  readonly #dir: string;
  readonly #known = new Map<string, Discovered>();
  readonly #inFlight = new Map<string, Promise<Discovered>>();

  constructor(deps: { processes: ProcessManager; journal: Journal; cacheDir: string }) {
    this.#processes = deps.processes;
    this.#journal = deps.journal;
    this.#dir = join(deps.cacheDir, "discover");
  }

  /** The outcome for a version, if known now. */
  known(hash: string): Discovered | undefined {
    return this.#known.get(hash);
  }

  /** The document of a plugin version: from memory, the cache, or a process. */
  discover(plugin: string, component: LoadedComponent): Promise<Discovered> {
    const known = this.#known.get(component.hash);
    if (known) return Promise.resolve(known);
    let pending = this.#inFlight.get(component.hash);
    if (!pending) {
      pending = this.#discover(plugin, component).then((outcome) => {
        this.#known.set(component.hash, outcome);
        return outcome;
      }).finally(() => this.#inFlight.delete(component.hash));
      this.#inFlight.set(component.hash, pending);
    }
    return pending;
  }

  async #discover(plugin: string, component: LoadedComponent): Promise<Discovered> {
    const cached = await this.#readCache(component.hash);
    if (cached) return { ok: true, document: cached };
    const outcome = await this.#ask(plugin, component);
    if (outcome.ok) await this.#writeCache(component.hash, outcome.document);
    else this.#journal.event(null, plugin, `discovery of ${plugin} failed: ${outcome.reason}`);
    return outcome;
  }

  async #ask(plugin: string, component: LoadedComponent): Promise<Discovered> {
    const answered = Promise.withResolvers<Response>();
    const peer: Peer = {
      name: "core",
      alive: true,
      deliver: (m: Message) => {
        if (!("method" in m)) answered.resolve(m);
      },
    };
    const process = await this.#processes.start({
      plugin,
      method: "rpc.discover",
      params: {},
      parent: null,
      origin: { peer, id: 1 },
      component,
    });
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<null>((resolve) =>
      timer = setTimeout(() => resolve(null), DISCOVERY_TIMEOUT_MS)
    );
    const response = await Promise.race([answered.promise, timeout]);
    clearTimeout(timer);
    if (response === null) {
      this.#processes.kill(
        process,
        `no rpc.discover answer within ${DISCOVERY_TIMEOUT_MS / 1000} s`,
      );
      return {
        ok: false,
        reason: `no rpc.discover answer within ${DISCOVERY_TIMEOUT_MS / 1000} s`,
      };
    }
    this.#processes.stop(process, "its rpc.discover was answered");
    if (response.error) {
      return {
        ok: false,
        reason: `rpc.discover failed: ${response.error.message} (${response.error.code})`,
      };
    }
    const problem = documentProblem(response.result);
    if (problem) return { ok: false, reason: problem };
    return { ok: true, document: response.result as Document };
  }

  async #readCache(hash: string): Promise<Document | null> {
    try {
      const value = JSON.parse(await Deno.readTextFile(join(this.#dir, `${hash}.json`)));
      return documentProblem(value) ? null : value as Document;
    } catch {
      return null;
    }
  }

  async #writeCache(hash: string, document: Document): Promise<void> {
    try {
      await Deno.mkdir(this.#dir, { recursive: true });
      const tmp = join(this.#dir, `.${hash}.${crypto.randomUUID()}.tmp`);
      await Deno.writeTextFile(tmp, JSON.stringify(document));
      await Deno.rename(tmp, join(this.#dir, `${hash}.json`));
    } catch (e) {
      // a cache that cannot be written costs a discovery at the next start, no more
      this.#journal.event(null, null, `warning: cannot keep a discovery in ${this.#dir}: ${e}`);
    }
  }
}
