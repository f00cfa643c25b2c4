/**
 * The plugin graph for the page: `/proc/core/graph.dot` drawn as SVG by
 * Graphviz compiled to WebAssembly (`@viz-js/viz`), on the server, so the
 * page needs no build step and no 1.4 MB of Graphviz; with the plugins of
 * `graph.json`, for the panel.
 *
 * @module
 */
import type { HostView } from "../core/host_view.ts";

/** What `GET /graph` answers. */
export interface GraphAnswer {
  /** The drawing; each plugin is a `g.node` whose `title` is its name. */
  svg: string;
  /** `graph.json`'s plugins: version, discovery and imports with their status. */
  plugins: Record<string, unknown>;
}

type Viz = { renderString(dot: string, options: { format: string }): string };

let viz: Promise<Viz> | undefined;

/** The Graphviz instance, made once (about 20 ms). */
function graphviz(): Promise<Viz> {
  viz ??= import("@viz-js/viz").then((m) => m.instance() as Promise<Viz>);
  return viz;
}

/** Draws the graph in `dot`; the drawings of the last few texts are kept. */
export class GraphDrawer {
  readonly #cache = new Map<string, string>();

  async draw(dot: string): Promise<string> {
    const kept = this.#cache.get(dot);
    if (kept !== undefined) return kept;
    // rounded boxes in the page's colours; plugins without imports sit side by side
    const styled = dot.replace(
      /^digraph (\S+) \{/,
      'digraph $1 {\n  bgcolor="transparent";\n' +
        '  node [shape=box, style="rounded,filled", fillcolor="#f4f6fa", color="#8a94a6", ' +
        'fontname="Helvetica", fontsize=12];\n  edge [color="#8a94a6", fontname="Helvetica", fontsize=10];',
    );
    const svg = (await graphviz()).renderString(styled, { format: "svg" })
      .replace(/^[\s\S]*?(<svg\b)/, "$1"); // no XML prologue or doctype inside the page
    if (this.#cache.size >= 8) this.#cache.delete(this.#cache.keys().next().value as string);
    this.#cache.set(dot, svg);
    return svg;
  }

  /** The graph of the host behind `view`. */
  async answer(view: HostView): Promise<GraphAnswer> {
    const [dot, graph] = await Promise.all([
      view.read("/proc/core/graph.dot", 16 * 1024 * 1024),
      view.read("/proc/core/graph.json", 64 * 1024 * 1024),
    ]);
    const text = new TextDecoder();
    const parsed = JSON.parse(text.decode(graph.bytes)) as { plugins?: Record<string, unknown> };
    return { svg: await this.draw(text.decode(dot.bytes)), plugins: parsed.plugins ?? {} };
  }
}
