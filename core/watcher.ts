/**
 * Watches `plugins/<name>/plugin.wasm`, so that a copy by hand is noticed without
 * a call: the new version is loaded (which starts its upgrade) at once.
 *
 * @module
 */
import { basename, dirname, relative } from "node:path";
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

  constructor(world: World, versions: PluginVersions, journal: Journal) {
    const watcher = Deno.watchFs(world.pluginsDir, { recursive: true });
    this.#watcher = watcher;
    this.#done = (async () => {
      for await (const event of watcher) {
        for (const path of event.paths) {
          if (basename(path) !== "plugin.wasm") continue;
          const plugin = basename(dirname(path));
          if (relative(world.pluginsDir, dirname(path)) !== plugin || !isPluginName(plugin)) {
            continue;
          }
          clearTimeout(this.#timers.get(plugin));
          this.#timers.set(
            plugin,
            setTimeout(() => {
              this.#timers.delete(plugin);
              this.#changed(plugin, world, versions, journal);
            }, SETTLE_MS),
          );
        }
      }
    })().catch(() => {});
  }

  async #changed(plugin: string, world: World, versions: PluginVersions, journal: Journal) {
    if (!(await world.hasPlugin(plugin))) {
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
