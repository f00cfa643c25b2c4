import assert from "node:assert/strict";
import { normalize, outsideOf, SchemaSpace, type Shape } from "./schema.ts";
import { accepts, describe, formatJson, witness } from "./values.ts";

function shapeOf(schema: unknown): Shape {
  const { shape, outside } = normalize(schema);
  assert.deepEqual(outside, [], `unexpected: ${JSON.stringify(outside)}`);
  return shape;
}

function outside(schema: unknown): { construct: string; path: string }[] {
  return normalize(schema).outside.map(({ construct, path }) => ({ construct, path }));
}

Deno.test("primitive types, and type lists", () => {
  const s = shapeOf({ type: ["string", "null"] });
  assert.ok(accepts(s, "a") && accepts(s, null) && !accepts(s, 1));
  assert.equal(describe(s), "string | null");
  const n = shapeOf({ type: "number" });
  assert.ok(accepts(n, 1.5) && accepts(n, 2) && !accepts(n, "2"));
  const i = shapeOf({ type: "integer" });
  assert.ok(accepts(i, 2) && accepts(i, 2.0) && !accepts(i, 2.5));
  assert.equal(describe(shapeOf({ type: ["integer", "number"] })), "number");
  assert.equal(describe(shapeOf(true)), "any value");
  assert.equal(describe(shapeOf({})), "any value");
  assert.equal(describe(shapeOf(false)), "nothing");
  assert.equal(describe(shapeOf({ type: "boolean", const: true })), "true");
});

Deno.test("schemars integers: u16 from 0.8 (minimum only) and from 1.0 (both bounds)", () => {
  const v08 = shapeOf({ type: "integer", format: "uint16", minimum: 0.0 });
  const v10 = shapeOf({ type: "integer", format: "uint16", minimum: 0, maximum: 65535 });
  for (const s of [v08, v10]) {
    assert.ok(accepts(s, 65535) && !accepts(s, 65536) && !accepts(s, -1));
    assert.equal(describe(s), "u16");
  }
  assert.equal(
    describe(shapeOf({ type: "integer", format: "int32" })),
    "i32",
  );
  assert.equal(
    describe(shapeOf({ type: "integer", format: "uint", minimum: 0 })),
    "u32",
  );
  // a format that is not an integer format constrains nothing
  assert.equal(describe(shapeOf({ type: "number", format: "double" })), "number");
  assert.equal(describe(shapeOf({ type: "string", format: "date-time" })), "string");
  // Option<u8> as schemars 1.0 writes it
  const opt = shapeOf({ type: ["integer", "null"], format: "uint8", minimum: 0, maximum: 255 });
  assert.ok(accepts(opt, null) && accepts(opt, 255) && !accepts(opt, 256));
});

Deno.test("ranges: exclusive bounds, and an integer range without integers", () => {
  const s = shapeOf({ type: "integer", exclusiveMinimum: 0, exclusiveMaximum: 3 });
  assert.ok(!accepts(s, 0) && accepts(s, 1) && accepts(s, 2) && !accepts(s, 3));
  const empty = shapeOf({ type: "integer", minimum: 0.2, maximum: 0.8 });
  assert.equal(empty.number, null);
  assert.equal(witness(empty), undefined);
});

Deno.test("string enums: enum, const, and oneOf of const as schemars writes unit enums", () => {
  const plain = shapeOf({ type: "string", enum: ["open", "done"] });
  const documented = shapeOf({
    oneOf: [
      { description: "Still to do.", type: "string", const: "open" },
      { description: "Finished.", type: "string", const: "done" },
    ],
  });
  for (const s of [plain, documented]) {
    assert.ok(
      accepts(s, "open") && accepts(s, "done") && !accepts(s, "other") && !accepts(s, null),
    );
    assert.equal(describe(s), '"open" | "done"');
  }
  // type and enum both apply: null is not in the enum
  const quirk = shapeOf({ type: ["string", "null"], enum: ["a", "b"] });
  assert.ok(!accepts(quirk, null));
  const withNull = shapeOf({ type: ["string", "null"], enum: ["a", "b", null] });
  assert.ok(accepts(withNull, null));
  // oneOf: a value in two alternatives is in none
  const overlap = shapeOf({ oneOf: [{ enum: ["a", "b"] }, { enum: ["b", "c"] }] });
  assert.ok(accepts(overlap, "a") && !accepts(overlap, "b") && accepts(overlap, "c"));
});

Deno.test("Option<T> in its forms: type list, anyOf with null, a wrapped $ref", () => {
  const defs = {
    Note: {
      type: "object",
      properties: { text: { type: "string" } },
      required: ["text"],
    },
  };
  const forms = [
    { anyOf: [{ $ref: "#/definitions/Note" }, { type: "null" }], definitions: defs },
    { oneOf: [{ $ref: "#/definitions/Note" }, { type: "null" }], definitions: defs },
    {
      description: "The note, if any.",
      anyOf: [{ allOf: [{ $ref: "#/definitions/Note" }] }, { type: "null" }],
      definitions: defs,
    },
  ];
  for (const f of forms) {
    const s = shapeOf(f);
    assert.ok(accepts(s, null) && accepts(s, { text: "a" }) && !accepts(s, {}), JSON.stringify(f));
    assert.equal(describe(s), "Note | null");
  }
});

Deno.test("objects: required, optional, closed (deny_unknown_fields), maps", () => {
  const open = shapeOf({
    type: "object",
    properties: { a: { type: "string" }, b: { type: "integer" } },
    required: ["a"],
  });
  assert.ok(
    accepts(open, { a: "x" }) && accepts(open, { a: "x", b: 1 }) && !accepts(open, { b: 1 }),
  );
  assert.ok(accepts(open, { a: "x", z: [] }), "a reader ignores unknown fields");
  assert.ok(!accepts(open, { a: "x", z: [] }, "closed"), "a writer writes only its fields");
  assert.equal(describe(open), "{a: string, b?: integer}");
  const closed = shapeOf({
    type: "object",
    properties: { a: { type: "string" } },
    additionalProperties: false,
  });
  assert.ok(!accepts(closed, { a: "x", z: 1 }));
  const map = shapeOf({
    type: "object",
    additionalProperties: { type: "integer", format: "uint32" },
  });
  assert.ok(accepts(map, { x: 1, y: 2 }) && !accepts(map, { x: -1 }));
  assert.equal(describe(map), "{[key: string]: u32}");
  const anyObject = shapeOf({ type: "object" });
  assert.ok(accepts(anyObject, { q: 1 }, "closed"), "no properties keyword: any object");
  const value = shapeOf({ type: "object", additionalProperties: true });
  assert.ok(accepts(value, { q: [1, { r: null }] }, "closed"));
});

Deno.test("arrays: items and uniqueItems (HashSet)", () => {
  const set = shapeOf({ type: "array", items: { type: "string" }, uniqueItems: true });
  assert.ok(accepts(set, ["a", "b"]) && !accepts(set, ["a", "a"]) && !accepts(set, [1]));
  assert.equal(describe(set), "string[] (unique)");
  const objects = shapeOf({ type: "array", items: { type: "object" }, uniqueItems: true });
  assert.ok(!accepts(objects, [{ a: 1, b: 2 }, { b: 2, a: 1 }]), "equality ignores key order");
  assert.equal(
    describe(shapeOf({ type: "array", items: { type: ["string", "null"] } })),
    "(string | null)[]",
  );
});

Deno.test("$ref: components, definitions, $defs, the root, escaped names", () => {
  const doc = {
    components: { schemas: { "A/B": { type: "string" }, Id: { type: "integer" } } },
    definitions: { X: { type: "boolean" } },
    $defs: { Y: { type: "null" } },
  };
  const space = new SchemaSpace(doc);
  assert.equal(space.shape({ $ref: "#/components/schemas/A~1B" }, "#/r").string?.values, null);
  assert.equal(space.shape({ $ref: "#/components/schemas/A%7E1B" }, "#/r").string?.values, null);
  assert.equal(space.resolve("#/components/schemas/A%2FB"), undefined);
  assert.equal(space.shape({ $ref: "#/components/schemas/Id" }, "#/r").name, "Id");
  assert.ok(space.shape({ $ref: "#/definitions/X" }, "#/r").boolean);
  assert.ok(space.shape({ $ref: "#/$defs/Y" }, "#/r").null);
  // one shape per target: recursion and repeated checks share it
  assert.equal(
    space.shape({ $ref: "#/components/schemas/Id" }, "#/a"),
    space.shape({ $ref: "#/components/schemas/Id" }, "#/b"),
  );
  const list = shapeOf({
    type: "object",
    properties: { next: { anyOf: [{ $ref: "#" }, { type: "null" }] } },
  });
  assert.ok(accepts(list, { next: { next: { next: null } } }));
});

Deno.test("recursion through properties and items: a tree", () => {
  const tree = shapeOf({
    $ref: "#/definitions/Tree",
    definitions: {
      Tree: {
        type: "object",
        properties: {
          name: { type: "string" },
          children: { type: "array", items: { $ref: "#/definitions/Tree" } },
        },
        required: ["name", "children"],
      },
    },
  });
  assert.ok(accepts(tree, { name: "a", children: [{ name: "b", children: [] }] }));
  assert.ok(!accepts(tree, { name: "a", children: [{ name: "b" }] }));
  assert.deepEqual(witness(tree), { name: "a", children: [] });
  assert.equal(describe(tree, { names: false }), "{name: string, children: Tree[]}");
});

Deno.test("a struct that must contain itself has no values", () => {
  const s = shapeOf({
    $ref: "#/definitions/Loop",
    definitions: {
      Loop: {
        type: "object",
        properties: { next: { $ref: "#/definitions/Loop" } },
        required: ["next"],
      },
    },
  });
  assert.equal(witness(s), undefined);
  const optional = shapeOf({
    $ref: "#/definitions/Loop",
    definitions: {
      Loop: {
        type: "object",
        properties: { a: { $ref: "#/definitions/Loop" }, b: { type: "string" } },
        required: ["b"],
      },
    },
  });
  assert.deepEqual(witness(optional), { b: "a" });
});

Deno.test("examples and defaults give nicer witnesses when they are valid", () => {
  assert.equal(witness(shapeOf({ type: "string", examples: ["milk"] })), "milk");
  assert.equal(witness(shapeOf({ type: "integer", minimum: 1, default: 8080 })), 8080);
  assert.equal(witness(shapeOf({ type: "integer", minimum: 1, examples: [0] })), 1);
});

Deno.test("outside the subset: each construct with its path", () => {
  const cases: [unknown, string, string][] = [
    [{ type: "string", pattern: "^a" }, "pattern", "#"],
    [{ type: "string", minLength: 1, maxLength: 1 }, "minLength", "#"],
    [
      { type: "array", items: [{ type: "string" }, { type: "integer" }], minItems: 2 },
      "items",
      "#",
    ],
    [{ type: "integer", not: { const: 0 } }, "not", "#"],
    [{ if: { type: "string" }, then: { minLength: 1 } }, "if", "#"],
    [{ enum: [1, 2, 3] }, "enum", "#"],
    [{ type: "string", nullable: true }, "nullable", "#"],
    [{ type: "integer", multipleOf: 2 }, "multipleOf", "#"],
    [{ type: "object", patternProperties: { "^x": {} } }, "patternProperties", "#"],
    [{ type: "integer", minimum: 0, exclusiveMinimum: true }, "exclusiveMinimum", "#"],
    [{ type: "strnig" }, "type", "#"],
    [{ $ref: "https://example.org/schema.json" }, "$ref", "#"],
    [{ $ref: "#/definitions/Nope" }, "$ref", "#"],
    [{ $ref: "#/definitions/A", type: "object", definitions: { A: {} } }, "$ref", "#"],
    [
      {
        allOf: [{ type: "object", properties: { a: {} } }, {
          type: "object",
          properties: { b: {} },
        }],
      },
      "allOf",
      "#",
    ],
    [
      {
        anyOf: [
          { type: "object", properties: { a: { type: "string" } }, required: ["a"] },
          { type: "object", properties: { b: { type: "string" } }, required: ["b"] },
        ],
      },
      "anyOf",
      "#",
    ],
    [{ anyOf: [{ type: "integer", maximum: 0 }, { type: "integer", minimum: 5 }] }, "anyOf", "#"],
    [
      { type: "object", properties: { text: { type: "string", pattern: "x" } } },
      "pattern",
      "#/properties/text",
    ],
    [
      { $ref: "#/definitions/A", definitions: { A: { type: "array", items: { not: {} } } } },
      "not",
      "#/definitions/A/items",
    ],
  ];
  for (const [schema, construct, path] of cases) {
    const found = outside(schema);
    assert.ok(
      found.some((o) => o.construct === construct && o.path === path),
      `${JSON.stringify(schema)}: ${JSON.stringify(found)}`,
    );
  }
});

Deno.test("outside the subset: a $ref cycle through no property or item", () => {
  const direct = outside({
    $ref: "#/definitions/A",
    definitions: { A: { $ref: "#/definitions/A" } },
  });
  assert.deepEqual(direct, [{ construct: "$ref", path: "#/definitions/A" }]);
  const viaUnion = outside({
    $ref: "#/definitions/A",
    definitions: {
      A: { anyOf: [{ $ref: "#/definitions/B" }, { type: "null" }] },
      B: { anyOf: [{ $ref: "#/definitions/A" }, { type: "string" }] },
    },
  });
  assert.equal(viaUnion.length, 1);
  assert.equal(viaUnion[0].construct, "$ref");
  // through a property it is fine
  assert.deepEqual(outside({ type: "object", properties: { a: { $ref: "#" } } }), []);
});

Deno.test("annotations and unknown keywords are ignored; a $ref may have annotations beside it", () => {
  const s = normalize({
    $schema: "http://json-schema.org/draft-07/schema#",
    title: "Note",
    description: "A note.",
    $comment: "x",
    readOnly: true,
    deprecated: true,
    "x-vendor": 1,
    type: "object",
    properties: {
      when: { description: "The time.", $ref: "#/definitions/Time" },
    },
    definitions: { Time: { type: "string", format: "date-time" } },
  });
  assert.deepEqual(s.outside, []);
  assert.equal(describe(s.shape), "{when?: Time}");
});

Deno.test("outsideOf collects the constructs that a shape reaches, once each", () => {
  const space = new SchemaSpace({
    components: {
      schemas: {
        A: { type: "object", properties: { s: { $ref: "#/components/schemas/S" } } },
        S: { type: "string", pattern: "x" },
      },
    },
  });
  const a = space.shape({ $ref: "#/components/schemas/A" }, "#/methods/0/result/schema");
  const b = space.shape({ type: "array", items: { $ref: "#/components/schemas/S" } }, "#/x");
  assert.deepEqual(outsideOf(a).map((o) => o.path), ["#/components/schemas/S"]);
  assert.deepEqual(outsideOf(b).map((o) => o.path), ["#/components/schemas/S"]);
});

Deno.test("formatJson writes JSON for people", () => {
  assert.equal(formatJson({ text: "milk" }), '{"text": "milk"}');
  assert.equal(
    formatJson({ a: [1, "b", null], c: { d: true } }),
    '{"a": [1, "b", null], "c": {"d": true}}',
  );
  assert.equal(formatJson([]), "[]");
});
