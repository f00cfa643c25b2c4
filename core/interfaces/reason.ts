/**
 * Why a value is valid for one schema and not for another: the words of a
 * counterexample, shared by the subset check (`subset.ts`) and its
 * explanations (`explain.ts`).
 *
 * @module
 */

/**
 * A step into a value: a property name, an array index, or `{ other }` for
 * any property that neither schema lists (`other` is the name the
 * counterexample uses).
 *
 * @example
 * ```ts
 * const path: PathSegment[] = ["filter", "tags", 0, { other: "x" }];
 * ```
 */
export type PathSegment = string | number | { other: string };

/**
 * Why a counterexample is valid for the sender and not for the receiver.
 *
 * @example
 * ```ts
 * const r: Reason = { kind: "missing", path: [], key: "body", expected: "string", unlisted: ["text"] };
 * ```
 */
export type Reason =
  | {
    /** The receiver requires `key` in the object at `path`; the sender may leave it out. */
    kind: "missing";
    path: PathSegment[];
    key: string;
    /** What the receiver requires there, e.g. `string`. */
    expected: string;
    /** Properties the sender lists and the receiver does not (a rename, often). */
    unlisted: string[];
  }
  | {
    /** The receiver allows no value for `key` in the object at `path`; the sender can send one. */
    kind: "unexpected";
    path: PathSegment[];
    key: PathSegment;
  }
  | {
    /** At `path`, the sender can send a value of `actual` that `expected` does not allow. */
    kind: "value";
    path: PathSegment[];
    expected: string;
    actual: string;
  }
  | {
    /** The array at `path` may have equal items for the sender, and not for the receiver. */
    kind: "duplicates";
    path: PathSegment[];
  };
