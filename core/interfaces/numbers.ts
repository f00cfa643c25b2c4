/**
 * Numbers as a JSON Schema validator sees them: JavaScript doubles. A
 * {@linkcode NumberPart} is an interval of doubles, or of the integers among
 * them, and these functions decide membership, emptiness and differences of
 * such intervals exactly, also near the ends of the double range.
 *
 * @example
 * ```ts
 * import { numberDifference, integerRange } from "./numbers.ts";
 * numberDifference(integerRange(0, 65535), integerRange(0, 255)); // 256
 * numberDifference(integerRange(0, 255), integerRange(0, 65535)); // undefined
 * ```
 *
 * @module
 */

/**
 * The numbers of one schema: an interval, of all doubles or only the integers.
 * An unbounded end is `-Infinity` or `Infinity` (its exclusive flag is then
 * meaningless).
 *
 * @example
 * ```ts
 * const u8: NumberPart = { integer: true, min: 0, minExclusive: false, max: 255, maxExclusive: false };
 * ```
 */
export interface NumberPart {
  /** Only integers (JSON Schema `"type": "integer"`): `1.0` counts, `1.5` does not. */
  readonly integer: boolean;
  readonly min: number;
  readonly minExclusive: boolean;
  readonly max: number;
  readonly maxExclusive: boolean;
}

/**
 * Every number.
 *
 * @example
 * ```ts
 * numberAccepts(ANY_NUMBER, 1.5); // true
 * ```
 */
export const ANY_NUMBER: NumberPart = Object.freeze({
  integer: false,
  min: -Infinity,
  minExclusive: false,
  max: Infinity,
  maxExclusive: false,
});

/**
 * The integers from `min` to `max`, both included.
 *
 * @example
 * ```ts
 * integerRange(0, 255); // a u8
 * ```
 */
export function integerRange(min: number, max: number): NumberPart {
  return { integer: true, min, minExclusive: false, max, maxExclusive: false };
}

/**
 * The integer ranges of the integer `format`s that schemars writes. Plugins
 * are `wasm32`, so `usize` (`"uint"`) and `isize` (`"int"`) have 32 bits.
 *
 * @example
 * ```ts
 * INTEGER_FORMATS.uint16; // [0, 65535]
 * ```
 */
export const INTEGER_FORMATS: Readonly<Record<string, readonly [number, number]>> = Object.freeze({
  int8: [-(2 ** 7), 2 ** 7 - 1],
  int16: [-(2 ** 15), 2 ** 15 - 1],
  int32: [-(2 ** 31), 2 ** 31 - 1],
  int64: [-(2 ** 63), 2 ** 63 - 1],
  int128: [-(2 ** 127), 2 ** 127 - 1],
  int: [-(2 ** 31), 2 ** 31 - 1],
  uint8: [0, 2 ** 8 - 1],
  uint16: [0, 2 ** 16 - 1],
  uint32: [0, 2 ** 32 - 1],
  uint64: [0, 2 ** 64 - 1],
  uint128: [0, 2 ** 128 - 1],
  uint: [0, 2 ** 32 - 1],
});

const view = new DataView(new ArrayBuffer(8));

/**
 * The next double above `x` (`Infinity` stays).
 *
 * @example
 * ```ts
 * nextUp(1); // 1.0000000000000002
 * ```
 */
export function nextUp(x: number): number {
  if (Number.isNaN(x) || x === Infinity) return x;
  if (x === 0) return Number.MIN_VALUE;
  view.setFloat64(0, x);
  const bits = view.getBigUint64(0);
  view.setBigUint64(0, x > 0 ? bits + 1n : bits - 1n);
  return view.getFloat64(0);
}

/**
 * The next double below `x` (`-Infinity` stays).
 *
 * @example
 * ```ts
 * nextDown(1); // 0.9999999999999999
 * ```
 */
export function nextDown(x: number): number {
  return -nextUp(-x);
}

/** From here on, every double is an integer. */
const ALL_INTEGERS = 2 ** 52;

/** The smallest integer above `x`. */
function integerAbove(x: number): number {
  return Math.abs(x) < ALL_INTEGERS ? Math.floor(x) + 1 : nextUp(x);
}

/** The greatest integer below `x`. */
function integerBelow(x: number): number {
  return Math.abs(x) < ALL_INTEGERS ? Math.ceil(x) - 1 : nextDown(x);
}

/**
 * Whether `x` is in the part.
 *
 * @example
 * ```ts
 * numberAccepts(integerRange(0, 255), 255.0); // true
 * numberAccepts(integerRange(0, 255), 1.5); // false
 * ```
 */
export function numberAccepts(part: NumberPart, x: number): boolean {
  if (!Number.isFinite(x)) return false;
  if (part.integer && !Number.isInteger(x)) return false;
  if (part.minExclusive ? x <= part.min : x < part.min) return false;
  if (part.maxExclusive ? x >= part.max : x > part.max) return false;
  return true;
}

/** The smallest member of the part, when it has a lower bound and members. */
function lowest(part: NumberPart): number | undefined {
  if (part.min === -Infinity) return undefined;
  if (part.integer) return part.minExclusive ? integerAbove(part.min) : Math.ceil(part.min);
  return part.minExclusive ? nextUp(part.min) : part.min;
}

/** The greatest member of the part, when it has an upper bound and members. */
function highest(part: NumberPart): number | undefined {
  if (part.max === Infinity) return undefined;
  if (part.integer) return part.maxExclusive ? integerBelow(part.max) : Math.floor(part.max);
  return part.maxExclusive ? nextDown(part.max) : part.max;
}

/**
 * A member of the part, preferring 0; undefined when the part is empty.
 *
 * @example
 * ```ts
 * numberWitness(integerRange(3, 5)); // 3
 * numberWitness({ ...integerRange(0, 1), integer: true, min: 0.2, max: 0.8 }); // undefined
 * ```
 */
export function numberWitness(part: NumberPart): number | undefined {
  for (const x of [0, lowest(part), highest(part)]) {
    if (x !== undefined && numberAccepts(part, x)) return x;
  }
  return undefined;
}

/**
 * The numbers in both parts; undefined when there are none.
 *
 * @example
 * ```ts
 * numberIntersection(integerRange(0, 255), integerRange(-10, 10)); // integers 0 to 10
 * ```
 */
export function numberIntersection(a: NumberPart, b: NumberPart): NumberPart | undefined {
  let min = a.min, minExclusive = a.minExclusive;
  if (b.min > min || (b.min === min && b.minExclusive)) {
    min = b.min;
    minExclusive = b.minExclusive || (a.min === b.min && a.minExclusive);
  }
  let max = a.max, maxExclusive = a.maxExclusive;
  if (b.max < max || (b.max === max && b.maxExclusive)) {
    max = b.max;
    maxExclusive = b.maxExclusive || (a.max === b.max && a.maxExclusive);
  }
  const part = { integer: a.integer || b.integer, min, minExclusive, max, maxExclusive };
  return numberWitness(part) === undefined ? undefined : part;
}

/** The greatest value of the grid (integers, or all doubles) below the lower bound of a part. */
function gridBelow(bound: number, exclusive: boolean, integer: boolean): number {
  if (integer) return exclusive ? Math.floor(bound) : integerBelow(bound);
  return exclusive ? bound : nextDown(bound);
}

/** The smallest value of the grid above the upper bound of a part. */
function gridAbove(bound: number, exclusive: boolean, integer: boolean): number {
  if (integer) return exclusive ? Math.ceil(bound) : integerAbove(bound);
  return exclusive ? bound : nextUp(bound);
}

/**
 * Candidates for a non-integer in a part of all doubles. If the part has a
 * non-integer, one of them is. Every non-integer double lies within
 * ±2^52, so the search clips the part to that range; there, the integers `a`
 * and `b` nearest the ends have non-integer neighbours.
 */
function nonIntegerCandidates(part: NumberPart): number[] {
  const clipped: NumberPart = {
    integer: false,
    min: Math.max(part.min, -ALL_INTEGERS),
    minExclusive: part.min > -ALL_INTEGERS && part.minExclusive,
    max: Math.min(part.max, ALL_INTEGERS),
    maxExclusive: part.max < ALL_INTEGERS && part.maxExclusive,
  };
  const lo = lowest(clipped) ?? -ALL_INTEGERS;
  const hi = highest(clipped) ?? ALL_INTEGERS;
  const a = lowest({ ...clipped, integer: true });
  const b = highest({ ...clipped, integer: true });
  const out = [lo, nextUp(lo), hi, nextDown(hi), (lo + hi) / 2];
  if (a !== undefined) out.unshift(a + 0.5, a - 0.5, nextDown(a));
  if (b !== undefined) out.unshift(b - 0.5, b + 0.5, nextUp(b));
  return out;
}

/**
 * A number of `sender` that is not in `receiver`, preferring short values;
 * undefined when every number of `sender` is in `receiver`.
 *
 * The search is exact: the numbers outside `receiver` are those below its
 * lower bound, those above its upper bound, and (for an integer receiver) the
 * non-integers. When `sender` meets one of these sets, it meets it at the
 * receiver's bound, at one of its own ends, or at a non-integer candidate.
 *
 * @example
 * ```ts
 * numberDifference(integerRange(-5, 5), integerRange(0, 10)); // -1
 * numberDifference(ANY_NUMBER, integerRange(0, 10)); // 0.5
 * ```
 */
export function numberDifference(sender: NumberPart, receiver: NumberPart): number | undefined {
  const candidates: (number | undefined)[] = [0, -1, 1, 0.5, -0.5];
  if (receiver.min > -Infinity) {
    candidates.push(gridBelow(receiver.min, receiver.minExclusive, sender.integer));
  }
  if (receiver.max < Infinity) {
    candidates.push(gridAbove(receiver.max, receiver.maxExclusive, sender.integer));
  }
  candidates.push(lowest(sender), highest(sender));
  if (receiver.integer && !sender.integer) candidates.push(...nonIntegerCandidates(sender));
  for (const x of candidates) {
    if (x !== undefined && numberAccepts(sender, x) && !numberAccepts(receiver, x)) return x;
  }
  return undefined;
}

/** The Rust names of the ranges of the integer formats, for descriptions. */
const RUST_NAMES: readonly (readonly [string, string])[] = [
  ["uint8", "u8"],
  ["uint16", "u16"],
  ["uint32", "u32"],
  ["uint64", "u64"],
  ["uint128", "u128"],
  ["int8", "i8"],
  ["int16", "i16"],
  ["int32", "i32"],
  ["int64", "i64"],
  ["int128", "i128"],
];

/**
 * A short description: `integer`, `number`, `integer in [1, 10]`,
 * `number > 0`, or the Rust name of an integer type's range: `u8`, `i64`.
 *
 * @example
 * ```ts
 * describeNumber(integerRange(0, 255)); // "u8"
 * describeNumber(integerRange(1, 10)); // "integer in [1, 10]"
 * ```
 */
export function describeNumber(part: NumberPart): string {
  if (part.integer && !part.minExclusive && !part.maxExclusive) {
    for (const [format, name] of RUST_NAMES) {
      const [min, max] = INTEGER_FORMATS[format];
      if (part.min === min && part.max === max) return name;
    }
  }
  const kind = part.integer ? "integer" : "number";
  const hasMin = part.min > -Infinity, hasMax = part.max < Infinity;
  if (hasMin && hasMax) {
    const open = part.minExclusive ? "(" : "[", close = part.maxExclusive ? ")" : "]";
    return `${kind} in ${open}${part.min}, ${part.max}${close}`;
  }
  if (hasMin) return `${kind} ${part.minExclusive ? ">" : "≥"} ${part.min}`;
  if (hasMax) return `${kind} ${part.maxExclusive ? "<" : "≤"} ${part.max}`;
  return kind;
}
