/**
 * Values and shapes: whether a shape accepts a value, a value that a shape
 * accepts (a witness), a short description of a shape for messages, and JSON
 * written for people.
 *
 * @example
 * ```ts
 * import { normalize } from "./schema.ts";
 * import { accepts, describe, witness } from "./values.ts";
 * const { shape } = normalize({ type: "object", properties: { text: { type: "string" } }, required: ["text"] });
 * witness(shape); // { text: "a" }
 * accepts(shape, { text: 1 }); // false
 * describe(shape); // "{text: string}"
 * ```
 *
 * @module
 */

import { describeNumber, numberAccepts, numberWitness } from "./numbers.ts";
import {
  additionalOf,
  ANY,
  type ArrayPart,
  isAnyArray,
  isAnyObject,
  type JsonObject,
  type JsonValue,
  type ObjectPart,
  propertyOf,
  type Shape,
  type Unlisted,
} from "./schema.ts";

/**
 * JSON with sorted keys, so that equal values give equal text (the equality
 * of `uniqueItems`).
 *
 * @example
 * ```ts
 * canonicalJson({ b: 1, a: [true] }); // '{"a":[true],"b":1}'
 * ```
 */
export function canonicalJson(value: JsonValue): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`).join(",")}}`;
  }
  return JSON.stringify(value);
}

/**
 * Whether `value` is valid for the shape. `unlisted` says how objects with
 * `properties` and without `additionalProperties` are read (default `"open"`,
 * as JSON Schema reads them).
 *
 * @example
 * ```ts
 * import { normalize } from "./schema.ts";
 * const { shape } = normalize({ type: "object", properties: { a: { type: "integer" } } });
 * accepts(shape, { a: 1, b: 2 }); // true
 * accepts(shape, { a: 1, b: 2 }, "closed"); // false
 * ```
 */
export function accepts(shape: Shape, value: unknown, unlisted: Unlisted = "open"): boolean {
  if (value === null) return shape.null;
  switch (typeof value) {
    case "boolean":
      return shape.boolean !== null && shape.boolean[value ? "true" : "false"];
    case "number":
      return shape.number !== null && numberAccepts(shape.number, value);
    case "string":
      return shape.string !== null && (shape.string.values?.has(value) ?? true);
    case "object": {
      if (Array.isArray(value)) {
        const part = shape.array;
        if (!part || !value.every((item) => accepts(part.items, item, unlisted))) return false;
        return !part.unique || new Set(value.map(canonicalJson)).size === value.length;
      }
      const part = shape.object;
      if (!part) return false;
      const obj = value as Record<string, unknown>;
      for (const key of part.required) if (!Object.hasOwn(obj, key)) return false;
      for (const [key, v] of Object.entries(obj)) {
        if (!accepts(propertyOf(part, key, unlisted), v, unlisted)) return false;
      }
      return true;
    }
    default:
      return false;
  }
}

/**
 * Finds values of shapes, remembering what it found. A shape may allow no
 * value: an object whose required property allows none, also through a
 * cycle (a struct that must contain itself). The search follows each path
 * without revisiting an object part, so a value it finds is finite, and it
 * finds one when there is one.
 *
 * @example
 * ```ts
 * import { normalize } from "./schema.ts";
 * const w = new Witnesses();
 * w.of(normalize({ type: "object", properties: { a: { type: "integer", minimum: 1 } }, required: ["a"] }).shape);
 * // { a: 1 }
 * ```
 */
export class Witnesses {
  readonly #unlisted: Unlisted;
  readonly #found = new Map<ObjectPart, JsonObject | null>();
  readonly #open = new Set<ObjectPart>();
  #cycles = 0;

  /** `unlisted`: how the objects of the shapes are read (default `"closed"`, a writer's view). */
  constructor(unlisted: Unlisted = "closed") {
    this.#unlisted = unlisted;
  }

  /** A value of the shape, or undefined when it allows none. */
  of(shape: Shape): JsonValue | undefined {
    for (const e of shape.examples ?? []) if (accepts(shape, e, this.#unlisted)) return e;
    if (shape.string) return this.string(shape);
    if (shape.number) {
      const n = numberWitness(shape.number);
      if (n !== undefined) return n;
    }
    if (shape.boolean) return !shape.boolean.false;
    if (shape.object) {
      const o = this.object(shape.object);
      if (o !== undefined) return o;
    }
    if (shape.array) return [];
    if (shape.null) return null;
    return undefined;
  }

  /** A string of the shape, preferring `"a"`. */
  string(shape: Shape): string | undefined {
    const values = shape.string?.values;
    if (values === undefined) return undefined;
    if (values === null) return "a";
    return values.values().next().value;
  }

  /** An object of the part: its required properties, each with a value. */
  object(part: ObjectPart): JsonObject | undefined {
    const known = this.#found.get(part);
    if (known !== undefined) return known ?? undefined;
    if (this.#open.has(part)) {
      this.#cycles++;
      return undefined;
    }
    this.#open.add(part);
    const cyclesBefore = this.#cycles;
    let out: JsonObject | undefined = {};
    for (const key of part.required) {
      const v = this.of(propertyOf(part, key, this.#unlisted));
      if (v === undefined) {
        out = undefined;
        break;
      }
      out[key] = v;
    }
    this.#open.delete(part);
    // A failure that met an open part may succeed from elsewhere: remember only sure answers.
    if (out !== undefined || this.#cycles === cyclesBefore) this.#found.set(part, out ?? null);
    return out;
  }

  /** Whether the shape allows some value. */
  inhabited(shape: Shape): boolean {
    return this.of(shape) !== undefined;
  }
}

/**
 * A value valid for the shape as a writer produces it (objects closed), or
 * undefined when the shape allows none.
 *
 * @example
 * ```ts
 * import { normalize } from "./schema.ts";
 * witness(normalize({ type: ["string", "null"] }).shape); // "a"
 * witness(normalize(false).shape); // undefined
 * ```
 */
export function witness(shape: Shape, unlisted: Unlisted = "closed"): JsonValue | undefined {
  return new Witnesses(unlisted).of(shape);
}

const MAX_ENUM = 6;

/**
 * A short description of a shape: `string`, `integer in [0, 255]`,
 * `"a" | "b"`, `Note[]`, `Note | null`, `{text: string, tags?: string[]}`.
 * Named schemas (`$ref` targets) show their name unless `names` is false.
 *
 * @example
 * ```ts
 * import { normalize } from "./schema.ts";
 * describe(normalize({ type: "array", items: { type: ["string", "null"] } }).shape);
 * // "(string | null)[]"
 * ```
 */
export function describe(shape: Shape, options: { names?: boolean; depth?: number } = {}): string {
  const names = options.names ?? true;
  const depth = options.depth ?? 0;
  if (names && shape.name) return shape.name;
  const inner = { names: true, depth: depth + 1 };
  const parts: string[] = [];
  if (shape.string) {
    const s = shape.string;
    if (names && s.name) parts.push(s.name);
    else if (s.values === null) parts.push("string");
    else {
      const vs = [...s.values];
      parts.push(
        ...vs.slice(0, MAX_ENUM).map((v) => JSON.stringify(v)),
        ...(vs.length > MAX_ENUM ? ["…"] : []),
      );
    }
  }
  if (shape.number) parts.push(describeNumber(shape.number));
  if (shape.boolean) {
    parts.push(
      shape.boolean.true && shape.boolean.false ? "boolean" : String(shape.boolean.true),
    );
  }
  if (shape.object) parts.push(describeObject(shape.object, names, inner));
  if (shape.array) parts.push(describeArray(shape.array, names, inner));
  if (shape.null) parts.push("null");
  if (parts.length === 0) return "nothing";
  if (
    shape.string?.values === null && shape.number && !shape.number.integer &&
    shape.number.min === -Infinity && shape.number.max === Infinity && shape.boolean?.true &&
    shape.boolean.false && shape.object && isAnyObject(shape.object) && shape.array &&
    isAnyArray(shape.array) && shape.null
  ) {
    return "any value";
  }
  return parts.join(" | ");
}

function describeArray(
  part: ArrayPart,
  names: boolean,
  inner: { names: boolean; depth: number },
): string {
  if (names && part.name) return part.name;
  if (isAnyArray(part)) return "array";
  if (inner.depth > 3) return "array";
  const items = describe(part.items, inner);
  const text = items.includes(" | ") ? `(${items})[]` : `${items}[]`;
  return part.unique ? `${text} (unique)` : text;
}

function describeObject(
  part: ObjectPart,
  names: boolean,
  inner: { names: boolean; depth: number },
): string {
  if (names && part.name) return part.name;
  if (isAnyObject(part)) return "object";
  if (inner.depth > 2 || part.properties.size > 4) return "object";
  const fields = [...part.properties].map(([k, s]) =>
    `${fieldName(k)}${part.required.has(k) ? "" : "?"}: ${describe(s, inner)}`
  );
  for (const k of part.required) {
    if (!part.properties.has(k)) {
      fields.push(`${fieldName(k)}: ${describe(additionalOf(part, "open"), inner)}`);
    }
  }
  if (part.additional !== "unlisted" && part.additional !== ANY) {
    fields.push(`[key: string]: ${describe(part.additional, inner)}`);
  }
  return `{${fields.join(", ")}}`;
}

function fieldName(key: string): string {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? key : JSON.stringify(key);
}

/**
 * JSON on one line, with a space after each `:` and `,`, as in messages:
 * `{"text": "milk", "tags": ["a", "b"]}`.
 *
 * @example
 * ```ts
 * formatJson({ text: "milk" }); // '{"text": "milk"}'
 * ```
 */
export function formatJson(value: JsonValue): string {
  if (Array.isArray(value)) return `[${value.map(formatJson).join(", ")}]`;
  if (value !== null && typeof value === "object") {
    const fields = Object.entries(value).map(([k, v]) => `${JSON.stringify(k)}: ${formatJson(v)}`);
    return `{${fields.join(", ")}}`;
  }
  return JSON.stringify(value);
}
