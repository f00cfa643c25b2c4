/**
 * The versions of plugins: which `plugin.wasm` is current, loaded and ready
 * to run. A version is the sha256 of the file.
 *
 * The file is checked (one `stat`) at each call, so a copy by hand takes
 * effect at the next call; a change is reported to {@linkcode onChange}.
 *
 * @module
 */
import type { ComponentCache, LoadedComponent } from "./components/cache.ts";
import { CORE, MAX_PLUGIN_NAME, pluginNameProblem } from "./names.ts";
import type { World } from "./world.ts";

interface Seen {
  mtime: number;
  size: number;
  component: LoadedComponent;
}

/** The current version of each plugin. */
export class PluginVersions {
  readonly #world: World;
  readonly #cache: ComponentCache;
  readonly #seen = new Map<string, Seen>();
  readonly #loading = new Map<string, Promise<LoadedComponent>>();
  /** Told when a plugin's current version is a new one (`previous` undefined the first time). */
  onChange?: (plugin: string, previous: string | undefined, next: LoadedComponent) => void;

  constructor(
    world: World,
    cache: ComponentCache,
    options: {
      onChange?: (plugin: string, previous: string | undefined, next: LoadedComponent) => void;
    } = {},
  ) {
    this.onChange = options.onChange;
    this.#world = world;
    this.#cache = cache;
  }

  /** The loaded component of `plugins/<plugin>/plugin.wasm` as it is now. */
  async current(plugin: string): Promise<LoadedComponent> {
    const path = this.#world.pluginWasm(plugin);
    // a stat on this thread (a few µs) costs a call less than a hop to the blocking pool
    const info = Deno.statSync(path);
    const mtime = info.mtime?.getTime() ?? 0;
    const seen = this.#seen.get(plugin);
    if (seen && seen.mtime === mtime && seen.size === info.size) return seen.component;
    const key = `${plugin}:${mtime}:${info.size}`;
    let loading = this.#loading.get(key);
    if (!loading) {
      loading = this.#load(plugin, path, mtime, info.size).finally(() => this.#loading.delete(key));
      this.#loading.set(key, loading);
    }
    return await loading;
  }

  /** The last version seen of a plugin, without looking at the file. */
  known(plugin: string): LoadedComponent | undefined {
    return this.#seen.get(plugin)?.component;
  }

  /** Loads any component (for example an activation's copy); `label` names it in errors. */
  async load(bytes: Uint8Array, label: string): Promise<LoadedComponent> {
    return await this.#cache.load(bytes, label);
  }

  /**
   * One warning for each folder of `plugins/` whose name is not a plugin
   * name: such a folder is never called, and without a word in the journal
   * nobody learns why. Hidden folders (`.git`) are not meant as plugins.
   */
  async folderWarnings(): Promise<string[]> {
    const warnings: string[] = [];
    try {
      for await (const e of Deno.readDir(this.#world.pluginsDir)) {
        if (!e.isDirectory || e.name.startsWith(".")) continue;
        const problem = pluginNameProblem(e.name);
        if (problem) warnings.push(folderWarning(e.name, problem));
      }
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    return warnings.sort();
  }

  /** Forgets a plugin whose file is gone. */
  forget(plugin: string): void {
    this.#seen.delete(plugin);
  }

  async #load(plugin: string, path: string, mtime: number, size: number): Promise<LoadedComponent> {
    const component = await this.#cache.load(
      await Deno.readFile(path),
      `plugins/${plugin}/plugin.wasm`,
    );
    const previous = this.#seen.get(plugin)?.component.hash;
    this.#seen.set(plugin, { mtime, size, component });
    if (previous !== component.hash) this.onChange?.(plugin, previous, component);
    return component;
  }
}

function folderWarning(name: string, problem: string): string {
  const suggestion = name.toLowerCase().replace(/[^a-z0-9_-]+/g, "-").slice(0, MAX_PLUGIN_NAME);
  const fix = suggestion !== name && pluginNameProblem(suggestion) === null
    ? `rename the folder, for example to plugins/${suggestion}`
    : `rename the folder: at most ${MAX_PLUGIN_NAME} characters of a-z, 0-9, "-" and "_", not "${CORE}"`;
  return `warning: the folder plugins/${name} is ignored: ${problem}; ${fix}`;
}
