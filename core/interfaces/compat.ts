/**
 * The compatibility check of PROTOCOL section 10.2 over `rpc.discover`
 * documents (OpenRPC 1.2, plain JSON values).
 *
 * For each method a consumer imports (its `x-sausage-imports.<provider>`
 * entry, the provider's document as the consumer saw it), and for each
 * method of an imported endpoint interface (`x-sausage-endpoints`):
 *
 * 1. the provider has the method;
 * 2. every params value the consumer can send is valid for the provider:
 *    consumer params ⊆ provider params;
 * 3. every result the provider can return is valid for the consumer:
 *    provider result ⊆ consumer result.
 *
 * Params are by name. The params object of a method is the schema that
 * `x-sausage-params` points to, or else the object that its `params` list
 * describes (each name, schema, and `required`). The writing side of each
 * comparison reads its objects closed (see {@linkcode Unlisted}), so a
 * provider can add optional params and result fields.
 *
 * A `$ref` in an import entry resolves against the entry (it is a part of
 * the provider's document), then against the consumer's whole document.
 *
 * Documents are treated as immutable: the normalized schemas of each
 * document object are kept (in a WeakMap) for the next check.
 *
 * @example
 * ```ts
 * import { checkWorld } from "./compat.ts";
 * const notes = { methods: [{ name: "add", params: [{ name: "body", required: true, schema: { type: "string" } }],
 *   result: { name: "count", schema: { type: "integer" } } }] };
 * const agent = { methods: [], "x-sausage-imports": { notes: { methods: [{ name: "add",
 *   params: [{ name: "text", required: true, schema: { type: "string" } }],
 *   result: { name: "count", schema: { type: "integer" } } }] } } };
 * const world = checkWorld({ notes, agent });
 * // world.imports[0].status === "broken"; its problem's counterexample is {"text": "a"}
 * ```
 *
 * @module
 */

import { problemText } from "./report.ts";
import {
  ANY,
  outsideOf,
  type OutsideSubset,
  SchemaSpace,
  type Shape,
  type Unlisted,
} from "./schema.ts";
import type { ImportResult, ImportStatus, Problem, ProblemOutside } from "./problems.ts";
import { SubsetChecker } from "./subset.ts";
import { describe } from "./values.ts";

/**
 * An OpenRPC content descriptor: one param, or a result.
 *
 * @example
 * ```ts
 * const port: ContentDescriptor = { name: "port", required: true, schema: { type: "integer", format: "uint16" } };
 * ```
 */
export interface ContentDescriptor {
  name?: string;
  schema?: unknown;
  /** Params only; OpenRPC's default is false. */
  required?: boolean;
  [key: string]: unknown;
}

/**
 * An OpenRPC method.
 *
 * @example
 * ```ts
 * const add: MethodObject = {
 *   name: "add",
 *   params: [{ name: "text", required: true, schema: { type: "string" } }],
 *   result: { name: "added", schema: { $ref: "#/components/schemas/Added" } },
 * };
 * ```
 */
export interface MethodObject {
  name: string;
  /** Content descriptors (or `$ref`s to them). */
  params?: unknown[];
  result?: unknown;
  /** A `$ref` to the schema of the params object; preferred to `params` when present. */
  "x-sausage-params"?: unknown;
  [key: string]: unknown;
}

/**
 * A set of methods with the schemas they refer to.
 *
 * @example
 * ```ts
 * const control: InterfaceDocument = { methods: [{ name: "stats", params: [], result: { name: "hits", schema: { type: "integer" } } }] };
 * ```
 */
export interface InterfaceDocument {
  methods?: unknown[];
  components?: { schemas?: Record<string, unknown>; [key: string]: unknown };
  [key: string]: unknown;
}

/**
 * An `rpc.discover` document, or the part of one that a consumer imports
 * (`x-sausage-imports.<provider>` has the same form).
 *
 * @example
 * ```ts
 * const agent: OpenRpcDocument = {
 *   openrpc: "1.2.6",
 *   info: { title: "agent", version: "0.1.0" },
 *   methods: [],
 *   "x-sausage-imports": { notes: { methods: [{ name: "list", params: [] }] } },
 * };
 * ```
 */
export interface OpenRpcDocument extends InterfaceDocument {
  openrpc?: string;
  info?: { title?: string; version?: string; [key: string]: unknown };
  /** The endpoint interfaces by name, each with its methods. */
  "x-sausage-endpoints"?: Record<string, InterfaceDocument>;
  /** For each provider, the part of its document that this plugin uses. */
  "x-sausage-imports"?: Record<string, OpenRpcDocument>;
  /** The grace period in seconds. */
  "x-sausage-grace"?: number;
}

/**
 * The result of checking one import.
 *
 * @example
 * ```ts
 * declare const entry: OpenRpcDocument; // the consumer's `x-sausage-imports.notes`
 * declare const provider: OpenRpcDocument; // the provider's current document
 * const { ok, methods, problems } = checkImport(entry, provider);
 * ```
 */
export interface ImportCheck {
  ok: boolean;
  /** The imported methods: `add`, and `control.stats` for an endpoint interface. */
  methods: string[];
  problems: Problem[];
}

/**
 * Options of {@linkcode checkImport}.
 *
 * @example
 * ```ts
 * declare const agent: OpenRpcDocument; // the consumer's whole document
 * declare const notes: OpenRpcDocument; // the provider's current document
 * checkImport(agent["x-sausage-imports"]?.notes, notes, {
 *   consumer: "agent",
 *   provider: "notes",
 *   consumerDocument: agent,
 *   importPath: "#/x-sausage-imports/notes",
 * });
 * ```
 */
export interface CheckImportOptions {
  /** The consumer's name, for messages (default `the consumer`). */
  consumer?: string;
  /** The provider's name (default: the provider's `info.title`, or `the provider`). */
  provider?: string;
  /** The consumer's whole document: the second place where `$ref`s of the import resolve. */
  consumerDocument?: unknown;
  /** The pointer of the import entry in the consumer's document, for paths in messages. */
  importPath?: string;
  /** How a writer's objects without `additionalProperties` are read (default `"closed"`). */
  unlisted?: Unlisted;
}

type Json = Record<string, unknown>;

function isObject(x: unknown): x is Json {
  return typeof x === "object" && x !== null && !Array.isArray(x);
}

function pointerSegment(s: string | number): string {
  return "/" + String(s).replaceAll("~", "~0").replaceAll("/", "~1");
}

interface MethodShapes {
  params: Shape;
  result: Shape | undefined;
  paramsOutside: OutsideSubset[];
  resultOutside: OutsideSubset[];
}

interface MethodEntry {
  method: Json;
  path: string;
  shapes?: MethodShapes;
}

/** The methods of a document by interface, and their shapes, computed once. */
class DocumentIndex {
  readonly space: SchemaSpace;
  readonly base: string;
  readonly fallback: unknown;
  readonly #doc: Json;
  readonly #interfaces = new Map<string | null, Map<string, MethodEntry> | undefined>();

  constructor(doc: unknown, base: string, fallback?: unknown) {
    this.#doc = isObject(doc) ? doc : {};
    this.base = base;
    this.fallback = fallback;
    this.space = new SchemaSpace(doc, { base, fallback });
  }

  /** The methods of the main interface (null) or of an endpoint interface; undefined when there is no such interface. */
  methods(endpoint: string | null): Map<string, MethodEntry> | undefined {
    if (this.#interfaces.has(endpoint)) return this.#interfaces.get(endpoint);
    let list: unknown, path: string;
    if (endpoint === null) {
      list = this.#doc.methods ?? [];
      path = `${this.base}/methods`;
    } else {
      const endpoints = this.#doc["x-sausage-endpoints"];
      const iface = isObject(endpoints) && Object.hasOwn(endpoints, endpoint)
        ? endpoints[endpoint]
        : undefined;
      list = isObject(iface) ? iface.methods ?? [] : undefined;
      path = `${this.base}/x-sausage-endpoints${pointerSegment(endpoint)}/methods`;
    }
    let methods: Map<string, MethodEntry> | undefined;
    if (Array.isArray(list)) {
      methods = new Map();
      list.forEach((m, i) => {
        let method: unknown = m, at = path + pointerSegment(i);
        if (isObject(m) && typeof m.$ref === "string") {
          const found = this.space.resolve(m.$ref);
          if (found) [method, at] = [found.value, found.path];
        }
        if (isObject(method) && typeof method.name === "string" && !methods!.has(method.name)) {
          methods!.set(method.name, { method, path: at });
        }
      });
    }
    this.#interfaces.set(endpoint, methods);
    return methods;
  }

  /** The params and result shapes of a method. */
  shapes(entry: MethodEntry): MethodShapes {
    if (entry.shapes) return entry.shapes;
    const { method, path } = entry;
    const errors: OutsideSubset[] = [];
    let params: Shape;
    if (method["x-sausage-params"] !== undefined) {
      params = this.space.shape(method["x-sausage-params"], `${path}/x-sausage-params`);
    } else {
      const list = Array.isArray(method.params) ? method.params : [];
      const entries: { name: string; schema: unknown; required: boolean; path: string }[] = [];
      list.forEach((p, i) => {
        const cd = this.#descriptor(p, `${path}/params/${i}`);
        if (!cd || typeof cd.value.name !== "string") {
          errors.push({
            construct: "params",
            path: cd?.path ?? `${path}/params/${i}`,
            detail: "not a content descriptor with a name",
          });
          return;
        }
        entries.push({
          name: cd.value.name,
          schema: cd.value.schema ?? true,
          required: cd.value.required === true,
          path: `${cd.path}/schema`,
        });
      });
      params = this.space.objectShape(entries);
    }
    let result: Shape | undefined;
    if (method.result !== undefined) {
      const cd = this.#descriptor(method.result, `${path}/result`);
      result = cd
        ? this.space.shape(cd.value.schema ?? true, `${cd.path}/schema`)
        : { ...ANY, outside: [{ construct: "result", path, detail: "not a content descriptor" }] };
    }
    entry.shapes = {
      params,
      result,
      paramsOutside: [...errors, ...outsideOf(params)],
      resultOutside: result ? outsideOf(result) : [],
    };
    return entry.shapes;
  }

  #descriptor(value: unknown, path: string): { value: Json; path: string } | undefined {
    if (isObject(value) && typeof value.$ref === "string") {
      const found = this.space.resolve(value.$ref);
      return found && isObject(found.value) ? { value: found.value, path: found.path } : undefined;
    }
    return isObject(value) ? { value, path } : undefined;
  }
}

const INDEXES = new WeakMap<object, DocumentIndex[]>();

/** The index of a document, kept while the document lives (for the same base and fallback). */
function indexOf(doc: unknown, base: string, fallback?: unknown): DocumentIndex {
  if (!isObject(doc)) return new DocumentIndex(doc, base, fallback);
  let list = INDEXES.get(doc);
  if (!list) INDEXES.set(doc, list = []);
  let index = list.find((i) => i.base === base && i.fallback === fallback);
  if (!index) list.push(index = new DocumentIndex(doc, base, fallback));
  return index;
}

/** The endpoint interfaces of an import entry. */
function endpointsOf(doc: unknown): string[] {
  const e = isObject(doc) ? doc["x-sausage-endpoints"] : undefined;
  return isObject(e) ? Object.keys(e) : [];
}

/**
 * The signature of an imported method: `notes.add(text: string, tags?: string[]) -> Added`.
 */
function signature(label: string, shapes: MethodShapes): string {
  const part = shapes.params.object;
  const params = part
    ? [...part.properties].map(([k, s]) =>
      `${k}${part.required.has(k) ? "" : "?"}: ${describe(s, { depth: 1 })}`
    ).join(", ")
    : describe(shapes.params);
  const result = shapes.result ? ` -> ${describe(shapes.result)}` : "";
  return `${label}(${params})${result}`;
}

/**
 * `notes.add`, or `www.control.stats` for a method of an endpoint interface.
 *
 * @example
 * ```ts
 * methodLabel("www", "control", "stats"); // "www.control.stats"
 * methodLabel("notes", null, "add"); // "notes.add"
 * ```
 */
export function methodLabel(provider: string, endpoint: string | null, method: string): string {
  return `${provider}.${endpoint === null ? "" : `${endpoint}.`}${method}`;
}

/**
 * Checks one import: the methods of `imported` (a consumer's
 * `x-sausage-imports.<provider>` entry) against the provider's current
 * document.
 *
 * @example
 * ```ts
 * const provider = { methods: [{ name: "list", result: { name: "notes", schema: { type: "array", items: { type: "string" } } } }] };
 * const imported = { methods: [{ name: "list", result: { name: "notes", schema: { type: "array", items: { type: ["string", "null"] } } } }] };
 * checkImport(imported, provider, { consumer: "agent", provider: "notes" }).ok; // true
 * ```
 */
export function checkImport(
  imported: unknown,
  provider: unknown,
  options: CheckImportOptions = {},
): ImportCheck {
  const consumerName = options.consumer ?? "the consumer";
  const title = isObject(provider) && isObject(provider.info) ? provider.info.title : undefined;
  const providerName = options.provider ?? (typeof title === "string" ? title : "the provider");
  const mine = indexOf(imported, options.importPath ?? "#", options.consumerDocument);
  const theirs = indexOf(provider, "#");
  const checker = new SubsetChecker(options.unlisted ?? "closed");
  const problems: Problem[] = [];
  const methods: string[] = [];
  const add = (p: Omit<Problem, "text" | "consumer" | "provider">) => {
    const { kind, ...rest } = p;
    const problem: Problem = {
      kind,
      consumer: consumerName,
      provider: providerName,
      ...rest,
      text: "",
    };
    problem.text = problemText(problem);
    problems.push(problem);
  };
  for (const endpoint of [null, ...endpointsOf(imported)]) {
    const wanted = mine.methods(endpoint);
    if (!wanted) continue;
    const offered = theirs.methods(endpoint);
    for (const name of wanted.keys()) {
      methods.push(endpoint === null ? name : `${endpoint}.${name}`);
    }
    if (!offered) {
      add({
        kind: "missing-endpoint",
        endpoint,
        method: null,
        signature: `${providerName}.${endpoint}`,
      });
      continue;
    }
    for (const [name, entry] of wanted) {
      let part: "params" | "result" = "params";
      const checkMethod = () => {
        const consumerShapes = mine.shapes(entry);
        const base = {
          endpoint,
          method: name,
          // described only when a problem is spread from it
          get signature() {
            return signature(methodLabel(providerName, endpoint, name), consumerShapes);
          },
        };
        const other = offered.get(name);
        if (!other) {
          add({ ...base, kind: "missing-method" });
          return;
        }
        const providerShapes = theirs.shapes(other);
        const outside = (part: "params" | "result", c: OutsideSubset[], p: OutsideSubset[]) => {
          if (c.length + p.length === 0) return false;
          const all: ProblemOutside[] = [
            ...c.map((o) => ({ ...o, side: "consumer" as const })),
            ...p.map((o) => ({ ...o, side: "provider" as const })),
          ];
          add({ ...base, kind: "outside-subset", part, outside: all });
          return true;
        };
        if (!outside("params", consumerShapes.paramsOutside, providerShapes.paramsOutside)) {
          const c = checker.find(consumerShapes.params, providerShapes.params);
          if (c) {
            add({
              ...base,
              kind: "params",
              part: "params",
              counterexample: c.value,
              reason: c.reason,
            });
          }
        }
        part = "result";
        if (consumerShapes.result === undefined) return; // the consumer reads no result
        const providerResult = providerShapes.result ?? ANY;
        if (!outside("result", consumerShapes.resultOutside, providerShapes.resultOutside)) {
          const c = checker.find(providerResult, consumerShapes.result);
          if (c) {
            add({
              ...base,
              kind: "result",
              part: "result",
              counterexample: c.value,
              reason: c.reason,
            });
          }
        }
      };
      try {
        checkMethod();
      } catch (e) {
        // normalizing and comparing recurse once per level of a schema
        if (!(e instanceof RangeError)) throw e;
        add({
          endpoint,
          method: name,
          signature: methodLabel(providerName, endpoint, name),
          kind: "outside-subset",
          part,
          outside: [{
            construct: "nesting",
            path: entry.path,
            detail: "its schemas nest too deeply to be checked",
            side: "consumer",
          }],
        });
      }
    }
  }
  return { ok: problems.length === 0, methods, problems };
}

/**
 * A plugin whose discovery failed, with the reason.
 *
 * @example
 * ```ts
 * declare const agent: OpenRpcDocument;
 * checkWorld({ agent, www: { unavailable: "no answer to rpc.discover within 10 s" } });
 * ```
 */
export interface Unavailable {
  unavailable: string;
}

/**
 * What `checkWorld` knows of a plugin: its document, or that it is unavailable.
 *
 * @example
 * ```ts
 * declare const notes: OpenRpcDocument;
 * declare const agent: OpenRpcDocument;
 * const entries: Record<string, WorldEntry> = { notes, agent, www: "unavailable" };
 * ```
 */
export type WorldEntry = OpenRpcDocument | Unavailable | "unavailable";

/**
 * Every import of every plugin.
 *
 * @example
 * ```ts
 * declare const documents: Record<string, WorldEntry>; // every plugin's, by name
 * const { imports, counts } = checkWorld(documents);
 * // counts is e.g. { ok: 148, broken: 1, missing: 1, unavailable: 0 }
 * ```
 */
export interface WorldCheck {
  /** Ordered by consumer, then provider. */
  imports: ImportResult[];
  /** How many imports have each status. */
  counts: Record<ImportStatus, number>;
}

/**
 * Options of {@linkcode checkWorld}.
 *
 * @example
 * ```ts
 * declare const current: Record<string, WorldEntry>; // every plugin's document, by name
 * declare const newNotes: OpenRpcDocument; // the document of the notes to activate
 * checkWorld({ ...current, notes: newNotes }, { only: ["notes"] });
 * ```
 */
export interface CheckWorldOptions {
  /** Check only the imports of these plugins and the imports of them (an activation). */
  only?: Iterable<string>;
  /** How a writer's objects without `additionalProperties` are read (default `"closed"`). */
  unlisted?: Unlisted;
}

function unavailableReason(entry: WorldEntry): string | undefined {
  if (entry === "unavailable") return "its discovery failed";
  if (isObject(entry) && typeof entry.unavailable === "string") return entry.unavailable;
  return undefined;
}

/**
 * The result of every import of every plugin, given the current documents
 * of all plugins by name. A plugin that is not in `documents` is missing; a
 * plugin whose entry is `"unavailable"` or `{ unavailable: reason }` is
 * unavailable (its own imports are unknown, and nobody's import of it can
 * be checked). This is what `/proc/core/graph.json` shows.
 *
 * @example
 * ```ts
 * declare const agentDoc: OpenRpcDocument;
 * declare const notesDoc: OpenRpcDocument;
 * const world = checkWorld({ agent: agentDoc, notes: notesDoc, www: "unavailable" });
 * for (const i of world.imports) console.log(i.consumer, "→", i.provider, i.status);
 * ```
 */
export function checkWorld(
  documents: Readonly<Record<string, WorldEntry>> | ReadonlyMap<string, WorldEntry>,
  options: CheckWorldOptions = {},
): WorldCheck {
  const entries = documents instanceof Map
    ? [...documents as ReadonlyMap<string, WorldEntry>]
    : Object.entries(documents as Readonly<Record<string, WorldEntry>>);
  const byName = new Map(entries);
  const only = options.only ? new Set(options.only) : undefined;
  const imports: ImportResult[] = [];
  const counts: Record<ImportStatus, number> = { ok: 0, broken: 0, missing: 0, unavailable: 0 };
  for (const [consumer, doc] of [...entries].sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0)) {
    if (unavailableReason(doc) !== undefined || !isObject(doc)) continue;
    const wanted = doc["x-sausage-imports"];
    if (!isObject(wanted)) continue;
    for (const provider of Object.keys(wanted).sort()) {
      if (only && !only.has(consumer) && !only.has(provider)) continue;
      const entry = wanted[provider];
      const target = byName.get(provider);
      const against = (document: unknown) =>
        checkImport(entry, document, {
          consumer,
          provider,
          consumerDocument: doc,
          importPath: `#/x-sausage-imports${pointerSegment(provider)}`,
          unlisted: options.unlisted,
        });
      let result: ImportResult;
      if (target === undefined || unavailableReason(target) !== undefined) {
        // the imported methods as a check names them (with `$ref`s resolved, once each)
        const { methods } = against({ openrpc: "1.2.6", methods: [] });
        const reason = target === undefined ? undefined : unavailableReason(target);
        result = reason === undefined
          ? { consumer, provider, status: "missing", methods, problems: [] }
          : { consumer, provider, status: "unavailable", methods, problems: [], detail: reason };
      } else {
        const check = against(target);
        result = {
          consumer,
          provider,
          status: check.ok ? "ok" : "broken",
          methods: check.methods,
          problems: check.problems,
        };
      }
      counts[result.status]++;
      imports.push(result);
    }
  }
  return { imports, counts };
}
