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
 */

import assert from "node:assert/strict";
import fc from "fast-check";
import { numberAccepts, numberDifference, type NumberPart } from "./numbers.ts";
import { normalize, type Unlisted } from "./schema.ts";
import { isSubset } from "./subset.ts";
import { closeObjects, junk, mutate, random, rootSchema, validator, valueOf } from "./testing.ts";
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
