/**
 * Fails when the project's modules import each other in a cycle, between
 * files or between folders (`deno task check` runs it). A cycle makes the
 * order of evaluation matter and hides which module a concept belongs to.
 *
 * ```text
 * deno run --allow-read --allow-run tools/check_cycles.ts [ROOT.ts ...]
 * ```
 *
 * The module graph is Deno's own (`deno info --json`), from the entry
 * points of the executable and its workers; type-only imports count too.
 *
 * @module
 */

/** The entry points: the executable, the modules its workers load, and the suites' runners. */
export const ROOTS = [
  "main.ts",
  "runtime/worker.ts",
  "core/components/transpile_worker.ts",
  "core/cargo/build_worker.ts",
  "bench/main.ts",
  "faults/main.ts",
  "faults/host.ts",
];

/** Imports between the project's files: a file → the files it imports. */
export type ImportGraph = Map<string, Set<string>>;

/**
 * The strongly connected components of more than one node (or a node that
 * imports itself): each is a cycle, its members sorted.
 *
 * @example
 * ```ts
 * const graph = new Map([["a", new Set(["b"])], ["b", new Set(["a"])], ["c", new Set(["a"])]]);
 * cycles(graph); // [["a", "b"]]
 * ```
 */
export function cycles(graph: ImportGraph): string[][] {
  // Tarjan's algorithm, iterative: module graphs can be deep
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const found: string[][] = [];
  let next = 0;
  const nodes = new Set([...graph.keys(), ...[...graph.values()].flatMap((s) => [...s])]);
  for (const start of nodes) {
    if (index.has(start)) continue;
    const work: { node: string; edges: string[]; at: number }[] = [];
    const enter = (node: string) => {
      index.set(node, next);
      low.set(node, next);
      next++;
      stack.push(node);
      onStack.add(node);
      work.push({ node, edges: [...(graph.get(node) ?? [])], at: 0 });
    };
    enter(start);
    while (work.length > 0) {
      const frame = work[work.length - 1];
      if (frame.at < frame.edges.length) {
        const to = frame.edges[frame.at++];
        if (!index.has(to)) enter(to);
        else if (onStack.has(to)) {
          low.set(frame.node, Math.min(low.get(frame.node)!, index.get(to)!));
        }
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!));
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: string[] = [];
        let member: string;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        if (component.length > 1 || graph.get(frame.node)?.has(frame.node)) {
          found.push(component.sort());
        }
      }
    }
  }
  return found.sort((a, b) => a[0] < b[0] ? -1 : 1);
}

/**
 * The graph of folders: an edge where a file of one folder imports a file
 * of another. A file at the top counts as the folder `.`.
 *
 * @example
 * ```ts
 * folderGraph(new Map([["core/a.ts", new Set(["vfs/b.ts", "core/c.ts"])]]));
 * // Map { "core" => Set { "vfs" } }
 * ```
 */
export function folderGraph(graph: ImportGraph): ImportGraph {
  const folderOf = (file: string) => file.includes("/") ? file.split("/")[0] : ".";
  const folders: ImportGraph = new Map();
  for (const [from, tos] of graph) {
    const a = folderOf(from);
    for (const to of tos) {
      const b = folderOf(to);
      if (a === b) continue;
      if (!folders.has(a)) folders.set(a, new Set());
      folders.get(a)!.add(b);
    }
  }
  return folders;
}

interface DenoInfo {
  modules: {
    specifier: string;
    dependencies?: { code?: { specifier?: string }; type?: { specifier?: string } }[];
  }[];
}

/** The imports between the files under `root` reached from `entries`, from `deno info --json`. */
export async function projectGraph(root: string, entries: string[]): Promise<ImportGraph> {
  const base = new URL(`file://${root.endsWith("/") ? root : `${root}/`}`).href;
  const graph: ImportGraph = new Map();
  for (const entry of entries) {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["info", "--json", entry],
      cwd: root,
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!out.success) {
      throw new Error(`deno info ${entry} failed: ${new TextDecoder().decode(out.stderr)}`);
    }
    const info = JSON.parse(new TextDecoder().decode(out.stdout)) as DenoInfo;
    for (const m of info.modules) {
      if (!m.specifier.startsWith(base)) continue;
      const from = m.specifier.slice(base.length);
      const tos = graph.get(from) ?? new Set<string>();
      for (const d of m.dependencies ?? []) {
        for (const s of [d.code?.specifier, d.type?.specifier]) {
          if (s?.startsWith(base)) tos.add(s.slice(base.length));
        }
      }
      graph.set(from, tos);
    }
  }
  return graph;
}

if (import.meta.main) {
  const root = new URL("../", import.meta.url).pathname;
  const graph = await projectGraph(root, Deno.args.length > 0 ? Deno.args : ROOTS);
  const fileCycles = cycles(graph);
  const folderCycles = cycles(folderGraph(graph));
  for (const c of fileCycles) console.error(`import cycle between files: ${c.join(" ↔ ")}`);
  for (const c of folderCycles) console.error(`import cycle between folders: ${c.join(" ↔ ")}`);
  if (fileCycles.length + folderCycles.length > 0) {
    console.error("Move what both need into a module that neither imports back.");
    Deno.exit(1);
  }
  console.log(`no import cycles in ${graph.size} modules`);
}
