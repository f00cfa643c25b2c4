/**
 * File operations from inside a plugin: reading and writing 4 KiB and 1 MiB
 * files and `stat`, timed by the plugin itself (`fsbench.fs`, a loop of N
 * operations after a warm-up), so that starting the process is not part of
 * the figure.
 *
 * The same component runs, in each round and in a shuffled order:
 *
 * - with Sausage's WASI and VFS as `sausage run --dir DIR::/` runs it (a
 *   one-worker pool, a host folder as `/`);
 * - with jco's `@bytecodealliance/preview2-shim` on Node.js, the folder as
 *   `/` (the baseline: the goal is Sausage at least as fast);
 * - in a world, in `/state` (the world folder) and in `/run` (memory, served
 *   by the host's main thread over the synchronous channel);
 * - and the same operations as Deno's own synchronous calls on the main
 *   thread (the floor).
 *
 * A read is `std::fs::read` (open, read all, close); a write opens the file,
 * writes it whole from the start and closes it, without truncating (a
 * truncating write on ext4 flushes the file at its close, and then times
 * the disk and the I/O of other programs more than the VFS); `stat` is
 * `std::fs::metadata`.
 *
 * @module
 */
import { basename, join } from "node:path";
import type { Figure } from "../figures.ts";
import { benchWorld, call, TEST_CACHE_DIR } from "../fixture.ts";
import { pick, type Section } from "../section.ts";
import { summarize } from "../stats.ts";
import { ComponentCache, type LoadedComponent } from "../../core/components/cache.ts";
import { WorkerPool } from "../../core/pool.ts";
import { testPlugin } from "../../tests/setup.ts";
import { shuffled } from "./latency.ts";
import { SHIM_VERSION, ShimRunner } from "./shim.ts";

/** The goal: Sausage / the shim, per operation. */
export const SHIM_RATIO_GOAL = 1;

interface OpSpec {
  key: string;
  label: string;
  op: "read" | "write" | "stat";
  size: number;
  n: number;
  warmup: number;
}

/** One line of `fsbench.fs`'s answer. */
interface OpResult {
  op: string;
  size: number;
  n: number;
  ns: number;
}

const KIB = 1024;
const MIB = 1024 * KIB;

function opSpecs(quick: boolean): OpSpec[] {
  const q = (full: number, short: number) => (quick ? short : full);
  return [
    {
      key: "read_4k",
      label: "read 4 KiB",
      op: "read",
      size: 4 * KIB,
      n: q(200, 60),
      warmup: q(20, 6),
    },
    {
      key: "write_4k",
      label: "write 4 KiB",
      op: "write",
      size: 4 * KIB,
      n: q(200, 60),
      warmup: q(20, 6),
    },
    { key: "stat", label: "stat", op: "stat", size: 4 * KIB, n: q(500, 150), warmup: q(50, 15) },
    { key: "read_1m", label: "read 1 MiB", op: "read", size: MIB, n: q(10, 4), warmup: q(2, 1) },
    { key: "write_1m", label: "write 1 MiB", op: "write", size: MIB, n: q(10, 4), warmup: q(2, 1) },
  ];
}

/** Where the loops run. */
type Place = "run" | "shim" | "world" | "memory" | "plain";
const PLACES: Place[] = ["run", "shim", "world", "memory", "plain"];

/** Runs fresh instances of one component on a one-worker pool with a host folder as `/`. */
class MountRunner implements AsyncDisposable {
  readonly #component: LoadedComponent;
  readonly #pool: WorkerPool;
  readonly #root: string;
  #next = 0;

  private constructor(component: LoadedComponent, pool: WorkerPool, root: string) {
    this.#component = component;
    this.#pool = pool;
    this.#root = root;
  }

  /** As `sausage run --dir ROOT::/ WASM` sets it up. */
  static async start(wasmPath: string, root: string): Promise<MountRunner> {
    const cache = new ComponentCache(TEST_CACHE_DIR);
    const component = await cache.load(await Deno.readFile(wasmPath), wasmPath)
      .finally(() => cache.close());
    const pool = new WorkerPool({
      size: 1,
      maxSize: 1,
      permissions: { read: [root, TEST_CACHE_DIR], write: [root], net: true },
      onFault: (m) => console.error(`bench: worker fault: ${m}`),
    });
    await pool.start();
    return new MountRunner(component, pool, root);
  }

  /** One process: the request on stdin, the result of its answer. */
  async call(method: string, params: Record<string, unknown>): Promise<unknown> {
    const pid = `bench-${this.#next++}`;
    const answered = Promise.withResolvers<unknown>();
    const ended = Promise.withResolvers<void>();
    const stderr: string[] = [];
    this.#pool.spawn(this.#component, {
      pid,
      env: [],
      args: [basename(this.#root)],
      cwd: "/",
      files: { mounts: [{ hostPath: this.#root, guestPath: "/" }] },
      stdio: "rpc",
    }, {
      stdout(messages) {
        for (const m of messages as { id?: unknown; result?: unknown; error?: unknown }[]) {
          if (m.id !== pid) continue;
          if (m.error !== undefined) answered.reject(new Error(JSON.stringify(m.error)));
          else answered.resolve(m.result);
        }
      },
      stderr(lines) {
        stderr.push(...lines);
      },
      exit(report) {
        answered.reject(
          new Error(`ended without an answer: ${JSON.stringify(report)}\n${stderr.join("\n")}`),
        );
        ended.resolve();
      },
    });
    const request = { jsonrpc: "2.0", id: pid, method, params };
    this.#pool.write(pid, new TextEncoder().encode(JSON.stringify(request) + "\n"));
    try {
      return await answered.promise;
    } finally {
      await ended.promise;
    }
  }

  [Symbol.asyncDispose](): Promise<void> {
    this.#pool.close();
    return Promise.resolve();
  }
}

/** Microseconds per operation of each op in an `fsbench.fs` answer, by key. */
function perOp(specs: OpSpec[], result: unknown): Record<string, number> {
  const lines = (result as { results?: OpResult[] }).results;
  if (!Array.isArray(lines) || lines.length !== specs.length) {
    throw new Error(`fsbench.fs answered ${JSON.stringify(result)}`);
  }
  const out: Record<string, number> = {};
  specs.forEach((s, i) => {
    const r = lines[i];
    if (r.op !== s.op || r.size !== s.size || r.n !== s.n) {
      throw new Error(`fsbench.fs answered ${JSON.stringify(r)} for ${JSON.stringify(s)}`);
    }
    out[s.key] = r.ns / r.n / 1000;
  });
  return out;
}

/** The same loops as Deno calls on this thread, in the same order and on the same sizes. */
function plainLoops(specs: OpSpec[], dir: string): Record<string, number> {
  Deno.mkdirSync(dir, { recursive: true });
  const out: Record<string, number> = {};
  for (const s of specs) {
    const data = new Uint8Array(s.size).map((_, i) => i % 251);
    const path = join(dir, s.op === "write" ? `write-${s.size}.bin` : `read-${s.size}.bin`);
    if (s.op !== "write") Deno.writeFileSync(path, data);
    const once = s.op === "read"
      ? () => {
        if (Deno.readFileSync(path).length !== s.size) throw new Error(`${path}: short read`);
      }
      : s.op === "write"
      ? () => {
        const file = Deno.openSync(path, { write: true, create: true });
        try {
          for (let at = 0; at < data.length;) at += file.writeSync(data.subarray(at));
        } finally {
          file.close();
        }
      }
      : () => {
        if (Deno.statSync(path).size !== s.size) throw new Error(`${path}: wrong size`);
      };
    for (let i = 0; i < s.warmup; i++) once();
    const start = performance.now();
    for (let i = 0; i < s.n; i++) once();
    out[s.key] = (performance.now() - start) * 1000 / s.n;
  }
  return out;
}

export const vfs: Section = {
  name: "vfs",
  group: "host",
  summary: "file reads, writes and stat from a plugin: Sausage's VFS against preview2-shim on Node",
  async run(ctx) {
    const rounds = pick(ctx, 4, 2);
    const warmupRounds = 1;
    const specs = opSpecs(ctx.quick);
    const params = (dir: string) => ({
      dir,
      ops: specs.map(({ op, size, n, warmup }) => ({ op, size, n, warmup })),
    });
    const wasm = await testPlugin("fsbench");

    ctx.progress(`vfs: installing ${"@bytecodealliance/preview2-shim"}@${SHIM_VERSION} with npm`);
    const setup0 = performance.now();
    await using shim = await ShimRunner.prepare(wasm);
    const shimSetupMs = performance.now() - setup0;
    const folder = await Deno.makeTempDir({ prefix: "sausage-bench-vfs-" });
    try {
      const runDir = join(folder, "sausage");
      const shimDir = join(folder, "shim");
      const plainDir = join(folder, "plain");
      for (const d of [runDir, shimDir, plainDir]) await Deno.mkdir(d);
      await using runner = await MountRunner.start(wasm, runDir);
      await using w = await benchWorld({ fsbench: "fsbench" });
      const client = w.host.client("console");

      const measure: Record<Place, () => Promise<Record<string, number>>> = {
        run: async () => perOp(specs, await runner.call("fs", params("/bench"))),
        shim: async () => perOp(specs, await shim.call(shimDir, "fs", params("/bench"))),
        world: async () => perOp(specs, await call(client, "fsbench.fs", params("/state/bench"))),
        memory: async () => perOp(specs, await call(client, "fsbench.fs", params("/run/bench"))),
        plain: () => Promise.resolve(plainLoops(specs, join(plainDir, "bench"))),
      };
      const samples = Object.fromEntries(
        PLACES.map((p) => [p, Object.fromEntries(specs.map((s) => [s.key, [] as number[]]))]),
      ) as Record<Place, Record<string, number[]>>;

      ctx.progress(
        `vfs: ${warmupRounds} + ${rounds} rounds of ${PLACES.length} places ` +
          `(Sausage run, preview2-shim on ${shim.node}, a world's /state and /run, Deno)`,
      );
      for (let i = 0; i < warmupRounds + rounds; i++) {
        for (const place of shuffled(PLACES, i)) {
          const got = await measure[place]();
          if (i < warmupRounds) continue;
          for (const s of specs) samples[place][s.key].push(got[s.key]);
        }
      }

      const base = { runs: rounds, warmup: warmupRounds };
      const figures: Figure[] = [];
      for (const s of specs) {
        const of = (p: Place) => summarize(samples[p][s.key]);
        const loop = `${s.n} operations after ${s.warmup} not counted, timed by the plugin`;
        const ours = of("run");
        const theirs = of("shim");
        figures.push(
          {
            name: `${s.key}.sausage`,
            label: `${s.label}: Sausage (sausage run --dir)`,
            unit: "µs",
            median: ours.median,
            p99: ours.p99,
            method: `fsbench.fs on a one-worker pool, a host folder as / (as sausage run ` +
              `--dir DIR::/): ${loop}; read: std::fs::read, write: open, write_all, close ` +
              `without truncation, stat: std::fs::metadata`,
            samples: samples.run[s.key],
            ...base,
          },
          {
            name: `${s.key}.shim`,
            label: `  preview2-shim ${SHIM_VERSION} on Node.js`,
            unit: "µs",
            median: theirs.median,
            p99: theirs.p99,
            method: `the same component transpiled by jco-transpile without instantiation, ` +
              `run by node ${shim.node} with preview2-shim ${SHIM_VERSION}, _setPreopens ` +
              `{"/": DIR}: ${loop}`,
            samples: samples.shim[s.key],
            ...base,
          },
          {
            name: `${s.key}.ratio_shim`,
            label: `  Sausage / preview2-shim (${s.label})`,
            unit: "x",
            median: ours.median / theirs.median,
            goal: { op: "<=", value: SHIM_RATIO_GOAL },
            method: "median of Sausage over median of the shim, same rounds",
            ...base,
          },
          {
            name: `${s.key}.world`,
            label: `  Sausage in a world, /state`,
            unit: "µs",
            median: of("world").median,
            p99: of("world").p99,
            method: `host.client('console').request('fsbench.fs') in /state/bench: ${loop}`,
            samples: samples.world[s.key],
            ...base,
          },
          {
            name: `${s.key}.run_memory`,
            label: `  Sausage in a world, /run (memory)`,
            unit: "µs",
            median: of("memory").median,
            p99: of("memory").p99,
            method: `fsbench.fs in /run/bench, served by the host's thread: ${loop}`,
            samples: samples.memory[s.key],
            ...base,
          },
          {
            name: `${s.key}.deno`,
            label: `  baseline: Deno's own calls`,
            unit: "µs",
            median: of("plain").median,
            p99: of("plain").p99,
            method: `Deno.readFileSync, openSync + writeSync + close (no truncation), ` +
              `statSync, on the main thread, same sizes and counts`,
            samples: samples.plain[s.key],
            ...base,
          },
        );
      }
      figures[0].extra = {
        shimSetupMs,
        node: shim.node,
        shim: SHIM_VERSION,
      };
      return figures;
    } finally {
      await Deno.remove(folder, { recursive: true }).catch(() => {});
    }
  },
};
