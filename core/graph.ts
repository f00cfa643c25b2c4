/**
 * The graph (PROTOCOL section 10.4): the plugins, their imports, and the
 * result of each compatibility check, from the `rpc.discover` documents of
 * the current versions. `/proc/core/graph.json` and `graph.dot` show it; an
 * import that breaks (after a copy by hand, which skips the checks) is
 * written to the journal.
 *
 * @module
 */
import type { PluginDocuments } from "./documents.ts";
import {
  checkWorld,
  type ImportResult,
  type OpenRpcDocument,
  type WorldEntry,
} from "./interfaces/mod.ts";
import type { Journal } from "./journal.ts";
import type { PluginVersions } from "./versions.ts";
import type { World } from "./world.ts";

/** One plugin in the graph. */
export interface GraphPlugin {
  /** sha256 of the current plugin.wasm, when it was loaded. */
  version: string | null;
  /** `ok`, or why the plugin is unavailable (its discovery failed or is not done yet). */
  discovery: string;
  /** Its imports by provider. */
  imports: Record<
    string,
    { status: string; methods: string[]; problems: string[]; detail?: string }
  >;
}

/** The counts of `/proc/core/graph.json`: plugins and imports apart, each named. */
export interface GraphCounts {
  /** Plugins in the graph. */
  plugins: number;
  /** Plugins whose discovery is `ok`; the others are unavailable. */
  discovered: number;
  /** How many imports have each status (`ok`, `broken`, `missing`, `unavailable`). */
  imports: Record<string, number>;
}

/** `/proc/core/graph.json`. */
export interface GraphView {
  plugins: Record<string, GraphPlugin>;
  counts: GraphCounts;
}

/** Keeps the graph of a world. */
export class Graph {
  readonly #world: World;
  readonly #versions: PluginVersions;
  readonly #documents: PluginDocuments;
  readonly #journal: Journal;
  #view: GraphView = { plugins: {}, counts: { plugins: 0, discovered: 0, imports: {} } };
  #broken = new Set<string>();

  #updating: Promise<unknown> = Promise.resolve();

  constructor(
    deps: {
      world: World;
      versions: PluginVersions;
      /** The documents, the host's own plugins' included: they can be imported too. */
      documents: PluginDocuments;
      journal: Journal;
    },
  ) {
    this.#world = deps.world;
    this.#versions = deps.versions;
    this.#documents = deps.documents;
    this.#journal = deps.journal;
  }

  /** The graph as last computed. */
  get view(): GraphView {
    return this.#view;
  }

  /**
   * The current documents of all plugins: each current version is loaded and
   * discovered (waiting for discoveries in progress). The built-in plugins
   * come first; a plugin folder of the same name cannot replace them.
   */
  async documents(): Promise<Map<string, WorldEntry>> {
    const documents = new Map<string, WorldEntry>();
    for (const [name, document] of this.#documents.natives()) {
      documents.set(name, document as OpenRpcDocument);
    }
    for (const plugin of await this.#world.plugins()) {
      if (documents.has(plugin)) continue;
      const found = await this.#documents.current(plugin);
      documents.set(
        plugin,
        "document" in found
          ? found.document as OpenRpcDocument
          : { unavailable: found.unavailable },
      );
    }
    return documents;
  }

  /**
   * Computes the graph anew, and journals each import that broke since the
   * last time. Updates run one after the other, so the last one asked for
   * shows the world as it is now, never an older one that ended later.
   */
  update(): Promise<GraphView> {
    const run = this.#updating.then(() => this.#compute(), () => this.#compute());
    this.#updating = run.catch(() => {});
    return run;
  }

  async #compute(): Promise<GraphView> {
    const documents = await this.documents();
    const check = checkWorld(documents);
    const plugins: Record<string, GraphPlugin> = {};
    for (const [name, entry] of documents) {
      plugins[name] = {
        version: this.#versions.known(name)?.hash ?? null,
        discovery: typeof entry === "object" && "unavailable" in entry
          ? `unavailable: ${entry.unavailable}`
          : "ok",
        imports: {},
      };
    }
    const broken = new Set<string>();
    for (const i of check.imports) {
      plugins[i.consumer] ??= { version: null, discovery: "ok", imports: {} };
      plugins[i.consumer].imports[i.provider] = {
        status: i.status,
        methods: i.methods,
        problems: i.problems.map((p) => p.text),
        ...(i.detail ? { detail: i.detail } : {}),
      };
      if (i.status === "broken" || i.status === "missing") {
        const key = `${i.consumer}→${i.provider}`;
        broken.add(key);
        if (!this.#broken.has(key)) this.#journal.event(null, i.consumer, brokenText(i));
      }
    }
    this.#broken = broken;
    const all = Object.values(plugins);
    // "ok" beside the plugins once read as plugins: the imports' count says what it counts
    const counts = {
      plugins: all.length,
      discovered: all.filter((p) => p.discovery === "ok").length,
      imports: check.counts,
    };
    this.#view = { plugins, counts };
    return this.#view;
  }
}

function brokenText(i: ImportResult): string {
  if (i.status === "missing") {
    return `broken import: ${i.consumer} imports ${i.provider}, which does not exist`;
  }
  return `broken import: ${i.consumer} imports ${i.provider}: ${
    i.problems.map((p) => p.text).join(" ")
  }`;
}
