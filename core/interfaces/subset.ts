/**
 * The subset relation of two schemas: every value valid for the sender is
 * valid for the receiver. Decided exactly over the subset of
 * {@linkcode ./schema.ts}, with a counterexample when it does not hold.
 *
 * The decision goes kind by kind (the kinds of JSON values are disjoint):
 * strings and booleans by their sets, numbers by their intervals
 * ({@linkcode numberDifference}), arrays by their items and `uniqueItems`,
 * objects by their required properties and by each property: the listed
 * ones of either side, and one fresh name for all the others. Recursive
 * schemas are compared coinductively: a pair of parts already under
 * comparison is assumed to hold. When a comparison fails anywhere, the
 * whole fails (each step is a conjunction, and the sender's part is known to
 * have values), so the assumption is only ever relied on when everything
 * holds.
 *
 * @example
 * ```ts
 * import { isSubset } from "./subset.ts";
 * isSubset({ type: "integer", format: "uint8" }, { type: "integer", format: "uint16" }).status;
 * // "subset"
 * const r = isSubset({ type: "integer", format: "uint16" }, { type: "integer", format: "uint8" });
 * // r.status === "counterexample", r.counterexample === 256
 * ```
 *
 * @module
 */

import { explainReason } from "./explain.ts";
import type { PathSegment, Reason } from "./reason.ts";
import { numberDifference, numberWitness } from "./numbers.ts";
import {
  additionalOf,
  type ArrayPart,
  type JsonValue,
  normalize,
  type ObjectPart,
  type OutsideSubset,
  propertyOf,
  type Shape,
  type Unlisted,
} from "./schema.ts";
import { describe, Witnesses } from "./values.ts";

/**
 * A value valid for the sender and not for the receiver, and why.
 *
 * @example
 * ```ts
 * import { normalize } from "./schema.ts";
 * new SubsetChecker().find(normalize({ type: "integer" }).shape, normalize({ type: "string" }).shape);
 * // { value: 0, reason: { kind: "value", path: [], expected: "string", actual: "integer" } }
 * ```
 */
export interface Counterexample {
  value: JsonValue;
  reason: Reason;
}

const PENDING = Symbol("pending");
type Memo<P> = Map<P, Map<P, Counterexample | null | typeof PENDING>>;

function within(reason: Reason, segment: PathSegment): Reason {
  return { ...reason, path: [segment, ...reason.path] };
}

function isNothing(shape: Shape): boolean {
  return !shape.null && !shape.boolean && !shape.number && !shape.string && !shape.array &&
    !shape.object;
}

/** A name that none of the parts mention, for "any other property". */
function freshKey(...parts: ObjectPart[]): string {
  const used = (k: string) => parts.some((p) => p.properties.has(k) || p.required.has(k));
  for (const k of ["x", "y", "z", "other"]) if (!used(k)) return k;
  let i = 1;
  while (used(`x${i}`)) i++;
  return `x${i}`;
}

/**
 * Decides sender ⊆ receiver on shapes. One checker remembers pairs it has
 * compared; use a new one for each independent question, or one for many
 * questions over the same documents.
 *
 * @example
 * ```ts
 * import { normalize } from "./schema.ts";
 * const checker = new SubsetChecker();
 * checker.find(normalize({ type: "string" }).shape, normalize({ enum: ["a"] }).shape);
 * // { value: "b", reason: { kind: "value", path: [], expected: '"a"', actual: "string" } }
 * ```
 */
export class SubsetChecker {
  readonly #unlisted: Unlisted;
  readonly #witnesses: Witnesses;
  readonly #objects: Memo<ObjectPart> = new Map();
  readonly #arrays: Memo<ArrayPart> = new Map();

  /**
   * `unlisted`: how the sender's objects without `additionalProperties` are
   * read (default `"closed"`: a writer writes only the fields it lists). The
   * receiver's are always read `"open"`.
   */
  constructor(unlisted: Unlisted = "closed") {
    this.#unlisted = unlisted;
    this.#witnesses = new Witnesses(unlisted);
  }

  /** A value of `sender` that `receiver` rejects, or undefined when there is none. */
  find(sender: Shape, receiver: Shape): Counterexample | undefined {
    const found = this.#find(sender, receiver);
    // Pairs that held under an assumption that then failed may not hold: forget them.
    if (found) {
      this.#objects.clear();
      this.#arrays.clear();
    }
    return found;
  }

  #find(sender: Shape, receiver: Shape): Counterexample | undefined {
    // Simple kinds first: their counterexamples are the shortest.
    if (sender.string) {
      const value = this.#string(sender, receiver);
      if (value !== undefined) return this.#mismatch(value, sender, receiver);
    }
    if (sender.number) {
      const value = receiver.number
        ? numberDifference(sender.number, receiver.number)
        : numberWitness(sender.number);
      if (value !== undefined) return this.#mismatch(value, sender, receiver);
    }
    if (sender.boolean) {
      for (const b of [true, false]) {
        if (sender.boolean[`${b}`] && !receiver.boolean?.[`${b}`]) {
          return this.#mismatch(b, sender, receiver);
        }
      }
    }
    if (sender.null && !receiver.null) return this.#mismatch(null, sender, receiver);
    if (sender.array) {
      const c = this.#memo(
        this.#arrays,
        sender.array,
        receiver.array,
        () => this.#array(sender, receiver),
      );
      if (c) return c;
    }
    if (sender.object) {
      const c = this.#memo(
        this.#objects,
        sender.object,
        receiver.object,
        () => this.#object(sender, receiver),
      );
      if (c) return c;
    }
    return undefined;
  }

  /** Whether the shape allows some value, as the sender writes it. */
  inhabited(shape: Shape): boolean {
    return this.#witnesses.inhabited(shape);
  }

  #memo<P>(
    memo: Memo<P>,
    s: P,
    r: P | null,
    compare: () => Counterexample | undefined,
  ): Counterexample | undefined {
    if (r === null) return compare();
    let row = memo.get(s);
    if (!row) memo.set(s, row = new Map());
    const known = row.get(r);
    if (known === PENDING) return undefined; // assumed, see the module doc
    if (known !== undefined) return known ?? undefined;
    row.set(r, PENDING);
    const found = compare();
    row.set(r, found ?? null);
    return found;
  }

  #mismatch(value: JsonValue, sender: Shape, receiver: Shape): Counterexample {
    let expected = describe(receiver), actual = describe(sender);
    if (expected === actual) {
      expected = describe(receiver, { names: false });
      actual = describe(sender, { names: false });
    }
    return { value, reason: { kind: "value", path: [], expected, actual } };
  }

  #string(sender: Shape, receiver: Shape): string | undefined {
    const s = sender.string!.values, r = receiver.string?.values;
    if (r === null) return undefined;
    if (s !== null) return [...s].find((v) => !r?.has(v));
    if (r === undefined) return "a";
    for (const v of ["a", "b", "c", "other"]) if (!r.has(v)) return v;
    let i = 1;
    while (r.has(`a${i}`)) i++;
    return `a${i}`;
  }

  #array(sender: Shape, receiver: Shape): Counterexample | undefined {
    const s = sender.array!, r = receiver.array;
    if (!r) return this.#mismatch([], sender, receiver);
    const c = this.#find(s.items, r.items);
    if (c) return { value: [c.value], reason: within(c.reason, 0) };
    if (r.unique && !s.unique) {
      const item = this.#witnesses.of(s.items);
      if (item !== undefined) {
        return { value: [item, item], reason: { kind: "duplicates", path: [] } };
      }
    }
    return undefined;
  }

  #object(sender: Shape, receiver: Shape): Counterexample | undefined {
    const s = sender.object!, r = receiver.object;
    const base = this.#witnesses.object(s);
    if (base === undefined) return undefined; // the sender has no such objects
    if (!r) return this.#mismatch(base, sender, receiver);
    const u = this.#unlisted;
    for (const key of r.required) {
      if (s.required.has(key)) continue;
      const unlisted = [...s.properties.keys()].filter((k) =>
        !r.properties.has(k) && !r.required.has(k) && this.inhabited(s.properties.get(k)!)
      );
      const expected = describe(propertyOf(r, key, "open"));
      return { value: base, reason: { kind: "missing", path: [], key, expected, unlisted } };
    }
    const keys = new Set([...s.properties.keys(), ...r.properties.keys(), ...s.required]);
    for (const key of keys) {
      const found = this.#property(base, key, propertyOf(s, key, u), propertyOf(r, key, "open"));
      if (found) return found;
    }
    const other = freshKey(s, r);
    return this.#property(base, { other }, additionalOf(s, u), additionalOf(r, "open"));
  }

  #property(
    base: Record<string, JsonValue>,
    segment: string | { other: string },
    sender: Shape,
    receiver: Shape,
  ): Counterexample | undefined {
    const c = this.#find(sender, receiver);
    if (!c) return undefined;
    const key = typeof segment === "string" ? segment : segment.other;
    const value = { ...base, [key]: c.value };
    if (isNothing(receiver)) {
      return { value, reason: { kind: "unexpected", path: [], key: segment } };
    }
    return { value, reason: within(c.reason, segment) };
  }
}

/**
 * A construct outside the subset, and on which side.
 *
 * @example
 * ```ts
 * const r = isSubset({ type: "string", pattern: "." }, { type: "string" });
 * // r.status === "outside"; r.outside[0].side === "sender"
 * ```
 */
export interface SideOutside extends OutsideSubset {
  side: "sender" | "receiver";
}

/**
 * The answer of {@linkcode isSubset}.
 *
 * @example
 * ```ts
 * const r = isSubset({ type: "integer" }, { type: "number" });
 * if (r.status !== "subset") console.log(r.explanation);
 * ```
 */
export type SubsetResult =
  | { status: "subset" }
  | { status: "counterexample"; counterexample: JsonValue; reason: Reason; explanation: string }
  | { status: "outside"; outside: SideOutside[]; explanation: string };

/**
 * Options of {@linkcode isSubset}.
 *
 * @example
 * ```ts
 * const A = { type: "object", properties: { n: { type: "integer" } } };
 * const document = { components: { schemas: { A } } };
 * isSubset({ $ref: "#/components/schemas/A" }, { type: "object" }, { senderRoot: document, unlisted: "open" });
 * ```
 */
export interface SubsetOptions {
  /** How the sender's objects without `additionalProperties` are read; default `"closed"`. */
  unlisted?: Unlisted;
  /** The document that the sender's `$ref`s point into (default: the sender schema). */
  senderRoot?: unknown;
  /** The document that the receiver's `$ref`s point into (default: the receiver schema). */
  receiverRoot?: unknown;
}

/**
 * Whether every value valid for `sender` is valid for `receiver` (two JSON
 * Schemas). When not, a counterexample: a value valid for the sender and
 * invalid for the receiver, with the reason in words. A construct outside
 * the subset on either side fails the check and names the construct and
 * its path.
 *
 * @example
 * ```ts
 * const old = { type: "object", properties: { text: { type: "string" } }, required: ["text"] };
 * const now = { type: "object", properties: { body: { type: "string" } }, required: ["body"] };
 * const r = isSubset(old, now);
 * // r.status === "counterexample"; r.counterexample is { text: "a" }
 * // r.explanation === 'The receiver has no property "text". It requires "body": string.'
 * ```
 */
export function isSubset(
  sender: unknown,
  receiver: unknown,
  options: SubsetOptions = {},
): SubsetResult {
  const s = normalize(sender, { root: options.senderRoot });
  const r = normalize(receiver, { root: options.receiverRoot });
  const outside: SideOutside[] = [
    ...s.outside.map((o) => ({ ...o, side: "sender" as const })),
    ...r.outside.map((o) => ({ ...o, side: "receiver" as const })),
  ];
  if (outside.length > 0) {
    const explanation = outside.map((o) =>
      `The ${o.side} uses "${o.construct}" at ${o.path} (${o.detail}), outside the subset.`
    ).join(" ");
    return { status: "outside", outside, explanation };
  }
  const c = new SubsetChecker(options.unlisted).find(s.shape, r.shape);
  if (!c) return { status: "subset" };
  const explanation = explainReason(c.reason, {
    receiver: "the receiver",
    sender: "the sender",
    role: "value",
  });
  return { status: "counterexample", counterexample: c.value, reason: c.reason, explanation };
}
