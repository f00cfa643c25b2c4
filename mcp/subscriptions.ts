/**
 * `resources/subscribe` (PROTOCOL section 13.1): a client names world files
 * it wants to hear about, and gets `notifications/resources/updated` when
 * one changes, appears or goes. A file is compared by its size and time of
 * change at each look, as a process would see them (a stat, no read: a
 * client may watch 100 files of 8 MiB each).
 *
 * @module
 */
import type { HostView } from "../core/host_view.ts";
import { pathOf } from "./resources.ts";

/** Subscriptions one client may hold; one more is refused. */
export const MAX_SUBSCRIPTIONS = 100;
/** How often subscribed files are compared (ms). */
export const SUBSCRIPTION_INTERVAL_MS = 1000;

/**
 * The subscriptions of one client.
 *
 * @example
 * ```ts
 * import type { HostView } from "../core/host_view.ts";
 * declare const view: HostView;
 * const subs = new Subscriptions(view, (uri) => console.log(`${uri} changed`));
 * await subs.add("sausage:///state/notes/notes.json");
 * subs.close();
 * ```
 */
export class Subscriptions {
  readonly #view: HostView;
  readonly #onUpdated: (uri: string) => void;
  readonly #intervalMs: number;
  /** URI → what the file was at the last look (`missing`, or a size and hash). */
  readonly #seen = new Map<string, string>();
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;

  constructor(
    view: HostView,
    onUpdated: (uri: string) => void,
    intervalMs = SUBSCRIPTION_INTERVAL_MS,
  ) {
    this.#view = view;
    this.#onUpdated = onUpdated;
    this.#intervalMs = intervalMs;
  }

  /** How many URIs are watched. */
  get size(): number {
    return this.#seen.size;
  }

  /** Watches `uri` (a `sausage:///` path; it need not exist yet). Throws for another URI. */
  async add(uri: string): Promise<void> {
    pathOf(uri); // a ResourceError for a URI that is not a world path
    if (this.#seen.has(uri)) return;
    if (this.#seen.size >= MAX_SUBSCRIPTIONS) {
      throw new RangeError(
        `a client holds at most ${MAX_SUBSCRIPTIONS} subscriptions: unsubscribe from one first`,
      );
    }
    this.#seen.set(uri, await this.#state(uri));
    this.#schedule();
  }

  /** Stops watching `uri`. */
  remove(uri: string): void {
    this.#seen.delete(uri);
  }

  /** Stops every look. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#seen.clear();
  }

  #schedule(): void {
    if (this.#timer !== undefined || this.#closed) return;
    this.#timer = setTimeout(async () => {
      this.#timer = undefined;
      for (const [uri, before] of [...this.#seen]) {
        const now = await this.#state(uri);
        if (this.#closed || !this.#seen.has(uri)) continue;
        if (now !== before) {
          this.#seen.set(uri, now);
          this.#onUpdated(uri);
        }
      }
      if (this.#seen.size > 0) this.#schedule();
    }, this.#intervalMs);
  }

  async #state(uri: string): Promise<string> {
    const path = pathOf(uri);
    try {
      const listing = await this.#view.list(path);
      if (listing.folder) {
        return "folder " + JSON.stringify(listing.entries.map((e) => [e.name, e.size, e.mtimeMs]));
      }
      const [file] = listing.entries;
      return `file ${file?.size} ${file?.mtimeMs}`;
    } catch {
      return "missing";
    }
  }
}

/**
 * Completes the `path` argument of the template `sausage:///{+path}`: the
 * names in the folder of what was typed, that start with its last part.
 *
 * @example
 * ```ts
 * import type { HostView } from "../core/host_view.ts";
 * declare const view: HostView;
 * await completePath(view, "/sta"); // ["/state/"]
 * ```
 */
export async function completePath(view: HostView, typed: string): Promise<string[]> {
  const value = typed.startsWith("/") ? typed : `/${typed}`;
  const cut = value.lastIndexOf("/");
  const folder = value.slice(0, cut) || "/";
  const start = value.slice(cut + 1);
  const names = await view.names(folder);
  const prefix = folder === "/" ? "/" : `${folder}/`;
  return names.filter((n) => n.startsWith(start)).sort().slice(0, 100).map((n) => prefix + n);
}
