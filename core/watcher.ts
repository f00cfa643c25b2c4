/**
 * Watches `plugins/<name>/plugin.wasm`, so that a copy by hand is noticed without
 * a call: the new version is loaded (which starts its upgrade) at once.
 *
 * @module
 */
import { relative, sep as SEPARATOR } from "node:path";
import type { Journal } from "./journal.ts";
import { isPluginName } from "./names.ts";
import type { PluginVersions } from "./versions.ts";
import type { World } from "./world.ts";

/** Events of one file are taken together after this quiet time (a copy writes in pieces). */
const SETTLE_MS = 150;

/** The watcher of a world's plugin files. */
export class PluginWatcher {
  readonly #watcher: Deno.FsWatcher;
  readonly #timers = new Map<string, ReturnType<typeof setTimeout>>();
  readonly #done: Promise<void>;

  /** `onChanged` runs after each change has been looked at (for the graph). */
  constructor(
    world: World,
    versions: PluginVersions,
    journal: Journal,
    onChanged: (plugin: string) => void = () => {},
  ) {
    const watcher = Deno.watchFs(world.pluginsDir, { recursive: true });
    this.#watcher = watcher;
    this.#done = (async () => {
      for await (const event of watcher) {
        for (const path of event.paths) {
          // plugins/<name>/plugin.wasm, or plugins/<name> itself: a folder removed or renamed
          // whole may be reported without its files
          const parts = relative(world.pluginsDir, path).split(SEPARATOR);
          const plugin = parts[0];
          const concerns = parts.length === 1 || (parts.length === 2 && parts[1] === "plugin.wasm");
          if (!concerns || !isPluginName(plugin)) continue;
          clearTimeout(this.#timers.get(plugin));
          this.#timers.set(
            plugin,
            setTimeout(() => {
              this.#timers.delete(plugin);
              this.#changed(plugin, world, versions, journal).finally(() => onChanged(plugin));
            }, SETTLE_MS),
          );
        }
      }
    })().catch(() => {});
  }

  async #changed(plugin: string, world: World, versions: PluginVersions, journal: Journal) {
    if (!(await world.hasPlugin(plugin))) {
      // a new folder, or one being filled, had no version to lose
      if (versions.known(plugin) === undefined) return;
      versions.forget(plugin);
      journal.event(null, plugin, `plugins/${plugin}/plugin.wasm was removed`);
      return;
    }
    try {
      await versions.current(plugin);
    } catch (e) {
      journal.event(
        null,
        plugin,
        `plugins/${plugin}/plugin.wasm changed and cannot be loaded: ${(e as Error).message}`,
      );
    }
  }

  /** Stops watching. */
  async close(): Promise<void> {
    for (const t of this.#timers.values()) clearTimeout(t);
    this.#watcher.close();
    await this.#done;
  }
}
