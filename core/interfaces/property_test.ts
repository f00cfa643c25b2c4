/**
 * Property tests of the check against ajv, a second and independent reading
 * of the same schemas:
 *
 * - the normal form accepts exactly what ajv accepts;
 * - when `isSubset(a, b)` holds, every value of `a` (generated from the raw
 *   schema, kept when ajv accepts it) is valid for `b`;
 * - when it does not hold, ajv agrees that the counterexample is valid for
 *   `a` and invalid for `b`.
 *
 * The sender is read as a writer by default (objects with `properties` and
 * no `additionalProperties` are closed); ajv sees the same when the sender
 * schema is closed with `closeObjects`. The same properties run with open
 * senders against the raw schemas.
 *
 * Then `checkImport` and `checkWorld` on whole `rpc.discover` documents made
 * from random method sets (PROTOCOL 10.2):
 *
 * - a consumer that imports some of a provider's methods as they are is ok
 *   (or fails only on constructs outside the subset);
 * - wider provider params and narrower provider results keep it ok;
 * - narrower params or a wider result break it, with one problem that names
 *   the method, and a counterexample that ajv confirms;
 * - in a world of plugins, every removed method or endpoint interface,
 *   missing and unavailable provider is reported, and the counts agree;
 * - any document, however malformed, gives an answer and no exception.
 */

import assert from "node:assert/strict";
import fc from "fast-check";
import { numberAccepts, numberDifference, type NumberPart } from "./numbers.ts";
import {
  checkImport,
  checkWorld,
  type ImportCheck,
  type OpenRpcDocument,
  type WorldEntry,
} from "./compat.ts";
import type { ImportResult, ImportStatus } from "./problems.ts";
import { type JsonValue, normalize, type Unlisted } from "./schema.ts";
import { isSubset } from "./subset.ts";
import {
  closeObjects,
  junk,
  leafSchema,
  mutate,
  random,
  rootSchema,
  schema,
  validator,
  valueOf,
} from "./testing.ts";
import { accepts, witness } from "./values.ts";

const SAMPLES = 30;

/** Values for a schema: generated from it, and junk. */
function samples(root: unknown, seed: number, closed: boolean): unknown[] {
  const rng = random(seed);
  const out: unknown[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const v = valueOf(root, root, rng, closed);
    if (v !== undefined) out.push(v);
    out.push(junk(rng));
  }
  return out;
}

/** What ajv should see for the sender. */
function senderSchema(root: unknown, unlisted: Unlisted): unknown {
  return unlisted === "closed" ? closeObjects(root) : root;
}

Deno.test("property: the normal form accepts exactly what ajv accepts", () => {
  let checked = 0;
  fc.assert(
    fc.property(rootSchema(), fc.integer(), (root, seed) => {
      const { shape, outside } = normalize(root);
      if (outside.length > 0) return;
      for (const unlisted of ["open", "closed"] as const) {
        const ajvValid = validator(senderSchema(root, unlisted));
        for (const v of samples(root, seed, unlisted === "closed")) {
          assert.equal(
            accepts(shape, v, unlisted),
            ajvValid(v),
            `${unlisted}: ${JSON.stringify(v)} for ${JSON.stringify(root)}`,
          );
          checked++;
        }
      }
    }),
    { numRuns: 400 },
  );
  assert.ok(checked > 1000, `only ${checked} values checked`);
});

Deno.test("property: a witness of a schema is valid for it", () => {
  let found = 0;
  fc.assert(
    fc.property(rootSchema(), (root) => {
      const { shape, outside } = normalize(root);
      if (outside.length > 0) return;
      const w = witness(shape);
      if (w === undefined) return;
      found++;
      assert.ok(
        validator(closeObjects(root))(w),
        `${JSON.stringify(w)} for ${JSON.stringify(root)}`,
      );
    }),
    { numRuns: 400 },
  );
  assert.ok(found > 100);
});

function soundness(unlisted: Unlisted, pairs: fc.Arbitrary<[unknown, unknown]>, runs: number) {
  const tally = { subset: 0, counterexample: 0, outside: 0, values: 0 };
  fc.assert(
    fc.property(pairs, fc.integer(), ([a, b], seed) => {
      const r = isSubset(a, b, { unlisted });
      tally[r.status]++;
      if (r.status === "outside") {
        assert.ok(r.outside.length > 0 && r.outside.every((o) => o.path.startsWith("#")));
        return;
      }
      const validA = validator(senderSchema(a, unlisted)), validB = validator(b);
      if (r.status === "counterexample") {
        const c = r.counterexample;
        assert.ok(validA(c), `counterexample ${JSON.stringify(c)} is not valid for the sender`);
        assert.ok(!validB(c), `counterexample ${JSON.stringify(c)} is valid for the receiver`);
        assert.ok(r.explanation.length > 0);
        return;
      }
      for (const v of samples(a, seed, unlisted === "closed")) {
        if (!validA(v)) continue;
        tally.values++;
        assert.ok(validB(v), `${JSON.stringify(v)} is valid for the sender and not the receiver`);
      }
    }),
    { numRuns: runs },
  );
  return tally;
}

const mutated = fc.tuple(rootSchema(), fc.integer(), fc.constantFrom(0, 0.2, 0.4, 0.7)).map((
  [a, seed, rate],
) => [a, mutate(a, seed, rate)] as [unknown, unknown]);

const independent = fc.tuple(rootSchema(), rootSchema()) as fc.Arbitrary<[unknown, unknown]>;

Deno.test("property: isSubset is sound for changed schemas (writers closed)", () => {
  const t = soundness("closed", mutated, 1500);
  assert.ok(t.subset > 100 && t.counterexample > 100, JSON.stringify(t));
});

Deno.test("property: isSubset is sound for changed schemas (writers open)", () => {
  const t = soundness("open", mutated, 800);
  assert.ok(t.subset > 50 && t.counterexample > 50, JSON.stringify(t));
});

Deno.test("property: isSubset is sound for unrelated schemas", () => {
  const t = soundness("closed", independent, 600);
  assert.ok(t.counterexample > 100, JSON.stringify(t));
});

Deno.test("property: a schema is a subset of itself, also with its definitions renamed", () => {
  fc.assert(
    fc.property(rootSchema(), fc.integer(), (a, seed) => {
      const renamed = mutate(a, seed, 0);
      for (const unlisted of ["open", "closed"] as const) {
        const r = isSubset(a, renamed, { unlisted });
        assert.ok(r.status !== "counterexample", JSON.stringify(r));
      }
    }),
    { numRuns: 300 },
  );
});

const part = fc.record({
  integer: fc.boolean(),
  min: fc.oneof(fc.constant(-Infinity), fc.integer({ min: -8, max: 8 }).map((x) => x / 2)),
  minExclusive: fc.boolean(),
  max: fc.oneof(fc.constant(Infinity), fc.integer({ min: -8, max: 8 }).map((x) => x / 2)),
  maxExclusive: fc.boolean(),
});

Deno.test("property: numberDifference finds a number whenever one exists on a fine grid", () => {
  const grid = Array.from({ length: 161 }, (_, i) => (i - 80) / 8);
  fc.assert(
    fc.property(part, part, (s: NumberPart, r: NumberPart) => {
      const d = numberDifference(s, r);
      const exists = grid.some((x) => numberAccepts(s, x) && !numberAccepts(r, x));
      if (d !== undefined) assert.ok(numberAccepts(s, d) && !numberAccepts(r, d));
      if (exists) assert.notEqual(d, undefined, `missed a difference of ${JSON.stringify([s, r])}`);
    }),
    { numRuns: 3000 },
  );
});

// ---------------------------------------------------------------------------
// Whole documents: checkImport and checkWorld on rpc.discover documents made
// from random method sets (PROTOCOL 10.2). The schemas are those of
// `schema` above; their `$ref`s to `#/definitions/D0` become
// `#/components/schemas/D0` in the documents, and ajv reads the original
// form as an independent oracle.

type Json = Record<string, unknown>;

function isObject(x: unknown): x is Json {
  return typeof x === "object" && x !== null && !Array.isArray(x);
}

interface Param {
  name: string;
  required: boolean;
  schema: unknown;
}

interface Method {
  name: string;
  params: Param[];
  /** The result schema; undefined when the method has no `result`. */
  result?: unknown;
}

/** A set of methods and the definitions `D0` and `D1` that their schemas refer to. */
interface Api {
  methods: Method[];
  defs: Json;
}

/**
 * How a document describes params: the `params` list (`list-default` leaves
 * out `required: false`, OpenRPC's default), or `x-sausage-params` to an
 * object schema.
 */
type Form = "list" | "list-default" | "object";

const PROVIDER = "notes";
const CONSUMER = "agent";
const METHOD_NAMES = ["add", "list", "get", "put", "drop", "find"];
const PARAM_NAMES = ["text", "index", "tags", "limit"];
const SEED = 20240610;

/** An object schema as the SDK writes a struct: `type`, `properties`, `required`. */
function structArb(s: fc.Arbitrary<unknown>): fc.Arbitrary<Json> {
  return fc.record({
    properties: fc.dictionary(fc.constantFrom("a", "b", "c", "d"), s, { maxKeys: 3 }),
    required: fc.subarray(["a", "b", "c", "d"]),
  }).map(({ properties, required }) => {
    const out: Json = { type: "object", properties };
    const req = required.filter((k) => k in properties);
    if (req.length > 0) out.required = req;
    return out;
  });
}

function methodArb(s: fc.Arbitrary<unknown>): fc.Arbitrary<Method> {
  return fc.record({
    name: fc.constantFrom(...METHOD_NAMES),
    params: fc.uniqueArray(
      fc.record({ name: fc.constantFrom(...PARAM_NAMES), required: fc.boolean(), schema: s }),
      { selector: (p) => p.name, maxLength: 3 },
    ),
    result: fc.option(fc.oneof(s, structArb(s)), { nil: undefined, freq: 6 }),
  });
}

const apiArb: fc.Arbitrary<Api> = fc.record({
  methods: fc.uniqueArray(methodArb(schema), {
    selector: (m) => m.name,
    minLength: 1,
    maxLength: 4,
  }),
  defs: fc.record({ D0: schema, D1: schema }),
});

/** A provider's method set, what the consumer imports of it, and how both write it. */
interface Scenario {
  api: Api;
  imported: string[];
  consumerForm: Form;
  providerForm: Form;
  /** Whether the components are in the import entry or in the consumer's own document. */
  componentsInEntry: boolean;
}

const scenarioArb: fc.Arbitrary<Scenario> = fc.record({
  api: apiArb,
  mask: fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }),
  consumerForm: fc.constantFrom<Form>("list", "list-default", "object"),
  providerForm: fc.constantFrom<Form>("list", "list-default", "object"),
  componentsInEntry: fc.boolean(),
}).map(({ api, mask, ...rest }) => {
  let imported = api.methods.filter((_, i) => mask[i]).map((m) => m.name);
  if (imported.length === 0) imported = [api.methods[0].name];
  return { api, imported, ...rest };
});

/** `#/definitions/X` (the form of testing.ts) as `#/components/schemas/X`. */
function inDocument(s: unknown): unknown {
  if (Array.isArray(s)) return s.map(inDocument);
  if (!isObject(s)) return s;
  const out: Json = {};
  for (const [k, v] of Object.entries(s)) {
    if (k === "$ref" && typeof v === "string") {
      out[k] = v.replace("#/definitions/", "#/components/schemas/");
    } else if (k === "enum" || k === "const" || k === "examples") out[k] = v;
    else out[k] = inDocument(v);
  }
  return out;
}

/** The params object of a method, in the form of testing.ts. */
function paramsObject(m: Method): Json {
  const s: Json = {
    type: "object",
    properties: Object.fromEntries(m.params.map((p) => [p.name, p.schema])),
  };
  const required = m.params.filter((p) => p.required).map((p) => p.name);
  if (required.length > 0) s.required = required;
  return s;
}

const paramsName = (m: Method) => `Params_${m.name}`;

function methodObject(m: Method, form: Form): Json {
  const out: Json = {
    name: m.name,
    paramStructure: "by-name",
    params: m.params.map((p) =>
      form === "list-default" && !p.required
        ? { name: p.name, schema: inDocument(p.schema) }
        : { name: p.name, required: p.required, schema: inDocument(p.schema) }
    ),
  };
  if (form === "object") {
    // x-sausage-params wins over the params list, which is left empty here
    out.params = [];
    out["x-sausage-params"] = { $ref: `#/components/schemas/${paramsName(m)}` };
  }
  if (m.result !== undefined) out.result = { name: "result", schema: inDocument(m.result) };
  return out;
}

function componentsOf(api: Api, methods: Method[], form: Form): Json {
  const schemas = inDocument(api.defs) as Json;
  if (form === "object") {
    for (const m of methods) schemas[paramsName(m)] = inDocument(paramsObject(m));
  }
  return { schemas };
}

function providerDocument(api: Api, form: Form): OpenRpcDocument {
  return {
    openrpc: "1.2.6",
    info: { title: PROVIDER, version: "0.1.0" },
    methods: api.methods.map((m) => methodObject(m, form)),
    components: componentsOf(api, api.methods, form),
  };
}

function consumerDocument(api: Api, names: readonly string[], sc: Scenario): OpenRpcDocument {
  const methods = names.map((n) => api.methods.find((m) => m.name === n)!);
  const entry: OpenRpcDocument = { methods: methods.map((m) => methodObject(m, sc.consumerForm)) };
  const doc: OpenRpcDocument = {
    openrpc: "1.2.6",
    info: { title: CONSUMER, version: "0.1.0" },
    methods: [{ name: "chat", params: [], result: { name: "text", schema: { type: "string" } } }],
    "x-sausage-imports": { [PROVIDER]: entry },
  };
  const components = componentsOf(api, methods, sc.consumerForm);
  if (sc.componentsInEntry) entry.components = components;
  else doc.components = components;
  return doc;
}

/**
 * The one import of the consumer, through checkWorld; checkImport on fresh
 * copies of the same documents gives the same problems.
 */
function checkPair(consumer: OpenRpcDocument, provider: OpenRpcDocument): ImportResult {
  const world = checkWorld({ [CONSUMER]: consumer, [PROVIDER]: provider });
  assert.equal(world.imports.length, 1);
  const [result] = world.imports;
  const c = structuredClone(consumer);
  const direct = checkImport(c["x-sausage-imports"]![PROVIDER], structuredClone(provider), {
    consumer: CONSUMER,
    provider: PROVIDER,
    consumerDocument: c,
    importPath: `#/x-sausage-imports/${PROVIDER}`,
  });
  assert.deepEqual(direct.problems, result.problems);
  assert.equal(direct.ok, result.status === "ok");
  assert.deepEqual(world.counts, {
    ok: result.status === "ok" ? 1 : 0,
    broken: result.status === "broken" ? 1 : 0,
    missing: 0,
    unavailable: 0,
  });
  return result;
}

/** The root schemas (testing.ts form) of a method's params and result. */
function paramsRoot(api: Api, m: Method): Json {
  return { definitions: api.defs, ...paramsObject(m) };
}

function resultRoot(api: Api, result: unknown): Json {
  return { definitions: api.defs, allOf: [result] };
}

function isOutside(root: Json): boolean {
  return normalize(root).outside.length > 0;
}

/** The problems an import of identical schemas has: constructs outside the subset. */
function outsideProblems(api: Api, names: readonly string[]): [string, string][] {
  return names.flatMap((n) => {
    const m = api.methods.find((x) => x.name === n)!;
    const out: [string, string][] = [];
    if (isOutside(paramsRoot(api, m))) out.push([n, "params"]);
    if (m.result !== undefined && isOutside(resultRoot(api, m.result))) out.push([n, "result"]);
    return out;
  });
}

const summary = (r: ImportResult) =>
  r.problems.map((p) => [p.method, p.kind === "outside-subset" ? p.part! : p.kind]);

const show = (x: unknown) => JSON.stringify(x, null, 1);

Deno.test("property: a consumer that imports a provider's own methods is compatible", () => {
  const tally = { ok: 0, outside: 0 };
  fc.assert(
    fc.property(scenarioArb, (sc) => {
      const consumer = consumerDocument(sc.api, sc.imported, sc);
      const r = checkPair(consumer, providerDocument(sc.api, sc.providerForm));
      assert.deepEqual(r.methods, sc.imported);
      // only constructs outside the subset can fail the check of identical schemas
      const expected = outsideProblems(sc.api, sc.imported);
      assert.deepEqual(summary(r), expected, show(r.problems));
      assert.equal(r.status, expected.length === 0 ? "ok" : "broken");
      tally[expected.length === 0 ? "ok" : "outside"]++;
    }),
    { numRuns: 150, seed: SEED },
  );
  assert.ok(tally.ok > 100, JSON.stringify(tally));
});

// Changes of the provider that keep every import compatible.

type CompatibleKind =
  | "optional"
  | "add-optional"
  | "widen-param"
  | "narrow-result"
  | "add-method"
  | "add-result-field"
  | "require-result-field"
  | "reorder";

interface CompatibleChange {
  kind: CompatibleKind;
  at: number;
  pick: number;
  schema: unknown;
}

/**
 * Wider schemas: `anyOf: [s, x]`, with x neither a number, an array nor an
 * object, so that the union stays in the subset; or anything.
 */
const WIDER: unknown[] = [
  { type: "null" },
  { type: "string" },
  { type: "boolean" },
  { const: "w" },
  { enum: ["w", null] },
  true,
  {},
];

/** Narrower results: `allOf: [s, y]`, y without a constrained array or object part. */
const NARROWER: unknown[] = [
  false,
  { type: "null" },
  { enum: ["x"] },
  { type: ["null", "boolean", "string", "integer"] },
  { type: ["string", "array", "object"] },
  { type: "integer", minimum: 0, maximum: 3 },
];

/** The schema when it is an object schema with `properties` (no `$ref`, no combinations). */
function plainObject(s: unknown): Json | undefined {
  if (!isObject(s) || !isObject(s.properties)) return undefined;
  return ["$ref", "anyOf", "oneOf", "allOf"].some((k) => k in s) ? undefined : s;
}

function widen(s: unknown, pick: number): unknown {
  const x = WIDER[pick % WIDER.length];
  return x === true || (isObject(x) && Object.keys(x).length === 0) ? x : { anyOf: [s, x] };
}

/** Makes the change; what it did, or undefined when it does not apply to the method. */
function compatibleChange(api: Api, c: CompatibleChange, n: number): string | undefined {
  const m = api.methods[c.at % api.methods.length];
  const param = m.params.length > 0 ? m.params[c.pick % m.params.length] : undefined;
  switch (c.kind) {
    case "optional":
      if (!param) return undefined;
      param.required = false;
      return `${m.name}: ${param.name} optional`;
    case "add-optional":
      m.params.push({ name: `new${n}`, required: false, schema: c.schema });
      return `${m.name}: new optional param new${n}`;
    case "widen-param":
      if (!param) return undefined;
      param.schema = widen(param.schema, c.pick);
      return `${m.name}: ${param.name} wider`;
    case "narrow-result": {
      const y = NARROWER[c.pick % NARROWER.length];
      m.result = m.result === undefined ? y : { allOf: [m.result, y] };
      return `${m.name}: result narrower`;
    }
    case "add-method":
      api.methods.push({ name: `extra${n}`, params: [], result: c.schema });
      return `new method extra${n}`;
    case "add-result-field": {
      // a reader's object without additionalProperties takes fields it does not know
      const r = plainObject(m.result);
      if (!r || r.additionalProperties !== undefined) return undefined;
      (r.properties as Json)[`new${n}`] = c.schema;
      if (c.pick % 2 === 0) r.required = [...(r.required as string[] ?? []), `new${n}`];
      return `${m.name}: new result field new${n}`;
    }
    case "require-result-field": {
      const r = plainObject(m.result);
      const names = Object.keys(r?.properties ?? {});
      if (!r || names.length === 0) return undefined;
      const k = names[c.pick % names.length];
      r.required = [...new Set([...(r.required as string[] ?? []), k])];
      return `${m.name}: result field ${k} required`;
    }
    case "reorder":
      m.params.reverse();
      api.methods.reverse();
      return "reordered";
  }
}

const compatibleChanges = fc.array(
  fc.record({
    kind: fc.constantFrom<CompatibleKind>(
      "optional",
      "add-optional",
      "widen-param",
      "narrow-result",
      "add-method",
      "add-result-field",
      "require-result-field",
      "reorder",
    ),
    at: fc.nat(),
    pick: fc.nat(),
    schema: leafSchema,
  }),
  { minLength: 1, maxLength: 4 },
);

Deno.test("property: wider provider params and narrower provider results keep an import ok", () => {
  let checked = 0;
  const applied: Record<string, number> = {};
  fc.assert(
    fc.property(scenarioArb, compatibleChanges, (sc, changes) => {
      if (outsideProblems(sc.api, sc.imported).length > 0) return;
      const next = structuredClone(sc.api);
      const done: string[] = [];
      changes.forEach((c, i) => {
        const d = compatibleChange(next, c, i);
        if (d === undefined) return;
        done.push(d);
        applied[c.kind] = (applied[c.kind] ?? 0) + 1;
      });
      const consumer = consumerDocument(sc.api, sc.imported, sc);
      const r = checkPair(consumer, providerDocument(next, sc.providerForm));
      assert.equal(r.status, "ok", `${done.join("; ")}\n${show(r.problems)}`);
      checked++;
    }),
    { numRuns: 150, seed: SEED },
  );
  assert.ok(checked > 100, `only ${checked} checked`);
  assert.ok(Object.values(applied).length === 8, JSON.stringify(applied));
  assert.ok(Object.values(applied).every((n) => n > 10), JSON.stringify(applied));
});

// Changes of the provider that break an import whenever the consumer can send
// (or read) anything at all.

type BreakingKind =
  | "require-new"
  | "make-required"
  | "rename"
  | "widen-result"
  | "drop-result"
  | "unrequire-result-field";

/** Values, and a schema in the subset whose only value it is (as a writer reads it). */
const NEW_RESULTS: [JsonValue, unknown][] = [
  [null, { type: "null" }],
  [true, { const: true }],
  [false, { const: false }],
  ["zz", { const: "zz" }],
  [[], { type: "array", items: false }],
  [{}, { type: "object", properties: {}, additionalProperties: false }],
  [3, { type: "integer", minimum: 3, maximum: 3 }],
  [0.5, { type: "number", minimum: 0.5, maximum: 0.5 }],
  [1e6, { type: "integer", minimum: 1e6, maximum: 1e6 }],
];

/** A value of a root schema that ajv accepts, from a few random tries; undefined when none. */
function sendable(root: unknown, seed: number): JsonValue | undefined {
  const valid = validator(root);
  const rng = random(seed);
  for (let i = 0; i < 20; i++) {
    const v = valueOf(root, root, rng, true);
    if (v !== undefined && valid(v)) return v;
  }
  return undefined;
}

const breakingChange = fc.record({
  kind: fc.constantFrom<BreakingKind>(
    "require-new",
    "make-required",
    "rename",
    "widen-result",
    "drop-result",
    "unrequire-result-field",
  ),
  at: fc.nat(),
  pick: fc.nat(),
  seed: fc.integer(),
});

Deno.test("property: narrower provider params or a wider provider result break the import", () => {
  const tally: Record<string, number> = { outside: 0, unsendable: 0, readsAll: 0 };
  fc.assert(
    fc.property(scenarioArb, breakingChange, (sc, change) => {
      if (outsideProblems(sc.api, sc.imported).length > 0) return;
      const name = sc.imported[change.at % sc.imported.length];
      const before = sc.api.methods.find((m) => m.name === name)!;
      const next = structuredClone(sc.api);
      const m = next.methods.find((x) => x.name === name)!;
      let kind: BreakingKind = change.kind;
      const optional = m.params.filter((p) => !p.required);
      const required = m.params.filter((p) => p.required);
      if ((kind === "widen-result" || kind === "drop-result") && m.result === undefined) {
        kind = "require-new";
      }
      if (kind === "make-required" && optional.length === 0) kind = "require-new";
      if (kind === "rename" && required.length === 0) kind = "require-new";
      const resultObject = plainObject(m.result);
      const requiredFields = Array.isArray(resultObject?.required)
        ? resultObject.required as string[]
        : [];
      if (kind === "unrequire-result-field" && requiredFields.length === 0) kind = "require-new";
      let what: string;
      if (kind === "unrequire-result-field") {
        // the consumer breaks if the provider could return an object with the field
        const k = requiredFields[change.pick % requiredFields.length];
        resultObject!.required = requiredFields.filter((x) => x !== k);
        what = `result field ${k} optional`;
        const root = closeObjects(resultRoot(sc.api, before.result));
        const [rng, valid] = [random(change.seed), validator(root)];
        const now = validator(closeObjects(resultRoot(next, m.result)));
        const reads = validator(resultRoot(sc.api, before.result));
        const without = Array.from({ length: 20 }, () => valueOf(root, root, rng, true)).find(
          (v) => {
            if (!isObject(v) || !valid(v)) return false;
            delete v[k];
            return now(v) && !reads(v);
          },
        );
        if (without === undefined) {
          tally.unsendable++;
          return;
        }
      } else if (kind === "widen-result" || kind === "drop-result") {
        const reads = validator(resultRoot(sc.api, before.result));
        const n = NEW_RESULTS.length;
        const found = Array.from({ length: n }, (_, i) => NEW_RESULTS[(i + change.pick) % n])
          .find(([v]) => !reads(v));
        if (!found) {
          tally.readsAll++;
          return;
        }
        if (kind === "drop-result") {
          // a provider without a result schema may return anything
          m.result = undefined;
          what = "no result schema";
        } else {
          m.result = { anyOf: [m.result, found[1]] };
          what = `result may also be ${JSON.stringify(found[0])}`;
        }
      } else {
        if (kind === "make-required") optional[change.pick % optional.length].required = true;
        if (kind === "rename") required[change.pick % required.length].name += "_renamed";
        if (kind === "require-new") {
          m.params.push({ name: "zz", required: true, schema: { type: "string" } });
        }
        what = kind;
        // the consumer breaks only if it can send anything at all
        if (sendable(closeObjects(paramsRoot(sc.api, before)), change.seed) === undefined) {
          tally.unsendable++;
          return;
        }
      }
      const consumer = consumerDocument(sc.api, sc.imported, sc);
      const r = checkPair(consumer, providerDocument(next, sc.providerForm));
      const context = `${name}: ${what}\n${show(r.problems)}`;
      assert.equal(r.status, "broken", context);
      assert.equal(r.problems.length, 1, context);
      const [p] = r.problems;
      assert.equal(p.method, name, context);
      assert.equal(p.endpoint, null);
      assert.equal(p.consumer, CONSUMER);
      assert.equal(p.provider, PROVIDER);
      assert.ok(p.signature.startsWith(`${PROVIDER}.${name}(`), p.signature);
      const part = kind === "widen-result" || kind === "drop-result" ||
          kind === "unrequire-result-field"
        ? "result"
        : "params";
      assert.equal(p.part, part, context);
      if (p.kind === "outside-subset") {
        // only a union the change made can be outside the subset
        assert.equal(part, "result", context);
        assert.ok(isOutside(resultRoot(next, m.result)), context);
        tally.outside++;
        return;
      }
      assert.equal(p.kind, part, context);
      assert.ok(p.text.includes(`${PROVIDER}.${name}`), p.text);
      // the counterexample: one side writes it, the other cannot read it (ajv)
      const [writer, reader] = part === "params"
        ? [paramsRoot(sc.api, before), paramsRoot(next, m)]
        : [
          m.result === undefined ? true : resultRoot(next, m.result),
          resultRoot(sc.api, before.result),
        ];
      const c = p.counterexample;
      assert.ok(validator(closeObjects(writer))(c), `writer rejects ${show(c)}: ${context}`);
      assert.ok(!validator(reader)(c), `reader accepts ${show(c)}: ${context}`);
      tally[kind] = (tally[kind] ?? 0) + 1;
    }),
    { numRuns: 200, seed: SEED },
  );
  // each kind of change was checked (not only skipped)
  const kinds = [
    "require-new",
    "make-required",
    "rename",
    "widen-result",
    "drop-result",
    "unrequire-result-field",
  ];
  assert.ok(kinds.every((k) => tally[k] >= 10), JSON.stringify(tally));
});

// A world of plugins that import each other; then some providers lose
// methods or endpoint interfaces, disappear, or become unavailable.

const PLUGINS = ["notes", "agent", "www", "tags"];
const GHOST = "ghost";

interface PluginSpec {
  main: Method[];
  control?: Method[];
  fate: "present" | "absent" | "unavailable" | "reason";
  /** Per method index: 0 removes it from the current document. */
  dropMain: number[];
  dropControl: number[];
  dropEndpoint: boolean;
  imports: { provider: string; main: boolean[]; control: boolean[] }[];
}

const flags = fc.array(fc.boolean(), { minLength: 4, maxLength: 4 });
const leafMethods = fc.uniqueArray(methodArb(leafSchema), {
  selector: (m) => m.name,
  maxLength: 4,
});

const pluginArb: fc.Arbitrary<PluginSpec> = fc.record({
  main: leafMethods,
  control: fc.option(leafMethods, { nil: undefined }),
  fate: fc.constantFrom<PluginSpec["fate"]>(
    "present",
    "present",
    "present",
    "absent",
    "unavailable",
    "reason",
  ),
  dropMain: fc.array(fc.nat(4), { minLength: 4, maxLength: 4 }),
  dropControl: fc.array(fc.nat(4), { minLength: 4, maxLength: 4 }),
  dropEndpoint: fc.nat(5).map((x) => x === 0),
  imports: fc.uniqueArray(
    fc.record({ provider: fc.constantFrom(...PLUGINS, GHOST), main: flags, control: flags }),
    { selector: (i) => i.provider, maxLength: 3 },
  ),
});

const worldArb = fc.record({
  plugins: fc.array(pluginArb, { minLength: PLUGINS.length, maxLength: PLUGINS.length }),
  only: fc.option(fc.subarray([...PLUGINS, GHOST]), { nil: undefined }),
});

const GHOST_SPEC: PluginSpec = {
  main: [{ name: "ping", params: [], result: { type: "null" } }],
  control: [{ name: "stop", params: [], result: { type: "null" } }],
  fate: "absent",
  dropMain: [],
  dropControl: [],
  dropEndpoint: false,
  imports: [],
};

function interfaceOf(methods: Method[]): OpenRpcDocument {
  return { methods: methods.map((m) => methodObject(m, "list-default")) };
}

interface Expected {
  consumer: string;
  provider: string;
  status: ImportStatus;
  methods: string[];
  detail?: string;
  /** [kind, endpoint, method] of each problem. */
  problems: [string, string | null, string | null][];
}

function buildWorld(plugins: PluginSpec[], only?: string[]) {
  const spec = (name: string) => name === GHOST ? GHOST_SPEC : plugins[PLUGINS.indexOf(name)];
  const documents: Record<string, WorldEntry> = {};
  const expected: Expected[] = [];
  PLUGINS.forEach((name, i) => {
    const p = plugins[i];
    if (p.fate === "absent") return;
    if (p.fate === "unavailable") return void (documents[name] = "unavailable");
    if (p.fate === "reason") return void (documents[name] = { unavailable: `${name} hangs` });
    const doc: OpenRpcDocument = {
      openrpc: "1.2.6",
      info: { title: name, version: "1.0.0" },
      methods: p.main.filter((_, k) => p.dropMain[k] !== 0).map((m) =>
        methodObject(m, "list-default")
      ),
    };
    if (p.control && !p.dropEndpoint) {
      doc["x-sausage-endpoints"] = {
        control: interfaceOf(p.control.filter((_, k) => p.dropControl[k] !== 0)),
      };
    }
    const imports: Record<string, OpenRpcDocument> = {};
    for (const imp of p.imports) {
      const target = spec(imp.provider);
      const main = target.main.filter((_, k) => imp.main[k]);
      const control = (target.control ?? []).filter((_, k) => imp.control[k]);
      const entry = interfaceOf(main);
      if (control.length > 0) entry["x-sausage-endpoints"] = { control: interfaceOf(control) };
      imports[imp.provider] = entry;
      if (only && !only.includes(name) && !only.includes(imp.provider)) continue;
      const e: Expected = {
        consumer: name,
        provider: imp.provider,
        status: "ok",
        methods: [...main.map((m) => m.name), ...control.map((m) => `control.${m.name}`)],
        problems: [],
      };
      if (target.fate === "absent") e.status = "missing";
      else if (target.fate === "unavailable") {
        [e.status, e.detail] = ["unavailable", "its discovery failed"];
      } else if (target.fate === "reason") {
        [e.status, e.detail] = ["unavailable", `${imp.provider} hangs`];
      } else {
        const gone = (list: Method[], drop: number[], m: Method) => drop[list.indexOf(m)] === 0;
        for (const m of main) {
          if (gone(target.main, target.dropMain, m)) {
            e.problems.push(["missing-method", null, m.name]);
          }
        }
        if (control.length > 0 && target.dropEndpoint) {
          e.problems.push(["missing-endpoint", "control", null]);
        } else {
          for (const m of control) {
            if (gone(target.control!, target.dropControl, m)) {
              e.problems.push(["missing-method", "control", m.name]);
            }
          }
        }
        if (e.problems.length > 0) e.status = "broken";
      }
      expected.push(e);
    }
    if (p.imports.length > 0) doc["x-sausage-imports"] = imports;
    documents[name] = doc;
  });
  const order = (a: Expected, b: Expected) =>
    a.consumer < b.consumer ? -1 : a.consumer > b.consumer ? 1 : a.provider < b.provider ? -1 : 1;
  return { documents, expected: expected.sort(order) };
}

Deno.test("property: checkWorld finds every removed method, missing and unavailable provider", () => {
  const tally: Record<ImportStatus, number> = { ok: 0, broken: 0, missing: 0, unavailable: 0 };
  fc.assert(
    fc.property(worldArb, ({ plugins, only }) => {
      const { documents, expected } = buildWorld(plugins, only);
      const world = checkWorld(documents, { only });
      const got = world.imports.map((i): Expected => {
        const e: Expected = {
          consumer: i.consumer,
          provider: i.provider,
          status: i.status,
          methods: i.methods,
          problems: i.problems.map((p) => [p.kind, p.endpoint, p.method]),
        };
        if (i.detail !== undefined) e.detail = i.detail;
        return e;
      });
      assert.deepEqual(got, expected);
      // the counts are those of the statuses
      const counts: Record<ImportStatus, number> = { ok: 0, broken: 0, missing: 0, unavailable: 0 };
      for (const i of world.imports) counts[i.status]++;
      assert.deepEqual(world.counts, counts);
      for (const i of world.imports) {
        tally[i.status]++;
        for (const p of i.problems) {
          assert.equal(p.consumer, i.consumer);
          assert.equal(p.provider, i.provider);
          const label = p.endpoint === null ? p.method : `${p.endpoint}.${p.method}`;
          assert.equal(
            p.text,
            p.kind === "missing-method"
              ? `${p.provider} has no method ${label}.`
              : `${p.provider} has no endpoint interface "${p.endpoint}".`,
          );
        }
        // each import checked alone, on fresh copies, gives the same answer
        if (i.status === "ok" || i.status === "broken") {
          const consumer = structuredClone(documents[i.consumer]) as OpenRpcDocument;
          const direct = checkImport(
            consumer["x-sausage-imports"]![i.provider],
            structuredClone(documents[i.provider]),
            { consumer: i.consumer, provider: i.provider, consumerDocument: consumer },
          );
          assert.deepEqual(direct.problems, i.problems);
          assert.deepEqual(direct.methods, i.methods);
        }
      }
      // a second check of the same documents gives the same answer
      assert.deepEqual(checkWorld(documents, { only }), world);
    }),
    { numRuns: 200, seed: SEED },
  );
  assert.ok(Object.values(tally).every((n) => n > 30), JSON.stringify(tally));
});

// Any document: malformed method lists, params and results, `$ref`s to
// nowhere, to themselves, to the document, odd names.

const REFS = [
  "#",
  "#/",
  "#/methods/0",
  "#/methods/0/params/0",
  "#/methods/01",
  "#/methods/-1",
  "#/components/schemas/A",
  "#/components/schemas/B",
  "#/components/schemas/constructor",
  "#/components/schemas/__proto__",
  "#/components/contentDescriptors/P",
  "#/x-sausage-imports/notes",
  "#/x-sausage-endpoints/control/methods/0",
  "#/%E0%A4%A",
  "#/components/schemas/A~2",
  "other.json#/A",
];

const oddName = fc.oneof(
  fc.constantFrom(...METHOD_NAMES, "__proto__", "constructor", "toString", "", "a/b", "a~b"),
  fc.anything({ maxDepth: 1 }),
);

const anyDoc: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  schema: fc.oneof(
    { maxDepth: 3, depthIdentifier: "any" },
    leafSchema,
    fc.constantFrom(...REFS).map(($ref) => ({ $ref })),
    fc.anything({ maxDepth: 2 }),
    fc.record({
      type: fc.constantFrom("object", "array", "integer", ["string", 1], "nothing"),
      properties: fc.oneof(
        fc.dictionary(oddName.map(String), tie("schema"), { maxKeys: 3 }),
        fc.anything({ maxDepth: 1 }),
      ),
      required: fc.oneof(fc.subarray(["a", "b", "__proto__"]), fc.anything({ maxDepth: 1 })),
      items: tie("schema"),
      additionalProperties: tie("schema"),
      anyOf: fc.oneof(fc.array(tie("schema"), { maxLength: 3 }), fc.anything({ maxDepth: 1 })),
      oneOf: fc.array(tie("schema"), { maxLength: 3 }),
      allOf: fc.array(tie("schema"), { maxLength: 3 }),
      enum: fc.array(fc.anything({ maxDepth: 1 }), { maxLength: 3 }),
      minimum: fc.oneof(fc.double(), fc.anything({ maxDepth: 0 })),
      maximum: fc.double(),
      format: fc.constantFrom("uint8", "int64", "double", "date-time", "nothing"),
      $ref: fc.constantFrom(...REFS),
    }, { requiredKeys: [] }),
  ),
  descriptor: fc.oneof(
    { depthIdentifier: "any" },
    fc.record({
      name: oddName,
      required: fc.oneof(fc.boolean(), fc.anything({ maxDepth: 0 })),
      schema: tie("schema"),
    }, { requiredKeys: [] }),
    fc.constantFrom(...REFS).map(($ref) => ({ $ref })),
    fc.anything({ maxDepth: 1 }),
  ),
  method: fc.oneof(
    { depthIdentifier: "any" },
    fc.record({
      name: oddName,
      params: fc.oneof(fc.array(tie("descriptor"), { maxLength: 3 }), tie("descriptor")),
      result: tie("descriptor"),
      "x-sausage-params": tie("schema"),
    }, { requiredKeys: ["name"] }),
    fc.constantFrom(...REFS).map(($ref) => ({ $ref })),
    fc.anything({ maxDepth: 1 }),
  ),
  methods: fc.oneof(
    { depthIdentifier: "any" },
    fc.array(tie("method"), { maxLength: 4 }),
    fc.anything({ maxDepth: 1 }),
  ),
  iface: fc.record({
    methods: tie("methods"),
    components: fc.record({
      schemas: fc.dictionary(fc.constantFrom("A", "B", "constructor", "__proto__"), tie("schema"), {
        maxKeys: 3,
      }),
      contentDescriptors: fc.record({ P: tie("descriptor") }),
    }, { requiredKeys: [] }),
    "x-sausage-endpoints": fc.oneof(
      fc.dictionary(
        fc.constantFrom("control", "__proto__", "toString"),
        fc.oneof(fc.record({ methods: tie("methods") }), fc.anything({ maxDepth: 1 })),
        { maxKeys: 2 },
      ),
      fc.anything({ maxDepth: 1 }),
    ),
  }, { requiredKeys: [] }),
  doc: fc.oneof(
    { depthIdentifier: "any" },
    fc.tuple(
      tie("iface"),
      fc.dictionary(fc.constantFrom(...PLUGINS, "__proto__", "constructor"), tie("iface"), {
        maxKeys: 3,
      }),
    ).map(([d, imports]) => ({ ...(d as Json), "x-sausage-imports": imports })),
    tie("iface"),
    fc.constantFrom("unavailable", { unavailable: "gone" }),
    fc.anything({ maxDepth: 2 }),
  ),
})).doc;

/** The documents as they arrive: JSON. */
const asJson = (x: unknown): unknown => {
  const text = JSON.stringify(x);
  return text === undefined ? null : JSON.parse(text);
};

const STATUSES = new Set(["ok", "broken", "missing", "unavailable"]);
const KINDS = new Set(["missing-method", "missing-endpoint", "params", "result", "outside-subset"]);

function checkShape(i: ImportResult | (ImportCheck & { status?: undefined })): void {
  assert.ok(Array.isArray(i.methods) && i.methods.every((m) => typeof m === "string"));
  for (const p of i.problems) {
    assert.ok(KINDS.has(p.kind), p.kind);
    assert.ok(typeof p.text === "string" && p.text.length > 0);
    assert.ok(typeof p.signature === "string" && p.signature.length > 0);
    assert.equal(p.method === null, p.kind === "missing-endpoint");
    if (p.kind === "params" || p.kind === "result" || p.kind === "outside-subset") {
      assert.ok(p.part === "params" || p.part === "result");
    }
    if (p.kind === "params" || p.kind === "result") {
      // a counterexample is JSON and survives being written as JSON
      assert.notEqual(p.counterexample, undefined);
      assert.deepEqual(asJson(p.counterexample), p.counterexample);
    }
  }
}

Deno.test("property: checkImport and checkWorld take any document without throwing", () => {
  const tally: Record<ImportStatus, number> = { ok: 0, broken: 0, missing: 0, unavailable: 0 };
  fc.assert(
    fc.property(
      fc.dictionary(fc.constantFrom(...PLUGINS), anyDoc, { maxKeys: 4 }),
      anyDoc,
      anyDoc,
      (docs, a, b) => {
        const documents = asJson(docs) as Record<string, WorldEntry>;
        const world = checkWorld(documents);
        const counts: Record<ImportStatus, number> = {
          ok: 0,
          broken: 0,
          missing: 0,
          unavailable: 0,
        };
        for (const i of world.imports) {
          assert.ok(STATUSES.has(i.status), i.status);
          assert.equal(i.problems.length > 0, i.status === "broken");
          checkShape(i);
          counts[i.status]++;
          tally[i.status]++;
        }
        assert.deepEqual(world.counts, counts);
        JSON.stringify(world);
        const [imported, provider] = [asJson(a), asJson(b)];
        const r = checkImport(imported, provider, { consumer: "a", provider: "b" });
        assert.equal(r.ok, r.problems.length === 0);
        checkShape(r);
        // the same documents, the same answer, also on fresh copies
        assert.deepEqual(checkImport(imported, provider, { consumer: "a", provider: "b" }), r);
        assert.deepEqual(
          checkImport(structuredClone(imported), structuredClone(provider), {
            consumer: "a",
            provider: "b",
          }),
          r,
        );
      },
    ),
    { numRuns: 200, seed: SEED },
  );
  assert.ok(tally.ok > 20 && tally.broken > 20, JSON.stringify(tally));
});

// Two properties that the ones above found broken in their wider forms.

Deno.test({
  name: "property: the methods of an import do not depend on the state of its provider",
  // methods given by `$ref` (allowed by OpenRPC) and duplicate names are
  // listed as a check lists them, whatever the provider's state
  fn: () => {
    const entryArb = fc.record({
      methods: fc.array(
        fc.oneof(
          leafMethods.map((ms) => ms.map((m) => methodObject(m, "list-default"))),
          fc.constant([{ $ref: "#/components/methods/ping" }]),
        ),
        { maxLength: 3 },
      ).map((lists) => lists.flat()),
    }).map(({ methods }) => ({
      methods,
      components: { methods: { ping: { name: "ping", params: [] } } },
    }));
    fc.assert(
      fc.property(entryArb, (entry) => {
        const agent = { methods: [], "x-sausage-imports": { notes: entry } };
        const notes = { methods: [] };
        const [present] = checkWorld({ agent, notes }).imports;
        const [missing] = checkWorld({ agent }).imports;
        const [unavailable] = checkWorld({ agent, notes: "unavailable" }).imports;
        assert.equal(missing.status, "missing");
        assert.deepEqual(missing.methods, present.methods);
        assert.deepEqual(unavailable.methods, present.methods);
      }),
      { numRuns: 100, seed: SEED },
    );
  },
});

Deno.test({
  name: "property: deeply nested schemas do not make the check throw",
  // the normalization and the subset check recurse once per level: beyond
  // what the stack holds, the method gets an outside-subset problem
  fn: () => {
    const wraps: Record<string, (s: unknown) => unknown> = {
      object: (s) => ({ type: "object", properties: { a: s }, required: ["a"] }),
      array: (s) => ({ type: "array", items: s }),
      anyOf: (s) => ({ anyOf: [s, { type: "null" }] }),
    };
    fc.assert(
      fc.property(
        fc.constantFrom(...Object.keys(wraps)),
        fc.integer({ min: 1, max: 3000 }),
        (kind, depth) => {
          let s: unknown = { type: "string" };
          for (let i = 0; i < depth; i++) s = wraps[kind](s);
          const doc = () => ({
            methods: [{ name: "get", params: [], result: { name: "r", schema: s } }],
          });
          const r = checkImport(doc(), doc(), { consumer: "agent", provider: "notes" });
          assert.ok(r.problems.every((p) => p.kind === "outside-subset"));
        },
      ),
      { numRuns: 30, seed: SEED },
    );
  },
});
