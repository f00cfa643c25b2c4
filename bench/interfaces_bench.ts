/**
 * The compatibility check of a world of 50 plugins (PROTOCOL section 10.2):
 * `checkWorld` over realistic `rpc.discover` documents, each plugin with six
 * methods over recursive structs, enums, options, sets and maps, every
 * fifth with an endpoint interface, and each importing three others.
 *
 * Figures (milliseconds are medians):
 *
 * - `world.cold.ms`: every document is new (nothing normalized yet), as at
 *   the start of the host;
 * - `world.warm.ms`: the same documents again, as when the graph is
 *   recomputed after an unrelated change;
 * - `activation.ms`: one plugin has a new document, and only its imports
 *   and the imports of it are checked (`only`), as in `core.activate`;
 * - `plugins`, `imports`, `methods`, `runs`: the size of the world and the
 *   number of samples of each figure.
 *
 * @example
 * ```ts
 * import { benchInterfaces } from "./interfaces_bench.ts";
 * const figures = await benchInterfaces();
 * console.log(figures["world.cold.ms"]);
 * ```
 *
 * @module
 */

import { checkWorld, type OpenRpcDocument } from "../core/interfaces/mod.ts";
import { median } from "./stats.ts";

type Json = Record<string, unknown>;

const PLUGINS = 50;
const IMPORTS = [1, 7, 13];
const RUNS = 30;
const WARMUP = 5;

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const u = (bits: number) => ({ type: "integer", format: `uint${bits}`, minimum: 0 });
const doc = (description: string, schema: Json) => ({ description, ...schema });

/** The schemas of plugin `n`, as schemars 1.0 writes them. */
function components(n: string): Record<string, Json> {
  return {
    Item: {
      description: `An item of ${n}.`,
      type: "object",
      properties: {
        id: doc("The ID of the item.", u(64)),
        title: doc("The title, one line.", { type: "string" }),
        tags: doc("Tags, each at most once.", {
          type: "array",
          items: { type: "string" },
          uniqueItems: true,
        }),
        status: ref("Status"),
        due: doc("When it is due, if ever.", { type: ["string", "null"], format: "date-time" }),
        meta: { type: "object", additionalProperties: { type: "string" } },
        parent: { anyOf: [ref("Item"), { type: "null" }] },
        children: { type: "array", items: ref("Item") },
      },
      required: ["id", "title", "tags", "status", "meta", "children"],
    },
    Status: {
      description: "Where an item stands.",
      oneOf: ["open", "doing", "done", "dropped"].map((s) => ({
        description: `The item is ${s}.`,
        type: "string",
        const: s,
      })),
    },
    Sort: { type: "string", enum: ["newest", "oldest", "title"] },
    Page: {
      type: "object",
      properties: {
        items: { type: "array", items: ref("Item") },
        next: { type: ["string", "null"] },
        total: u(32),
      },
      required: ["items", "total"],
    },
    Query: {
      type: "object",
      properties: {
        text: { type: ["string", "null"] },
        status: { anyOf: [ref("Status"), { type: "null" }] },
        limit: { ...u(16), maximum: 65535 },
        offset: u(32),
        sort: { allOf: [ref("Sort")], description: "The order." },
      },
      required: ["limit"],
    },
    Patch: {
      type: "object",
      properties: {
        title: { type: ["string", "null"] },
        status: { anyOf: [ref("Status"), { type: "null" }] },
        tags: { type: ["array", "null"], items: { type: "string" } },
      },
      additionalProperties: false,
    },
    Stats: {
      type: "object",
      properties: {
        count: u(64),
        by_status: { type: "object", additionalProperties: u(32) },
      },
      required: ["count", "by_status"],
    },
    GetParams: { type: "object", properties: { id: u(64) }, required: ["id"] },
    ListParams: { type: "object", properties: { query: ref("Query") }, required: ["query"] },
    AddParams: {
      type: "object",
      properties: {
        title: { type: "string" },
        tags: { type: "array", items: { type: "string" } },
        due: { type: ["string", "null"] },
      },
      required: ["title"],
    },
    UpdateParams: {
      type: "object",
      properties: { id: u(64), patch: ref("Patch") },
      required: ["id", "patch"],
    },
  };
}

/** A method whose params are a `#[schema]` struct. */
function method(name: string, params: string | null, result: Json, schemas: Record<string, Json>) {
  const p = params ? (schemas[params].properties as Json) : {};
  const required = params ? (schemas[params].required as string[] | undefined) ?? [] : [];
  return {
    name,
    summary: `The ${name} method.`,
    paramStructure: "by-name",
    params: Object.entries(p).map(([k, schema]) => ({
      name: k,
      required: required.includes(k),
      schema,
    })),
    result: { name: "result", schema: result },
    ...(params ? { "x-sausage-params": ref(params) } : {}),
  };
}

function pluginName(i: number): string {
  return `p${String(i).padStart(2, "0")}`;
}

/** The document of plugin `i`, without its imports. */
function plugin(i: number): OpenRpcDocument {
  const name = pluginName(i);
  const schemas = components(name);
  const d: OpenRpcDocument = {
    openrpc: "1.2.6",
    info: { title: name, version: "0.1.0" },
    methods: [
      method("get", "GetParams", { anyOf: [ref("Item"), { type: "null" }] }, schemas),
      method("list", "ListParams", ref("Page"), schemas),
      method("add", "AddParams", ref("Item"), schemas),
      method("update", "UpdateParams", ref("Item"), schemas),
      method("remove", "GetParams", { type: "boolean" }, schemas),
      method("stats", null, ref("Stats"), schemas),
    ],
    components: { schemas },
  };
  if (i % 5 === 0) {
    d["x-sausage-endpoints"] = {
      control: {
        methods: [
          method("stats", null, ref("Stats"), schemas),
          method("stop", null, { type: "null" }, schemas),
        ],
      },
    };
  }
  return d;
}

/** The part of a provider's document that a consumer imports. */
function importOf(provider: OpenRpcDocument, methods: string[]): OpenRpcDocument {
  const copy = structuredClone(provider);
  const entry: OpenRpcDocument = {
    methods: (copy.methods ?? []).filter((m) => methods.includes((m as Json).name as string)),
    components: copy.components,
  };
  if (copy["x-sausage-endpoints"]) entry["x-sausage-endpoints"] = copy["x-sausage-endpoints"];
  return entry;
}

/** 50 plugins, each importing three others, every import compatible. */
export function world(): Record<string, OpenRpcDocument> {
  const bare = Array.from({ length: PLUGINS }, (_, i) => plugin(i));
  const out: Record<string, OpenRpcDocument> = {};
  bare.forEach((d, i) => {
    const imports: Record<string, OpenRpcDocument> = {};
    for (const step of IMPORTS) {
      const j = (i + step) % PLUGINS;
      const wanted = step === 1 ? ["get", "list", "add", "update"] : ["get", "stats", "remove"];
      imports[pluginName(j)] = importOf(bare[j], wanted);
    }
    out[pluginName(i)] = { ...structuredClone(d), "x-sausage-imports": imports };
  });
  return out;
}

function time(f: () => void): number {
  const t0 = performance.now();
  f();
  return performance.now() - t0;
}

/**
 * Times `checkWorld` for a world of 50 plugins: cold, warm, and the checks
 * of one activation. Medians over repeated runs, in milliseconds.
 */
export function benchInterfaces(): Promise<Record<string, number>> {
  const base = world();
  const first = checkWorld(base);
  if (first.counts.ok !== first.imports.length) {
    throw new Error(`the benchmark world is not compatible: ${JSON.stringify(first.counts)}`);
  }
  const methods = first.imports.reduce((n, i) => n + i.methods.length, 0);
  const cold: number[] = [], warm: number[] = [], activation: number[] = [];
  for (let r = 0; r < WARMUP + RUNS; r++) {
    const fresh = structuredClone(base);
    const c = time(() => checkWorld(fresh));
    const w = time(() => checkWorld(fresh));
    const changed = pluginName(r % PLUGINS);
    const next = { ...fresh, [changed]: structuredClone(fresh[changed]) };
    const a = time(() => checkWorld(next, { only: [changed] }));
    if (r >= WARMUP) {
      cold.push(c);
      warm.push(w);
      activation.push(a);
    }
  }
  return Promise.resolve({
    "world.cold.ms": median(cold),
    "world.warm.ms": median(warm),
    "activation.ms": median(activation),
    plugins: PLUGINS,
    imports: first.imports.length,
    methods,
    runs: RUNS,
  });
}

if (import.meta.main) console.log(await benchInterfaces());
