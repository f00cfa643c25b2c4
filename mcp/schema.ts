/**
 * From a plugin's `rpc.discover` document (OpenRPC 1.2, JSON Schema Draft 7,
 * PROTOCOL section 10.1) to the schemas of MCP tools: the `inputSchema` of a
 * method's params object, the `outputSchema` of its result, and the check of
 * a call's arguments before any process starts.
 *
 * A schema that MCP sends must stand alone, so each `$ref` to
 * `#/components/schemas/<Name>` becomes `#/$defs/<Name>`, with the schemas it
 * reaches copied into `$defs`; any other `#/…` pointer into the document is
 * copied in place. No `$schema` is added: Draft 7 schemas that use `$defs` read
 * the same under 2020-12, MCP's default dialect.
 *
 * @module
 */
import { Ajv, type ErrorObject as AjvError, type ValidateFunction } from "ajv";
import { addNumberFormats } from "../core/interfaces/formats.ts";

/** A JSON object. */
export type JsonObject = Record<string, unknown>;

/**
 * How a result becomes `structuredContent` (which MCP wants as an object):
 * `object` as it is (the result schema is an object's); `wrap` always as
 * `{"result": value}`; `auto` (no result schema, or one that allows anything)
 * as it is when it is an object, else wrapped.
 */
export type ResultForm = "object" | "wrap" | "auto";

/** The MCP schemas of one method. */
export interface MethodSchemas {
  /** Always `type: "object"`: params are by name (PROTOCOL 3.1). */
  inputSchema: JsonObject & { type: "object" };
  /** Only when the document says what the result is. */
  outputSchema?: JsonObject & { type: "object" };
  resultForm: ResultForm;
}

const COMPONENTS = "#/components/schemas/";
/** Deeper inlined pointers than this are taken as a cycle and allow anything. */
const MAX_INLINE_DEPTH = 32;

function isObject(x: unknown): x is JsonObject {
  return typeof x === "object" && x !== null && !Array.isArray(x);
}

/** The value at a local JSON pointer (`#/a/b`) of `doc`, or undefined. */
function pointer(doc: unknown, ref: string): unknown {
  if (!ref.startsWith("#")) return undefined;
  const parts = ref.slice(1).split("/").slice(1)
    .map((p) => decodeURIComponent(p).replaceAll("~1", "/").replaceAll("~0", "~"));
  let at: unknown = doc;
  for (const part of parts) {
    if (Array.isArray(at)) at = at[Number(part)];
    else if (isObject(at) && Object.hasOwn(at, part)) at = at[part];
    else return undefined;
  }
  return at;
}

/** Makes a document's schemas self-contained, collecting the components they use. */
class Localizer {
  readonly defs: JsonObject = {};
  readonly #doc: unknown;
  readonly #components: JsonObject;

  constructor(doc: unknown) {
    this.#doc = doc;
    const components = isObject(doc) && isObject(doc.components) ? doc.components : {};
    this.#components = isObject(components.schemas) ? components.schemas : {};
  }

  /** A copy of `schema` whose `$ref`s point into `$defs` (or were copied in). */
  localize(schema: unknown, depth = 0): unknown {
    if (Array.isArray(schema)) return schema.map((s) => this.localize(s, depth));
    if (!isObject(schema)) return schema;
    const out: JsonObject = {};
    for (const [key, value] of Object.entries(schema)) {
      if (key === "$ref" && typeof value === "string") {
        const local = this.#ref(value, depth);
        if (isObject(local) && "$ref" in local) out.$ref = local.$ref;
        else if (isObject(local)) Object.assign(out, local);
        continue;
      }
      out[key] = this.localize(value, depth);
    }
    return out;
  }

  /** `{$ref}` into `$defs`, or the inlined target, or `{}` for what cannot be resolved. */
  #ref(ref: string, depth: number): unknown {
    if (ref.startsWith(COMPONENTS)) {
      const rest = ref.slice(COMPONENTS.length);
      const name = decodeURIComponent(rest.split("/")[0]);
      if (Object.hasOwn(this.#components, name)) {
        if (!Object.hasOwn(this.defs, name)) {
          this.defs[name] = {}; // placed first: a recursive schema refers to itself
          this.defs[name] = this.localize(this.#components[name], depth);
        }
        return { $ref: `#/$defs/${rest}` };
      }
      return {};
    }
    if (depth >= MAX_INLINE_DEPTH) return {};
    const target = pointer(this.#doc, ref);
    return target === undefined ? {} : this.localize(target, depth + 1);
  }

  /** Follows a root `$ref` into `$defs`, so the root shows its own `type`. */
  root(schema: unknown): unknown {
    let at = schema;
    for (let i = 0; i < 8 && isObject(at) && typeof at.$ref === "string"; i++) {
      if (!at.$ref.startsWith("#/$defs/")) break;
      const { $ref, ...rest } = at;
      const target = pointer({ $defs: this.defs }, $ref as string);
      if (!isObject(target)) break;
      at = { ...target, ...rest };
    }
    return at;
  }
}

/** A content descriptor (or a `$ref` to one), resolved. */
function descriptor(doc: unknown, value: unknown): JsonObject | undefined {
  if (isObject(value) && typeof value.$ref === "string") {
    const found = pointer(doc, value.$ref);
    return isObject(found) ? found : undefined;
  }
  return isObject(value) ? value : undefined;
}

/** Whether a schema allows any value (true, `{}`, or only annotations). */
function allowsAnything(schema: unknown): boolean {
  if (schema === true || schema === undefined) return true;
  if (!isObject(schema)) return false;
  const annotations = new Set(["title", "description", "$comment", "examples", "default"]);
  return Object.keys(schema).every((k) => annotations.has(k));
}

/** MCP's schema of a tool lists each property as an object schema, not `true` or `false`. */
function objectProperties(properties: unknown): JsonObject | undefined {
  if (!isObject(properties)) return undefined;
  return Object.fromEntries(
    Object.entries(properties).map((
      [k, v],
    ) => [k, v === true ? {} : v === false ? { not: {} } : v]),
  );
}

/** The names of `$defs` that `value` refers to. */
function refsIn(value: unknown, into: Set<string>): void {
  if (Array.isArray(value)) {
    for (const v of value) refsIn(v, into);
    return;
  }
  if (!isObject(value)) return;
  for (const [k, v] of Object.entries(value)) {
    if (k === "$ref" && typeof v === "string" && v.startsWith("#/$defs/")) {
      into.add(decodeURIComponent(v.slice("#/$defs/".length).split("/")[0]));
    } else {
      refsIn(v, into);
    }
  }
}

/** `schema` with the `$defs` it reaches, and no others (a tool list goes to a model whole). */
function withDefs<T extends JsonObject>(schema: T, defs: JsonObject): T {
  const used = new Set<string>();
  refsIn(schema, used);
  for (const name of used) if (Object.hasOwn(defs, name)) refsIn(defs[name], used);
  const kept = Object.fromEntries(Object.entries(defs).filter(([name]) => used.has(name)));
  return Object.keys(kept).length === 0 ? schema : { ...schema, $defs: kept };
}

/**
 * The MCP schemas of a method of `doc`: params from `x-sausage-params` when
 * present, else from the `params` list (each name, schema, description and
 * `required`), as the compatibility check builds the params object.
 *
 * @example
 * ```ts
 * import { methodSchemas } from "./schema.ts";
 * const doc = { methods: [], components: { schemas: { Added: { type: "object",
 *   properties: { count: { type: "integer" } }, required: ["count"] } } } };
 * const s = methodSchemas(doc, { name: "add",
 *   params: [{ name: "text", required: true, schema: { type: "string" } }],
 *   result: { name: "Added", schema: { $ref: "#/components/schemas/Added" } } });
 * // s.inputSchema: {type: "object", properties: {text: {type: "string"}}, required: ["text"]}
 * // s.outputSchema: {$ref: "#/$defs/Added"} resolved at its root, with $defs.Added
 * ```
 */
export function methodSchemas(doc: unknown, method: JsonObject): MethodSchemas {
  const local = new Localizer(doc);
  let input: JsonObject;
  if (method["x-sausage-params"] !== undefined) {
    const root = local.root(local.localize(method["x-sausage-params"]));
    input = isObject(root) ? { ...root } : {};
  } else {
    const properties: JsonObject = {};
    const required: string[] = [];
    for (const p of Array.isArray(method.params) ? method.params : []) {
      const cd = descriptor(doc, p);
      if (!cd || typeof cd.name !== "string") continue;
      let schema = local.localize(cd.schema ?? {});
      const text = typeof cd.description === "string"
        ? cd.description
        : typeof cd.summary === "string"
        ? cd.summary
        : undefined;
      if (isObject(schema) && text !== undefined && schema.description === undefined) {
        schema = { ...schema, description: text };
      }
      properties[cd.name] = schema;
      if (cd.required === true) required.push(cd.name);
    }
    input = { properties, ...(required.length > 0 ? { required } : {}) };
  }
  const properties = objectProperties(input.properties);
  const inputSchema = withDefs(
    { ...input, type: "object" as const, ...(properties ? { properties } : {}) },
    local.defs,
  );

  let outputSchema: (JsonObject & { type: "object" }) | undefined;
  let resultForm: ResultForm = "auto";
  const result = method.result === undefined ? undefined : descriptor(doc, method.result);
  if (result !== undefined && !allowsAnything(result.schema)) {
    const root = local.root(local.localize(result.schema));
    if (isObject(root) && root.type === "object") {
      const props = objectProperties(root.properties);
      outputSchema = withDefs(
        { ...root, type: "object" as const, ...(props ? { properties: props } : {}) },
        local.defs,
      );
      resultForm = "object";
    } else {
      outputSchema = withDefs(
        { type: "object" as const, properties: { result: root }, required: ["result"] },
        local.defs,
      );
      resultForm = "wrap";
    }
  }
  return { inputSchema, ...(outputSchema ? { outputSchema } : {}), resultForm };
}

/** The `structuredContent` of a result, in the form its schema gives. */
export function structured(result: unknown, form: ResultForm): JsonObject {
  if (form === "object" || (form === "auto" && isObject(result))) return result as JsonObject;
  return { result };
}

/** Checks values against a schema; compiled once per schema object. */
export class Validator {
  // plugins name the number formats of schemars (uint64, int32…): known, and checked
  readonly #ajv = addNumberFormats(
    new Ajv({ strict: false, allErrors: false, validateFormats: true, logger: false }),
  );
  readonly #compiled = new WeakMap<object, ValidateFunction | Error>();

  /** Why `value` does not fit `schema`, in words; null when it fits. */
  problem(schema: JsonObject, value: unknown, what: string): string | null {
    let check = this.#compiled.get(schema);
    if (!check) {
      try {
        check = this.#ajv.compile(schema);
      } catch (e) {
        check = e as Error;
      }
      this.#compiled.set(schema, check);
    }
    // a schema a validator cannot read is the document's fault: the call goes on
    if (check instanceof Error) return null;
    if (check(value)) return null;
    return describeError(check.errors?.[0], what);
  }
}

/** `a/0/b` → `a[0].b`. */
function fieldName(instancePath: string, extra?: string): string {
  const parts = instancePath.split("/").slice(1).map((p) =>
    p.replaceAll("~1", "/").replaceAll("~0", "~")
  );
  if (extra !== undefined) parts.push(extra);
  return parts.map((p, i) => /^\d+$/.test(p) ? `[${p}]` : i === 0 ? p : `.${p}`).join("");
}

/** One ajv error as a sentence that names the field. */
function describeError(error: AjvError | undefined, what: string): string {
  if (!error) return `${what} do not fit the schema`;
  const p = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case "required":
      return `${what}: "${
        fieldName(error.instancePath, String(p.missingProperty))
      }" is required but missing`;
    case "additionalProperties":
      return `${what}: "${
        fieldName(error.instancePath, String(p.additionalProperty))
      }" is not allowed here`;
    case "type": {
      const field = fieldName(error.instancePath);
      return field === "" ? `${what} must be ${p.type}` : `${what}: "${field}" must be ${p.type}`;
    }
    case "enum":
      return `${what}: "${fieldName(error.instancePath)}" must be one of ${
        JSON.stringify(p.allowedValues)
      }`;
    default: {
      const field = fieldName(error.instancePath);
      return field === "" ? `${what} ${error.message}` : `${what}: "${field}" ${error.message}`;
    }
  }
}
