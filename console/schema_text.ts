/**
 * JSON Schema as a short type, for people: `string`, `integer`, `string[]`,
 * `"a" | "b"`, `Note | null`, `{ text: string, tags?: string[] }`, and
 * `Added { count: integer }` for a named schema shown with its fields.
 *
 * A `$ref` to `#/components/schemas/<Name>` shows as `Name`; the names met
 * are collected, so that a caller can list them once with their fields. The
 * text is a summary: ranges, formats and patterns are left out, and deep or
 * unusual schemas shorten to `object`, `array` or `any`.
 *
 * @example
 * ```ts
 * import { SchemaText } from "./schema_text.ts";
 * const text = new SchemaText({ components: { schemas: { Added: {
 *   type: "object", properties: { count: { type: "integer" } }, required: ["count"],
 * } } } });
 * text.type({ type: "array", items: { type: ["string", "null"] } }); // "(string | null)[]"
 * text.named({ $ref: "#/components/schemas/Added" }); // "Added { count: integer }"
 * ```
 *
 * @module
 */

type Json = Record<string, unknown>;

/** Where `#/components/schemas/` refs point. */
const SCHEMAS = "#/components/schemas/";
/** The most enum values shown before `…`. */
const MAX_ENUM = 8;
/** How deep anonymous objects and arrays are shown before they become `object` or `array`. */
const MAX_DEPTH = 3;

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The name of a schema a local `$ref` points to: its last segment (`Added`). */
export function refName(ref: string): string {
  const last = ref.split("/").pop() ?? ref;
  let name = last;
  try {
    name = decodeURIComponent(last);
  } catch {
    // not percent-encoded: keep it as written
  }
  return name.replaceAll("~1", "/").replaceAll("~0", "~") || ref;
}

/**
 * Resolves a local JSON pointer `#/...` in `roots`, the first root that has
 * it; undefined when none has it or the ref is not local.
 */
export function resolvePointer(ref: string, roots: readonly unknown[]): unknown {
  if (!ref.startsWith("#/")) return undefined;
  let segments: string[];
  try {
    segments = decodeURIComponent(ref.slice(2)).split("/").map((s) =>
      s.replaceAll("~1", "/").replaceAll("~0", "~")
    );
  } catch {
    return undefined;
  }
  for (const root of roots) {
    let value: unknown = root;
    for (const s of segments) {
      if (Array.isArray(value) && /^\d+$/.test(s)) value = value[Number(s)];
      else if (isObject(value) && Object.hasOwn(value, s)) value = value[s];
      else {
        value = undefined;
        break;
      }
    }
    if (value !== undefined) return value;
  }
  return undefined;
}

/** What the texts of one document share: the named schemas met, and those shown with their body. */
interface Seen {
  /** Each name met by `$ref`, in order, with the text that can resolve it. */
  met: Map<string, SchemaText>;
  /** Names already shown as `Name { fields }`. */
  expanded: Set<string>;
}

/** Turns schemas of one document into short types. */
export class SchemaText {
  readonly #roots: readonly unknown[];
  #seen: Seen;

  /**
   * @param roots the documents `$ref`s resolve in; the first that has a
   * pointer wins (an endpoint interface, then the whole document).
   */
  constructor(...roots: unknown[]) {
    this.#roots = roots;
    this.#seen = { met: new Map(), expanded: new Set() };
  }

  /** A text for other roots (an endpoint interface) that shares what was met with this one. */
  within(...roots: unknown[]): SchemaText {
    const text = new SchemaText(...roots);
    text.#seen = this.#seen;
    return text;
  }

  /** The names of the `#/components/schemas/` schemas met so far, in order. */
  get met(): string[] {
    return [...this.#seen.met.keys()];
  }

  /** The names met so far that were not shown with their body. */
  get unexpanded(): string[] {
    return this.met.filter((name) => !this.#seen.expanded.has(name));
  }

  /** Describes `name` with the text that met it (or this one). */
  definitionOf(name: string): string {
    return (this.#seen.met.get(name) ?? this).definition(name);
  }

  /** What a local `$ref` points to, in the roots of this text. */
  resolve(ref: string): unknown {
    return resolvePointer(ref, this.#roots);
  }

  /** The schema of a `#/components/schemas/<name>`, if the document has it. */
  schema(name: string): unknown {
    return resolvePointer(SCHEMAS + name.replaceAll("~", "~0").replaceAll("/", "~1"), this.#roots);
  }

  /** A short type: named schemas by name. */
  type(schema: unknown): string {
    return this.#type(schema, 0);
  }

  /**
   * Like {@linkcode type}, but a `$ref` to an object or enum schema also
   * shows its body: `Added { count: integer }`, `Color = "red" | "blue"`.
   */
  named(schema: unknown): string {
    const ref = isObject(schema) ? this.#refOf(schema) : undefined;
    if (ref === undefined) return this.type(schema);
    const name = refName(ref);
    this.#meet(name);
    const body = resolvePointer(ref, this.#roots);
    if (body === undefined) return name;
    const text = this.#withBody(name, body);
    if (text !== name) this.#seen.expanded.add(name);
    return text;
  }

  #meet(name: string): void {
    if (!this.#seen.met.has(name)) this.#seen.met.set(name, this);
  }

  /** `Name { fields }` or `Name = body` for a named schema, or the name alone for a plain one. */
  definition(name: string): string {
    const body = this.schema(name);
    if (body === undefined) return `${name}: not in the document`;
    const text = this.#withBody(name, body);
    return text === name ? `${name} = ${this.#body(body)}` : text;
  }

  #withBody(name: string, body: unknown): string {
    const text = this.#body(body);
    if (text.startsWith("{")) return `${name} ${text}`;
    if (isCompound(text)) return `${name} = ${text}`;
    return name;
  }

  /** The type of a schema's own keywords, objects and arrays at the first level shown. */
  #body(schema: unknown): string {
    return this.#type(this.#unref(schema), 0);
  }

  /** A schema that is only a `$ref` (or an `allOf` of one), followed once. */
  #unref(schema: unknown): unknown {
    if (!isObject(schema)) return schema;
    const ref = this.#refOf(schema);
    return ref === undefined ? schema : resolvePointer(ref, this.#roots) ?? schema;
  }

  /** The `$ref` a schema is: directly, or as the only member of `allOf`. */
  #refOf(schema: Json): string | undefined {
    if (typeof schema.$ref === "string") return schema.$ref;
    if (Array.isArray(schema.allOf) && schema.allOf.length === 1 && isObject(schema.allOf[0])) {
      return this.#refOf(schema.allOf[0]);
    }
    return undefined;
  }

  #type(schema: unknown, depth: number): string {
    if (schema === true || (isObject(schema) && Object.keys(schema).length === 0)) return "any";
    if (schema === false) return "never";
    if (!isObject(schema)) return "any";
    if (typeof schema.$ref === "string") {
      if (!schema.$ref.startsWith("#")) return schema.$ref;
      const name = refName(schema.$ref);
      this.#meet(name);
      return name;
    }
    if (Object.hasOwn(schema, "const")) return JSON.stringify(schema.const) ?? "any";
    if (Array.isArray(schema.enum)) return this.#enum(schema.enum);
    for (const key of ["anyOf", "oneOf"] as const) {
      const list = schema[key];
      if (Array.isArray(list) && list.length > 0) {
        return union(list.map((s) => this.#type(s, depth)));
      }
    }
    if (Array.isArray(schema.allOf) && schema.allOf.length > 0) {
      const parts = schema.allOf.map((s) => this.#type(s, depth));
      return parts.length === 1 ? parts[0] : parts.map(grouped).join(" & ");
    }
    const types = typeNames(schema);
    if (types.length === 0) return "any";
    return union(types.map((t) => this.#typed(t, schema, depth)));
  }

  #enum(values: unknown[]): string {
    if (values.length === 0) return "never";
    const shown = values.slice(0, MAX_ENUM).map((v) => JSON.stringify(v) ?? "null");
    if (values.length > MAX_ENUM) shown.push("…");
    return shown.join(" | ");
  }

  #typed(type: string, schema: Json, depth: number): string {
    switch (type) {
      case "array":
        return this.#array(schema, depth);
      case "object":
        return this.#object(schema, depth);
      default:
        return type;
    }
  }

  #array(schema: Json, depth: number): string {
    if (depth >= MAX_DEPTH) return "array";
    const items = schema.items;
    if (Array.isArray(items)) return `[${items.map((s) => this.#type(s, depth + 1)).join(", ")}]`;
    if (items === undefined) return "any[]";
    return `${grouped(this.#type(items, depth + 1))}[]`;
  }

  #object(schema: Json, depth: number): string {
    const properties = isObject(schema.properties) ? schema.properties : {};
    const required = new Set(
      Array.isArray(schema.required) ? schema.required.filter((r) => typeof r === "string") : [],
    );
    const extra = schema.additionalProperties;
    const hasExtra = extra !== undefined && extra !== false;
    const names = Object.keys(properties);
    if (names.length === 0 && !hasExtra) return "object";
    if (depth >= MAX_DEPTH) return "object";
    const fields = names.map((name) =>
      `${fieldName(name)}${required.has(name) ? "" : "?"}: ${
        this.#type(properties[name], depth + 1)
      }`
    );
    if (hasExtra) fields.push(`[key: string]: ${this.#type(extra, depth + 1)}`);
    return `{ ${fields.join(", ")} }`;
  }
}

/** The JSON types a schema allows by `type`, or implies by its keywords. */
function typeNames(schema: Json): string[] {
  if (typeof schema.type === "string") return [schema.type];
  if (Array.isArray(schema.type)) {
    return schema.type.filter((t): t is string => typeof t === "string");
  }
  if (isObject(schema.properties) || schema.additionalProperties !== undefined) return ["object"];
  if (schema.items !== undefined) return ["array"];
  return [];
}

/** Alternatives joined by ` | `, each once, `null` last. */
function union(parts: string[]): string {
  const unique = [...new Set(parts)];
  if (unique.includes("any")) return "any";
  const sorted = [...unique.filter((p) => p !== "null"), ...unique.filter((p) => p === "null")];
  return sorted.join(" | ");
}

/** A type in parentheses when it is a union or intersection (before `[]` or `&`). */
function grouped(text: string): string {
  return isCompound(text) ? `(${text})` : text;
}

/** Whether a type has ` | ` or ` & ` outside brackets and quotes. */
export function isCompound(text: string): boolean {
  let depth = 0;
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === "\\") i++;
      else if (c === '"') quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === "{" || c === "[" || c === "(") depth++;
    else if (c === "}" || c === "]" || c === ")") depth--;
    else if (depth === 0 && c === " " && (text[i + 1] === "|" || text[i + 1] === "&")) {
      return text[i + 2] === " ";
    }
  }
  return false;
}

/** A field name as is when it is an identifier, else quoted. */
function fieldName(name: string): string {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) ? name : JSON.stringify(name);
}
