/**
 * A {@linkcode Reason} in words, for the messages of rejected activations
 * (PROTOCOL section 10.3) and of broken imports in the graph: "The new
 * notes.add has no param "text". It requires "body": string."
 *
 * @example
 * ```ts
 * import { explainReason } from "./explain.ts";
 * explainReason(
 *   { kind: "missing", path: [], key: "body", expected: "string", unlisted: ["text"] },
 *   { receiver: "the new notes.add", sender: "agent", role: "params" },
 * );
 * // 'The new notes.add has no param "text". It requires "body": string.'
 * ```
 *
 * @module
 */

import type { PathSegment, Reason } from "./reason.ts";

/**
 * Who is who in a sentence, and what the value is.
 *
 * @example
 * ```ts
 * const labels: ReasonLabels = { receiver: "the new notes.add", sender: "agent", role: "params" };
 * ```
 */
export interface ReasonLabels {
  /** The side that reads the value, e.g. `the new notes.add` for params, `agent` for a result. */
  receiver: string;
  /** The side that writes the value. */
  sender: string;
  /** What the value is: a method's params, a method's result, or any value. */
  role: "params" | "result" | "value";
}

function isOther(s: PathSegment | undefined): s is { other: string } {
  return typeof s === "object" && s !== null;
}

/**
 * A path as people write it: `filter.tags[].name`; `*` for any other property.
 *
 * @example
 * ```ts
 * pathText(["filter", "tags", 0, "name"]); // "filter.tags[].name"
 * ```
 */
export function pathText(path: readonly PathSegment[]): string {
  let out = "";
  for (const s of path) {
    if (typeof s === "number") out += "[]";
    else {
      const name = isOther(s) ? "*" : s;
      out += out === "" ? name : `.${name}`;
    }
  }
  return out;
}

const NOUNS = {
  params: ["param", "params"],
  result: ["result field", "result fields"],
  value: ["property", "properties"],
} as const;

const WHOLE = { params: "the params", result: "the result", value: "the value" } as const;

/**
 * Starts a sentence with a label: `the new notes.add` becomes `The new
 * notes.add`; a plugin name stays as it is (`notes.add`), since names are
 * lower case.
 *
 * @example
 * ```ts
 * capitalize("the receiver"); // "The receiver"
 * capitalize("notes.add"); // "notes.add"
 * ```
 */
export function capitalize(text: string): string {
  return text.startsWith("the ") ? `The ${text.slice(4)}` : text;
}

function where(path: readonly PathSegment[], role: ReasonLabels["role"]): string {
  if (path.length === 0) return WHOLE[role];
  const last = path[path.length - 1];
  if (isOther(last)) {
    const parent = path.slice(0, -1);
    return parent.length === 0
      ? `any other ${NOUNS[role][0]}`
      : `any other field of "${pathText(parent)}"`;
  }
  return `the ${NOUNS[role][0]} "${pathText(path)}"`;
}

function orList(items: string[]): string {
  return items.length === 1 ? items[0] : `${items.slice(0, -1).join(", ")} or ${items.at(-1)}`;
}

/**
 * One or two sentences that say why a counterexample breaks the receiver.
 *
 * @example
 * ```ts
 * explainReason(
 *   { kind: "value", path: ["port"], expected: "integer in [0, 255]", actual: "integer in [0, 65535]" },
 *   { receiver: "the new www.start", sender: "agent", role: "params" },
 * );
 * // 'The new www.start requires the param "port" to be integer in [0, 255]; agent can send integer in [0, 65535].'
 * ```
 */
export function explainReason(reason: Reason, labels: ReasonLabels): string {
  const { receiver, sender, role } = labels;
  const verb = role === "result" ? "return" : "send";
  const r = capitalize(receiver);
  switch (reason.kind) {
    case "missing": {
      const full = [...reason.path, reason.key];
      if (role !== "result" && reason.unlisted.length > 0) {
        const names = reason.unlisted.map((k) => `"${pathText([...reason.path, k])}"`);
        const noun = NOUNS[role][names.length > 1 ? 1 : 0];
        return `${r} has no ${noun} ${orList(names)}. It requires "${
          pathText(full)
        }": ${reason.expected}.`;
      }
      return `${r} requires ${
        where(full, role)
      }: ${reason.expected}, and ${sender} may leave it out.`;
    }
    case "unexpected": {
      const full = [...reason.path, reason.key];
      if (isOther(reason.key)) {
        const inside = reason.path.length > 0 ? ` in "${pathText(reason.path)}"` : "";
        const noun = reason.path.length > 0 ? "fields" : NOUNS[role][1];
        return `${r} does not accept other ${noun}${inside}, and ${sender} can ${verb} them.`;
      }
      return `${r} does not accept ${where(full, role)}, and ${sender} can ${verb} it.`;
    }
    case "value":
      return `${r} requires ${
        where(reason.path, role)
      } to be ${reason.expected}; ${sender} can ${verb} ${reason.actual}.`;
    case "duplicates":
      return `${r} requires ${
        where(reason.path, role)
      } to have no equal items; ${sender} can ${verb} equal items.`;
  }
}
