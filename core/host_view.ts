/**
 * One view of a running host for every front end (the console, the control
 * endpoint, and through it `sausage attach`): calls with their
 * notifications, processes, files, plugin versions and the host's notes.
 * A front end imports this and no subsystem of the host.
 *
 * {@linkcode LocalHostView} is the view in the host's process; the control
 * endpoint serves one per connection, and `ControlClient` is the same view
 * over the socket. {@linkcode watchPlugins} tells a front end when the
 * world's plugins change, on either view.
 *
 * @module
 */
import { join } from "node:path";
import type { Client } from "./client.ts";
import type { Host } from "./host.ts";
import type { Entry } from "./journal.ts";
import { type Id, idKey, type Request, type Response } from "./jsonrpc.ts";
import {
  completionNames,
  consoleFileSystem,
  type FileContent,
  type Listing,
  listPath,
  MAX_TEXT_BYTES,
  pathErrorText,
  readPath,
} from "./view_files.ts";
import { type FileSystem, VfsError } from "../vfs/mod.ts";

/** What `host/info` answers: the host and where its world is. */
export interface HostInfo {
  /** The world folder on this machine. */
  world: string;
  /** The host's OS process. */
  pid: number;
  started: string;
  /** The methods of the core API (PROTOCOL section 9). */
  coreMethods: string[];
}

/** What `info.json` says of a process (PROTOCOL section 4). */
export interface ProcessInfo {
  pid: string;
  plugin: string;
  version: string;
  method: string;
  params: Record<string, unknown>;
  /** `console`, `core`, or the calling process. */
  parent: string;
  detached: boolean;
  started: string;
  state: "running" | "stopping" | "ended";
}

/** Options of one call. */
export interface ViewRequestOptions {
  /** Gets the `core.notify` notifications of this call. */
  onNotify?: (name: string, params: unknown) => void;
  /** Told the ID of the call, for {@linkcode HostView.cancel}. */
  onId?: (id: Id) => void;
}

/** A path that cannot be listed or read; the message says why, with the path. */
export class ViewError extends Error {
  override name = "ViewError";
  /**
   * The filesystem's code when a path could not be read (`ENOENT`, `ENOTDIR`, `EISDIR`…, as
   * {@linkcode VfsError}), so that a caller tells "no such file" from other failures by code.
   */
  readonly code?: string;

  constructor(message: string, code?: string) {
    super(message);
    if (code !== undefined) this.code = code;
  }
}

/** Why a view ended: the host stopped, or went away. */
export interface ViewEnd {
  /** The exit code a front end that ends with it gives. */
  code: number;
  /** In words, for the person. */
  why: string;
}

/**
 * The host as a front end sees it. Each view is one caller, with the parent
 * `console` (the console, `sausage call`, MCP) or `web` (the page).
 */
export interface HostView {
  readonly info: HostInfo;
  /** A call; resolves with its response (a result or an error object). */
  request(
    method: string,
    params?: Record<string, unknown>,
    options?: ViewRequestOptions,
  ): Promise<Response>;
  /** Notifications to this caller that belong to no call. */
  onNotification?: (message: Request) => void;
  /** Notes for the person (first runs, service failures, journal trouble). */
  onNote?: (text: string) => void;
  /** Stops the process that the call `id` of this view started; gives its ID, or null. */
  cancel(id: Id): Promise<string | null>;
  /** The processes that have not ended. */
  processes(): Promise<ProcessInfo[]>;
  /** The plugins of the world (folders with a `plugin.wasm`, and the host's own). */
  plugins(): Promise<string[]>;
  /** A folder's entries, or a file alone; throws a {@linkcode ViewError}. */
  list(path: string): Promise<Listing>;
  /** At most `limit` bytes of a file; throws a {@linkcode ViewError}. */
  read(path: string, limit?: number): Promise<FileContent>;
  /** Names in a folder for completion (folders with a final `/`); empty when unreadable. */
  names(folder: string): Promise<string[]>;
  /** The hash of a plugin's current version; null when it has none that loads. */
  version(plugin: string): Promise<string | null>;
  /** Asks the plugin for its `rpc.discover` document now, when the host has none yet. */
  discover(plugin: string): Promise<void>;
  /**
   * Gets each journal entry from now on, as it is made (`core.log` has the
   * ones before); resolves once they flow. `close` stops it.
   */
  follow(onEntry: (entry: Entry) => void): Promise<{ close(): void }>;
  /** Settles when the services of `boot.yaml` were started. */
  readonly ready: Promise<void>;
  /** Resolves when the host stops or goes away. */
  readonly ended: Promise<ViewEnd>;
  /** Stops this view's calls that still run (`why` goes to the journal), and lets the host go. */
  close(why?: string): Promise<void>;
}

/** The paths of a world that front ends show, from its root. */
export function worldPaths(root: string): { agentConfig: string; coreState: string } {
  return {
    agentConfig: join(root, "config", "agent.yaml"),
    coreState: join(root, "state", "core"),
  };
}

/**
 * The view in the host's process.
 *
 * @example
 * ```ts
 * import type { Host } from "./host.ts";
import type { Entry } from "./journal.ts";
 * declare const host: Host; // a started host: `await Host.start({ world, cacheDir })`
 * const view = new LocalHostView(host);
 * const answer = await view.request("notes.add", { text: "milk" });
 * ```
 */
export class LocalHostView implements HostView {
  readonly info: HostInfo;
  readonly ready: Promise<void>;
  readonly ended: Promise<ViewEnd>;
  readonly #host: Host;
  readonly #client: Client;
  readonly #files: FileSystem;
  #closed = false;
  readonly #follows = new Set<() => void>();

  /**
   * @param caller the parent of its calls (`SAUSAGE_PARENT`, `ps`, the journal's start lines):
   *   `console`, or `web` for the page's calls.
   */
  constructor(host: Host, started: Date = new Date(), caller: "console" | "web" = "console") {
    this.#host = host;
    this.#client = host.client(caller);
    this.#files = consoleFileSystem(host.files);
    this.info = {
      world: host.world.root,
      pid: Deno.pid,
      started: started.toISOString(),
      coreMethods: host.core.methods,
    };
    this.ready = host.servicesStarted;
    this.ended = host.exitRequested.then((code) => ({
      code,
      why: "a plugin called core.exit: the host stops",
    }));
  }

  get onNotification(): ((message: Request) => void) | undefined {
    return this.#client.onNotification;
  }
  set onNotification(f: ((message: Request) => void) | undefined) {
    this.#client.onNotification = f;
  }

  get onNote(): ((text: string) => void) | undefined {
    return this.#host.onNote;
  }
  /** The host has one place for notes: the front end that sets it last gets them. */
  set onNote(f: ((text: string) => void) | undefined) {
    this.#host.onNote = f ?? (() => {});
  }

  request(
    method: string,
    params: Record<string, unknown> = {},
    options: ViewRequestOptions = {},
  ): Promise<Response> {
    return this.#client.request(method, params, options);
  }

  cancel(id: Id): Promise<string | null> {
    const process = this.#host.processes.list().find((p) =>
      p.origin?.peer === this.#client && idKey(p.origin.id) === idKey(id) && p.state === "running"
    );
    if (process) this.#host.processes.stop(process, "its caller cancelled the call");
    return Promise.resolve(process?.pid ?? null);
  }

  processes(): Promise<ProcessInfo[]> {
    return Promise.resolve(
      this.#host.processes.list().filter((p) => p.state !== "ended").map((p) =>
        p.info() as unknown as ProcessInfo
      ),
    );
  }

  async plugins(): Promise<string[]> {
    const names = new Set(await this.#host.world.plugins().catch(() => []));
    for (const native of this.#host.processes.natives()) names.add(native);
    return [...names].sort();
  }

  list(path: string): Promise<Listing> {
    try {
      return Promise.resolve(listPath(this.#files, path));
    } catch (e) {
      return Promise.reject(
        new ViewError(pathErrorText(path, e), e instanceof VfsError ? e.code : undefined),
      );
    }
  }

  read(path: string, limit: number = MAX_TEXT_BYTES): Promise<FileContent> {
    try {
      return Promise.resolve(readPath(this.#files, path, limit));
    } catch (e) {
      return Promise.reject(
        new ViewError(pathErrorText(path, e), e instanceof VfsError ? e.code : undefined),
      );
    }
  }

  names(folder: string): Promise<string[]> {
    return Promise.resolve(completionNames(this.#files, folder));
  }

  async version(plugin: string): Promise<string | null> {
    try {
      return (await this.#host.versions.current(plugin)).hash;
    } catch {
      return null;
    }
  }

  async discover(plugin: string): Promise<void> {
    const version = await this.#host.versions.current(plugin);
    await this.#host.discovery.discover(plugin, version);
  }

  follow(onEntry: (entry: Entry) => void): Promise<{ close(): void }> {
    const stop = this.#host.journal.follow(onEntry);
    this.#follows.add(stop);
    return Promise.resolve({
      close: () => {
        stop();
        this.#follows.delete(stop);
      },
    });
  }

  /** Stops what this view called that still runs (its answers have nowhere to go). */
  async close(why = "its caller (a front end) went away"): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const stop of this.#follows) stop();
    this.#follows.clear();
    this.#client.alive = false;
    this.#client.onNotification = undefined;
    const own = this.#host.processes.list().filter((p) =>
      p.parent === this.#client && p.state === "running"
    );
    await Promise.all(
      own.map((p) => this.#host.processes.stop(p, why)),
    );
  }
}

/** What {@linkcode watchPlugins} gives back. */
export interface PluginWatch {
  /** Looks now (after a front end's own activation, say); true when something changed. */
  check(): Promise<boolean>;
  /** Stops looking. */
  close(): void;
}

/**
 * Calls `onChange` when the world's plugins change: one added or removed, a
 * new version (an activation, a revert, a copy by hand), or a discovery that
 * finished or failed. It compares each plugin's `version` and `discovery` in
 * `/proc/core/graph.json` every `intervalMs`, through the view's own
 * {@linkcode HostView.read}, so it works the same in the host's process and
 * over the control endpoint. The graph is updated after a new version's
 * discovery, so a change is seen once its interface is known.
 *
 * @example
 * ```ts
 * declare const view: HostView; // a LocalHostView, or a ControlClient
 * const watch = watchPlugins(view, () => console.error("the plugins changed"));
 * // … later
 * watch.close();
 * ```
 */
export function watchPlugins(
  view: HostView,
  onChange: () => void,
  options: { intervalMs?: number } = {},
): PluginWatch {
  const intervalMs = options.intervalMs ?? 500;
  let last: string | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let closed = false;
  let running: Promise<boolean> | undefined;
  const look = async (): Promise<boolean> => {
    let now: string;
    try {
      const file = await view.read("/proc/core/graph.json", 64 * 1024 * 1024);
      const graph = JSON.parse(new TextDecoder().decode(file.bytes)) as {
        plugins?: Record<string, { version?: unknown; discovery?: unknown }>;
      };
      now = JSON.stringify(
        Object.entries(graph.plugins ?? {}).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0)
          .map(([name, p]) => [name, p.version ?? null, p.discovery ?? null]),
      );
    } catch {
      return false; // a host that went away ends the view; nothing to compare
    }
    const changed = last !== undefined && now !== last;
    last = now;
    if (changed && !closed) onChange();
    return changed;
  };
  // one look at a time, so two never report the same change
  const check = (): Promise<boolean> => {
    running = (running ?? Promise.resolve(false)).then(look, look);
    return running;
  };
  const schedule = () => {
    if (closed) return;
    const t = setTimeout(() => check().finally(schedule), intervalMs);
    Deno.unrefTimer(t); // the watch alone keeps no process alive
    timer = t;
  };
  check().finally(schedule);
  return {
    check,
    close() {
      closed = true;
      clearTimeout(timer);
    },
  };
}
