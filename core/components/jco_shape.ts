/**
 * jco's glue without jco, for a component of a shape it has seen.
 *
 * The glue jco writes for a component depends on the component's structure
 * (its imports and exports, how its core modules are instantiated and
 * linked, the canonical options of each lift and lower) and on the imports
 * and exports of its core modules, never on their code, data or types. Plugins
 * built with the same SDK share that shape, and so does every rebuild of one
 * plugin: the glue of the first transpile serves the next, and the core
 * modules are read out of the component directly. That saves jco's parse
 * and generation (about a third of a transpile, 330 ms of a 640 KB plugin).
 *
 * A glue is kept only after the modules read here were found byte for byte
 * equal to those jco wrote, in the same order; `jco_shape_test.ts` checks on
 * real components that one shape has one glue.
 *
 * @example
 * ```ts
 * import { JcoShapes } from "./jco_shape.ts";
 * const shapes = new JcoShapes();
 * const component = await Deno.readFile("notes.wasm");
 * const key = await shapes.keyOf(component);
 * console.log(key === undefined ? "no shape: nested components" : shapes.get(key));
 * ```
 *
 * @module
 */
import { sha256Hex } from "./format.ts";
import { concat, exportsOf, importsOf, Reader, SECTION, sections } from "./wasm_sections.ts";

/** Section IDs of a component that this reads. */
const COMPONENT = { custom: 0, coreModule: 1, component: 4 } as const;
/**
 * The custom sections that may shape the glue (jco may name what it writes
 * after them); others, such as `producers` or a tag, do not.
 */
const NAMES = new Set(["component-name", "name"]);
const COMPONENT_HEADER = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];

/** What jco made of a component, besides its core modules. */
export interface JcoGlue {
  /** The glue module, as jco wrote it. */
  js: string;
  /** The interfaces the component imports, as jco lists them. */
  imports: string[];
  /** The names the component exports, as jco lists them. */
  exports: string[];
}

/**
 * The core modules of a component in the order they appear, which is the
 * order of jco's files `<name>.core.wasm`, `<name>.core2.wasm`, ...;
 * undefined for a component that nests components with core modules (jco
 * numbers those in an order of its own).
 */
export function coreModulesOf(component: Uint8Array): Uint8Array[] | undefined {
  if (!COMPONENT_HEADER.every((b, i) => component[i] === b)) return undefined;
  const modules: Uint8Array[] = [];
  try {
    for (const s of sections(component)) {
      if (s.id === COMPONENT.component && holdsCoreModules(s.body)) return undefined;
      if (s.id === COMPONENT.coreModule) modules.push(s.body);
    }
  } catch {
    return undefined; // not well formed: jco says why
  }
  return modules;
}

/**
 * Whether a nested component holds core modules, at any depth. Those that
 * do not (wit-component nests one to give an export its type) change only
 * the glue, which the shape includes whole.
 */
function holdsCoreModules(component: Uint8Array): boolean {
  for (const s of sections(component)) {
    if (s.id === COMPONENT.coreModule) return true;
    if (s.id === COMPONENT.component && holdsCoreModules(s.body)) return true;
  }
  return false;
}

/**
 * The bytes jco's glue depends on: the component's own sections (of its
 * custom sections, only the names), and of each core module the names and
 * kinds of its imports and exports (their type and function indices change
 * with every edit of its code).
 */
export function shapeOf(component: Uint8Array): Uint8Array | undefined {
  if (!COMPONENT_HEADER.every((b, i) => component[i] === b)) return undefined;
  const parts: Uint8Array[] = [component.subarray(0, 8)];
  const encoder = new TextEncoder();
  try {
    for (const s of sections(component)) {
      if (s.id === COMPONENT.component && holdsCoreModules(s.body)) return undefined;
      if (s.id === COMPONENT.custom && !NAMES.has(customName(s.body))) continue;
      if (s.id !== COMPONENT.coreModule) {
        parts.push(component.subarray(s.start, s.end));
        continue;
      }
      const links: unknown[] = [];
      for (const inner of sections(s.body)) {
        if (inner.id === SECTION.import) links.push(importsOf(inner.body));
        if (inner.id === SECTION.export) links.push(exportsOf(inner.body));
      }
      parts.push(new Uint8Array([s.id]), encoder.encode(`${JSON.stringify(links)}\n`));
    }
  } catch {
    return undefined; // not well formed, outside or in a module: jco says why
  }
  return concat(parts);
}

/** The name of a custom section, from its contents; "" when it has none. */
function customName(body: Uint8Array): string {
  try {
    return new Reader(body).name();
  } catch {
    return "";
  }
}

/** jco's file name of the `i`th core module (from 0) of a component named `name`. */
export function coreModuleFile(name: string, i: number): string {
  return `${name}.core${i === 0 ? "" : i + 1}.wasm`;
}

/**
 * Whether jco's `files` are the glue and exactly the core modules of
 * `component`, read in order: only then may its glue serve the shape.
 */
export function modulesMatch(
  component: Uint8Array,
  name: string,
  files: Record<string, Uint8Array>,
): boolean {
  const modules = coreModulesOf(component);
  if (!modules) return false;
  const wasm = Object.keys(files).filter((f) => f.endsWith(".wasm"));
  if (wasm.length !== modules.length) return false;
  return modules.every((m, i) => {
    const file = files[coreModuleFile(name, i)];
    return file !== undefined && file.length === m.length && file.every((b, j) => b === m[j]);
  });
}

/** Most shapes kept; a host sees few (one per set of WASI imports its plugins use). */
const MAX_SHAPES = 16;

/** The glues of the shapes seen, by key; the least recently used goes first. */
export class JcoShapes {
  readonly #glues = new Map<string, JcoGlue>();

  /** The key of `component`'s shape; undefined when its glue cannot be reused. */
  async keyOf(component: Uint8Array): Promise<string | undefined> {
    const shape = shapeOf(component);
    if (!shape) return undefined;
    return await sha256Hex(shape);
  }

  /** The glue of a shape seen before. */
  get(key: string): JcoGlue | undefined {
    const glue = this.#glues.get(key);
    if (glue) {
      this.#glues.delete(key);
      this.#glues.set(key, glue);
    }
    return glue;
  }

  /** Keeps the glue of a shape. */
  set(key: string, glue: JcoGlue): void {
    this.#glues.delete(key);
    this.#glues.set(key, glue);
    if (this.#glues.size > MAX_SHAPES) this.#glues.delete(this.#glues.keys().next().value!);
  }
}
