import assert from "node:assert/strict";
import {
  ANY_NUMBER,
  describeNumber,
  INTEGER_FORMATS,
  integerRange,
  nextDown,
  nextUp,
  numberAccepts,
  numberDifference,
  numberIntersection,
  type NumberPart,
  numberWitness,
} from "./numbers.ts";

const u = (name: string) => integerRange(...INTEGER_FORMATS[name]);

Deno.test("nextUp and nextDown step to the neighbouring double", () => {
  assert.equal(nextUp(1), 1 + Number.EPSILON);
  assert.equal(nextDown(1), 1 - Number.EPSILON / 2);
  assert.equal(nextUp(0), Number.MIN_VALUE);
  assert.equal(nextDown(0), -Number.MIN_VALUE);
  assert.equal(nextUp(-1), -1 + Number.EPSILON / 2);
  assert.equal(nextUp(2 ** 53), 2 ** 53 + 2);
  assert.equal(nextUp(Infinity), Infinity);
  assert.equal(nextUp(Number.MAX_VALUE), Infinity);
});

Deno.test("integer parts accept integers in range, 1.0 included", () => {
  assert.ok(numberAccepts(u("uint8"), 255));
  assert.ok(numberAccepts(u("uint8"), 1.0));
  assert.ok(!numberAccepts(u("uint8"), 256));
  assert.ok(!numberAccepts(u("uint8"), -1));
  assert.ok(!numberAccepts(u("uint8"), 1.5));
  assert.ok(!numberAccepts(ANY_NUMBER, Infinity));
  const open: NumberPart = {
    ...ANY_NUMBER,
    min: 0,
    minExclusive: true,
    max: 1,
    maxExclusive: true,
  };
  assert.ok(!numberAccepts(open, 0) && !numberAccepts(open, 1) && numberAccepts(open, 0.5));
});

Deno.test("the differences of schemars integer types", () => {
  assert.equal(numberDifference(u("uint16"), u("uint8")), 256);
  assert.equal(numberDifference(u("uint8"), u("uint16")), undefined);
  assert.equal(numberDifference(u("int32"), u("uint32")), -1);
  assert.equal(numberDifference(u("uint32"), u("int32")), 2 ** 31);
  assert.equal(numberDifference(u("uint"), u("uint32")), undefined); // usize is 32-bit on wasm32
  const big = numberDifference(u("uint64"), u("int64"));
  assert.ok(big !== undefined && big > 2 ** 63);
  assert.equal(numberDifference(u("int64"), u("uint64")), -1);
});

Deno.test("numbers against integers: a non-integer in range", () => {
  assert.equal(numberDifference(ANY_NUMBER, { ...ANY_NUMBER, integer: true }), 0.5);
  const small: NumberPart = { ...ANY_NUMBER, min: 3, max: 4 };
  assert.equal(numberDifference(small, { ...small, integer: true }), 3.5);
  const tiny: NumberPart = { ...ANY_NUMBER, min: 3, max: 3 };
  assert.equal(numberDifference(tiny, { ...tiny, integer: true }), undefined);
  const huge: NumberPart = { ...ANY_NUMBER, min: 2 ** 60, max: 2 ** 61 };
  assert.equal(numberDifference(huge, { ...huge, integer: true }), undefined);
});

Deno.test("exclusive bounds move the counterexample to the bound itself", () => {
  const gt0: NumberPart = { ...ANY_NUMBER, integer: true, min: 0, minExclusive: true };
  assert.equal(numberDifference(integerRange(0, 10), gt0), 0);
  assert.equal(numberDifference(gt0, integerRange(1, Infinity)), undefined);
  const half: NumberPart = { ...ANY_NUMBER, integer: true, min: 0.5, max: 2.5 };
  assert.equal(numberDifference(half, integerRange(1, 2)), undefined);
});

Deno.test("witnesses and intersections, and empty parts", () => {
  assert.equal(numberWitness(integerRange(3, 5)), 3);
  assert.equal(numberWitness(integerRange(-5, -3)), -5);
  assert.equal(numberWitness({ ...ANY_NUMBER, integer: true, min: 0.2, max: 0.8 }), undefined);
  assert.equal(numberWitness({ ...ANY_NUMBER, min: 1, minExclusive: true, max: 1 }), undefined);
  assert.deepEqual(numberIntersection(u("uint8"), integerRange(-10, 10)), integerRange(0, 10));
  assert.equal(numberIntersection(integerRange(0, 1), integerRange(2, 3)), undefined);
  const both = numberIntersection(
    { ...ANY_NUMBER, min: 0, minExclusive: true },
    { ...ANY_NUMBER, min: 0 },
  );
  assert.equal(both?.minExclusive, true);
});

Deno.test("descriptions of number parts", () => {
  assert.equal(describeNumber(u("uint8")), "u8");
  assert.equal(describeNumber(ANY_NUMBER), "number");
  assert.equal(describeNumber({ ...ANY_NUMBER, min: 0, minExclusive: true }), "number > 0");
  assert.equal(describeNumber({ ...ANY_NUMBER, integer: true, max: 9 }), "integer ≤ 9");
});
