/**
 * The problems of an import and its result in the world: what the
 * compatibility check (`compat.ts`) finds and the report (`report.ts`)
 * puts in words.
 *
 * @module
 */
import type { Reason } from "./reason.ts";
import type { JsonValue, OutsideSubset } from "./schema.ts";

/**
 * A construct outside the subset, on the consumer's or the provider's side.
 *
 * @example
 * ```ts
 * const o: ProblemOutside = { construct: "pattern", path: "#/components/schemas/Note/properties/text", detail: "a pattern of strings", side: "provider" };
 * ```
 */
export interface ProblemOutside extends OutsideSubset {
  side: "consumer" | "provider";
}

/**
 * What breaks.
 *
 * @example
 * ```ts
 * import { checkImport, type OpenRpcDocument } from "./compat.ts";
 * declare const entry: OpenRpcDocument; // the consumer's `x-sausage-imports.notes`
 * declare const provider: OpenRpcDocument; // the provider's current document
 * const broken = checkImport(entry, provider).problems.filter((p) => p.kind === "params");
 * ```
 */
export type ProblemKind =
  | "missing-method"
  | "missing-endpoint"
  | "params"
  | "result"
  | "outside-subset";

/**
 * One way an import breaks.
 *
 * @example
 * ```ts
 * import { checkImport, type OpenRpcDocument } from "./compat.ts";
 * declare const entry: OpenRpcDocument; // the agent's `x-sausage-imports.notes`
 * declare const newNotes: OpenRpcDocument; // a notes whose `add` takes `body`
 * const [p] = checkImport(entry, newNotes, { consumer: "agent", provider: "notes" }).problems;
 * // p.kind === "params"; p.signature === "notes.add(text: string) -> Added"
 * // p.text === 'notes.add has no param "text". It requires "body": string.'
 * // p.counterexample is { text: "milk" }
 * ```
 */
export interface Problem {
  kind: ProblemKind;
  consumer: string;
  provider: string;
  /** The endpoint interface, or null for the main interface. */
  endpoint: string | null;
  /** The method, or null for a missing endpoint interface. */
  method: string | null;
  /** The import as the consumer sees it: `notes.add(text: string) -> Added`. */
  signature: string;
  /** In words: `notes.add has no param "text". It requires "body": string.` */
  text: string;
  /** For `params`, `result`, and `outside-subset`: which of the two. */
  part?: "params" | "result";
  /** For `params` and `result`: a value that one side writes and the other cannot read. */
  counterexample?: JsonValue;
  reason?: Reason;
  /** For `outside-subset`: the constructs. */
  outside?: ProblemOutside[];
}

/**
 * The result of one import in the world: `ok`, `broken` (with problems),
 * `missing` (no such plugin), or `unavailable` (its discovery failed, so the
 * import cannot be checked).
 *
 * @example
 * ```ts
 * import { checkWorld, type WorldEntry } from "./compat.ts";
 * declare const documents: Record<string, WorldEntry>; // every plugin's, by name
 * const broken = checkWorld(documents).imports.filter((i) => i.status === "broken");
 * ```
 */
export type ImportStatus = "ok" | "broken" | "missing" | "unavailable";

/**
 * One import of one plugin, and its result.
 *
 * @example
 * ```ts
 * import { checkWorld, type WorldEntry } from "./compat.ts";
 * declare const documents: Record<string, WorldEntry>; // every plugin's, by name
 * for (const i of checkWorld(documents).imports) {
 *   console.log(`${i.consumer} imports ${i.provider}: ${i.status}`);
 * }
 * ```
 */
export interface ImportResult {
  consumer: string;
  provider: string;
  status: ImportStatus;
  /** The imported methods: `add`, and `control.stats` for an endpoint interface. */
  methods: string[];
  problems: Problem[];
  /** For `unavailable`: why the provider's discovery failed. */
  detail?: string;
}
