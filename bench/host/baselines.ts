/**
 * A baseline for the cost of one call: the same component run below the
 * host's routing (the worker pool alone). The bare instantiation of its core
 * modules is in `bare_instances.ts`.
 *
 * @module
 */
import { ComponentCache, type LoadedComponent } from "../../core/components/cache.ts";
import { WorkerPool } from "../../core/pool.ts";
import { TEST_CACHE_DIR } from "../fixture.ts";

const encoder = new TextEncoder();

/** Runs fresh instances of one component straight on a worker pool, as `sausage run` does. */
export class PoolRunner implements AsyncDisposable {
  readonly component: LoadedComponent;
  readonly #pool: WorkerPool;
  readonly #root: string;
  #next = 0;

  private constructor(component: LoadedComponent, pool: WorkerPool, root: string) {
    this.component = component;
    this.#pool = pool;
    this.#root = root;
  }

  /** A one-worker pool for the component in `wasmPath`, with `root` as its `/`. */
  static async start(wasmPath: string, root: string): Promise<PoolRunner> {
    const cache = new ComponentCache(TEST_CACHE_DIR);
    const component = await cache.load(await Deno.readFile(wasmPath), wasmPath);
    const pool = new WorkerPool({
      size: 1,
      maxSize: 1,
      permissions: { read: [root], write: [root], net: true },
      onFault: (m) => console.error(`bench: worker fault: ${m}`),
    });
    await pool.start();
    return new PoolRunner(component, pool, root);
  }

  /**
   * Starts an instance, writes one request, and returns the milliseconds
   * from the spawn to the response; resolves after the instance has ended.
   */
  async request(method: string, params: Record<string, unknown> = {}): Promise<number> {
    const pid = `bench-${this.#next++}`;
    const answered = Promise.withResolvers<number>();
    const ended = Promise.withResolvers<void>();
    const start = performance.now();
    this.#pool.spawn(this.component, {
      pid,
      env: [["SAUSAGE_PID", pid], ["SAUSAGE_PLUGIN", "probe"], ["SAUSAGE_PARENT", "console"]],
      args: ["probe"],
      cwd: "/",
      files: { world: this.#root },
      stdio: "rpc",
    }, {
      stdout(messages) {
        const now = performance.now();
        for (const m of messages) {
          if ((m as { id?: unknown }).id === pid) answered.resolve(now - start);
        }
      },
      exit(report) {
        answered.reject(
          new Error(`the instance ended without an answer: ${JSON.stringify(report)}`),
        );
        ended.resolve();
      },
    });
    const request = { jsonrpc: "2.0", id: pid, method, params };
    this.#pool.write(pid, encoder.encode(JSON.stringify(request) + "\n"));
    const ms = await answered.promise;
    await ended.promise;
    return ms;
  }

  [Symbol.asyncDispose](): Promise<void> {
    this.#pool.close();
    return Promise.resolve();
  }
}
