import assert from "node:assert/strict";
import { methodSchemas, structured, Validator } from "./schema.ts";
import { toolName } from "./tools.ts";

const doc = {
  methods: [],
  components: {
    schemas: {
      Added: {
        type: "object",
        properties: { count: { type: "integer" }, last: { $ref: "#/components/schemas/Note" } },
        required: ["count"],
      },
      Note: { type: "object", properties: { text: { type: "string" } } },
      Tree: {
        type: "object",
        properties: { children: { type: "array", items: { $ref: "#/components/schemas/Tree" } } },
      },
      Params: { type: "object", properties: { tree: { $ref: "#/components/schemas/Tree" } } },
    },
    contentDescriptors: { Text: { name: "text", required: true, schema: { type: "string" } } },
  },
};

Deno.test("a params list becomes an object schema; refs point into $defs with what they reach", () => {
  const s = methodSchemas(doc, {
    name: "add",
    params: [
      { $ref: "#/components/contentDescriptors/Text" },
      { name: "tag", description: "a label", schema: { type: "string" } },
      { name: "any" },
    ],
    result: { name: "Added", schema: { $ref: "#/components/schemas/Added" } },
  });
  assert.deepEqual(s.inputSchema, {
    type: "object",
    properties: {
      text: { type: "string" },
      tag: { type: "string", description: "a label" },
      any: {},
    },
    required: ["text"],
  });
  assert.equal(s.resultForm, "object");
  assert.deepEqual(s.outputSchema?.properties, {
    count: { type: "integer" },
    last: { $ref: "#/$defs/Note" },
  });
  // Added is the root itself now: only what the root still refers to stays
  assert.deepEqual(Object.keys(s.outputSchema?.$defs as object), ["Note"]);
});

Deno.test("x-sausage-params is resolved at its root; a recursive schema stays a reference", () => {
  const s = methodSchemas(doc, {
    name: "walk",
    params: [],
    "x-sausage-params": { $ref: "#/components/schemas/Params" },
  });
  assert.equal(s.inputSchema.type, "object");
  assert.deepEqual(s.inputSchema.properties, { tree: { $ref: "#/$defs/Tree" } });
  const defs = s.inputSchema.$defs as Record<string, { properties: Record<string, unknown> }>;
  assert.deepEqual(defs.Tree.properties.children, {
    type: "array",
    items: { $ref: "#/$defs/Tree" },
  });
  assert.equal(s.outputSchema, undefined);
  assert.equal(s.resultForm, "auto");
  const v = new Validator();
  assert.equal(v.problem(s.inputSchema, { tree: { children: [{ children: [] }] } }, "args"), null);
  assert.match(
    v.problem(s.inputSchema, { tree: { children: [{ children: 3 }] } }, "args")!,
    /"tree\.children\[0\]\.children" must be array/,
  );
});

Deno.test("a result that is not an object is wrapped; one that allows anything is wrapped only when needed", () => {
  const list = methodSchemas(doc, {
    name: "list",
    params: [],
    result: { name: "notes", schema: { type: "array", items: { type: "string" } } },
  });
  assert.equal(list.resultForm, "wrap");
  assert.deepEqual(list.outputSchema, {
    type: "object",
    properties: { result: { type: "array", items: { type: "string" } } },
    required: ["result"],
  });
  assert.deepEqual(structured(["a"], "wrap"), { result: ["a"] });
  assert.deepEqual(structured({ a: 1 }, "auto"), { a: 1 });
  assert.deepEqual(structured(7, "auto"), { result: 7 });
  const anything = methodSchemas(doc, {
    name: "echo",
    params: [],
    result: { name: "x", schema: { description: "anything" } },
  });
  assert.equal(anything.outputSchema, undefined);
});

Deno.test("the validator names the field that does not fit", () => {
  const s = methodSchemas(doc, {
    name: "add",
    params: [
      { name: "text", required: true, schema: { type: "string" } },
      { name: "kind", schema: { type: "string", enum: ["a", "b"] } },
      { name: "n", schema: { type: "integer", minimum: 1 } },
    ],
  });
  const v = new Validator();
  const what = "the arguments of notes_add";
  assert.equal(v.problem(s.inputSchema, { text: "x", n: 2 }, what), null);
  assert.equal(v.problem(s.inputSchema, {}, what), `${what}: "text" is required but missing`);
  assert.equal(v.problem(s.inputSchema, { text: 1 }, what), `${what}: "text" must be string`);
  assert.match(v.problem(s.inputSchema, { text: "x", kind: "c" }, what)!, /"kind" must be one of/);
  assert.match(v.problem(s.inputSchema, { text: "x", n: 0 }, what)!, /"n" must be >= 1/);
  // a schema no validator can read does not stop the call
  assert.equal(v.problem({ type: "object", properties: { a: { type: "nope" } } }, {}, what), null);
});

Deno.test("tool names: <plugin>_<method>, only A-Z a-z 0-9 _ -, at most 64 characters", () => {
  assert.equal(toolName("notes", "add"), "notes_add");
  assert.equal(toolName("www", "site.get"), "www_site_get");
  const long = toolName("p".repeat(60), "method");
  assert.equal(long.length, 64);
  assert.match(long, /^p{55}_[0-9a-f]{8}$/);
  assert.notEqual(long, toolName("p".repeat(60), "other"));
});
