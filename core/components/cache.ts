/**
 * The component cache: transpiled and instrumented plugins, kept by the
 * sha256 of their `plugin.wasm` in `$XDG_CACHE_HOME/sausage/` (or
 * `~/.cache/sausage/`, or `--cache-dir`), shared by all worlds.
 *
 * A cache entry is a folder written under a temporary name and renamed into
 * place, so a crash or a second host never sees half an entry.
 *
 * @module
 */
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { PROVIDED_INTERFACES } from "../../runtime/wasi/provided.ts";
import {
  ComponentError,
  componentImportNames,
  sha256Hex,
  type TranspiledComponent,
  TRANSPILER_FINGERPRINT,
} from "./format.ts";
import { Transpiler } from "./transpile_thread.ts";

export { sha256Hex };
import { capMemory, memoryCap } from "./memory_cap.ts";
import type { ProcessLimits } from "../../runtime/messages.ts";

/** The cache folder: `override`, else `$XDG_CACHE_HOME/sausage`, else `~/.cache/sausage`. */
export function resolveCacheDir(override?: string): string {
  // absolute: cargo.build hands paths in it to cargo, which runs in another folder
  if (override) return resolve(override);
  const xdg = Deno.env.get("XDG_CACHE_HOME");
  if (xdg) return join(xdg, "sausage");
  const home = Deno.env.get("HOME") ?? Deno.env.get("USERPROFILE");
  if (!home) {
    throw new Error("cannot find a cache folder: set HOME or XDG_CACHE_HOME, or pass --cache-dir");
  }
  return join(home, ".cache", "sausage");
}

/** A component ready to run: glue source and compiled core modules. */
export interface LoadedComponent {
  /** sha256 of the component bytes, hex. The version of a plugin. */
  hash: string;
  /** The jco glue module source. */
  js: string;
  /** Compiled, instrumented core modules by file name. */
  modules: Record<string, WebAssembly.Module>;
  /** Imported interfaces, e.g. `wasi:cli/stdout`. */
  imports: string[];
  /**
   * The glue as a file in the cache, when it is there: importing a file lets
   * the runtime keep its compiled code between workers and runs (a `blob:`
   * import compiles it every time).
   */
  jsUrl?: string;
  /**
   * The limits its processes run under: `memoryMib` is already the maximum
   * of its memories. None in a cache without limits (`sausage run`).
   */
  limits?: ProcessLimits;
}

interface EntryMeta {
  fingerprint: string;
  imports: string[];
  exports: string[];
  modules: string[];
  loops: number;
}

/**
 * The versions of the WASI interfaces Sausage provides: any 0.2 release (the
 * component model treats 0.2.x as compatible; 0.3 and others are not).
 */
const PROVIDED_VERSION = /^0\.2\.\d+$/;

/**
 * Checks that every interface a component imports is one Sausage provides,
 * in a version it provides.
 *
 * @example
 * ```ts
 * checkImports(["wasi:cli/environment@0.2.6"], "plugins/notes/plugin.wasm"); // passes
 * checkImports(["wasi:cli/environment@9.2.6"], "plugins/notes/plugin.wasm"); // throws
 * ```
 */
export function checkImports(imports: string[], name: string): void {
  const missing = imports.filter((i) => !PROVIDED_INTERFACES.has(i.replace(/@.*$/, "")));
  if (missing.length > 0) {
    throw new ComponentError(
      `${name} imports ${missing.join(", ")}, which Sausage does not provide. ` +
        `A plugin may import: ${[...PROVIDED_INTERFACES].sort().join(", ")}.`,
    );
  }
  // the glue binds an import by its name alone, so a version Sausage does not implement would run
  const wrong = imports.filter((i) => i.includes("@") && !PROVIDED_VERSION.test(i.split("@")[1]));
  if (wrong.length > 0) {
    throw new ComponentError(
      `${name} imports ${wrong.join(", ")}, a version Sausage does not provide: ` +
        `it provides the WASI 0.2 interfaces, versions 0.2.x (such as ` +
        `${wrong[0].replace(/@.*$/, "")}@0.2.6).`,
    );
  }
}

/** Loads components from the cache, transpiling on a miss. */
export class ComponentCache {
  readonly dir: string;
  readonly #inFlight = new Map<string, Promise<LoadedComponent>>();
  readonly #loaded = new Map<string, LoadedComponent>();
  readonly #transpiler = new Transpiler();
  /** Told about problems that do not stop a load (a cache that cannot be written). */
  onWarning?: (message: string) => void;
  /** Told when a component must be transpiled (it takes a moment, once per version). */
  onTranspile?: (name: string) => void;
  #limits: ProcessLimits | undefined;

  constructor(
    dir: string,
    options: {
      onWarning?: (message: string) => void;
      onTranspile?: (name: string) => void;
      limits?: ProcessLimits;
    } = {},
  ) {
    this.dir = dir;
    this.onWarning = options.onWarning;
    this.onTranspile = options.onTranspile;
    this.#limits = options.limits ? { ...options.limits } : undefined;
  }

  /**
   * The limits of the processes of the components it loads (PROTOCOL
   * 3.10). The memory cap is applied when a module is compiled, not when it
   * is transpiled, so the entries on disk do not depend on it; a change
   * compiles the components again at their next load. Set it before the
   * first load.
   */
  get limits(): ProcessLimits | undefined {
    return this.#limits;
  }
  set limits(limits: ProcessLimits | undefined) {
    const same = limits?.memoryMib === this.#limits?.memoryMib &&
      limits?.stdinMib === this.#limits?.stdinMib;
    if (!same) this.#loaded.clear();
    this.#limits = limits ? { ...limits } : undefined;
  }

  /** The component for `bytes`; `name` labels errors (e.g. `plugins/notes/plugin.wasm`). */
  async load(bytes: Uint8Array, name: string): Promise<LoadedComponent> {
    const hash = await sha256Hex(bytes);
    const known = this.#loaded.get(hash);
    if (known) return known;
    let pending = this.#inFlight.get(hash);
    if (!pending) {
      pending = this.#load(hash, bytes, name).finally(() => this.#inFlight.delete(hash));
      this.#inFlight.set(hash, pending);
    }
    return await pending;
  }

  /** Stops the transpiler worker, if one runs. */
  close(): void {
    this.#transpiler.close();
  }

  /** Forgets compiled modules of a version no process uses any more. */
  forget(hash: string): void {
    this.#loaded.delete(hash);
  }

  async #load(hash: string, bytes: Uint8Array, name: string): Promise<LoadedComponent> {
    const entryDir = join(this.dir, "components", hash);
    let component = await this.#read(entryDir);
    let stored = component !== null;
    // the last use, for `sausage cache gc` and the limit (cache_gc.ts): once per load of a host
    if (stored) await markUsed(entryDir);
    if (!component) {
      this.onTranspile?.(name);
      const transpiled = await this.#transpiler.transpile(bytes, name);
      checkImports(transpiled.imports, name);
      try {
        await this.#write(entryDir, transpiled);
        stored = true;
      } catch (e) {
        // a full disk or a read-only cache costs speed, not correctness
        this.onWarning?.(`cannot write the component cache in ${entryDir}: ${e}`);
      }
      component = transpiled;
    }
    // the binary's names carry the versions, which jco's list drops
    checkImports(componentImportNames(bytes) ?? component.imports, name);
    const modules: Record<string, WebAssembly.Module> = {};
    const limits = this.#limits;
    const cap = limits && memoryCap(limits.memoryMib);
    for (const [file, content] of Object.entries(component.modules)) {
      let bytes = content;
      try {
        if (cap) bytes = capMemory(content, cap);
      } catch (e) {
        throw new ComponentError(
          `${name}: cannot set the memory limit of its module ${file}: ${(e as Error).message}`,
        );
      }
      modules[file] = await WebAssembly.compile(bytes as Uint8Array<ArrayBuffer>);
    }
    const loaded: LoadedComponent = {
      hash,
      js: component.js,
      modules,
      imports: component.imports,
      jsUrl: stored ? pathToFileURL(join(entryDir, "plugin.js")).href : undefined,
      limits,
    };
    this.#loaded.set(hash, loaded);
    return loaded;
  }

  async #read(entryDir: string): Promise<TranspiledComponent | null> {
    let meta: EntryMeta;
    try {
      meta = JSON.parse(await Deno.readTextFile(join(entryDir, "meta.json")));
    } catch {
      return null;
    }
    if (meta.fingerprint !== TRANSPILER_FINGERPRINT) return null;
    try {
      const js = await Deno.readTextFile(join(entryDir, "plugin.js"));
      const modules: Record<string, Uint8Array> = {};
      for (const file of meta.modules) modules[file] = await Deno.readFile(join(entryDir, file));
      return { js, modules, imports: meta.imports, exports: meta.exports, loops: meta.loops };
    } catch {
      return null; // a damaged entry: transpile again
    }
  }

  async #write(entryDir: string, c: TranspiledComponent): Promise<void> {
    const parent = join(this.dir, "components");
    await Deno.mkdir(parent, { recursive: true });
    const tmp = await Deno.makeTempDir({ dir: parent, prefix: ".tmp-" });
    try {
      await Deno.writeTextFile(join(tmp, "plugin.js"), c.js);
      for (const [file, content] of Object.entries(c.modules)) {
        await Deno.writeFile(join(tmp, file), content);
      }
      const meta: EntryMeta = {
        fingerprint: TRANSPILER_FINGERPRINT,
        imports: c.imports,
        exports: c.exports,
        modules: Object.keys(c.modules),
        loops: c.loops,
      };
      // meta.json last: an entry without it is never read
      await Deno.writeTextFile(join(tmp, "meta.json"), JSON.stringify(meta, null, 2));
      await Deno.remove(entryDir, { recursive: true }).catch(() => {});
      await Deno.rename(tmp, entryDir);
    } catch (e) {
      await Deno.remove(tmp, { recursive: true }).catch(() => {});
      // another host may have written the same entry first: that one is as good
      if (!(await this.#read(entryDir))) throw e;
    }
  }
}

/** The file whose mtime is an entry's last use (its `meta.json` tells when it was written). */
export const USED_MARKER = ".used";

/** Marks an entry as used now; a read-only cache keeps the old time. */
async function markUsed(entryDir: string): Promise<void> {
  await Deno.writeTextFile(join(entryDir, USED_MARKER), "").catch(() => {});
}
