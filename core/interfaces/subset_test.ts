import assert from "node:assert/strict";
import { isSubset, type SubsetResult } from "./subset.ts";

type Json = Record<string, unknown>;

function object(properties: Json, required: string[] = [], extra: Json = {}): Json {
  return { type: "object", properties, required, ...extra };
}
const str = { type: "string" };
const int = { type: "integer" };

function holds(sender: unknown, receiver: unknown, options = {}): void {
  const r = isSubset(sender, receiver, options);
  assert.equal(r.status, "subset", JSON.stringify(r));
}

function breaks(sender: unknown, receiver: unknown, options = {}) {
  const r: SubsetResult = isSubset(sender, receiver, options);
  if (r.status !== "counterexample") {
    throw new Error(`expected a counterexample: ${JSON.stringify(r)}`);
  }
  return r;
}

Deno.test("params: an added optional param is fine", () => {
  holds(
    object({ text: str }, ["text"]),
    object({ text: str, tags: { type: "array", items: str } }, ["text"]),
  );
});

Deno.test("params: an added required param breaks, the counterexample leaves it out", () => {
  const r = breaks(
    object({ text: str }, ["text"]),
    object({ text: str, tag: str }, ["text", "tag"]),
  );
  assert.deepEqual(r.counterexample, { text: "a" });
  assert.deepEqual(r.reason, {
    kind: "missing",
    path: [],
    key: "tag",
    expected: "string",
    unlisted: [],
  });
  assert.equal(
    r.explanation,
    'The receiver requires the property "tag": string, and the sender may leave it out.',
  );
});

Deno.test("params: a renamed param names both names", () => {
  const r = breaks(object({ text: str }, ["text"]), object({ body: str }, ["body"]));
  assert.equal(r.explanation, 'The receiver has no property "text". It requires "body": string.');
});

Deno.test("params: a removed param is ignored by a reader, and breaks one that denies unknown fields", () => {
  holds(object({ text: str, tag: str }, ["text"]), object({ text: str }, ["text"]));
  const r = breaks(
    object({ text: str, tag: str }, ["text"]),
    object({ text: str }, ["text"], { additionalProperties: false }),
  );
  assert.deepEqual(r.counterexample, { text: "a", tag: "a" });
  assert.deepEqual(r.reason, { kind: "unexpected", path: [], key: "tag" });
});

Deno.test("a writer writes only its fields; read openly, the sender may send anything else", () => {
  const sender = object({ text: str }, ["text"]);
  const receiver = object({ text: str, n: int }, ["text"]);
  holds(sender, receiver);
  const r = breaks(sender, receiver, { unlisted: "open" });
  assert.deepEqual(r.counterexample, { text: "a", n: "a" });
});

Deno.test("results: a removed field breaks a reader that requires it, not one that does not", () => {
  const before = object({ count: int, total: int }, ["count", "total"]);
  const after = object({ count: int }, ["count"]);
  const r = breaks(after, before);
  assert.deepEqual(r.counterexample, { count: 0 });
  assert.equal(r.reason.kind, "missing");
  holds(after, object({ count: int, total: int }, ["count"]));
});

Deno.test("results: an added field is fine, unless the reader denies unknown fields", () => {
  holds(object({ count: int, extra: str }, ["count", "extra"]), object({ count: int }, ["count"]));
  const r = breaks(
    object({ count: int, extra: str }, ["count", "extra"]),
    object({ count: int }, ["count"], { additionalProperties: false }),
  );
  assert.deepEqual(r.counterexample, { count: 0, extra: "a" });
});

Deno.test("enums: narrowed breaks with the value that went away, widened is fine", () => {
  const abc = { type: "string", enum: ["a", "b", "c"] }, ab = { type: "string", enum: ["a", "b"] };
  holds(ab, abc);
  const r = breaks(abc, ab);
  assert.equal(r.counterexample, "c");
  assert.equal(
    r.explanation,
    'The receiver requires the value to be "a" | "b"; the sender can send "a" | "b" | "c".',
  );
  const s = breaks(str, ab);
  assert.equal(s.counterexample, "c");
  holds(ab, str);
  holds({ const: "a" }, ab);
  holds({ oneOf: [{ const: "a" }, { const: "b" }] }, ab);
});

Deno.test("integer ranges: widened is fine, narrowed breaks at the edge", () => {
  const u8 = { type: "integer", format: "uint8", minimum: 0 };
  const u16 = { type: "integer", format: "uint16", minimum: 0, maximum: 65535 };
  holds(u8, u16);
  assert.equal(breaks(u16, u8).counterexample, 256);
  assert.equal(breaks({ type: "integer", format: "int32" }, u16).counterexample, -1);
  holds({ type: "integer", minimum: 1, maximum: 5 }, {
    type: "integer",
    exclusiveMinimum: 0,
    exclusiveMaximum: 6,
  });
  assert.equal(
    breaks({ type: "integer", minimum: 0 }, { type: "integer", exclusiveMinimum: 0 })
      .counterexample,
    0,
  );
  holds(int, { type: "number" });
  assert.equal(breaks({ type: "number" }, int).counterexample, 0.5);
});

Deno.test("nullable: params may become nullable, results may not", () => {
  const opt = { type: ["string", "null"] };
  holds(str, opt);
  const r = breaks(opt, str);
  assert.equal(r.counterexample, null);
  assert.equal(
    r.explanation,
    "The receiver requires the value to be string; the sender can send string | null.",
  );
  holds({ anyOf: [str, { type: "null" }] }, opt);
  holds(opt, { anyOf: [str, { type: "null" }] });
  // an optional property may be missing, and that is not null
  const r2 = breaks(object({ a: opt }), object({ a: str }));
  assert.deepEqual(r2.counterexample, { a: null });
  assert.deepEqual(r2.reason.path, ["a"]);
});

Deno.test("nested values: the path and the whole counterexample", () => {
  const sender = object({
    filter: object({ tags: { type: "array", items: { type: "string", enum: ["a", "b"] } } }, [
      "tags",
    ]),
  }, ["filter"]);
  const receiver = object({
    filter: object({ tags: { type: "array", items: { type: "string", enum: ["a"] } } }, ["tags"]),
  }, ["filter"]);
  const r = breaks(sender, receiver);
  assert.deepEqual(r.counterexample, { filter: { tags: ["b"] } });
  assert.deepEqual(r.reason.path, ["filter", "tags", 0]);
  assert.equal(
    r.explanation,
    'The receiver requires the property "filter.tags[]" to be "a"; the sender can send "a" | "b".',
  );
});

Deno.test("uniqueItems: a set fits a list; a list does not fit a set", () => {
  const list = { type: "array", items: str }, set = { ...list, uniqueItems: true };
  holds(set, list);
  const r = breaks(list, set);
  assert.deepEqual(r.counterexample, ["a", "a"]);
  assert.equal(r.reason.kind, "duplicates");
  holds({ type: "array", items: false }, set); // only [] is possible
});

Deno.test("maps: the values of every key are compared", () => {
  const m = (s: unknown) => ({ type: "object", additionalProperties: s });
  holds(m({ type: "integer", format: "uint8" }), m(int));
  const r = breaks(m(int), m({ type: "integer", minimum: 0 }));
  assert.deepEqual(r.counterexample, { x: -1 });
  assert.deepEqual(r.reason.path, [{ other: "x" }]);
  holds(object({ a: int }, ["a"]), m(int));
  assert.deepEqual(breaks(object({ a: str }, ["a"]), m(int)).counterexample, { a: "a" });
});

Deno.test("$ref names do not matter, the structure does", () => {
  const a = {
    $ref: "#/definitions/Added",
    definitions: {
      Added: object({ count: { $ref: "#/definitions/Count" } }, ["count"]),
      Count: int,
    },
  };
  const b = {
    $ref: "#/components/schemas/Result",
    components: { schemas: { Result: object({ count: { type: "integer" } }, ["count"]) } },
  };
  holds(a, b);
  holds(b, a);
});

Deno.test("recursive schemas are compared to any depth", () => {
  const tree = (leaf: unknown) => ({
    $ref: "#/definitions/T",
    definitions: {
      T: object({ v: leaf, kids: { type: "array", items: { $ref: "#/definitions/T" } } }, [
        "v",
        "kids",
      ]),
    },
  });
  holds(tree({ type: "integer", format: "uint8" }), tree(int));
  const r = breaks(tree(int), tree({ type: "integer", format: "uint8" }));
  assert.deepEqual(r.counterexample, { v: -1, kids: [] });
  // mutual recursion, renamed
  const ab = {
    $ref: "#/definitions/A",
    definitions: {
      A: object({ b: { $ref: "#/definitions/B" } }),
      B: object({ a: { $ref: "#/definitions/A" }, s: str }),
    },
  };
  const xy = {
    $ref: "#/definitions/X",
    definitions: {
      X: object({ b: { $ref: "#/definitions/Y" } }),
      Y: object({ a: { $ref: "#/definitions/X" }, s: { type: ["string", "null"] } }),
    },
  };
  holds(ab, xy);
  const r2 = breaks(xy, ab);
  assert.deepEqual(r2.counterexample, { b: { s: null } });
});

Deno.test("a sender with no values fits anything", () => {
  const loop = {
    $ref: "#/definitions/L",
    definitions: { L: object({ next: { $ref: "#/definitions/L" } }, ["next"]) },
  };
  holds(loop, { type: "null" });
  holds(false, { type: "string" });
  holds(object({ a: false }), object({}, [], { additionalProperties: false }));
});

Deno.test("kinds: a sender kind the receiver lacks, with a value of that kind", () => {
  assert.equal(breaks({ type: ["string", "integer"] }, str).counterexample, 0);
  assert.equal(breaks({ type: "boolean" }, { const: true }).counterexample, false);
  assert.deepEqual(breaks({ type: "array", items: str }, str).counterexample, []);
  assert.deepEqual(breaks(object({ a: str }, ["a"]), { type: "array" }).counterexample, { a: "a" });
  holds({ type: "null" }, true);
  holds(true, {});
  assert.equal(breaks(true, { type: ["string", "null"] }).status, "counterexample");
});

Deno.test("outside the subset on either side fails and says where", () => {
  const r = isSubset(
    object({ text: { type: "string", pattern: "^x" } }),
    object({ text: str }),
  );
  assert.equal(r.status, "outside");
  if (r.status !== "outside") return;
  assert.deepEqual(r.outside.map(({ construct, path, side }) => ({ construct, path, side })), [
    { construct: "pattern", path: "#/properties/text", side: "sender" },
  ]);
  assert.match(r.explanation, /"pattern" at #\/properties\/text/);
  const cycle = isSubset(str, {
    $ref: "#/definitions/A",
    definitions: { A: { $ref: "#/definitions/A" } },
  });
  assert.equal(cycle.status, "outside");
});
