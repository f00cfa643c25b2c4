/**
 * Test support for the interface check: an independent validator (ajv) set
 * up with the same integer formats, random schemas in the subset
 * (fast-check), mutations of a schema (small compatible and incompatible
 * changes), and random values of a schema.
 *
 * The value generator reads the raw schema, not the normalized shape, so
 * that the properties compare the check with a second reading of the
 * schema; its values are filtered through ajv before use.
 *
 * @example
 * ```ts
 * import fc from "fast-check";
 * import { rootSchema, validator } from "./testing.ts";
 * fc.assert(fc.property(rootSchema(), (root) => typeof validator(root) === "function"));
 * ```
 *
 * @module
 */

// ajv is a test dependency only, not (yet) in the import map of deno.json.
import { Ajv } from "ajv";
import fc from "fast-check";
import { addNumberFormats } from "./formats.ts";
import { INTEGER_FORMATS } from "./numbers.ts";
import type { JsonValue } from "./schema.ts";

type Json = Record<string, unknown>;

function isObject(x: unknown): x is Json {
  return typeof x === "object" && x !== null && !Array.isArray(x);
}

const ajv = addNumberFormats(new Ajv({ strict: false, allErrors: false }));

const compiled = new WeakMap<object, (v: unknown) => boolean>();

/**
 * An ajv (Draft 7) validator for a root schema, with the integer formats
 * of schemars as ranges.
 *
 * @example
 * ```ts
 * validator({ type: "integer", format: "uint8" })(256); // false
 * ```
 */
export function validator(root: unknown): (value: unknown) => boolean {
  if (typeof root === "boolean") return () => root;
  const known = compiled.get(root as object);
  if (known) return known;
  const validate = ajv.compile(root as Json);
  const f = (v: unknown) => validate(v) === true;
  compiled.set(root as object, f);
  return f;
}

/**
 * The schema as a writer reads it: `additionalProperties: false` added to
 * every object schema that has `properties` and no `additionalProperties`.
 *
 * @example
 * ```ts
 * closeObjects({ type: "object", properties: {} });
 * // { type: "object", properties: {}, additionalProperties: false }
 * ```
 */
export function closeObjects(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(closeObjects);
  if (!isObject(schema)) return schema;
  const out: Json = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === "enum" || k === "const" || k === "examples" || k === "default") out[k] = v;
    else if (k === "properties" || k === "definitions") {
      out[k] = Object.fromEntries(
        Object.entries(v as Json).map(([name, s]) => [name, closeObjects(s)]),
      );
    } else out[k] = closeObjects(v);
  }
  if (schema.properties !== undefined && schema.additionalProperties === undefined) {
    out.additionalProperties = false;
  }
  return out;
}

const KEYS = ["a", "b", "c", "d"];
const STRINGS = ["x", "y", "z"];
const FORMATS = ["uint8", "int8", "uint16", "int32", "uint32", "uint64", "uint", "int"];

const bound = fc.option(fc.integer({ min: -6, max: 6 }), { nil: undefined });

const integerSchema = fc.record({
  min: bound,
  max: bound,
  exMin: fc.boolean(),
  exMax: fc.boolean(),
  half: fc.boolean(),
}).map(({ min, max, exMin, exMax, half }) => {
  const s: Json = { type: "integer" };
  const k = half ? 0.5 : 0;
  if (min !== undefined) s[exMin ? "exclusiveMinimum" : "minimum"] = min + k;
  if (max !== undefined) s[exMax ? "exclusiveMaximum" : "maximum"] = max - k;
  return s;
});

const numberSchema = fc.record({ min: bound, max: bound, exMin: fc.boolean() }).map(
  ({ min, max, exMin }) => {
    const s: Json = { type: "number" };
    if (min !== undefined) s[exMin ? "exclusiveMinimum" : "minimum"] = min / 2;
    if (max !== undefined) s.maximum = max / 2;
    return s;
  },
);

const stringSet = fc.subarray(STRINGS, { minLength: 1 });

/**
 * Schemas without nested schemas.
 *
 * @example
 * ```ts
 * import fc from "fast-check";
 * fc.sample(leafSchema, 3);
 * ```
 */
export const leafSchema: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant({ type: "string" }),
  stringSet.map((v) => ({ type: "string", enum: v })),
  stringSet.map((v) => ({ enum: [...v, null] })),
  fc.constantFrom(...STRINGS).map((c) => ({ const: c })),
  stringSet.map((v) => ({ oneOf: v.map((c) => ({ type: "string", const: c })) })),
  integerSchema,
  fc.constantFrom(...FORMATS).map((f) => ({ type: "integer", format: f, minimum: 0 })),
  fc.constantFrom(...FORMATS).map((f) => ({ type: ["integer", "null"], format: f })),
  numberSchema,
  fc.constant({ type: "boolean" }),
  fc.constantFrom(true, false).map((b) => ({ const: b })),
  fc.constant({ type: "null" }),
  fc.constant({}),
  fc.constant(true),
  fc.constant(false),
  fc.constant({ type: ["string", "integer"] }),
  fc.constant({ type: ["string", "null"] }),
  fc.constant({ description: "documented", type: "string", examples: ["milk"] }),
);

/** The definitions a random root has; `$ref`s point to them. */
const DEFS = ["D0", "D1"];

/**
 * A schema in the subset, up to a few levels deep, with `$ref`s to `#/definitions/D0` and `D1`.
 *
 * @example
 * ```ts
 * import fc from "fast-check";
 * fc.sample(schema, 3);
 * ```
 */
export const schema: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  schema: fc.oneof(
    { maxDepth: 3, depthIdentifier: "schema" },
    leafSchema,
    tie("array"),
    tie("object"),
    tie("object"),
    tie("nullable"),
    tie("ref"),
  ),
  array: fc.record({ items: tie("schema"), unique: fc.boolean() }).map(({ items, unique }) => ({
    type: "array",
    items,
    ...(unique ? { uniqueItems: true } : {}),
  })),
  object: fc.record({
    props: fc.dictionary(fc.constantFrom(...KEYS), tie("schema"), { maxKeys: 3 }),
    required: fc.subarray(KEYS),
    strayRequired: fc.boolean(),
    additional: fc.constantFrom("absent", "absent", "false", "true", "schema"),
    additionalSchema: tie("schema"),
    typed: fc.boolean(),
  }).map(({ props, required, strayRequired, additional, additionalSchema, typed }) => {
    const s: Json = typed ? { type: "object" } : {};
    if (Object.keys(props).length > 0 || additional === "absent") s.properties = props;
    const req = required.filter((k) => strayRequired || k in props);
    if (req.length > 0) s.required = req;
    if (additional === "false") s.additionalProperties = false;
    if (additional === "true") s.additionalProperties = true;
    if (additional === "schema") s.additionalProperties = additionalSchema;
    return s;
  }),
  nullable: fc.record({ inner: tie("schema"), form: fc.constantFrom("anyOf", "oneOf", "allOf") })
    .map(({ inner, form }) =>
      form === "allOf"
        ? { allOf: [inner], description: "wrapped" }
        : { [form]: [inner, { type: "null" }] }
    ),
  ref: fc.constantFrom(...DEFS).map((d) => ({ $ref: `#/definitions/${d}` })),
})).schema;

/**
 * A root schema: `$ref` to `Main`, with the definitions `Main`, `D0` and `D1`.
 *
 * @example
 * ```ts
 * import fc from "fast-check";
 * import { normalize } from "./schema.ts";
 * fc.assert(fc.property(rootSchema(), (root) => normalize(root).shape !== undefined));
 * ```
 */
export function rootSchema(): fc.Arbitrary<Json> {
  return fc.record({ main: schema, d0: schema, d1: schema }).map(({ main, d0, d1 }) => ({
    $ref: "#/definitions/Main",
    definitions: { Main: main, D0: d0, D1: d1 },
  }));
}

/**
 * A small deterministic random number generator (mulberry32).
 *
 * @example
 * ```ts
 * const rng = random(42);
 * rng(); // a number in [0, 1), the same for the same seed
 * ```
 */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function pick<T>(rng: () => number, xs: readonly T[]): T {
  return xs[Math.floor(rng() * xs.length)];
}

/**
 * A copy of a root schema with a few random changes, some compatible
 * (wider ranges, more enum values, fewer required properties, renamed
 * definitions) and some not. With probability `rate` per schema node.
 *
 * @example
 * ```ts
 * const a = { $ref: "#/definitions/Main", definitions: { Main: { type: "integer", minimum: 0 } } };
 * const b = mutate(a, 7); // a with a few changes; mutate(a, 7, 0) only renames definitions
 * ```
 */
export function mutate(root: Json, seed: number, rate = 0.15): Json {
  const rng = random(seed);
  const rename = rng() < 0.5;
  const visit = (s: unknown): unknown => {
    if (!isObject(s)) return rng() < rate / 3 ? pick(rng, [true, {}, { type: "string" }]) : s;
    const out: Json = structuredClone(s);
    for (const k of ["items", "additionalProperties"]) if (k in s) out[k] = visit(s[k]);
    for (const k of ["anyOf", "oneOf", "allOf"]) {
      if (Array.isArray(s[k])) out[k] = (s[k] as unknown[]).map(visit);
    }
    if (typeof s.$ref === "string" && rename) out.$ref = s.$ref.replace("/D", "/E");
    for (const k of ["properties", "definitions"]) {
      if (!isObject(s[k])) continue;
      out[k] = Object.fromEntries(
        Object.entries(s[k] as Json).map((
          [n, x],
        ) => [rename && k === "definitions" ? n.replace(/^D/, "E") : n, visit(x)]),
      );
    }
    if (rng() < rate) change(out, rng);
    return out;
  };
  const out = visit(root) as Json;
  if (rename) out.$ref = "#/definitions/Main";
  return out;
}

function change(s: Json, rng: () => number): void {
  const options: (() => void)[] = [];
  for (const k of ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]) {
    if (typeof s[k] === "number") {
      options.push(() => (s[k] = (s[k] as number) + pick(rng, [-2, -1, 1, 2])));
      options.push(() => delete s[k]);
    }
  }
  if (s.type === "integer" || (Array.isArray(s.type) && s.type.includes("integer"))) {
    options.push(() => (s.format = pick(rng, FORMATS)));
    options.push(() => (s.minimum = pick(rng, [-1, 0, 1])));
    options.push(() => (s.type = "number"));
  }
  if (Array.isArray(s.enum)) {
    options.push(
      () => (s.enum = [...new Set([...(s.enum as unknown[]), pick(rng, ["w", ...STRINGS])])]),
    );
    if (s.enum.length > 1) options.push(() => (s.enum = (s.enum as unknown[]).slice(1)));
  }
  if (typeof s.type === "string" && s.type !== "null") {
    options.push(() => (s.type = [s.type as string, "null"]));
  } else if (Array.isArray(s.type) && s.type.includes("null") && s.type.length > 1) {
    options.push(() => (s.type = (s.type as string[]).filter((t) => t !== "null")));
  }
  if (Array.isArray(s.anyOf) && s.anyOf.length === 2) {
    options.push(() => {
      const inner = s.anyOf as unknown[];
      delete s.anyOf;
      s.allOf = [inner[0]];
    });
  }
  if (isObject(s.properties)) {
    const props = s.properties;
    const names = Object.keys(props);
    const req = Array.isArray(s.required) ? (s.required as string[]) : [];
    options.push(
      () => (props[pick(rng, KEYS)] = pick(rng, [{ type: "string" }, {}, { type: "integer" }])),
    );
    options.push(() => (s.required = [...new Set([...req, pick(rng, KEYS)])]));
    if (names.length > 0) options.push(() => delete props[pick(rng, names)]);
    if (req.length > 0) options.push(() => (s.required = req.slice(1)));
    options.push(() => (s.additionalProperties = pick(rng, [false, true, { type: "string" }])));
    options.push(() => delete s.additionalProperties);
  }
  if (s.type === "array") options.push(() => (s.uniqueItems = !s.uniqueItems));
  if (options.length > 0) pick(rng, options)();
}

const JUNK: JsonValue[] = [
  null,
  true,
  false,
  0,
  -1,
  1,
  0.5,
  255,
  256,
  -129,
  65536,
  2 ** 32,
  2 ** 64,
  "",
  "x",
  "y",
  "w",
  [],
  [1],
  ["x", "x"],
  {},
  { a: "x" },
  { a: null, b: 1 },
  { e: 1 },
];

/**
 * Random JSON values, many of them near the edges of the schemas that {@linkcode schema} makes.
 *
 * @example
 * ```ts
 * junk(random(1)); // e.g. 256 or {"a": null, "b": 1}
 * ```
 */
export function junk(rng: () => number): JsonValue {
  return structuredClone(pick(rng, JUNK));
}

function numberIn(s: Json, integer: boolean, rng: () => number): number {
  let lo = -8, hi = 8;
  const range = typeof s.format === "string" && Object.hasOwn(INTEGER_FORMATS, s.format)
    ? INTEGER_FORMATS[s.format]
    : undefined;
  if (range) [lo, hi] = [Math.max(lo, range[0]), Math.min(hi, range[1])];
  for (const k of ["minimum", "exclusiveMinimum"]) {
    if (typeof s[k] === "number") lo = s[k] as number;
  }
  for (const k of ["maximum", "exclusiveMaximum"]) {
    if (typeof s[k] === "number") hi = s[k] as number;
  }
  const edges = [lo, hi, Math.ceil(lo), Math.floor(hi), Math.ceil(lo) + 1, Math.floor(hi) - 1];
  if (range) edges.push(range[0], range[1], range[1] + 1);
  const x = rng() < 0.5 ? pick(rng, edges) : lo + rng() * (hi - lo);
  return integer ? Math.round(x) : rng() < 0.5 ? Math.round(x * 4) / 4 : x;
}

/**
 * A random value that is likely (not sure) to be valid for the schema;
 * `closed`: objects get no properties beyond `properties` when
 * `additionalProperties` is absent. Undefined when it gives up.
 *
 * @example
 * ```ts
 * const root = { $ref: "#/definitions/Main", definitions: { Main: { type: "string" } } };
 * valueOf(root, root, random(1), true); // a value that root likely accepts
 * ```
 */
export function valueOf(
  s: unknown,
  root: unknown,
  rng: () => number,
  closed: boolean,
  depth = 0,
): JsonValue | undefined {
  if (s === false) return undefined;
  if (s === true || !isObject(s)) return depth > 4 ? null : junk(rng);
  if (depth > 8) return undefined;
  const next = (x: unknown) => valueOf(x, root, rng, closed, depth + 1);
  if (typeof s.$ref === "string") {
    const name = s.$ref.split("/").pop()!;
    return next(((root as Json).definitions as Json)[name]);
  }
  if (Array.isArray(s.anyOf)) return next(pick(rng, s.anyOf));
  if (Array.isArray(s.oneOf)) return next(pick(rng, s.oneOf));
  if (Array.isArray(s.allOf)) return next(s.allOf[0]);
  if (Array.isArray(s.enum)) return structuredClone(pick(rng, s.enum)) as JsonValue;
  if (s.const !== undefined) return structuredClone(s.const) as JsonValue;
  if (Array.isArray(s.examples) && rng() < 0.3) return pick(rng, s.examples) as JsonValue;
  const types = Array.isArray(s.type)
    ? s.type
    : typeof s.type === "string"
    ? [s.type]
    : ["null", "boolean", "integer", "number", "string", "array", "object"];
  const type = pick(rng, types);
  switch (type) {
    case "null":
      return null;
    case "boolean":
      return rng() < 0.5;
    case "integer":
      return numberIn(s, true, rng);
    case "number":
      return numberIn(s, false, rng);
    case "string":
      return pick(rng, ["", "a", ...STRINGS, "w"]);
    case "array": {
      const n = depth > 5 ? 0 : Math.floor(rng() * 4);
      const out: JsonValue[] = [];
      for (let i = 0; i < n; i++) {
        const v = next(s.items ?? true);
        if (
          v !== undefined &&
          (!s.uniqueItems || !out.some((o) => JSON.stringify(o) === JSON.stringify(v)))
        ) {
          out.push(v);
        }
      }
      return out;
    }
    case "object": {
      const out: Record<string, JsonValue> = {};
      const props = isObject(s.properties) ? s.properties : {};
      const required = Array.isArray(s.required) ? (s.required as string[]) : [];
      const additional = s.additionalProperties ??
        (closed && s.properties !== undefined ? false : true);
      for (const k of new Set([...required, ...Object.keys(props)])) {
        if (!required.includes(k) && (rng() < 0.5 || depth > 5)) continue;
        const v = next(k in props ? props[k] : additional);
        if (v === undefined) {
          if (required.includes(k)) return undefined;
          continue;
        }
        out[k] = v;
      }
      if (additional !== false && rng() < 0.3) {
        const v = next(additional);
        if (v !== undefined) out[pick(rng, ["a", "e", "f"])] = v;
      }
      return out;
    }
  }
  return undefined;
}
