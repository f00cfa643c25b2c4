/**
 * What `graph` prints: the plugins of the world and what each imports, from
 * `/proc/core/graph.json` (PROTOCOL 10.4). Each import shows its status and
 * the methods it uses; a broken or missing one is red, with its problems.
 *
 * ```text
 * agent    3f2a9c1b
 * cargo    built in
 * notes    91ab02cd
 *   └─ cargo      ok       build
 * www      7c0e11aa
 *   ├─ notes      broken   add
 *   │    add: the param text became required
 *   └─ secrets    missing  get
 * 3 plugins, 3 imports: 1 ok, 1 broken, 1 missing
 * ```
 *
 * @module
 */
import { indent, PLAIN, type Style } from "./format.ts";

/** One import in `graph.json`. */
export interface GraphImport {
  status: string;
  methods?: string[];
  problems?: string[];
  detail?: string;
}

/** What the console reads of `graph.json`. */
export interface GraphFile {
  plugins?: Record<
    string,
    { version?: string | null; discovery?: string; imports?: Record<string, GraphImport> }
  >;
  counts?: Record<string, number>;
}

/**
 * The graph as text: one line a plugin (its version's first 8 hex digits),
 * its imports under it, and a summary line.
 *
 * @example
 * ```ts
 * formatGraph({ plugins: { notes: { version: "91ab02cd77", discovery: "ok", imports: {} } } });
 * ```
 */
export function formatGraph(graph: GraphFile, style: Style = PLAIN): string {
  const plugins = Object.entries(graph.plugins ?? {}).sort(([a], [b]) => a.localeCompare(b));
  if (plugins.length === 0) {
    return indent(style.dim("no plugins yet (or /proc/core/graph.json cannot be read)"));
  }
  const nameWidth = Math.max(...plugins.map(([name]) => name.length));
  const providerWidth = Math.max(
    0,
    ...plugins.flatMap(([, p]) => Object.keys(p.imports ?? {}).map((n) => n.length)),
  );
  const lines: string[] = [];
  const counts: Record<string, number> = {};
  let imports = 0;
  for (const [name, plugin] of plugins) {
    lines.push(`${style.bold(name.padEnd(nameWidth))}  ${versionText(plugin, style)}`);
    const entries = Object.entries(plugin.imports ?? {}).sort(([a], [b]) => a.localeCompare(b));
    entries.forEach(([provider, i], n) => {
      imports++;
      counts[i.status] = (counts[i.status] ?? 0) + 1;
      const last = n === entries.length - 1;
      const bad = i.status === "broken" || i.status === "missing";
      const status = i.status.padEnd(11);
      const methods = (i.methods ?? []).join(", ");
      const text = `${provider.padEnd(providerWidth)}  ${status}  ${methods}`.trimEnd();
      lines.push(`  ${style.dim(last ? "└─" : "├─")} ${bad ? style.red(text) : text}`);
      const more = [...(i.problems ?? []), ...(i.detail ? [i.detail] : [])];
      if (i.status === "missing" && more.length === 0) more.push(`there is no plugin ${provider}`);
      for (const problem of more) {
        const bar = last ? "   " : `${style.dim("│")}  `;
        lines.push(`  ${bar}  ${bad ? style.red(problem) : style.dim(problem)}`);
      }
    });
  }
  const tally = Object.entries(counts).sort(([a], [b]) => a.localeCompare(b))
    .map(([status, n]) => `${n} ${status}`).join(", ");
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;
  lines.push(style.dim(
    `${plural(plugins.length, "plugin")}, ${plural(imports, "import")}${tally ? `: ${tally}` : ""}`,
  ));
  return indent(lines.join("\n"));
}

function versionText(
  plugin: { version?: string | null; discovery?: string },
  style: Style,
): string {
  if (plugin.discovery !== undefined && plugin.discovery !== "ok") {
    return style.red(plugin.discovery);
  }
  // the host's own plugins (cargo) have no plugin.wasm, so no version hash, and are discovered
  return style.dim(plugin.version ? plugin.version.slice(0, 8) : "built in");
}
