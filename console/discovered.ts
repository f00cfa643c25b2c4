/**
 * What the console takes from a plugin's `rpc.discover` document besides
 * `methods <plugin>`: the method names for completion, and example params
 * for the hint of a call whose params were not JSON.
 *
 * @module
 */

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function methodsOf(document: unknown): Json[] {
  if (!isObject(document) || !Array.isArray(document.methods)) return [];
  return document.methods.filter(isObject);
}

/**
 * The full names of a plugin's methods (`notes.add`), sorted; empty for a
 * document that is missing or not one.
 *
 * @example
 * ```ts
 * methodNames("notes", { methods: [{ name: "list" }, { name: "add" }] }); // ["notes.add", "notes.list"]
 * ```
 */
export function methodNames(plugin: string, document: unknown): string[] {
  return methodsOf(document)
    .map((m) => m.name)
    .filter((name): name is string => typeof name === "string" && !name.startsWith("rpc."))
    .map((name) => `${plugin}.${name}`)
    .sort();
}

/**
 * Params to show as an example for `method` (its name without the plugin),
 * as one line of JSON: the method's first example, else its required params
 * (all params when none is required) with a value of their schema's type.
 * Null when the document has no such method.
 *
 * @example
 * ```ts
 * const document = {
 *   methods: [{ name: "build", params: [{ name: "plugin", required: true, schema: { type: "string" } }] }],
 * };
 * exampleParams(document, "build"); // '{"plugin": "notes"}'
 * ```
 */
export function exampleParams(document: unknown, method: string): string | null {
  const found = methodsOf(document).find((m) => m.name === method);
  if (!found) return null;
  const example = Array.isArray(found.examples) ? found.examples.find(isObject) : undefined;
  if (example && Array.isArray(example.params)) {
    const byName: Json = {};
    for (const p of example.params.filter(isObject)) {
      if (typeof p.name === "string") byName[p.name] = p.value;
    }
    return oneLine(byName);
  }
  const params = (Array.isArray(found.params) ? found.params : []).filter(isObject);
  const required = params.filter((p) => p.required === true);
  const shown: Json = {};
  for (const p of required.length > 0 ? required : params) {
    if (typeof p.name === "string") shown[p.name] = sampleValue(p.name, p.schema);
  }
  return oneLine(shown);
}

/** `{"a": 1, "b": "x"}`: JSON on one line with a space after each colon and comma. */
function oneLine(value: Json): string {
  const entries = Object.entries(value).map(([k, v]) =>
    `${JSON.stringify(k)}: ${JSON.stringify(v)}`
  );
  return `{${entries.join(", ")}}`;
}

/** A value that fits a schema, for an example: its own example or default, else one of its type. */
function sampleValue(name: string, schema: unknown): unknown {
  if (!isObject(schema)) return "…";
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0];
  if (schema.default !== undefined) return schema.default;
  if (Array.isArray(schema.enum) && schema.enum.length > 0) return schema.enum[0];
  if (schema.const !== undefined) return schema.const;
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case "string":
      return name === "plugin" ? "notes" : name === "path" ? "/state/example.txt" : "text";
    case "integer":
    case "number":
      return typeof schema.minimum === "number" ? schema.minimum : 1;
    case "boolean":
      return true;
    case "array":
      return [];
    case "object":
      return {};
    case "null":
      return null;
    default:
      return "…";
  }
}
