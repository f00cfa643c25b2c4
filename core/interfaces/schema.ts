/**
 * The subset of JSON Schema Draft 7 that the compatibility check decides
 * (PROTOCOL section 10.2), and its normal form.
 *
 * A {@linkcode Shape} is the set of JSON values that a schema allows, split
 * by kind: null, booleans, numbers, strings, arrays, objects. Each kind is
 * either absent or one small description, so the check compares kind by
 * kind. Nested shapes (array items, object properties) are shared objects,
 * so a recursive schema becomes a cyclic graph.
 *
 * The subset:
 *
 * - `type` (a name or a list of names), `enum` and `const` of strings,
 *   booleans and null;
 * - numbers: `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`, and
 *   the integer `format`s of schemars (`uint8` is an integer from 0 to 255,
 *   `uint` and `int` are 32-bit as `usize` and `isize` on wasm32);
 * - arrays: `items` (one schema) and `uniqueItems`;
 * - objects: `properties`, `required`, `additionalProperties`;
 * - `$ref` to any place in the same document (`#/components/schemas/<Name>`,
 *   `#/definitions/<Name>`, `#/$defs/<Name>`), with recursion through
 *   properties and items;
 * - `anyOf` and `oneOf` whose alternatives differ in kind, or are string and
 *   boolean constants (`Option<T>` as `anyOf` with `{"type": "null"}`, enums
 *   as `oneOf` of `const`), and `allOf` where at most one part constrains each
 *   kind (schemars wraps a `$ref` with a description in a one-element `allOf`);
 * - ignored: `title`, `description`, `examples`, `default`, `$comment`,
 *   `readOnly`, `writeOnly`, `deprecated`, `$schema`, the `format` of strings
 *   and of non-integer numbers, and unknown keywords (as in JSON Schema).
 *
 * Anything else is outside the subset and recorded on the shape as an
 * {@linkcode OutsideSubset} with the construct and its path: `pattern`,
 * `minLength`, `not`, `if`, tuple `items`, `enum` of numbers, `nullable`,
 * two object alternatives in one `anyOf`, a `$ref` with constraints beside
 * it (Draft 7 ignores them, ajv applies them), a `$ref` cycle that passes
 * through no property or item, and so on.
 *
 * `additionalProperties`: `false` allows no other property (schemars writes
 * it for `deny_unknown_fields`), a schema constrains every other property (a
 * map), `true` allows any. When it is absent from a schema with
 * `properties`, the meaning depends on the side, see {@linkcode Unlisted}: a
 * reader ignores unknown fields, as serde does; a writer writes only the
 * fields its type has.
 *
 * @example
 * ```ts
 * import { normalize } from "./schema.ts";
 * const { shape, outside } = normalize({ type: ["integer", "null"], format: "uint8" });
 * // shape.null === true, shape.number is the integers from 0 to 255, outside is []
 * ```
 *
 * @module
 */

import { ANY_NUMBER, INTEGER_FORMATS, numberDifference, type NumberPart } from "./numbers.ts";
import { numberIntersection } from "./numbers.ts";

/**
 * A JSON value.
 *
 * @example
 * ```ts
 * const v: JsonValue = { text: "milk", tags: ["a"], done: false, due: null };
 * ```
 */
export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;

/**
 * A JSON object.
 *
 * @example
 * ```ts
 * const o: JsonObject = { count: 1 };
 * ```
 */
export type JsonObject = { [key: string]: JsonValue };

/**
 * How an object schema with `properties` and without `additionalProperties`
 * is read. `"open"`: other properties may have any value, as JSON Schema
 * says; this is how a reader sees it (serde ignores unknown fields).
 * `"closed"`: there are no other properties; this is what a writer produces
 * (serde writes exactly the fields of the struct). The check reads the
 * sending side closed and the receiving side open, so a provider can add
 * optional params and result fields.
 *
 * @example
 * ```ts
 * import { accepts } from "./values.ts";
 * const { shape } = normalize({ type: "object", properties: { a: { type: "string" } } });
 * accepts(shape, { a: "x", b: 1 }, "open"); // true: a reader ignores b
 * accepts(shape, { a: "x", b: 1 }, "closed"); // false: a writer of this type never writes b
 * ```
 */
export type Unlisted = "open" | "closed";

/**
 * A construct outside the subset, with where it is.
 *
 * @example
 * ```ts
 * normalize({ type: "string", pattern: "^a" }).outside;
 * // [{ construct: "pattern", path: "#", detail: "a pattern of strings" }]
 * ```
 */
export interface OutsideSubset {
  /** The keyword or construct, e.g. `pattern`, `not`, `anyOf`, `$ref`. */
  construct: string;
  /** A JSON pointer into the document, e.g. `#/components/schemas/Note/properties/text`. */
  path: string;
  /** Why, in a few words. */
  detail: string;
}

/**
 * The booleans a schema allows (never both false).
 *
 * @example
 * ```ts
 * normalize({ const: true }).shape.boolean; // { true: true, false: false }
 * ```
 */
export interface BooleanPart {
  readonly true: boolean;
  readonly false: boolean;
}

/**
 * The strings a schema allows: any, or a finite non-empty set.
 *
 * @example
 * ```ts
 * normalize({ type: "string", enum: ["open", "done"] }).shape.string?.values; // Set {"open", "done"}
 * ```
 */
export interface StringPart {
  /** null: any string. */
  readonly values: ReadonlySet<string> | null;
  /** The name of the schema it comes from, e.g. `Status`. */
  name?: string;
}

/**
 * The arrays a schema allows.
 *
 * @example
 * ```ts
 * normalize({ type: "array", items: { type: "string" }, uniqueItems: true }).shape.array?.unique; // true
 * ```
 */
export interface ArrayPart {
  readonly items: Shape;
  /** `uniqueItems`: no two items are equal. */
  readonly unique: boolean;
  name?: string;
}

/**
 * The objects a schema allows.
 *
 * @example
 * ```ts
 * const part = normalize({ type: "object", properties: { a: {} }, required: ["a"] }).shape.object!;
 * // part.required has "a"; part.additional === "unlisted"
 * ```
 */
export interface ObjectPart {
  /** The listed properties, in document order. */
  readonly properties: ReadonlyMap<string, Shape>;
  readonly required: ReadonlySet<string>;
  /** Every other property; `"unlisted"` when `additionalProperties` is absent beside `properties`. */
  readonly additional: Shape | "unlisted";
  name?: string;
}

/**
 * The set of JSON values a schema allows, by kind. A kind that is null (or
 * false) allows no value of that kind. Parts of the number, string and
 * boolean kinds are never empty; array and object parts may be, when a
 * required property allows nothing.
 *
 * @example
 * ```ts
 * const { shape } = normalize({ type: ["string", "null"] });
 * // shape.null === true, shape.string.values === null (any string), every other kind is null
 * ```
 */
export interface Shape {
  null: boolean;
  boolean: BooleanPart | null;
  number: NumberPart | null;
  string: StringPart | null;
  array: ArrayPart | null;
  object: ObjectPart | null;
  /** The name of the `$ref` target it is, e.g. `Added`. */
  name?: string;
  /** Values from `examples` and `default`, preferred for counterexamples when valid. */
  examples?: JsonValue[];
  /** Constructs outside the subset in this schema (not in nested ones). */
  outside?: OutsideSubset[];
}

function frozenShape(shape: Shape): Shape {
  return Object.freeze(shape);
}

/**
 * Every JSON value (the schema `true` or `{}`).
 *
 * @example
 * ```ts
 * normalize(true).shape === ANY; // true
 * ```
 */
export const ANY: Shape = {
  null: true,
  boolean: Object.freeze({ true: true, false: true }),
  number: ANY_NUMBER,
  string: Object.freeze({ values: null }),
  array: null,
  object: null,
};
/**
 * Any array.
 *
 * @example
 * ```ts
 * isAnyArray(ANY_ARRAY); // true
 * ```
 */
export const ANY_ARRAY: ArrayPart = Object.freeze({ items: ANY, unique: false });
/**
 * Any object.
 *
 * @example
 * ```ts
 * isAnyObject(ANY_OBJECT); // true
 * ```
 */
export const ANY_OBJECT: ObjectPart = Object.freeze({
  properties: new Map(),
  required: new Set<string>(),
  additional: ANY,
});
ANY.array = ANY_ARRAY;
ANY.object = ANY_OBJECT;
frozenShape(ANY);

/**
 * No JSON value (the schema `false`).
 *
 * @example
 * ```ts
 * normalize(false).shape === NEVER; // true
 * ```
 */
export const NEVER: Shape = frozenShape({
  null: false,
  boolean: null,
  number: null,
  string: null,
  array: null,
  object: null,
});

/**
 * Whether an array part allows every array.
 *
 * @example
 * ```ts
 * isAnyArray(normalize({ type: "array" }).shape.array!); // true
 * ```
 */
export function isAnyArray(part: ArrayPart): boolean {
  return part.items === ANY && !part.unique;
}

/**
 * Whether an object part allows every object.
 *
 * @example
 * ```ts
 * isAnyObject(normalize({ type: "object" }).shape.object!); // true
 * ```
 */
export function isAnyObject(part: ObjectPart): boolean {
  return part.properties.size === 0 && part.required.size === 0 && part.additional === ANY;
}

/**
 * The shape of a property that an object part does not list.
 *
 * @example
 * ```ts
 * additionalOf(ANY_OBJECT, "closed") === ANY; // true
 * ```
 */
export function additionalOf(part: ObjectPart, unlisted: Unlisted): Shape {
  if (part.additional !== "unlisted") return part.additional;
  return unlisted === "open" ? ANY : NEVER;
}

/**
 * The shape of the property `key` of an object part.
 *
 * @example
 * ```ts
 * propertyOf(ANY_OBJECT, "x", "open") === ANY; // true
 * ```
 */
export function propertyOf(part: ObjectPart, key: string, unlisted: Unlisted): Shape {
  return part.properties.get(key) ?? additionalOf(part, unlisted);
}

/** Keywords with constraints that the check does not decide. */
const OUTSIDE: Readonly<Record<string, string>> = {
  pattern: "a pattern of strings",
  patternProperties: "properties by pattern",
  minLength: "a length of strings",
  maxLength: "a length of strings",
  minItems: "a length of arrays",
  maxItems: "a length of arrays",
  contains: "a condition on some item",
  additionalItems: "items after a tuple",
  minProperties: "a number of properties",
  maxProperties: "a number of properties",
  propertyNames: "a condition on property names",
  dependencies: "dependencies between properties",
  dependentRequired: "dependencies between properties",
  dependentSchemas: "dependencies between properties",
  if: "a condition",
  then: "a condition",
  else: "a condition",
  not: "a negation",
  multipleOf: "multiples",
  contentMediaType: "encoded content",
  contentEncoding: "encoded content",
  nullable: 'OpenAPI\'s nullable (use type [..., "null"])',
  unevaluatedProperties: "unevaluated properties",
  unevaluatedItems: "unevaluated items",
  prefixItems: "a tuple",
  $anchor: "an anchor",
  $recursiveRef: "a recursive reference",
  $dynamicRef: "a dynamic reference",
};

/** Keywords that constrain, and so cannot stand beside a `$ref` (Draft 7 ignores them, ajv does not). */
const CONSTRAINTS = new Set([
  "type",
  "enum",
  "const",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "format",
  "items",
  "uniqueItems",
  "properties",
  "required",
  "additionalProperties",
  "anyOf",
  "oneOf",
  "allOf",
  ...Object.keys(OUTSIDE),
]);

const TYPE_NAMES = new Set(["null", "boolean", "integer", "number", "string", "array", "object"]);

type SchemaObject = Record<string, unknown>;

function isObject(x: unknown): x is SchemaObject {
  return typeof x === "object" && x !== null && !Array.isArray(x);
}

function escapePointer(segment: string): string {
  if (!segment.includes("~") && !segment.includes("/")) return segment;
  return segment.replaceAll("~", "~0").replaceAll("/", "~1");
}

/** A segment of a JSON pointer: `~1` and `~0` unescaped. */
function unescapeSegment(segment: string): string {
  return segment.replaceAll("~1", "/").replaceAll("~0", "~");
}

/** `base` + `/segment`, as a JSON pointer. */
function at(base: string, ...segments: (string | number)[]): string {
  return base + segments.map((s) => "/" + escapePointer(String(s))).join("");
}

interface Root {
  value: unknown;
  /** The pointer of the root in the document that errors name, e.g. `#/x-sausage-imports/notes`. */
  base: string;
}

interface Job {
  target: Shape;
  schema: unknown;
  path: string;
}

/**
 * Options of a {@linkcode SchemaSpace}.
 *
 * @example
 * ```ts
 * import type { OpenRpcDocument } from "./compat.ts";
 * declare const consumer: OpenRpcDocument; // a whole `rpc.discover` document
 * const entry = consumer["x-sausage-imports"]?.notes;
 * new SchemaSpace(entry, { base: "#/x-sausage-imports/notes", fallback: consumer });
 * ```
 */
export interface SchemaSpaceOptions {
  /** The pointer that paths of this root start with (default `#`). */
  base?: string;
  /** A second root where `$ref`s that the first cannot resolve are looked up. */
  fallback?: unknown;
  /** The pointer of the fallback root (default `#`). */
  fallbackBase?: string;
}

/**
 * The schemas of one document, normalized on demand. `$ref`s resolve within
 * the document (and its fallback); each target is normalized once, so a
 * space keeps the shapes of a document for as many checks as needed.
 *
 * @example
 * ```ts
 * const doc = { components: { schemas: { Note: { type: "string" } } } };
 * const space = new SchemaSpace(doc);
 * const shape = space.shape({ $ref: "#/components/schemas/Note" }, "#/methods/0/result/schema");
 * // shape.name === "Note"
 * ```
 */
export class SchemaSpace {
  readonly #roots: Root[];
  readonly #refs = new Map<string, Shape>();
  readonly #jobs: Job[] = [];

  constructor(root: unknown, options: SchemaSpaceOptions = {}) {
    this.#roots = [{ value: root, base: options.base ?? "#" }];
    if (options.fallback !== undefined && options.fallback !== root) {
      this.#roots.push({ value: options.fallback, base: options.fallbackBase ?? "#" });
    }
  }

  /**
   * The shape of `schema`, found at `path` (a pointer for messages). Its
   * constructs outside the subset are on the shapes; collect them with
   * {@linkcode outsideOf}.
   */
  shape(schema: unknown, path: string): Shape {
    const shape = this.#shapeOf(schema, path, new Set());
    this.#drain();
    return shape;
  }

  /**
   * The shape of an object with these properties, as a method's params list
   * describes it: each entry with its name, schema and whether it is required.
   */
  objectShape(
    properties: readonly { name: string; schema: unknown; required: boolean; path: string }[],
  ): Shape {
    const props = new Map<string, Shape>();
    const required = new Set<string>();
    for (const p of properties) {
      props.set(p.name, this.#child(p.schema, p.path));
      if (p.required) required.add(p.name);
    }
    this.#drain();
    return { ...NEVER, object: { properties: props, required, additional: "unlisted" } };
  }

  /** The value at a local `$ref` (`#/...`), with its path; undefined when there is none. */
  resolve(ref: string): { value: unknown; path: string } | undefined {
    if (ref !== "#" && !ref.startsWith("#/")) return undefined;
    let segments: string[];
    try {
      // RFC 6901: percent-decode the fragment, then split it, then unescape each segment
      segments = decodeURIComponent(ref.slice(1)).split("/").slice(1).map(unescapeSegment);
    } catch {
      return undefined;
    }
    for (const root of this.#roots) {
      let value: unknown = root.value;
      for (const s of segments) {
        if (Array.isArray(value) && /^(0|[1-9][0-9]*)$/.test(s) && Number(s) < value.length) {
          value = value[Number(s)];
        } else if (isObject(value) && Object.hasOwn(value, s)) value = value[s];
        else {
          value = undefined;
          break;
        }
      }
      if (value !== undefined) return { value, path: at(root.base, ...segments) };
    }
    return undefined;
  }

  #drain(): void {
    while (this.#jobs.length > 0) {
      const job = this.#jobs.pop()!;
      Object.assign(job.target, this.#shapeOf(job.schema, job.path, new Set()));
    }
  }

  /** A nested schema (property, item): normalized later, so that recursion through it is fine. */
  #child(schema: unknown, path: string): Shape {
    if (schema === true || (isObject(schema) && Object.keys(schema).length === 0)) return ANY;
    if (schema === false) return NEVER;
    const target: Shape = { ...NEVER };
    this.#jobs.push({ target, schema, path });
    return target;
  }

  #shapeOf(schema: unknown, path: string, active: ReadonlySet<string>): Shape {
    if (schema === true) return ANY;
    if (schema === false) return NEVER;
    if (!isObject(schema)) {
      return withOutside(NEVER, [{
        construct: "schema",
        path,
        detail: `a schema is an object or a boolean, not ${JSON.stringify(schema) ?? "nothing"}`,
      }]);
    }
    const outside: OutsideSubset[] = [];
    const examples = examplesOf(schema);
    if (schema.$ref !== undefined) {
      const siblings = Object.keys(schema).filter((k) => CONSTRAINTS.has(k));
      if (siblings.length > 0) {
        outside.push({
          construct: "$ref",
          path,
          detail: `"${siblings.join('", "')}" beside "$ref": wrap the $ref in allOf`,
        });
      }
      const target = this.#ref(schema.$ref, path, active);
      return decorate(target, examples, outside);
    }
    for (const key of Object.keys(schema)) {
      if (Object.hasOwn(OUTSIDE, key)) {
        outside.push({ construct: key, path, detail: OUTSIDE[key] });
      }
    }
    if (schema.$id !== undefined && !this.#roots.some((r) => r.value === schema)) {
      outside.push({ construct: "$id", path, detail: "a nested base URI" });
    }
    let shape = this.#local(schema, path, outside);
    for (const keyword of ["anyOf", "oneOf", "allOf"] as const) {
      const list = schema[keyword];
      if (list === undefined) continue;
      if (!Array.isArray(list) || list.length === 0) {
        outside.push({ construct: keyword, path, detail: "not a non-empty list of schemas" });
        continue;
      }
      const branches = list.map((s, i) => this.#shapeOf(s, at(path, keyword, i), active));
      const where = { path, construct: keyword, outside };
      if (keyword === "allOf") {
        for (const b of branches) shape = intersect(shape, b, where);
      } else {
        shape = intersect(
          shape,
          keyword === "anyOf" ? union(branches, where) : oneOf(branches, where),
          where,
        );
      }
    }
    return decorate(shape, examples, outside);
  }

  #ref(ref: unknown, path: string, active: ReadonlySet<string>): Shape {
    if (typeof ref !== "string") {
      return withOutside(NEVER, [{ construct: "$ref", path, detail: "not a string" }]);
    }
    const cached = this.#refs.get(ref);
    if (cached) return cached;
    if (active.has(ref)) {
      return withOutside(NEVER, [{
        construct: "$ref",
        path,
        detail: `"${ref}" refers to itself through no property or item`,
      }]);
    }
    const found = this.resolve(ref);
    if (!found) {
      const detail = ref.startsWith("#")
        ? `"${ref}" points to nothing in the document`
        : `"${ref}" is not in the document: only refs that start with # are`;
      return withOutside(NEVER, [{ construct: "$ref", path, detail }]);
    }
    const body = this.#shapeOf(found.value, found.path, new Set(active).add(ref));
    const name = ref === "#"
      ? undefined
      : unescapeSegment(decodeURIComponent(ref).split("/").pop()!);
    const shape: Shape = { ...body, name: name ?? body.name };
    for (const part of [shape.string, shape.array, shape.object]) {
      if (part && !Object.isFrozen(part) && part.name === undefined) part.name = name;
    }
    this.#refs.set(ref, shape);
    return shape;
  }

  /** The shape of the keywords of one schema object, without `$ref`, `anyOf`, `oneOf`, `allOf`. */
  #local(s: SchemaObject, path: string, outside: OutsideSubset[]): Shape {
    const bad = (construct: string, detail: string) => outside.push({ construct, path, detail });
    let kinds: Set<string> | null = null;
    if (s.type !== undefined) {
      const names = Array.isArray(s.type) ? s.type : [s.type];
      kinds = new Set();
      for (const n of names) {
        if (typeof n === "string" && TYPE_NAMES.has(n)) kinds.add(n);
        else bad("type", `${JSON.stringify(n)} is not a type`);
      }
    }
    const has = (k: string) => kinds === null || kinds.has(k);
    const shape: Shape = { ...NEVER };
    shape.null = has("null");
    if (has("boolean")) shape.boolean = { true: true, false: true };
    if (has("number") || has("integer")) shape.number = { ...ANY_NUMBER, integer: !has("number") };
    if (has("string")) shape.string = { values: null };
    const literal = s.enum !== undefined || s.const !== undefined;
    if (s.enum !== undefined) this.#enum(shape, s.enum, "enum", bad);
    if (s.const !== undefined) this.#enum(shape, [s.const], "const", bad);
    if (shape.number) shape.number = numbers(shape.number, s, bad);
    if (has("array") && !literal) {
      let items = ANY;
      if (Array.isArray(s.items)) bad("items", "a tuple (a list of item schemas)");
      else if (s.items !== undefined) items = this.#child(s.items, at(path, "items"));
      if (s.uniqueItems !== undefined && typeof s.uniqueItems !== "boolean") {
        bad("uniqueItems", "not a boolean");
      }
      shape.array = { items, unique: s.uniqueItems === true };
    }
    if (has("object") && !literal) shape.object = this.#object(s, path, bad);
    return shape;
  }

  #enum(
    shape: Shape,
    values: unknown,
    keyword: string,
    bad: (construct: string, detail: string) => void,
  ): void {
    if (!Array.isArray(values)) {
      bad(keyword, "not a list");
      return;
    }
    let hasNull = false, hasTrue = false, hasFalse = false;
    const strings = new Set<string>();
    for (const v of values) {
      if (v === null) hasNull = true;
      else if (v === true) hasTrue = true;
      else if (v === false) hasFalse = true;
      else if (typeof v === "string") strings.add(v);
      else bad(keyword, `${JSON.stringify(v)}: only strings, booleans and null`);
    }
    shape.null = shape.null && hasNull;
    if (shape.boolean) {
      const t = shape.boolean.true && hasTrue, f = shape.boolean.false && hasFalse;
      shape.boolean = t || f ? { true: t, false: f } : null;
    }
    if (shape.string) {
      const kept = [...strings].filter((v) => shape.string!.values?.has(v) ?? true);
      shape.string = kept.length > 0 ? { values: new Set(kept) } : null;
    }
    shape.number = null;
  }

  #object(
    s: SchemaObject,
    path: string,
    bad: (construct: string, detail: string) => void,
  ): ObjectPart {
    const properties = new Map<string, Shape>();
    if (s.properties !== undefined) {
      if (!isObject(s.properties)) bad("properties", "not an object");
      else {
        for (const [key, sub] of Object.entries(s.properties)) {
          properties.set(key, this.#child(sub, at(path, "properties", key)));
        }
      }
    }
    const required = new Set<string>();
    if (s.required !== undefined) {
      if (!Array.isArray(s.required)) bad("required", "not a list");
      else {
        for (const k of s.required) {
          if (typeof k === "string") required.add(k);
          else bad("required", `${JSON.stringify(k)} is not a property name`);
        }
      }
    }
    let additional: Shape | "unlisted" = s.properties !== undefined ? "unlisted" : ANY;
    if (s.additionalProperties !== undefined) {
      additional = this.#child(s.additionalProperties, at(path, "additionalProperties"));
    }
    return { properties, required, additional };
  }
}

function examplesOf(s: SchemaObject): JsonValue[] | undefined {
  const out: JsonValue[] = [];
  if (Array.isArray(s.examples)) out.push(...(s.examples as JsonValue[]));
  if (s.default !== undefined) out.push(s.default as JsonValue);
  return out.length > 0 ? out : undefined;
}

function withOutside(shape: Shape, outside: OutsideSubset[]): Shape {
  return { ...shape, outside: [...(shape.outside ?? []), ...outside] };
}

/** The shape with more examples and errors; the same object when there are none. */
function decorate(
  shape: Shape,
  examples: JsonValue[] | undefined,
  outside: OutsideSubset[],
): Shape {
  if (!examples && outside.length === 0) return shape;
  const out: Shape = { ...shape };
  if (examples) out.examples = [...examples, ...(shape.examples ?? [])];
  if (outside.length > 0) out.outside = [...(shape.outside ?? []), ...outside];
  return out;
}

function numbers(
  part: NumberPart,
  s: SchemaObject,
  bad: (construct: string, detail: string) => void,
): NumberPart | null {
  let out: NumberPart | undefined = part;
  const bound = (keyword: string, make: (x: number) => NumberPart) => {
    const x = s[keyword];
    if (x === undefined || !out) return;
    if (typeof x === "boolean") bad(keyword, "the boolean form of Draft 4");
    else if (typeof x !== "number" || !Number.isFinite(x)) bad(keyword, "not a number");
    else out = numberIntersection(out, make(x));
  };
  bound("minimum", (x) => ({ ...ANY_NUMBER, min: x }));
  bound("exclusiveMinimum", (x) => ({ ...ANY_NUMBER, min: x, minExclusive: true }));
  bound("maximum", (x) => ({ ...ANY_NUMBER, max: x }));
  bound("exclusiveMaximum", (x) => ({ ...ANY_NUMBER, max: x, maxExclusive: true }));
  const range = typeof s.format === "string" && Object.hasOwn(INTEGER_FORMATS, s.format)
    ? INTEGER_FORMATS[s.format]
    : undefined;
  if (range && out) {
    out = numberIntersection(out, {
      integer: true,
      min: range[0],
      minExclusive: false,
      max: range[1],
      maxExclusive: false,
    });
  }
  return out ?? null;
}

interface Where {
  path: string;
  construct: string;
  outside: OutsideSubset[];
}

function mergeMeta(shapes: Shape[], out: Shape): Shape {
  const examples = shapes.flatMap((s) => s.examples ?? []);
  const outside = shapes.flatMap((s) => s.outside ?? []);
  if (examples.length > 0) out.examples = examples;
  if (outside.length > 0) out.outside = outside;
  return out;
}

/** The values of every shape (`allOf`, or keywords beside each other). */
function intersect(a: Shape, b: Shape, where: Where): Shape {
  const out: Shape = { ...NEVER };
  out.null = a.null && b.null;
  if (a.boolean && b.boolean) {
    const t = a.boolean.true && b.boolean.true, f = a.boolean.false && b.boolean.false;
    out.boolean = t || f ? { true: t, false: f } : null;
  }
  if (a.number && b.number) out.number = numberIntersection(a.number, b.number) ?? null;
  if (a.string && b.string) {
    if (a.string.values === null) out.string = b.string;
    else if (b.string.values === null) out.string = a.string;
    else {
      const kept = [...a.string.values].filter((v) => b.string!.values!.has(v));
      out.string = kept.length > 0 ? { values: new Set(kept) } : null;
    }
  }
  const combine = <P>(x: P | null, y: P | null, isAny: (p: P) => boolean, kind: string) => {
    if (!x || !y) return null;
    if (x === y || isAny(y)) return x;
    if (isAny(x)) return y;
    where.outside.push({
      construct: where.construct,
      path: where.path,
      detail: `two ${kind} schemas that apply together`,
    });
    return x;
  };
  out.array = combine(a.array, b.array, isAnyArray, "array");
  out.object = combine(a.object, b.object, isAnyObject, "object");
  out.name = b.name ?? a.name;
  return mergeMeta([a, b], out);
}

/** The values of any of the shapes (`anyOf`). */
function union(shapes: Shape[], where: Where): Shape {
  const out: Shape = { ...NEVER };
  out.null = shapes.some((s) => s.null);
  const t = shapes.some((s) => s.boolean?.true), f = shapes.some((s) => s.boolean?.false);
  out.boolean = t || f ? { true: t, false: f } : null;
  const strings = shapes.flatMap((s) => (s.string ? [s.string] : []));
  if (strings.some((p) => p.values === null)) {
    out.string = strings.find((p) => p.values === null)!;
  } else if (strings.length === 1) out.string = strings[0];
  else if (strings.length > 1) {
    out.string = { values: new Set(strings.flatMap((p) => [...p.values!])) };
  }
  const nums = shapes.flatMap((s) => (s.number ? [s.number] : []));
  for (const n of nums) {
    if (!out.number || numberDifference(out.number, n) === undefined) out.number = n;
    else if (numberDifference(n, out.number) !== undefined) {
      where.outside.push({
        construct: where.construct,
        path: where.path,
        detail: "number alternatives where neither contains the other",
      });
    }
  }
  out.array = single(shapes.map((s) => s.array), isAnyArray, "array", where);
  out.object = single(shapes.map((s) => s.object), isAnyObject, "object", where);
  const names = new Set(shapes.map((s) => s.name));
  if (names.size === 1) out.name = shapes[0].name;
  return mergeMeta(shapes, out);
}

/** The one part among the alternatives, or any part if one allows all. */
function single<P>(
  parts: (P | null)[],
  isAny: (p: P) => boolean,
  kind: string,
  where: Where,
): P | null {
  const present = [...new Set(parts.filter((p): p is P => p !== null))];
  if (present.length === 0) return null;
  const any = present.find(isAny);
  if (any) return any;
  if (present.length > 1) {
    where.outside.push({
      construct: where.construct,
      path: where.path,
      detail:
        `${present.length} ${kind} alternatives (only one ${kind} schema per ${where.construct})`,
    });
  }
  return present[0];
}

/** The values of exactly one of the shapes (`oneOf`). */
function oneOf(shapes: Shape[], where: Where): Shape {
  const overlap = (kind: string) =>
    where.outside.push({
      construct: "oneOf",
      path: where.path,
      detail: `${kind} alternatives that overlap`,
    });
  const out: Shape = { ...NEVER };
  out.null = shapes.filter((s) => s.null).length === 1;
  const t = shapes.filter((s) => s.boolean?.true).length === 1;
  const f = shapes.filter((s) => s.boolean?.false).length === 1;
  out.boolean = t || f ? { true: t, false: f } : null;
  const strings = shapes.flatMap((s) => (s.string ? [s.string] : []));
  if (strings.length === 1) out.string = strings[0];
  else if (strings.some((p) => p.values === null)) {
    overlap("string");
    out.string = strings.find((p) => p.values === null)!;
  } else if (strings.length > 1) {
    const count = new Map<string, number>();
    for (const p of strings) for (const v of p.values!) count.set(v, (count.get(v) ?? 0) + 1);
    const kept = [...count].filter(([, n]) => n === 1).map(([v]) => v);
    out.string = kept.length > 0 ? { values: new Set(kept) } : null;
  }
  const only = <P>(kind: string, parts: (P | null)[]): P | null => {
    const present = parts.filter((p): p is P => p !== null);
    if (present.length > 1) overlap(kind);
    return present[0] ?? null;
  };
  out.number = only("number", shapes.map((s) => s.number));
  out.array = only("array", shapes.map((s) => s.array));
  out.object = only("object", shapes.map((s) => s.object));
  const names = new Set(shapes.map((s) => s.name));
  if (names.size === 1) out.name = shapes[0].name;
  return mergeMeta(shapes, out);
}

/**
 * Every construct outside the subset in the shape and the shapes it reaches.
 *
 * @example
 * ```ts
 * outsideOf(normalize({ type: "string", pattern: "^a" }).shape);
 * // [{ construct: "pattern", path: "#", detail: "a pattern of strings" }]
 * ```
 */
export function outsideOf(shape: Shape): OutsideSubset[] {
  const seen = new Set<unknown>();
  const found = new Map<string, OutsideSubset>();
  const visit = (s: Shape) => {
    if (seen.has(s)) return;
    seen.add(s);
    for (const o of s.outside ?? []) found.set(`${o.path} ${o.construct} ${o.detail}`, o);
    if (s.array && !seen.has(s.array)) {
      seen.add(s.array);
      visit(s.array.items);
    }
    if (s.object && !seen.has(s.object)) {
      seen.add(s.object);
      for (const p of s.object.properties.values()) visit(p);
      if (s.object.additional !== "unlisted") visit(s.object.additional);
    }
  };
  visit(shape);
  return [...found.values()];
}

/**
 * Normalizes one schema. `$ref`s resolve against `root` (default: the
 * schema itself, as schemars writes a root schema with `definitions`).
 *
 * @example
 * ```ts
 * const { shape } = normalize({
 *   anyOf: [{ $ref: "#/definitions/Note" }, { type: "null" }],
 *   definitions: { Note: { type: "object", properties: { text: { type: "string" } } } },
 * });
 * // shape.null === true; shape.object.name === "Note"
 * ```
 */
export function normalize(
  schema: unknown,
  options: { root?: unknown } = {},
): { shape: Shape; outside: OutsideSubset[] } {
  const shape = new SchemaSpace(options.root ?? schema).shape(schema, "#");
  return { shape, outside: outsideOf(shape) };
}
