/**
 * Whole-world test helpers: a temporary world with test plugins, a running
 * host, and a client to call it.
 *
 * @module
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import type { Client } from "../core/client.ts";
import { Host, type HostOptions } from "../core/host.ts";
import type { Response } from "../core/jsonrpc.ts";
import { initWorld } from "../core/init.ts";
import { sha256Hex } from "../core/components/cache.ts";
import { testPlugin } from "./setup.ts";

/** The component cache shared by all tests (transpiles survive between runs). */
export const TEST_CACHE_DIR = new URL("./plugins/target/sausage-cache", import.meta.url).pathname;

/** A temporary world and a host running it. */
export interface TestWorld {
  root: string;
  host: Host;
  client: Client;
  /** Calls and returns the result, or throws with the error object. */
  call(method: string, params?: Record<string, unknown>): Promise<unknown>;
  /** Calls and returns the whole response. */
  request(method: string, params?: Record<string, unknown>): Promise<Response>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Options of {@linkcode startWorld}. */
export interface WorldOptions extends Partial<Omit<HostOptions, "world" | "cacheDir">> {
  /** Plugins to install: world plugin name → test plugin crate name. */
  plugins?: Record<string, string>;
  /** Plugins to install from bytes (installed after `plugins`). */
  wasm?: Record<string, Uint8Array>;
  /** Files to write before start: path in the world → content. */
  files?: Record<string, string>;
  /**
   * Files to write once the host runs (after the discovery at start): for
   * what must not shape the versions discovered at start, whose documents
   * the tests share through the cache.
   */
  filesAfterStart?: Record<string, string>;
  /**
   * Install the agent the host ships, at init and at start (default false:
   * a test's world has only the plugins it names).
   */
  installAgent?: boolean;
}

/** Installs a test plugin into a world. */
export async function installPlugin(root: string, name: string, crate: string): Promise<void> {
  await Deno.mkdir(join(root, "plugins", name), { recursive: true });
  await Deno.copyFile(await testPlugin(crate), join(root, "plugins", name, "plugin.wasm"));
}

/** Creates a world in a temporary folder and starts a host on it. */
export async function startWorld(options: WorldOptions = {}): Promise<TestWorld> {
  const root = await Deno.makeTempDir({ prefix: "sausage-world-" });
  const installAgent = options.installAgent ?? false;
  await initWorld(root, { installAgent });
  for (const [name, crate] of Object.entries(options.plugins ?? { probe: "probe" })) {
    await installPlugin(root, name, crate);
  }
  for (const [name, bytes] of Object.entries(options.wasm ?? {})) {
    await Deno.mkdir(join(root, "plugins", name), { recursive: true });
    await Deno.writeFile(join(root, "plugins", name, "plugin.wasm"), bytes);
  }
  for (const [path, content] of Object.entries(options.files ?? {})) {
    await Deno.mkdir(join(root, path, ".."), { recursive: true });
    await Deno.writeTextFile(join(root, path), content);
  }
  const { plugins: _p, files: _f, wasm: _w, filesAfterStart, ...hostOptions } = options;
  const host = await Host.start({
    world: root,
    cacheDir: TEST_CACHE_DIR,
    ...hostOptions,
    installAgent,
  });
  await host.discovered; // no discovery process runs beside a test's own
  for (const [path, content] of Object.entries(filesAfterStart ?? {})) {
    await Deno.mkdir(join(root, path, ".."), { recursive: true });
    await Deno.writeTextFile(join(root, path), content);
  }
  const client = host.client("console");
  return {
    root,
    host,
    client,
    request: (method, params = {}) => client.request(method, params),
    async call(method, params = {}) {
      const response = await client.request(method, params);
      if (response.error) {
        throw Object.assign(new Error(`${method}: ${response.error.message}`), {
          rpc: response.error,
        });
      }
      return response.result;
    },
    async [Symbol.asyncDispose]() {
      await host.shutdown();
      await Deno.remove(root, { recursive: true }).catch(() => {});
    },
  };
}

/** Waits until `check` is true, polling; fails after `ms`. */
export async function eventually(
  check: () => boolean | Promise<boolean>,
  ms = 5000,
): Promise<void> {
  const until = performance.now() + ms;
  while (!(await check())) {
    if (performance.now() > until) throw new Error(`condition not met within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** `sausage --headless root` in a subprocess (with `env` added), once its control endpoint listens. */
export async function startHeadless(
  root: string,
  env: Record<string, string> = {},
): Promise<Deno.ChildProcess> {
  const main = new URL("../main.ts", import.meta.url).pathname;
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--unstable-worker-options",
      main,
      "--headless",
      root,
      "--cache-dir",
      TEST_CACHE_DIR,
    ],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
    env: { NO_COLOR: "1", ...env },
  }).spawn();
  const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  while (!seen.includes("reach it with")) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the headless host ended: ${seen}`);
    seen += value;
  }
  reader.releaseLock();
  child.stderr.cancel().catch(() => {});
  return child;
}

/**
 * The probe with a custom section named after `document`: a version of its
 * own, so the discovery cache (keyed by version) holds this document for it.
 * Give the probe the document itself in `/state/probe-discover.json`.
 */
export async function probeAnswering(document: unknown): Promise<Uint8Array> {
  const text = JSON.stringify(document);
  const bytes = await Deno.readFile(await testPlugin("probe"));
  const tag = new TextEncoder().encode(
    (await sha256Hex(new TextEncoder().encode(text))).slice(0, 32),
  );
  const payload = [tag.length, ...tag];
  return new Uint8Array([...bytes, 0, payload.length, ...payload]);
}

/**
 * Starts `probe.spin` in `w` (a world of one worker), checks that an echo
 * answers beside it (the spinner is preempted), kills it, and waits until
 * its caller has the error and no process is left.
 */
export async function spinPreemptAndKill(w: TestWorld): Promise<void> {
  const spinner = w.request("probe.spin", {});
  await eventually(() => w.host.processes.list().some((p) => p.method === "spin"));
  assert.deepEqual(await w.call("probe.echo", { beside: true }), { beside: true });
  const spin = w.host.processes.list().find((p) => p.method === "spin")!;
  await w.call("core.kill", { pid: spin.pid });
  assert.equal((await spinner).error?.code, -32002);
  await eventually(() => w.host.pool.size === 0);
}
