/**
 * Problems of imports in words: one problem, one import, and the message of
 * a rejected activation (PROTOCOL section 10.3), each problem with its
 * counterexample:
 *
 * ```text
 * notes was not activated: 1 consumer breaks.
 * - agent imports notes.add(text: string) -> Added.
 *   The new notes.add has no param "text". It requires "body": string.
 *   Counterexample: {"text": "milk"} is not valid for the new params.
 *   Update agent first, or activate both together.
 * ```
 *
 * @example
 * ```ts
 * import { checkWorld, type WorldEntry } from "./compat.ts";
 * import { renderRejection } from "./report.ts";
 * declare const documentsWithTheNewNotes: Record<string, WorldEntry>; // by plugin name
 * const world = checkWorld(documentsWithTheNewNotes, { only: ["notes"] });
 * const broken = world.imports.filter((i) => i.status === "broken");
 * if (broken.length > 0) throw new Error(renderRejection(["notes"], broken));
 * ```
 *
 * @module
 */

import type { ImportResult, Problem } from "./problems.ts";
import { capitalize, explainReason } from "./explain.ts";
import { formatJson } from "./values.ts";

/**
 * Which side of an import is a version that is being activated ("the new notes").
 *
 * @example
 * ```ts
 * import type { Problem } from "./problems.ts";
 * declare const problem: Problem; // of agent's import of notes.add
 * problemText(problem, { newProvider: true }); // "The new notes.add ..."
 * ```
 */
export interface Novelty {
  newConsumer?: boolean;
  newProvider?: boolean;
}

const MAX_OUTSIDE = 3;

function labels(problem: Problem, novelty: Novelty) {
  const { consumer, provider, endpoint, method } = problem;
  const m = `${provider}.${endpoint === null ? "" : `${endpoint}.`}${method ?? ""}`;
  return {
    method: novelty.newProvider ? `the new ${m}` : m,
    bareMethod: m,
    provider: novelty.newProvider ? `the new ${provider}` : provider,
    consumer: novelty.newConsumer ? `the new ${consumer}` : consumer,
  };
}

/**
 * The problem in one or two sentences, without the counterexample.
 *
 * @example
 * ```ts
 * import type { Problem } from "./problems.ts";
 * declare const problem: Problem; // agent's notes.add(text), against a notes.add(body)
 * problemText(problem, { newProvider: true });
 * // 'The new notes.add has no param "text". It requires "body": string.'
 * ```
 */
export function problemText(problem: Problem, novelty: Novelty = {}): string {
  const l = labels(problem, novelty);
  switch (problem.kind) {
    case "missing-method":
      return `${capitalize(l.provider)} has no method ${
        problem.endpoint === null ? "" : `${problem.endpoint}.`
      }${problem.method}.`;
    case "missing-endpoint":
      return `${capitalize(l.provider)} has no endpoint interface "${problem.endpoint}".`;
    case "params":
      return explainReason(problem.reason!, {
        receiver: l.method,
        sender: l.consumer,
        role: "params",
      });
    case "result":
      return explainReason(problem.reason!, {
        receiver: l.consumer,
        sender: l.method,
        role: "result",
      });
    case "outside-subset": {
      const all = problem.outside ?? [];
      const shown = all.slice(0, MAX_OUTSIDE).map((o) => {
        const owner = o.side === "provider"
          ? l.method
          : `${l.bareMethod} as ${l.consumer} imports it`;
        const verb = problem.part === "params" ? "use" : "uses";
        return `The ${problem.part} of ${owner} ${verb} "${o.construct}" at ${o.path} (${o.detail}).`;
      });
      if (all.length > MAX_OUTSIDE) shown.push(`And ${all.length - MAX_OUTSIDE} more.`);
      shown.push("The check covers only the schema subset of PROTOCOL section 10.2.");
      return shown.join(" ");
    }
  }
}

/**
 * The counterexample line of a `params` or `result` problem, or undefined.
 *
 * @example
 * ```ts
 * import type { Problem } from "./problems.ts";
 * declare const problem: Problem; // agent's notes.add(text), against a notes.add(body)
 * counterexampleText(problem, { newProvider: true });
 * // 'Counterexample: {"text": "milk"} is not valid for the new params.'
 * ```
 */
export function counterexampleText(problem: Problem, novelty: Novelty = {}): string | undefined {
  if (problem.counterexample === undefined) return undefined;
  const l = labels(problem, novelty);
  const value = formatJson(problem.counterexample);
  if (problem.kind === "params") {
    const params = novelty.newProvider ? "the new params" : `the params of ${l.bareMethod}`;
    return `Counterexample: ${value} is not valid for ${params}.`;
  }
  return `Counterexample: ${value} is a result that ${l.method} can return, and ${l.consumer} cannot read it.`;
}

/**
 * The lines of one import that is not ok: each problem as a bullet with its
 * explanation and counterexample, indented by two spaces.
 *
 * @example
 * ```ts
 * import type { ImportResult } from "./problems.ts";
 * declare const result: ImportResult; // agent's import of notes, broken
 * renderImport(result).join("\n");
 * // - agent imports notes.add(text: string) -> Added.
 * //   notes.add has no param "text". It requires "body": string.
 * //   Counterexample: {"text": "a"} is not valid for the params of notes.add.
 * ```
 */
export function renderImport(result: ImportResult, novelty: Novelty = {}): string[] {
  const consumer = novelty.newConsumer ? `the new ${result.consumer}` : result.consumer;
  const lines: string[] = [];
  if (result.status === "missing" || result.status === "unavailable") {
    const methods = result.methods.length > 0 ? ` (${result.methods.join(", ")})` : "";
    lines.push(`- ${consumer} imports ${result.provider}${methods}.`);
    lines.push(
      result.status === "missing"
        ? `  There is no plugin ${result.provider}.`
        : `  ${result.provider} is unavailable${
          result.detail ? `: ${result.detail}` : ""
        }. The import cannot be checked.`,
    );
    return lines;
  }
  for (const p of result.problems) {
    const what = p.kind === "missing-endpoint"
      ? `the endpoint interface ${p.signature}`
      : p.signature;
    lines.push(`- ${consumer} imports ${what}.`);
    lines.push(`  ${problemText(p, novelty)}`);
    const c = counterexampleText(p, novelty);
    if (c) lines.push(`  ${c}`);
  }
  return lines;
}

function nameList(names: readonly string[]): string {
  if (names.length <= 1) return names.join("");
  return `${names.slice(0, -1).join(", ")} and ${names.at(-1)}`;
}

function count(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/**
 * The message of a rejected activation of `activated` (one plugin, or a set
 * activated together), given the imports that are not ok. Only imports
 * that involve an activated plugin count: its consumers (whose import of it
 * breaks) and its own imports.
 *
 * @example
 * ```ts
 * import type { ImportResult } from "./problems.ts";
 * declare const brokenImportOfAgent: ImportResult; // status "broken", one problem
 * renderRejection(["notes"], [brokenImportOfAgent]);
 * // notes was not activated: 1 consumer breaks.
 * // - agent imports notes.add(text: string) -> Added.
 * //   The new notes.add has no param "text". It requires "body": string.
 * //   Counterexample: {"text": "milk"} is not valid for the new params.
 * //   Update agent first, or activate both together.
 * ```
 */
export function renderRejection(
  activated: readonly string[],
  results: readonly ImportResult[],
): string {
  const isNew = new Set(activated);
  const relevant = results.filter((r) =>
    r.status !== "ok" && (isNew.has(r.consumer) || isNew.has(r.provider))
  );
  const consumers = relevant.filter((r) => !isNew.has(r.consumer));
  const own = relevant.filter((r) => isNew.has(r.consumer));
  const breaking = new Set(consumers.map((r) => r.consumer)).size;
  const parts: string[] = [];
  if (breaking > 0) parts.push(count(breaking, "consumer breaks", "consumers break"));
  if (own.length > 0) {
    const whose = activated.length === 1 ? "its" : "their";
    parts.push(count(own.length, `of ${whose} imports breaks`, `of ${whose} imports break`));
  }
  const verb = activated.length === 1 ? "was" : "were";
  const lines = [
    `${nameList(activated)} ${verb} not activated${
      parts.length > 0 ? `: ${parts.join(", and ")}` : ""
    }.`,
  ];
  for (const r of [...consumers, ...own]) {
    const novelty = { newConsumer: isNew.has(r.consumer), newProvider: isNew.has(r.provider) };
    lines.push(...renderImport(r, novelty));
    if (r.status === "unavailable") continue;
    if (novelty.newConsumer && novelty.newProvider) {
      lines.push(`  Change ${r.consumer} or ${r.provider} so that they fit.`);
    } else if (r.status === "missing") {
      lines.push(`  Add ${r.provider} first, or remove the import.`);
    } else {
      const other = novelty.newConsumer ? r.provider : r.consumer;
      lines.push(`  Update ${other} first, or activate both together.`);
    }
  }
  return lines.join("\n");
}
