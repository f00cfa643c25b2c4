/**
 * The current `rpc.discover` document of each plugin (PROTOCOL 10.1), in one
 * place: the host's own plugins first (`cargo`: a plugin folder of the same
 * name cannot replace them), then the document of each plugin's current
 * version, as its discovery found it. `/proc` shows what is known now; the
 * graph asks for every current one.
 *
 * @module
 */
import type { Discovered, Discovery } from "./discovery.ts";
import type { NativePlugin } from "./native.ts";
import type { PluginVersions } from "./versions.ts";

/** A plugin's document, or why it has none. */
export type PluginDocument =
  | {
    /** The version's sha256, or `native` for a plugin of the host. */
    version: string;
    document: Record<string, unknown>;
  }
  | { version: string | null; unavailable: string };

/** The host's own plugins, by name. */
export interface NativePlugins {
  native(name: string): NativePlugin | undefined;
  natives(): string[];
}

/** Where the documents come from. */
export interface PluginDocumentsDeps {
  versions: PluginVersions;
  discovery: Discovery;
  natives: NativePlugins;
}

/**
 * The documents of a world's plugins.
 *
 * @example
 * ```ts
 * declare const documents: PluginDocuments;
 * const notes = documents.known("notes"); // undefined until its discovery ended
 * if (notes && "document" in notes) console.log(notes.document.methods);
 * ```
 */
export class PluginDocuments {
  readonly #d: PluginDocumentsDeps;

  constructor(deps: PluginDocumentsDeps) {
    this.#d = deps;
  }

  /** The documents of the host's own plugins, by name. */
  natives(): Map<string, Record<string, unknown>> {
    return new Map(
      this.#d.natives.natives().map((name) => [name, this.#d.natives.native(name)!.document]),
    );
  }

  /**
   * What is known now, without starting anything: the document of the
   * current version, why its discovery failed, or undefined when the
   * version was not loaded or its discovery has not ended.
   */
  known(plugin: string): PluginDocument | undefined {
    const native = this.#d.natives.native(plugin);
    if (native) return { version: "native", document: native.document };
    const version = this.#d.versions.known(plugin);
    const outcome = version && this.#d.discovery.known(version.hash);
    return outcome ? entry(version.hash, outcome) : undefined;
  }

  /**
   * The document of the current version, loading the version and
   * discovering it when needed (a discovery in progress is joined).
   */
  async current(plugin: string): Promise<PluginDocument> {
    const native = this.#d.natives.native(plugin);
    if (native) return { version: "native", document: native.document };
    let hash: string | null = null;
    try {
      const version = await this.#d.versions.current(plugin);
      hash = version.hash;
      return entry(hash, await this.#d.discovery.discover(plugin, version));
    } catch (e) {
      return { version: hash, unavailable: (e as Error).message };
    }
  }
}

function entry(version: string, outcome: Discovered): PluginDocument {
  return outcome.ok
    ? { version, document: outcome.document }
    : { version, unavailable: outcome.reason };
}
