/**
 * `/proc/core/plugins/<name>/client.rs`: the code `import!("<name>")`
 * generates, made by the SDK's own generator (`sausage-plugin-codegen`,
 * compiled to a component and run by the host), so the file and the macro
 * can never differ.
 *
 * The generator comes from the same SDK copy a build compiles `import!`
 * with: the world's `/plugins/cargo/sdk/`, copied into the cache by hash
 * (`sdkForBuild`). When its source is the one the host ships, the host's
 * prebuilt generator runs (`shipped_codegen.ts`); an edited generator is
 * built once per SDK version with the `wasm32-wasip2` toolchain, into the
 * cache (without a toolchain the file says what to install). After an edit
 * of the world's SDK, the files are made again.
 *
 * The host makes the code of a plugin when its document becomes known (at
 * start and at each activation, which waits for it), so the file is real on
 * the first read.
 *
 * @module
 */
import { join } from "node:path";
import type { ComponentCache } from "../components/cache.ts";
import type { WorkerPool } from "../pool.ts";
import { findWasmToolchain, WASM_TARGET } from "./toolchain.ts";
import { cachedSdk, sdkFingerprint, sdkForBuild } from "./sdk.ts";
import { shippedGenerator } from "./shipped_codegen.ts";

/** The longest a build of the generator may take. */
const GENERATOR_BUILD_MS = 5 * 60_000;

/** Makes and keeps the client code of plugins, by document. */
export class ClientCode {
  readonly #cacheDir: string;
  readonly #cache: ComponentCache;
  readonly #pool: WorkerPool;
  readonly #worldSdk: string | undefined;
  /** Texts by SDK state, plugin and document. */
  readonly #texts = new Map<string, string>();
  /** The state of the world's SDK the texts were made with (sizes and times of its files). */
  #fingerprint = "";
  /** Generator components by SDK folder in the cache. */
  readonly #generators = new Map<string, Promise<Uint8Array>>();
  #queue: Promise<unknown> = Promise.resolve();

  readonly #closing = new AbortController();

  /**
   * `worldSdk` is the world's `/plugins/cargo/sdk/` on the host, the SDK
   * `cargo.build` compiles against; without it, the SDK the host ships.
   */
  constructor(
    deps: { cacheDir: string; cache: ComponentCache; pool: WorkerPool; worldSdk?: string },
  ) {
    this.#cacheDir = deps.cacheDir;
    this.#cache = deps.cache;
    this.#pool = deps.pool;
    this.#worldSdk = deps.worldSdk;
  }

  /** Stops a generator build in progress (host shutdown). */
  close(): void {
    this.#closing.abort();
  }

  /** The key of a text: texts made from an SDK that has changed since are never given. */
  #key(plugin: string, documentHash: string): string {
    const fingerprint = this.#worldSdk === undefined ? "" : sdkFingerprint(this.#worldSdk);
    if (fingerprint !== this.#fingerprint) {
      this.#fingerprint = fingerprint;
      this.#texts.clear();
    }
    return `${fingerprint}\0${plugin}:${documentHash}`;
  }

  /** The code for a plugin's document, when it was made from the SDK as it is now. */
  text(plugin: string, documentHash: string): string | undefined {
    return this.#texts.get(this.#key(plugin, documentHash));
  }

  /** Makes the code for a document in the background (one at a time). */
  generate(plugin: string, documentHash: string, document: unknown): Promise<void> {
    if (this.#texts.has(this.#key(plugin, documentHash))) return Promise.resolve();
    const job = this.#queue.then(async () => {
      // the SDK's state before it is read: an edit meanwhile makes the text again on the next read
      const key = this.#key(plugin, documentHash);
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

  /**
   * Loads the generator in the background (its first load on a cache
   * transpiles it), so that the first activation does not wait for it.
   */
  warm(): void {
    this.#queue = this.#queue.then(async () => {
      await this.#cache.load(await this.#component(), "the import generator");
    }).catch(() => {}); // a generator that cannot be made says so in the files, when read
  }

  /** The SDK folder in the cache that builds use now: the world's, or else the shipped one. */
  async #sdk(): Promise<string> {
    if (this.#worldSdk === undefined) return await cachedSdk(this.#cacheDir);
    return (await sdkForBuild(this.#worldSdk, this.#cacheDir)).dir;
  }

  /** The generator component of the SDK builds use, built on first use. */
  async #component(): Promise<Uint8Array> {
    const sdk = await this.#sdk();
    let generator = this.#generators.get(sdk);
    if (generator) return await generator;
    generator = (async () => {
      const wasm = join(sdk, "sausage-plugin-codegen.wasm");
      try {
        return await Deno.readFile(wasm);
      } catch {
        // the shipped one, or build it
      }
      const shipped = await shippedGenerator(sdk);
      if (shipped) return shipped;
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
        // an SDK edited in the world may hang its build: it never holds the queue for long
        signal: AbortSignal.any([this.#closing.signal, AbortSignal.timeout(GENERATOR_BUILD_MS)]),
      }).output();
      if (this.#closing.signal.aborted) throw new Error("the host is stopping");
      if (out.signal !== null) {
        throw new Error(
          `building the generator took more than ${GENERATOR_BUILD_MS / 60_000} minutes: ` +
            "see /plugins/cargo/sdk/sausage-plugin-codegen",
        );
      }
      if (!out.success) {
        throw new Error(`building the generator failed:\n${new TextDecoder().decode(out.stderr)}`);
      }
      const built = join(target, WASM_TARGET, "release", "sausage-plugin-codegen.wasm");
      await Deno.copyFile(built, wasm);
      return await Deno.readFile(wasm);
    })();
    this.#generators.clear(); // only the SDK as it is now is of use
    this.#generators.set(sdk, generator);
    generator.catch(() => this.#generators.delete(sdk)); // try again next time
    return await generator;
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
