/**
 * `core.activate` of a new version of `notes` in a world of `probe`,
 * `notes` and `agent` (agent imports notes; the versions come from
 * `tests/plugins/crates/iface` and have real interface documents):
 *
 * - a new version whose transpile is in the cache: `notes_v2` with a custom
 *   section appended (a new hash, as a new build has), whose cache entry is
 *   copied from `notes_v2`'s beforehand (the transpile does not depend on
 *   the custom section). Its discovery runs, as for any new version;
 * - a version the host has seen already (`notes_v1` and `notes_v2` in
 *   turn): nothing to load or discover, the floor;
 * - a new version whose transpile is not in the cache. The first one also
 *   starts the transpiler worker (it stops after a minute without work).
 *
 * The host has its own temporary cache folder, seeded with the entries of
 * the world's plugins from the test cache, so that the new versions do not
 * pile up in the test cache. Phases are measured with spans around the
 * host's `versions.load`, `discovery.discover` and `graph.documents`.
 *
 * @module
 */
import { join } from "node:path";
import type { Figure } from "../figures.ts";
import { createWorld, removeWorld, startHost, TEST_CACHE_DIR } from "../fixture.ts";
import { pick, type Section } from "../section.ts";
import { summarize } from "../stats.ts";
import { ComponentCache, sha256Hex } from "../../core/components/cache.ts";
import type { LoadedComponent } from "../../core/components/cache.ts";
import type { Host } from "../../core/host.ts";
import { checkWorld } from "../../core/interfaces/mod.ts";
import { testPlugin } from "../../tests/setup.ts";
import { shuffled } from "./latency.ts";
import { withCustomSection } from "../../core/components/wasm_sections.ts";

/** The goal for an activation whose transpile is cached, in milliseconds. */
export const ACTIVATION_GOAL_MS = 300;

/** The world: plugin name → test crate. */
const WORLD = { probe: "probe", notes: "notes_v1", agent: "agent_v1" };
/** Every crate whose cache entry the host's cache gets. */
const CRATES = ["probe", "notes_v1", "notes_v2", "agent_v1"];

async function copyDir(from: string, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const e of Deno.readDir(from)) {
    if (e.isFile) await Deno.copyFile(join(from, e.name), join(to, e.name));
  }
}

/** Times of one activation, in milliseconds. */
interface Spans {
  total: number;
  load: number;
  discover: number;
  documents: number;
}

/** Records spans of the host's steps while an activation of `hash` runs. */
class Phases {
  active: (Spans & { hash: string; discovered: boolean; gathered: boolean }) | null = null;

  constructor(host: Host) {
    const versions = host.versions;
    const load = versions.load.bind(versions);
    versions.load = async (bytes: Uint8Array, label: string): Promise<LoadedComponent> => {
      const t = performance.now();
      try {
        return await load(bytes, label);
      } finally {
        if (this.active) this.active.load += performance.now() - t;
      }
    };
    const discovery = host.discovery;
    const discover = discovery.discover.bind(discovery);
    discovery.discover = async (plugin: string, component: LoadedComponent) => {
      const a = this.active;
      const first = a !== null && !a.discovered && component.hash === a.hash;
      if (first) a.discovered = true;
      const t = performance.now();
      try {
        return await discover(plugin, component);
      } finally {
        if (first) a.discover += performance.now() - t;
      }
    };
    const graph = host.graph;
    const documents = graph.documents.bind(graph);
    graph.documents = async () => {
      const a = this.active;
      const first = a !== null && !a.gathered;
      if (first) a.gathered = true;
      const t = performance.now();
      try {
        return await documents();
      } finally {
        if (first) a.documents += performance.now() - t;
      }
    };
  }

  /** Activates `wasm` (a path in the world) as `plugin`, whose new hash is `hash`. */
  async activate(host: Host, plugin: string, wasm: string, hash: string): Promise<Spans> {
    this.active = {
      hash,
      discovered: false,
      gathered: false,
      total: 0,
      load: 0,
      discover: 0,
      documents: 0,
    };
    const client = host.client("bench-activation");
    const t = performance.now();
    const r = await client.request("core.activate", { plugin, wasm });
    const total = performance.now() - t;
    const spans = this.active;
    this.active = null;
    if (r.error) throw new Error(`core.activate ${wasm}: ${r.error.code} ${r.error.message}`);
    const current = (await host.versions.current(plugin)).hash;
    if (current !== hash) throw new Error(`after core.activate, ${plugin} is ${current}`);
    return {
      total,
      load: spans.load,
      discover: spans.discover,
      documents: spans.documents,
    };
  }
}

/** Waits until the processes that follow an activation (rpc.retired) have ended. */
async function settle(host: Host): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (host.processes.list().length > 0 && performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, 5));
  }
  await new Promise((r) => setTimeout(r, 20));
}

type Kind = "cached" | "known";

export const activation: Section = {
  name: "activation",
  group: "host",
  summary: "core.activate of a new version: transpile cached, known, not cached; its phases",
  async run(ctx) {
    const warmupRounds = 1;
    const rounds = pick(ctx, 8, 3);
    const freshRuns = pick(ctx, 4, 1);

    // the test cache has the transpiles of the world (made once, kept between runs)
    const test = new ComponentCache(TEST_CACHE_DIR);
    const hashes: Record<string, string> = {};
    const bytes: Record<string, Uint8Array> = {};
    try {
      for (const crate of CRATES) {
        bytes[crate] = await Deno.readFile(await testPlugin(crate));
        hashes[crate] = (await test.load(bytes[crate], crate)).hash;
      }
    } finally {
      test.close();
    }
    const cacheDir = await Deno.makeTempDir({ prefix: "sausage-bench-cache-" });
    const root = await createWorld(WORLD);
    let host: Host | undefined;
    try {
      for (const crate of CRATES) {
        const hash = hashes[crate];
        await copyDir(join(TEST_CACHE_DIR, "components", hash), join(cacheDir, "components", hash));
        const doc = join(TEST_CACHE_DIR, "discover", `${hash}.json`);
        await Deno.mkdir(join(cacheDir, "discover"), { recursive: true });
        await Deno.copyFile(doc, join(cacheDir, "discover", `${hash}.json`)).catch(() => {});
      }
      const h = host = await startHost(root, { cacheDir, services: false, onNote: () => {} });
      await h.discovered;
      const phases = new Phases(h);
      const builds = join(root, "state", "builds");
      await Deno.mkdir(builds, { recursive: true });
      for (const crate of ["notes_v1", "notes_v2"]) {
        await Deno.writeFile(join(builds, `${crate}.wasm`), bytes[crate]);
      }
      // both known versions are loaded and discovered once
      await phases.activate(h, "notes", "/state/builds/notes_v2.wasm", hashes.notes_v2);
      await settle(h);
      await phases.activate(h, "notes", "/state/builds/notes_v1.wasm", hashes.notes_v1);
      await settle(h);

      let variants = 0;
      /** A new version of notes in /state/builds; its transpile is cached when `seed`. */
      const newVersion = async (seed: boolean) => {
        const i = variants++;
        const v = withCustomSection(bytes.notes_v2, `sausage-bench-${crypto.randomUUID()}`);
        const hash = await sha256Hex(v);
        if (seed) {
          await copyDir(
            join(cacheDir, "components", hashes.notes_v2),
            join(cacheDir, "components", hash),
          );
        }
        await Deno.writeFile(join(builds, `notes-${i}.wasm`), v);
        return { wasm: `/state/builds/notes-${i}.wasm`, hash };
      };
      let knownTurn = 0;
      const measure: Record<Kind, () => Promise<Spans>> = {
        cached: async () => {
          const { wasm, hash } = await newVersion(true);
          return await phases.activate(h, "notes", wasm, hash);
        },
        known: async () => {
          const crate = knownTurn++ % 2 === 0 ? "notes_v2" : "notes_v1";
          return await phases.activate(
            h,
            "notes",
            `/state/builds/${crate}.wasm`,
            hashes[crate],
          );
        },
      };
      const s: Record<Kind, Spans[]> = { cached: [], known: [] };
      const checks: number[] = [];
      ctx.progress(
        `activation: ${warmupRounds} + ${rounds} rounds of a new version with a cached ` +
          `transpile and a known version, then ${freshRuns + 1} new versions to transpile`,
      );
      for (let i = 0; i < warmupRounds + rounds; i++) {
        for (const kind of shuffled(["cached", "known"] as Kind[], i)) {
          const spans = await measure[kind]();
          await settle(h);
          if (i >= warmupRounds) s[kind].push(spans);
        }
        // the interface check on its own, on the documents of the world as it is now
        const documents = await h.graph.documents();
        const t = performance.now();
        checkWorld(documents, { only: ["notes"] });
        if (i >= warmupRounds) checks.push(performance.now() - t);
      }
      const fresh: Spans[] = [];
      for (let i = 0; i < freshRuns + 1; i++) {
        const { wasm, hash } = await newVersion(false);
        fresh.push(await phases.activate(h, "notes", wasm, hash));
        await settle(h);
      }
      const [firstFresh, ...laterFresh] = fresh;

      const base = { runs: rounds, warmup: warmupRounds };
      const pickOf = (spans: Spans[], key: keyof Spans) => spans.map((x) => x[key]);
      const rest = (x: Spans) => x.total - x.load - x.discover - x.documents;
      const figure = (
        name: string,
        label: string,
        values: number[],
        more: Partial<Figure> = {},
      ): Figure => {
        const sum = summarize(values);
        return {
          name,
          label,
          unit: "ms",
          median: sum.median,
          p99: sum.p99,
          samples: values,
          ...base,
          ...more,
        };
      };
      const figures: Figure[] = [
        figure("cached.total", "activate, transpile cached", pickOf(s.cached, "total"), {
          goal: { op: "<=", value: ACTIVATION_GOAL_MS },
          method: "host.client().request('core.activate', {plugin: 'notes', wasm}) until the " +
            "answer; wasm: a new version (notes_v2 and a custom section) whose cache entry " +
            "is there; its discovery runs",
        }),
        figure("cached.load", "  of which loading it (cache, compile)", pickOf(s.cached, "load"), {
          method: "span of host.versions.load: sha256, reading the cache entry, " +
            "WebAssembly.compile of its core modules",
        }),
        figure(
          "cached.discover",
          "  of which its discovery (a process)",
          pickOf(s.cached, "discover"),
          { method: "span of the first host.discovery.discover of the new hash" },
        ),
        figure(
          "cached.documents",
          "  of which gathering the documents",
          pickOf(s.cached, "documents"),
          { method: "span of the first host.graph.documents during the activation" },
        ),
        figure(
          "cached.rest",
          "  the rest (check, files, switch)",
          s.cached.map(rest),
          {
            method: "the total minus the spans above: reading the file, the interface check, " +
              "the record, the copy and the renames, loading the new current version",
            extra: { checkAlone: summarize(checks) },
          },
        ),
        figure("known.total", "activate, a version seen before", pickOf(s.known, "total"), {
          method: "core.activate of notes_v1 and notes_v2 in turn: loaded and discovered " +
            "already; the floor of an activation",
        }),
        {
          ...figure(
            "fresh.total",
            "activate, not cached (transpiler running)",
            pickOf(laterFresh.length > 0 ? laterFresh : fresh, "total"),
            {
              method: "core.activate of a new version whose transpile is not in the cache; " +
                "the transpiler worker was started by an activation before",
              extra: {
                load: summarize(pickOf(laterFresh.length > 0 ? laterFresh : fresh, "load")),
              },
            },
          ),
          runs: laterFresh.length > 0 ? laterFresh.length : 1,
          warmup: 1,
        },
        {
          name: "fresh.first",
          label: "  the first one (starts the transpiler)",
          unit: "ms",
          median: firstFresh.total,
          runs: 1,
          warmup: 0,
          method: "the first activation that transpiles in this host: it starts the transpiler " +
            "worker (jco and binaryen load), as after a minute without transpiles",
          extra: { spans: firstFresh },
        },
      ];
      return figures;
    } finally {
      await host?.shutdown();
      await removeWorld(root);
      await Deno.remove(cacheDir, { recursive: true }).catch(() => {});
    }
  },
};
