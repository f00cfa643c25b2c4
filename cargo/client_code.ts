/**
 * `/proc/core/plugins/<name>/client.rs`: the code `import!("<name>")`
 * generates, made by the SDK's own generator (`sausage-plugin-codegen`,
 * compiled to a component and run by the host), so the file and the macro
 * can never differ.
 *
 * The generator is built once per SDK version with the `wasm32-wasip2`
 * toolchain, into the cache; without a toolchain the file says what to
 * install.
 *
 * @module
 */
import { join } from "node:path";
import type { ComponentCache } from "../core/components/cache.ts";
import type { WorkerPool } from "../core/pool.ts";
import { findWasmToolchain, WASM_TARGET } from "../core/toolchain.ts";
import { cachedSdk } from "./sdk.ts";

/** Makes and keeps the client code of plugins, by document. */
export class ClientCode {
  readonly #cacheDir: string;
  readonly #cache: ComponentCache;
  readonly #pool: WorkerPool;
  readonly #texts = new Map<string, string>();
  #generator: Promise<Uint8Array> | undefined;
  #queue: Promise<unknown> = Promise.resolve();

  constructor(deps: { cacheDir: string; cache: ComponentCache; pool: WorkerPool }) {
    this.#cacheDir = deps.cacheDir;
    this.#cache = deps.cache;
    this.#pool = deps.pool;
  }

  /** The code for a plugin's document, when it was made. */
  text(plugin: string, documentHash: string): string | undefined {
    return this.#texts.get(`${plugin}:${documentHash}`);
  }

  /** Makes the code for a document in the background (one at a time). */
  generate(plugin: string, documentHash: string, document: unknown): Promise<void> {
    const key = `${plugin}:${documentHash}`;
    if (this.#texts.has(key)) return Promise.resolve();
    const job = this.#queue.then(async () => {
      if (this.#texts.has(key)) return;
      try {
        this.#texts.set(key, await this.#run(plugin, JSON.stringify(document)));
      } catch (e) {
        this.#texts.set(
          key,
          `// The code of import!("${plugin}") could not be generated:\n// ${
            String((e as Error).message).replaceAll("\n", "\n// ")
          }\n`,
        );
      }
    });
    this.#queue = job.catch(() => {});
    return job;
  }

  /** The generator component, built from the shipped SDK on first use. */
  #component(): Promise<Uint8Array> {
    this.#generator ??= (async () => {
      const sdk = await cachedSdk(this.#cacheDir);
      const wasm = join(sdk, "sausage-plugin-codegen.wasm");
      try {
        return await Deno.readFile(wasm);
      } catch {
        // build it
      }
      const toolchain = await findWasmToolchain();
      const target = join(this.#cacheDir, "cargo", "target-sdk");
      const out = await new Deno.Command("cargo", {
        args: [
          "build",
          "--release",
          "--target",
          WASM_TARGET,
          "-p",
          "sausage-plugin-codegen",
          "--quiet",
        ],
        cwd: sdk,
        env: { ...toolchain.env, CARGO_TARGET_DIR: target },
        stdout: "piped",
        stderr: "piped",
      }).output();
      if (!out.success) {
        throw new Error(`building the generator failed:\n${new TextDecoder().decode(out.stderr)}`);
      }
      const built = join(target, WASM_TARGET, "release", "sausage-plugin-codegen.wasm");
      await Deno.copyFile(built, wasm);
      return await Deno.readFile(wasm);
    })();
    this.#generator.catch(() => this.#generator = undefined); // try again next time
    return this.#generator;
  }

  async #run(plugin: string, document: string): Promise<string> {
    const component = await this.#cache.load(await this.#component(), "the import generator");
    const pid = `codegen-${crypto.randomUUID()}`;
    const decoder = new TextDecoder();
    let stdout = "";
    let stderr = "";
    const { promise, resolve } = Promise.withResolvers<number | null>();
    this.#pool.spawn(component, {
      pid,
      env: [],
      args: ["sausage-plugin-codegen", plugin],
      cwd: "/",
      files: { mounts: [] },
      stdio: "raw",
    }, {
      raw: (fd, data) => {
        if (fd === 1) stdout += decoder.decode(data, { stream: true });
        else stderr += decoder.decode(data, { stream: true });
      },
      exit: (report) => resolve(report.reason === "exited" ? report.status : null),
    });
    this.#pool.write(pid, new TextEncoder().encode(document));
    this.#pool.closeStdin(pid);
    const status = await promise;
    if (status !== 0) throw new Error(stderr.trim() || `the generator ended with ${status}`);
    return stdout;
  }
}
