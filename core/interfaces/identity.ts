/**
 * Whether a new version is still the plugin it replaces (PROTOCOL 10.3):
 * the checks of 10.2 look at consumers only, so a file of another plugin
 * that nobody imports would pass them. These look at the document itself.
 *
 * @module
 */
import { methodLabel, type OpenRpcDocument } from "./compat.ts";

/** Why a new version may be another plugin than the one it replaces. */
export interface IdentityProblem {
  /** `title`: its `info.title` names another plugin; `replaced`: it keeps no method of the current version. */
  kind: "title" | "replaced";
  plugin: string;
  /** In words, with what to do. */
  text: string;
}

/** What {@linkcode compareVersions} found. */
export interface VersionChange {
  /** The methods of the current version that the new one no longer has (`notes.list`, `www.control.stats`). */
  removed: string[];
  /** Reasons to ask for `force` (none when the new version is plainly this plugin's). */
  problems: IdentityProblem[];
}

/** The methods of a document, by label: the main interface's, then each endpoint's. */
export function methodLabels(plugin: string, document: OpenRpcDocument): string[] {
  const labels = namesOf(document.methods).map((m) => methodLabel(plugin, null, m));
  const endpoints = document["x-sausage-endpoints"];
  if (isObject(endpoints)) {
    for (const [endpoint, face] of Object.entries(endpoints)) {
      if (!isObject(face)) continue;
      for (const m of namesOf(face.methods)) labels.push(methodLabel(plugin, endpoint, m));
    }
  }
  return labels;
}

/**
 * Compares the new document of `plugin` with its current one (undefined for
 * a new plugin): which methods go, and whether the new version looks like
 * another plugin. `others` are the other plugins of the world.
 *
 * @example
 * ```ts
 * const notes = { openrpc: "1.2.6", info: { title: "notes" }, methods: [{ name: "add" }, { name: "list" }] };
 * const www = { openrpc: "1.2.6", info: { title: "www" }, methods: [{ name: "start" }] };
 * const change = compareVersions("notes", www, notes, new Set(["www"]));
 * change.removed; // ["notes.add", "notes.list"]
 * change.problems.map((p) => p.kind); // ["title", "replaced"]
 * ```
 */
export function compareVersions(
  plugin: string,
  next: OpenRpcDocument,
  current: OpenRpcDocument | undefined,
  others: ReadonlySet<string>,
): VersionChange {
  const problems: IdentityProblem[] = [];
  const title = isObject(next.info) && typeof next.info.title === "string"
    ? next.info.title
    : undefined;
  if (title !== undefined && title !== plugin) {
    const whose = others.has(title) ? `, another plugin of this world` : "";
    problems.push({
      kind: "title",
      plugin,
      text: `the new ${plugin} calls itself ${JSON.stringify(title)} in its rpc.discover ` +
        `document (info.title)${whose}: is it the file of another plugin? Activate it under ` +
        `its own name, or with force (force: true; --force in the console) if it is ${plugin}`,
    });
  }
  if (current === undefined) return { removed: [], problems };
  const before = methodLabels(plugin, current);
  const after = new Set(methodLabels(plugin, next));
  const removed = before.filter((m) => !after.has(m));
  // a version that keeps none of the methods is a new plugin under an old name, not a change
  if (before.length > 0 && after.size > 0 && removed.length === before.length) {
    problems.push({
      kind: "replaced",
      plugin,
      text:
        `the new ${plugin} has none of the methods of the current one (${
          before.join(", ")
        }), only ${[...after].join(", ")}: is it the file of another plugin? Activate it under ` +
        `its own name, or with force (force: true; --force in the console) to replace ${plugin}`,
    });
  }
  return { removed, problems };
}

function namesOf(methods: unknown): string[] {
  if (!Array.isArray(methods)) return [];
  return methods.flatMap((m) => isObject(m) && typeof m.name === "string" ? [m.name] : []);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
