/**
 * Benchmark worlds: a temporary world with test plugins, a host on it, and
 * timed calls. Transpiles go to the test cache, so they survive between runs.
 *
 * @example
 * ```ts
 * import { benchWorld, timedCall } from "./fixture.ts";
 * await using w = await benchWorld({ probe: "probe" });
 * const client = w.host.client("console");
 * const ms = await timedCall(client, "probe.echo");
 * ```
 *
 * @module
 */
import { join } from "node:path";
import type { Client } from "../core/client.ts";
import { Host, type HostOptions } from "../core/host.ts";
import { initWorld } from "../core/init.ts";
import { installPlugin, TEST_CACHE_DIR } from "../tests/world.ts";

export { TEST_CACHE_DIR };

/** The repository root (where `deno.json` and `main.ts` are). */
export const REPO_ROOT = new URL("../", import.meta.url).pathname;

/** Creates a world in a temporary folder with plugins (world name → test crate). */
export async function createWorld(plugins: Record<string, string>): Promise<string> {
  const root = await Deno.makeTempDir({ prefix: "sausage-bench-" });
  await initWorld(root);
  for (const [name, crate] of Object.entries(plugins)) await installPlugin(root, name, crate);
  return root;
}

/** Removes a world made by {@linkcode createWorld}. */
export async function removeWorld(root: string): Promise<void> {
  await Deno.remove(root, { recursive: true }).catch(() => {});
}

/** A bench host's options on `root`: the test cache, notes on stderr. */
export function hostOptions(root: string): HostOptions {
  return {
    world: root,
    cacheDir: TEST_CACHE_DIR,
    onNote: (text) => console.error(`sausage: ${text}`),
  };
}

/**
 * Starts a host on a world, with the test cache, and waits until it has
 * discovered the world's plugins. The shipped agent is not installed unless
 * asked for: its discovery (and, after a change to the transpiler, its
 * transpile, seconds of a core) would run beside the first measurements.
 */
export async function startHost(root: string, options: Partial<HostOptions> = {}): Promise<Host> {
  const host = await Host.start({ ...hostOptions(root), installAgent: false, ...options });
  await host.discovered;
  return host;
}

/** A world with a running host; disposing it stops the host and removes the world. */
export interface BenchWorld {
  root: string;
  host: Host;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Puts `wasm` (a built component) in a world as `plugins/<name>/plugin.wasm`. */
export async function installWasm(root: string, name: string, wasm: string): Promise<void> {
  await Deno.mkdir(join(root, "plugins", name), { recursive: true });
  await Deno.copyFile(wasm, join(root, "plugins", name, "plugin.wasm"));
}

/**
 * Creates a world and starts a host on it: `plugins` are test crates by
 * world name, `wasm` built components by world name, all in place before
 * the host starts (so that their discovery is over before it measures).
 */
export async function benchWorld(
  plugins: Record<string, string>,
  options: Partial<HostOptions> = {},
  wasm: Record<string, string> = {},
): Promise<BenchWorld> {
  const root = await createWorld(plugins);
  let host: Host;
  try {
    for (const [name, path] of Object.entries(wasm)) await installWasm(root, name, path);
    host = await startHost(root, options);
  } catch (e) {
    await removeWorld(root);
    throw e;
  }
  return {
    root,
    host,
    async [Symbol.asyncDispose]() {
      await host.shutdown();
      await removeWorld(root);
    },
  };
}

/** Raised when a benchmarked call fails: a benchmark of failing calls measures nothing. */
export class CallFailed extends Error {
  override name = "CallFailed";
}

/** Makes a call and returns its result; throws {@linkcode CallFailed} on an error answer. */
export async function call(
  client: Client,
  method: string,
  params: Record<string, unknown> = {},
): Promise<unknown> {
  const response = await client.request(method, params);
  if (response.error) {
    throw new CallFailed(`${method}: ${response.error.code} ${response.error.message}`);
  }
  return response.result;
}

/** Makes a call and returns how long it took in milliseconds. */
export async function timedCall(
  client: Client,
  method: string,
  params: Record<string, unknown> = {},
): Promise<number> {
  const start = performance.now();
  await call(client, method, params);
  return performance.now() - start;
}

/** Waits until `check` is true, polling every 5 ms; throws after `ms`. */
export async function until(
  check: () => boolean,
  ms: number,
  what: string,
): Promise<void> {
  const deadline = performance.now() + ms;
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
