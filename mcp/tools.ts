/**
 * The tools of a world: each method of each exposed plugin's `rpc.discover`
 * document (PROTOCOL 10.1) is a tool, and a few methods of the core. A call
 * of a tool is a call through the {@linkcode HostView}, with its arguments
 * checked against the tool's `inputSchema` first.
 *
 * Tool names are `<plugin>_<method>` (`notes_add`): the MCP specification of
 * 2025-11-25 allows `.`, but many clients pass tool names on to model APIs
 * that allow only `A-Z a-z 0-9 _ -` (64 at most), and reject the whole list
 * for one dotted name. The method's own name is the tool's `title`.
 *
 * @module
 */
// @ts-types="@modelcontextprotocol/sdk/types"
import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import type { HostView } from "../core/host_view.ts";
import type { Id } from "../core/jsonrpc.ts";
import { CORE } from "../core/names.ts";
import { CORE_TOOLS } from "./core_tools.ts";
import {
  type JsonObject,
  methodSchemas,
  type ResultForm,
  structured,
  Validator,
} from "./schema.ts";

/** The built-in plugin whose `build` is listed with the core tools. */
export const CARGO = "cargo";
/**
 * The core's plugin of the world's own MCP servers (PROTOCOL 13.2): they are
 * the agent's tools, so a client sees them only when it names `mcp`.
 */
export const MCP_SERVERS = "mcp";

/** The longest tool name many clients accept. */
const MAX_TOOL_NAME = 64;

/** Discoveries asked for at once while listing (each may start a process). */
const DISCOVERY_CONCURRENCY = 4;

/** A discover.json larger than this is not read (the largest message, PROTOCOL 3.1). */
const MAX_DOCUMENT_BYTES = 16 * 1024 * 1024;

/** One tool and the call it makes. */
export interface ToolEntry {
  /** The JSON-RPC method, e.g. `notes.add`. */
  method: string;
  /** The plugin, or `core`. */
  plugin: string;
  /** The MCP definition. */
  tool: Tool;
  resultForm: ResultForm;
}

/** Options of a {@linkcode ToolCatalog}. */
export interface ToolCatalogOptions {
  /** The plugins whose methods are tools, in this order; all (sorted by name) when absent. */
  plugins?: readonly string[];
  /** Notes for the person (stderr). */
  log?: (text: string) => void;
}

/** Options of one {@linkcode ToolCatalog.call}. */
export interface ToolCallOptions {
  /** Aborted when the client cancels: the call's process is stopped. */
  signal?: AbortSignal;
  /** Each `core.notify` of the call. */
  onNotify?: (name: string, params: unknown) => void;
}

/** A tool name that is not in the list; the message says so. */
export class UnknownToolError extends Error {
  override name = "UnknownToolError";
}

/**
 * The MCP name of a method: `<plugin>_<method>`, other characters than
 * `A-Z a-z 0-9 _ -` as `_`, and a name past 64 characters cut, with a hash
 * of the whole so that it stays unique.
 *
 * @example
 * ```ts
 * import { toolName } from "./tools.ts";
 * toolName("notes", "add"); // "notes_add"
 * toolName("www", "site.get"); // "www_site_get"
 * ```
 */
export function toolName(plugin: string, method: string): string {
  const name = `${plugin}_${method}`.replace(/[^A-Za-z0-9_-]/g, "_");
  if (name.length <= MAX_TOOL_NAME) return name;
  return `${name.slice(0, MAX_TOOL_NAME - 9)}_${fnv1a(`${plugin}.${method}`)}`;
}

/** 8 hex digits of FNV-1a: a short, stable tag. */
function fnv1a(text: string): string {
  let h = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) {
    h ^= byte;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h.toString(16).padStart(8, "0");
}

function isObject(x: unknown): x is JsonObject {
  return typeof x === "object" && x !== null && !Array.isArray(x);
}

/** A document as the core keeps it, with the version it belongs to. */
interface Known {
  key: string;
  tools: ToolEntry[];
}

/**
 * The tools of a world, built from the view; documents are kept by plugin
 * version, so a list after no change reads no document again.
 *
 * @example
 * ```ts
 * import type { HostView } from "../core/host_view.ts";
 * declare const view: HostView;
 * const tools = new ToolCatalog(view, { plugins: ["notes"] });
 * const list = await tools.list();
 * const result = await tools.call("notes_add", { text: "milk" });
 * ```
 */
export class ToolCatalog {
  readonly #view: HostView;
  readonly #only?: readonly string[];
  readonly #log: (text: string) => void;
  readonly #validator = new Validator();
  readonly #known = new Map<string, Known>();
  /** Why a plugin has no tools, as last noted (each reason is noted once). */
  readonly #unavailable = new Map<string, string>();
  #current?: Promise<Map<string, ToolEntry>>;

  constructor(view: HostView, options: ToolCatalogOptions = {}) {
    this.#view = view;
    this.#only = options.plugins;
    this.#log = options.log ?? (() => {});
  }

  /** The plugins whose methods are tools, in their order (cargo is with the core). */
  async plugins(): Promise<string[]> {
    const present = await this.#view.plugins();
    if (this.#only === undefined) return present.filter((p) => p !== CARGO && p !== MCP_SERVERS);
    const set = new Set(present);
    return [...new Set(this.#only)].filter((p) => p !== CARGO && set.has(p));
  }

  /** The tools now: the core's first, then each plugin's in the order of its document. */
  async list(): Promise<ToolEntry[]> {
    this.#current = this.#build();
    try {
      return [...(await this.#current).values()];
    } catch (e) {
      this.#current = undefined;
      throw e;
    }
  }

  /** Forgets the list (the world changed); the next use builds it again. */
  invalidate(): void {
    this.#current = undefined;
  }

  /** The tool of a name, from the last list, else from a new one. */
  async find(name: string): Promise<ToolEntry | undefined> {
    const known = this.#current ? await this.#current.catch(() => undefined) : undefined;
    const entry = known?.get(name);
    if (entry) return entry;
    // a tool of a plugin that came since the last list, or of a stale name
    const fresh = await this.list();
    return fresh.find((t) => t.tool.name === name);
  }

  /**
   * Calls a tool. Arguments that do not fit its `inputSchema` give an
   * `isError` result that names the field, and no process starts; a
   * JSON-RPC error gives `isError` with its message, code and data.
   * Throws {@linkcode UnknownToolError} for a name that is no tool.
   */
  async call(
    name: string,
    args: Record<string, unknown> | undefined,
    options: ToolCallOptions = {},
  ): Promise<CallToolResult> {
    const entry = await this.find(name);
    if (!entry) {
      const names = (await this.list()).map((t) => t.tool.name);
      const near = names.filter((n) => n.split("_")[0] === name.split(/[._]/)[0]).slice(0, 8);
      // a plugin whose discovery failed has no tools: say why rather than only "no such tool"
      const broken = [...this.#unavailable].find(([p]) => name.startsWith(`${p}_`));
      throw new UnknownToolError(
        `there is no tool "${name}"` +
          (broken ? `; ${broken[0]} has no tools: ${broken[1]}` : "") +
          (near.length > 0 ? `; tools of that plugin: ${near.join(", ")}` : "") +
          ` (tools/list has all ${names.length}; a plugin's tools are <plugin>_<method>)`,
      );
    }
    const params = args ?? {};
    const problem = this.#validator.problem(
      entry.tool.inputSchema as JsonObject,
      params,
      `the arguments of ${entry.tool.name}`,
    );
    if (problem !== null) {
      return errorResult(`${problem}. Nothing was called; the tool's inputSchema says what fits.`);
    }
    if (options.signal?.aborted) return errorResult(`${entry.method}: cancelled before it started`);
    let id: Id | undefined;
    const cancel = () => {
      if (id !== undefined) this.#view.cancel(id).catch(() => {});
    };
    options.signal?.addEventListener("abort", cancel, { once: true });
    try {
      const response = await this.#view.request(entry.method, params, {
        onId: (sent) => id = sent,
        onNotify: options.onNotify,
      });
      if (response.error) {
        const { code, message, data } = response.error;
        return errorResult(
          `${entry.method} failed: ${message} (JSON-RPC error ${code})` +
            (data === undefined ? "" : `\ndata: ${JSON.stringify(data)}`),
        );
      }
      const result = response.result;
      const content = structured(result, entry.resultForm);
      // a text result is the text itself; any other is its JSON
      const text = typeof result === "string" ? result : JSON.stringify(result) ?? "null";
      if (entry.tool.outputSchema) {
        const wrong = this.#validator.problem(
          entry.tool.outputSchema as JsonObject,
          content,
          `the result of ${entry.method}`,
        );
        if (wrong !== null) {
          // the client would refuse it: the plugin broke its own interface
          return errorResult(
            `${wrong}: it does not fit the result schema of ${entry.plugin}'s rpc.discover ` +
              `document\nresult: ${text}`,
          );
        }
      }
      return { content: [{ type: "text", text }], structuredContent: content };
    } finally {
      options.signal?.removeEventListener("abort", cancel);
    }
  }

  async #build(): Promise<Map<string, ToolEntry>> {
    const tools = new Map<string, ToolEntry>();
    const add = (entry: ToolEntry) => {
      const name = entry.tool.name;
      const other = tools.get(name);
      if (other) {
        this.#note(
          `tool:${name}`,
          `${entry.method} is not a tool: its name ${name} is taken by ${other.method}`,
        );
        return;
      }
      tools.set(name, entry);
    };
    for (const core of CORE_TOOLS) {
      const [, method] = core.method.split(".");
      add({
        method: core.method,
        plugin: CORE,
        resultForm: "auto",
        tool: {
          name: toolName(CORE, method),
          title: core.method,
          description: core.description,
          inputSchema: core.inputSchema,
          ...(core.annotations ? { annotations: core.annotations } : {}),
        },
      });
    }
    const plugins = [CARGO, ...await this.plugins()];
    const found = new Array<ToolEntry[]>(plugins.length);
    let next = 0;
    const worker = async () => {
      while (next < plugins.length) {
        const i = next++;
        found[i] = await this.#toolsOf(plugins[i]);
      }
    };
    await Promise.all(Array.from({ length: DISCOVERY_CONCURRENCY }, worker));
    for (const list of found) for (const entry of list) add(entry);
    return tools;
  }

  /** A plugin's tools, from the document of its current version. */
  async #toolsOf(plugin: string): Promise<ToolEntry[]> {
    let version: string | null;
    try {
      version = await this.#view.version(plugin);
    } catch {
      version = null;
    }
    // the host's own plugins have no file, so no version: their document does not change
    const key = version ?? "built-in";
    const known = this.#known.get(plugin);
    if (known && known.key === key) return known.tools;
    const path = `/proc/core/plugins/${plugin}/discover.json`;
    let doc: unknown;
    try {
      doc = await this.#readJson(path);
      if (doc === null) {
        // not known yet: ask now (a discovery in progress is joined)
        await this.#view.discover(plugin);
        doc = await this.#readJson(path);
      }
    } catch (e) {
      this.#unavailableNote(plugin, `its discovery failed: ${(e as Error).message}`);
      return [];
    }
    if (!isObject(doc) || !Array.isArray(doc.methods)) {
      const why = isObject(doc) && doc.error !== undefined
        ? `its discovery failed: ${String(doc.error)}`
        : "its rpc.discover document has no list of methods";
      this.#unavailableNote(plugin, why);
      return [];
    }
    this.#unavailable.delete(plugin);
    const tools = this.#fromDocument(plugin, doc);
    if (version !== null || plugin === CARGO) this.#known.set(plugin, { key, tools });
    return tools;
  }

  #fromDocument(plugin: string, doc: JsonObject): ToolEntry[] {
    const tools: ToolEntry[] = [];
    const seen = new Set<string>();
    for (const m of doc.methods as unknown[]) {
      if (!isObject(m) || typeof m.name !== "string") continue;
      const name = m.name;
      // the reserved methods are the core's business, not a caller's
      if (name.startsWith("rpc.") || name === "" || seen.has(name)) continue;
      seen.add(name);
      const schemas = methodSchemas(doc, m);
      const text = [m.summary, m.description].filter((t) => typeof t === "string" && t !== "");
      if (m.deprecated === true) text.unshift("Deprecated.");
      tools.push({
        method: `${plugin}.${name}`,
        plugin,
        resultForm: schemas.resultForm,
        tool: {
          name: toolName(plugin, name),
          title: `${plugin}.${name}`,
          description: text.length > 0 ? text.join("\n\n") : `${plugin}.${name} (no description)`,
          inputSchema: schemas.inputSchema,
          ...(schemas.outputSchema ? { outputSchema: schemas.outputSchema } : {}),
        },
      });
    }
    return tools;
  }

  async #readJson(path: string): Promise<unknown> {
    const file = await this.#view.read(path, MAX_DOCUMENT_BYTES);
    return JSON.parse(new TextDecoder().decode(file.bytes));
  }

  #unavailableNote(plugin: string, why: string): void {
    if (this.#unavailable.get(plugin) === why) return;
    this.#unavailable.set(plugin, why);
    this.#log(`${plugin} has no tools: ${why}`);
  }

  readonly #noted = new Set<string>();
  #note(key: string, text: string): void {
    if (this.#noted.has(key)) return;
    this.#noted.add(key);
    this.#log(text);
  }
}

function errorResult(text: string): CallToolResult {
  return { isError: true, content: [{ type: "text", text }] };
}
