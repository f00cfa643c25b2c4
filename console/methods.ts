/**
 * What `methods <plugin>` prints: the interfaces of a plugin from its
 * `rpc.discover` document (PROTOCOL 10.1), as the core shows it in
 * `/proc/core/plugins/<plugin>/discover.json`.
 *
 * ```text
 * notes, version 1
 * methods:
 *   add(text: string) -> Added { count: integer }
 *     Add a note.
 *   list() -> string[]
 *     List the notes.
 * endpoint control: the control interface of the server
 *   stats() -> Stats
 * grace period: 5 s
 * imports:
 *   notes: add (ok)
 * types:
 *   Stats { hits: integer }
 * ```
 *
 * Named schemas in params show by name and are listed under `types`; a
 * result that is a named object shows its fields at once.
 *
 * @module
 */
import { indent, PLAIN, type Style } from "./format.ts";
import { SchemaText } from "./schema_text.ts";

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** A signature longer than this shows one param a line. */
const MAX_SIGNATURE = 96;

/** Options of {@linkcode formatMethods}. */
export interface MethodsOptions {
  style?: Style;
  /**
   * The graph's result for each import of the plugin, by provider: `ok`,
   * `broken`, `missing` or `unavailable` (`/proc/core/graph.json`).
   */
  importStatus?: Record<string, string>;
}

/**
 * The text of `methods <plugin>` for what `discover.json` holds: a document,
 * `null` (not known yet), or `{"error": reason}` (the discovery failed).
 */
export function formatMethods(
  plugin: string,
  discovered: unknown,
  options: MethodsOptions = {},
): string {
  const style = options.style ?? PLAIN;
  if (discovered === null || discovered === undefined) {
    return indent(style.dim(
      `the core does not know the rpc.discover document of ${plugin} yet ` +
        "(its discovery has not finished); try again in a moment",
    ));
  }
  if (isObject(discovered) && discovered.error !== undefined && discovered.methods === undefined) {
    return indent([
      style.red(`the discovery of ${plugin} failed: ${String(discovered.error)}`),
      style.dim(
        `its methods are unknown, and the imports of ${plugin} and of its consumers cannot be ` +
          "checked (log " + plugin + " shows its journal)",
      ),
    ].join("\n"));
  }
  if (!isObject(discovered) || !Array.isArray(discovered.methods)) {
    return indent(style.red(`the rpc.discover document of ${plugin} has no list of methods`));
  }
  return indent(new DocumentText(plugin, discovered, style, options.importStatus).render());
}

/** Renders one document. */
class DocumentText {
  readonly #plugin: string;
  readonly #doc: Json;
  readonly #style: Style;
  readonly #status: Record<string, string> | undefined;
  readonly #types: SchemaText;

  constructor(plugin: string, doc: Json, style: Style, status?: Record<string, string>) {
    this.#plugin = plugin;
    this.#doc = doc;
    this.#style = style;
    this.#status = status;
    this.#types = new SchemaText(doc);
  }

  render(): string {
    const style = this.#style;
    const doc = this.#doc;
    const lines = [style.bold(this.#title())];
    const info = isObject(doc.info) ? doc.info : {};
    if (typeof info.description === "string" && info.description.trim() !== "") {
      lines.push(...indent(info.description.trim()).split("\n"));
    }
    lines.push(style.bold("methods:"));
    lines.push(...this.#methods(doc.methods, this.#types));
    const endpoints = doc["x-sausage-endpoints"];
    if (isObject(endpoints)) {
      for (const [name, iface] of Object.entries(endpoints)) {
        const about = isObject(iface) && typeof iface.description === "string"
          ? `: ${iface.description.trim().split("\n")[0]}`
          : "";
        lines.push(`${style.bold(`endpoint ${name}`)}${about}`);
        const methods = isObject(iface) ? iface.methods : undefined;
        lines.push(...this.#methods(methods, this.#types.within(iface, doc)));
      }
    }
    const grace = doc["x-sausage-grace"];
    if (grace !== undefined) {
      lines.push(
        `${style.bold("grace period:")} ${
          typeof grace === "number" ? `${grace} s` : JSON.stringify(grace)
        } (old processes get this long to finish after an upgrade)`,
      );
    }
    const imports = doc["x-sausage-imports"];
    if (isObject(imports) && Object.keys(imports).length > 0) {
      lines.push(style.bold("imports:"));
      for (const [provider, part] of Object.entries(imports)) {
        lines.push(...this.#import(provider, part).map((l) => indent(l)));
      }
    }
    const types = this.#typeLines();
    if (types.length > 0) lines.push(style.bold("types:"), ...types.map((l) => indent(l)));
    return lines.join("\n");
  }

  #title(): string {
    const info = isObject(this.#doc.info) ? this.#doc.info : {};
    const title = typeof info.title === "string" ? info.title : this.#plugin;
    const version = typeof info.version === "string" ? `version ${info.version}` : "";
    if (title === this.#plugin) return version ? `${title}, ${version}` : title;
    return `${this.#plugin} (${[title, version].filter((p) => p).join(", ")})`;
  }

  #methods(list: unknown, types: SchemaText): string[] {
    if (!Array.isArray(list) || list.length === 0) return [indent(this.#style.dim("no methods"))];
    return list.flatMap((entry) => this.#method(entry, types).map((l) => indent(l)));
  }

  #method(entry: unknown, types: SchemaText): string[] {
    const style = this.#style;
    const method = this.#deref(entry, types);
    if (!isObject(method) || typeof method.name !== "string") {
      return [style.dim(`(an entry that is not a method: ${short(entry)})`)];
    }
    const params = this.#params(method, types);
    const described = this.#deref(method.result, types);
    const result = isObject(described) ? described : undefined;
    const returns = result ? ` -> ${types.named(result.schema ?? true)}` : "";
    const deprecated = method.deprecated === true ? style.dim(" (deprecated)") : "";
    const name = style.bold(method.name);
    const oneLine = `${method.name}(${params.map((p) => p.text).join(", ")})${returns}`;
    const lines: string[] = [];
    if (oneLine.length <= MAX_SIGNATURE || params.length < 2) {
      lines.push(`${name}(${params.map((p) => p.text).join(", ")})${returns}${deprecated}`);
    } else {
      lines.push(
        `${name}(`,
        ...params.map((p) => indent(`${p.text},`)),
        `)${returns}${deprecated}`,
      );
    }
    const docs: string[] = [];
    for (const key of ["summary", "description"]) {
      const text = method[key];
      if (typeof text === "string" && text.trim() !== "" && !docs.includes(text.trim())) {
        docs.push(text.trim());
      }
    }
    for (const p of params) if (p.about) docs.push(`${p.name} — ${p.about}`);
    const resultAbout = result && describedBy(result);
    if (resultAbout) docs.push(`returns ${resultAbout}`);
    if (docs.length > 0) lines.push(indent(docs.join("\n")));
    return lines;
  }

  #params(method: Json, types: SchemaText): Param[] {
    const params: Param[] = [];
    const list = Array.isArray(method.params) ? method.params : [];
    for (const entry of list) {
      const cd = this.#deref(entry, types);
      if (!isObject(cd) || typeof cd.name !== "string") {
        params.push({ name: "?", text: `? ${short(entry)}` });
        continue;
      }
      const optional = cd.required === true ? "" : "?";
      params.push({
        name: cd.name,
        text: `${cd.name}${optional}: ${types.type(cd.schema ?? true)}`,
        about: describedBy(cd),
      });
    }
    if (params.length === 0 && method["x-sausage-params"] !== undefined) {
      const object = this.#deref(method["x-sausage-params"], types);
      if (isObject(object) && isObject(object.properties)) {
        const required = Array.isArray(object.required) ? object.required : [];
        for (const [name, schema] of Object.entries(object.properties)) {
          params.push({
            name,
            text: `${name}${required.includes(name) ? "" : "?"}: ${types.type(schema)}`,
            about: isObject(schema) ? describedBy(schema) : undefined,
          });
        }
      }
    }
    return params;
  }

  /** An object that is only a local `$ref` (a method, a content descriptor), followed. */
  #deref(value: unknown, types: SchemaText): unknown {
    if (isObject(value) && typeof value.$ref === "string" && Object.keys(value).length === 1) {
      return types.resolve(value.$ref) ?? value;
    }
    return value;
  }

  #import(provider: string, part: unknown): string[] {
    const style = this.#style;
    const status = this.#status?.[provider];
    const mark = status === undefined
      ? ""
      : " " + (status === "ok" ? style.green("(ok)") : style.red(`(${status})`));
    const names = (list: unknown) =>
      Array.isArray(list)
        ? list.map((m) => isObject(m) && typeof m.name === "string" ? m.name : "?").join(", ")
        : "";
    const main = isObject(part) ? names(part.methods) : "";
    const lines = [`${provider}: ${main || style.dim("no methods")}${mark}`];
    const endpoints = isObject(part) ? part["x-sausage-endpoints"] : undefined;
    if (isObject(endpoints)) {
      for (const [name, iface] of Object.entries(endpoints)) {
        lines.push(`${provider}.${name}: ${isObject(iface) ? names(iface.methods) : ""}`);
      }
    }
    return lines;
  }

  /** Each named schema met, with its fields, unless shown already; those it names in turn too. */
  #typeLines(): string[] {
    const lines: string[] = [];
    const done = new Set<string>();
    for (let round = 0; round < 100; round++) {
      const next = this.#types.unexpanded.filter((n) => !done.has(n));
      if (next.length === 0) break;
      for (const name of next) {
        done.add(name);
        lines.push(this.#types.definitionOf(name));
      }
    }
    return lines;
  }
}

/** A param as shown. */
interface Param {
  name: string;
  /** `name?: type`. */
  text: string;
  about?: string;
}

/** The summary or description of a content descriptor or schema, on one line. */
function describedBy(value: Json): string | undefined {
  for (const key of ["summary", "description"]) {
    const text = value[key];
    if (typeof text === "string" && text.trim() !== "") return text.trim().replace(/\s+/g, " ");
  }
  const schema = value.schema;
  if (isObject(schema) && typeof schema.description === "string" && schema.description.trim()) {
    return schema.description.trim().replace(/\s+/g, " ");
  }
  return undefined;
}

function short(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 59)}…` : text;
}

/** One plugin of an answered `core.activate` or `core.revert`. */
export interface Activated {
  plugin: string;
  /** Its new `rpc.discover` document, as the core returned it. */
  document: unknown;
  /** Whether its `plugin.wasm` changed (false: the file was already its version). */
  changed: boolean;
}

/** Options of {@linkcode formatActivated}. */
export interface ActivatedOptions {
  /** The answer of `core.revert`. */
  reverted?: boolean;
  /** The checks were skipped. */
  force?: boolean;
  /** The answer's `$report`: methods the new versions remove, and warnings (PROTOCOL 10.3). */
  report?: ActivationReport;
  style?: Style;
}

/** What `core.activate` says beside the documents, under `$report`. */
export interface ActivationReport {
  removed?: Record<string, string[]>;
  warnings?: string[];
}

/** The answer of `core.activate` or `core.revert`: each plugin, its new version and methods. */
export function formatActivated(results: Activated[], options: ActivatedOptions = {}): string {
  const style = options.style ?? PLAIN;
  const report = options.report ?? {};
  const lines = results.map(({ plugin, document, changed }) => {
    const doc = isObject(document) ? document : {};
    const info = isObject(doc.info) ? doc.info : {};
    const version = typeof info.version === "string" ? `version ${info.version}, ` : "";
    const names = Array.isArray(doc.methods)
      ? doc.methods.map((m) => isObject(m) && typeof m.name === "string" ? m.name : "?")
      : [];
    const about = `${version}${names.length === 0 ? "no methods" : `methods ${names.join(", ")}`}`;
    if (!changed) return style.dim(`${plugin} is unchanged: this file is its current version`);
    const verb = options.reverted ? "reverted" : "activated";
    return `${style.green(`${verb} ${plugin}`)} (${about})`;
  });
  for (const [plugin, methods] of Object.entries(report.removed ?? {})) {
    lines.push(`${plugin} no longer has ${methods.join(", ")}`);
  }
  for (const warning of report.warnings ?? []) lines.push(style.red(`warning: ${warning}`));
  if (results.some((r) => r.changed)) {
    lines.push(style.dim(
      "new calls get the new version; running processes of the old one finish within their " +
        "grace period",
    ));
    if (options.force) {
      lines.push(style.dim(
        "the checks were skipped (--force): /proc/core/graph.json shows any import that broke",
      ));
    }
  }
  return indent(lines.join("\n"));
}
