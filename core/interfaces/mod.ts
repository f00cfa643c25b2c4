/**
 * Interfaces: the compatibility check of PROTOCOL section 10.2, as pure
 * functions over `rpc.discover` documents.
 *
 * - {@linkcode isSubset}: every value valid for one schema is valid for
 *   another, or a counterexample and why.
 * - {@linkcode checkImport}: one consumer's import of one provider.
 * - {@linkcode checkWorld}: every import of every plugin (the graph).
 * - {@linkcode renderRejection}: the message of a rejected activation.
 * - {@linkcode compareVersions}: the methods a new version removes, and
 *   whether it looks like another plugin.
 *
 * @example
 * ```ts
 * import { checkWorld, type OpenRpcDocument, renderRejection, type WorldEntry } from "./mod.ts";
 * declare const current: Record<string, WorldEntry>; // every plugin's document, by name
 * declare const newNotesDocument: OpenRpcDocument;
 * const world = checkWorld({ ...current, notes: newNotesDocument }, { only: ["notes"] });
 * const bad = world.imports.filter((i) => i.status === "broken");
 * if (bad.length > 0) console.log(renderRejection(["notes"], bad));
 * ```
 *
 * @module
 */

export {
  checkImport,
  type CheckImportOptions,
  checkWorld,
  type CheckWorldOptions,
  type ContentDescriptor,
  type ImportCheck,
  type InterfaceDocument,
  methodLabel,
  type MethodObject,
  type OpenRpcDocument,
  type Unavailable,
  type WorldCheck,
  type WorldEntry,
} from "./compat.ts";
export type {
  ImportResult,
  ImportStatus,
  Problem,
  ProblemKind,
  ProblemOutside,
} from "./problems.ts";
export {
  compareVersions,
  type IdentityProblem,
  methodLabels,
  type VersionChange,
} from "./identity.ts";
export type { PathSegment, Reason } from "./reason.ts";
export { capitalize, explainReason, pathText, type ReasonLabels } from "./explain.ts";
export {
  counterexampleText,
  type Novelty,
  problemText,
  renderImport,
  renderRejection,
} from "./report.ts";
export {
  type ArrayPart,
  type BooleanPart,
  type JsonObject,
  type JsonValue,
  normalize,
  type ObjectPart,
  outsideOf,
  type OutsideSubset,
  SchemaSpace,
  type Shape,
  type StringPart,
  type Unlisted,
} from "./schema.ts";
export type { NumberPart } from "./numbers.ts";
export {
  type Counterexample,
  isSubset,
  type SideOutside,
  SubsetChecker,
  type SubsetOptions,
  type SubsetResult,
} from "./subset.ts";
export { accepts, describe, formatJson, witness } from "./values.ts";
