import assert from "node:assert/strict";
import { isCompound, refName, resolvePointer, SchemaText } from "./schema_text.ts";

const DOC = {
  components: {
    schemas: {
      Added: {
        type: "object",
        properties: { count: { type: "integer", format: "uint64", minimum: 0 } },
        required: ["count"],
      },
      Mode: { type: "string", enum: ["static", "proxy"] },
      Id: { type: "string" },
      Tree: {
        type: "object",
        properties: {
          name: { type: "string" },
          children: { type: "array", items: { $ref: "#/components/schemas/Tree" } },
        },
        required: ["name"],
      },
      "a/b": { type: "integer" },
    },
  },
};

Deno.test("primitive types, arrays and unions are short", () => {
  const t = new SchemaText(DOC);
  assert.equal(t.type({ type: "string" }), "string");
  assert.equal(
    t.type({ type: "integer", format: "uint16", minimum: 0, maximum: 65535 }),
    "integer",
  );
  assert.equal(t.type({ type: "number" }), "number");
  assert.equal(t.type({ type: "boolean" }), "boolean");
  assert.equal(t.type({ type: "null" }), "null");
  assert.equal(t.type({ type: "array", items: { type: "string" } }), "string[]");
  assert.equal(t.type({ type: "array" }), "any[]");
  assert.equal(
    t.type({ type: "array", items: [{ type: "string" }, { type: "integer" }] }),
    "[string, integer]",
  );
  assert.equal(t.type({ type: ["string", "null"] }), "string | null");
  assert.equal(t.type({ type: ["null", "integer"] }), "integer | null");
  assert.equal(t.type({ type: "array", items: { type: ["string", "null"] } }), "(string | null)[]");
  assert.equal(
    t.type({ anyOf: [{ $ref: "#/components/schemas/Added" }, { type: "null" }] }),
    "Added | null",
  );
  assert.equal(t.type({ oneOf: [{ const: "a" }, { const: "b" }] }), '"a" | "b"');
  assert.equal(t.type({ type: "string", enum: ["a", "b"] }), '"a" | "b"');
  assert.equal(t.type({ enum: [1, null] }), "1 | null");
  assert.equal(t.type({ enum: [1, 2, 3, 4, 5, 6, 7, 8, 9] }), "1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | …");
  assert.equal(t.type({ allOf: [{ $ref: "#/components/schemas/Mode" }] }), "Mode");
  assert.equal(
    t.type({ allOf: [{ type: "string" }, { type: ["string", "null"] }] }),
    "string & (string | null)",
  );
});

Deno.test("anything, nothing and unknown schemas", () => {
  const t = new SchemaText(DOC);
  assert.equal(t.type({}), "any");
  assert.equal(t.type(true), "any");
  assert.equal(t.type(undefined), "any");
  assert.equal(t.type(false), "never");
  assert.equal(t.type({ description: "whatever" }), "any");
  assert.equal(t.type({ anyOf: [{}, { type: "null" }] }), "any");
  assert.equal(t.type({ $ref: "https://example.com/s.json" }), "https://example.com/s.json");
});

Deno.test("objects show their fields, optional ones with ?", () => {
  const t = new SchemaText(DOC);
  assert.equal(t.type({ type: "object" }), "object");
  assert.equal(
    t.type({
      type: "object",
      properties: { text: { type: "string" }, tags: { type: "array", items: { type: "string" } } },
      required: ["text"],
    }),
    "{ text: string, tags?: string[] }",
  );
  assert.equal(
    t.type({ type: "object", additionalProperties: { type: "integer" } }),
    "{ [key: string]: integer }",
  );
  assert.equal(
    t.type({ properties: { "by-path": { type: "integer" } } }),
    '{ "by-path"?: integer }',
  );
  assert.equal(
    t.type({
      type: "array",
      items: { anyOf: [{ type: "object", properties: { a: {} } }, { type: "null" }] },
    }),
    "({ a?: any } | null)[]",
  );
  const deep = {
    type: "object",
    properties: {
      a: {
        type: "object",
        properties: {
          b: { type: "object", properties: { c: { type: "object", properties: { d: {} } } } },
        },
      },
    },
  };
  assert.equal(t.type(deep), "{ a?: { b?: { c?: object } } }");
});

Deno.test("refs show names; named shows the fields of a named object", () => {
  const t = new SchemaText(DOC);
  assert.equal(t.type({ $ref: "#/components/schemas/Added" }), "Added");
  assert.equal(t.named({ $ref: "#/components/schemas/Added" }), "Added { count: integer }");
  assert.equal(t.named({ $ref: "#/components/schemas/Mode" }), 'Mode = "static" | "proxy"');
  assert.equal(t.named({ $ref: "#/components/schemas/Id" }), "Id");
  assert.equal(t.named({ $ref: "#/components/schemas/Nope" }), "Nope");
  assert.equal(t.named({ type: "string" }), "string");
  assert.equal(
    t.named({ $ref: "#/components/schemas/Tree" }),
    "Tree { name: string, children?: Tree[] }",
  );
  assert.deepEqual(t.met, ["Added", "Mode", "Id", "Nope", "Tree"]);
  assert.deepEqual(t.unexpanded, ["Id", "Nope"]);
  assert.equal(t.definitionOf("Id"), "Id = string");
  assert.equal(t.definitionOf("Nope"), "Nope: not in the document");
  assert.equal(t.definitionOf("Tree"), "Tree { name: string, children?: Tree[] }");
});

Deno.test("an endpoint's own components come first, then the document's", () => {
  const main = new SchemaText(DOC);
  const endpoint = { components: { schemas: { Added: { type: "string" } } } };
  const inner = main.within(endpoint, DOC);
  assert.equal(inner.named({ $ref: "#/components/schemas/Added" }), "Added");
  assert.equal(inner.named({ $ref: "#/components/schemas/Mode" }), 'Mode = "static" | "proxy"');
  assert.deepEqual(main.met, ["Added", "Mode"], "what the endpoint met is shared");
  assert.equal(main.definitionOf("Added"), "Added = string", "resolved where it was met");
});

Deno.test("pointers and names follow RFC 6901", () => {
  assert.equal(refName("#/components/schemas/a~1b"), "a/b");
  assert.equal(refName("#/components/schemas/Note"), "Note");
  assert.deepEqual(resolvePointer("#/components/schemas/a~1b", [DOC]), { type: "integer" });
  assert.equal(resolvePointer("#/components/schemas/x", [DOC]), undefined);
  assert.equal(resolvePointer("other.json#/x", [DOC]), undefined);
  assert.deepEqual(resolvePointer("#/a/1", [{ a: [0, { b: 2 }] }]), { b: 2 });
});

Deno.test("compound types are found outside brackets and quotes", () => {
  assert.ok(isCompound("string | null"));
  assert.ok(isCompound("A & B"));
  assert.ok(!isCompound("{ a: string | null }"));
  assert.ok(!isCompound('"a | b"'));
  assert.ok(!isCompound("(A | B)[]"));
  assert.ok(isCompound("{ a: string } | null"));
});
