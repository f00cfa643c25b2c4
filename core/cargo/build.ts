/**
 * `cargo.build` (PROTOCOL section 11): builds `/plugins/<name>/source/` into
 * a tested release component.
 *
 * 1. The build takes a build slot (`slots.ts`): a target folder of the
 *    cache that no other build uses meanwhile.
 * 2. The source is copied once; the tests and the build use the copy.
 * 3. The dependencies are resolved offline from `Cargo.lock` and the local
 *    cache of crates; the network is used only for what is missing. The
 *    lock file goes back to the source folder.
 * 4. One `cargo build` compiles the tests and the release `.wasm` for
 *    `wasm32-wasip2` at once (release profile); each test binary runs on
 *    the host's own workers as soon as it is linked, each test in its own
 *    instance. The component is copied to
 *    `/state/cargo/builds/<n>/<name>.wasm`.
 *
 * Compiled crates stay in the slots' target folders, shared by all worlds,
 * so a second build compiles only what changed. A failed step is the error
 * -32004 with its output. A stop or a kill ends the whole process group of
 * cargo (rustc, build scripts) and the tests' instances.
 *
 * @module
 */
import { basename, join } from "node:path";
import { ErrorCode, RpcError } from "../jsonrpc.ts";
import { CARGO_WORKER } from "../embedded.ts";
import type { NativeContext, NativePlugin } from "../native.ts";
import { pluginNameProblem } from "../names.ts";
import { findWasmToolchain, ToolchainMissing, WASM_TARGET } from "./toolchain.ts";
import { sdkForBuild, SdkUnusable } from "./sdk.ts";
import { afterBuild } from "../components/cache_gc.ts";
import type { World } from "../world.ts";
import { isNoSpace, probeRoom, type Room } from "../disk_room.ts";
import { syncFile, syncFolder } from "../durable.ts";
import type { ComponentCache } from "../components/cache.ts";
import { BuildSlots } from "./slots.ts";
import { isTestHarness, runTestBinary, TESTS_FAILED } from "./test_run.ts";

/** Free bytes below which a disk is taken as the cause of a failed step: a build needs far more. */
export const LOW_ROOM_BYTES = 32 * 1024 * 1024;

/** What the builder needs from the host. */
export interface BuilderOptions {
  world: World;
  cacheDir: string;
  /** Loads the test binaries (the host's cache: its transpiler is warm). */
  cache: ComponentCache;
  /** The build slots (default: those of `cacheDir`). */
  slots?: BuildSlots;
  /**
   * The `rpc.discover` document of a built component (the host loads it as
   * it would at activation), or why there is none.
   */
  discover?: (
    plugin: string,
    wasm: Uint8Array,
  ) => Promise<{ ok: true; document: unknown } | { ok: false; reason: string }>;
}

/** The result of `cargo.build`. */
export interface BuildResult {
  wasm: string;
  /**
   * `/state/cargo/builds/<n>/discover.json`: the built component's
   * document, so that a consumer's import can be made before it is activated.
   */
  discover?: string;
  tests: { passed: number; failed: number; output: string };
  warnings: string[];
}

/** Most bytes of output kept in an error's data or a result. */
const MAX_OUTPUT = 256 * 1024;
/** After a stop, cargo gets this long to end before SIGKILL. */
const TERM_GRACE_MS = 2000;

interface Step {
  code: number;
  stdout: string;
  stderr: string;
  messages: CargoMessage[];
}

interface CargoMessage {
  reason: string;
  message?: {
    level: string;
    message: string;
    rendered?: string;
    /** The lint or error code, such as `dead_code` or `E0425`; null for notes and summaries. */
    code?: { code: string } | null;
    spans?: { is_primary: boolean; text?: { text: string }[] }[];
  };
  target?: { name: string; kind: string[]; src_path?: string };
  profile?: { test: boolean };
  filenames?: string[];
  executable?: string | null;
  /** An artifact that was up to date (not compiled again). */
  fresh?: boolean;
  package_id?: string;
}

function tail(text: string): string {
  return text.length > MAX_OUTPUT
    ? `… (${text.length - MAX_OUTPUT} bytes cut)\n${text.slice(-MAX_OUTPUT)}`
    : text;
}

function buildFailed(step: string, output: string, extra: Record<string, unknown> = {}): RpcError {
  return new RpcError(ErrorCode.BuildFailed, `cargo.build: ${step} failed`, {
    step,
    output: tail(output),
    ...extra,
  });
}

/** The folders a build writes to, each on a disk that may fill. */
export interface BuildDisks {
  /** The host's cache folder: cargo's target folder and the source's copy are in it. */
  cacheDir: string;
  /** The world's `state/cargo/builds`, where the component goes. */
  buildsDir: string;
}

/**
 * A build that failed because a disk is full, as an error that says which
 * and how to make room; undefined for any other failure. The host's own
 * writes fail with the OS's code (`ENOSPC`); cargo's and rustc's say it only
 * in their output, so after a failed step a probe write on each disk tells.
 * The step and the output stay as they were.
 */
export async function diskFull(e: unknown, disks: BuildDisks): Promise<RpcError | undefined> {
  const failedStep = e instanceof RpcError && e.code === ErrorCode.BuildFailed;
  if (!failedStep && !isNoSpace(e)) return undefined;
  const [cache, world] = await Promise.all([
    probeRoom(disks.cacheDir).catch(() => undefined),
    probeRoom(disks.buildsDir).catch(() => undefined),
  ]);
  // rustc removes its partial output when a write fails, so the probe may find room again: a
  // disk left with less than LOW_ROOM_BYTES after a failed step is taken as the cause too
  const low = (r: Room | undefined) =>
    r !== undefined && (r.full || (r.freeBytes !== undefined && r.freeBytes < LOW_ROOM_BYTES));
  const full = [
    ...(low(cache) ? ["cache" as const] : []),
    ...(low(world) ? ["world" as const] : []),
  ];
  // a host write refused with ENOSPC on a disk that has room again: either may have been it
  if (full.length === 0 && !isNoSpace(e)) return undefined;
  const data = e instanceof RpcError && typeof e.data === "object" && e.data !== null
    ? e.data as Record<string, unknown>
    : {};
  const step = typeof data.step === "string" ? data.step : "copying";
  return noRoom(step, full.length ? full : ["cache", "world"], disks, {
    ...data,
    output: typeof data.output === "string"
      ? data.output
      : tail(`${e instanceof Error ? e.message : e}`),
    free: { cache: cache?.freeBytes ?? null, world: world?.freeBytes ?? null },
  });
}

/** The error of a build that a full disk stopped (or refused), naming the disk and the fix. */
function noRoom(
  step: string,
  full: ("cache" | "world")[],
  disks: BuildDisks,
  data: Record<string, unknown>,
): RpcError {
  const which = full.map((d) =>
    d === "cache"
      ? `the cache folder ${disks.cacheDir} (cargo's target folder is in it)`
      : `the world's ${disks.buildsDir} (where the component goes)`
  ).join(" or ");
  const fixes = [
    ...(full.includes("cache")
      ? [
        "for the cache, `sausage cache` shows what it holds and `sausage cache gc` removes what " +
        "no world used for 30 days, or start the host with --cache-dir on a larger disk",
      ]
      : []),
    ...(full.includes("world")
      ? ["for the world, remove what it no longer needs (old /state/cargo/builds/<n>/ folders)"]
      : []),
  ];
  return new RpcError(
    ErrorCode.BuildFailed,
    `cargo.build: ${step} failed: a disk is full (No space left on device, or under ${
      LOW_ROOM_BYTES >> 20
    } MiB free after the step): the disk of ${which}. ` +
      `Make room on it (${fixes.join("; ")}); then build again.`,
    { ...data, step, disk: "full", full },
  );
}

/** Refuses a build at once when a disk it writes to has no room for a probe. */
async function checkRoom(disks: BuildDisks): Promise<void> {
  const [cache, world] = await Promise.all([
    probeRoom(disks.cacheDir),
    probeRoom(disks.buildsDir),
  ]);
  const full = [
    ...(cache.full ? ["cache" as const] : []),
    ...(world.full ? ["world" as const] : []),
  ];
  if (full.length === 0) return;
  throw noRoom("checking for room", full, disks, {
    output: "",
    free: { cache: cache.freeBytes ?? null, world: world.freeBytes ?? null },
  });
}

/** Copies a source folder without `target/` and hidden folders. */
async function copySource(from: string, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true });
  for await (const e of Deno.readDir(from)) {
    if (e.name === "target" || (e.isDirectory && e.name.startsWith("."))) continue;
    const a = join(from, e.name);
    const b = join(to, e.name);
    if (e.isDirectory) await copySource(a, b);
    else if (e.isFile) await Deno.copyFile(a, b);
    else if (e.isSymlink) await Deno.symlink(await Deno.readLink(a), b);
  }
}

/**
 * Makes the copied package a workspace of its own (unless it is one), so
 * that a workspace above the copy's folder never claims it.
 */
async function standalone(manifest: string): Promise<void> {
  const text = await Deno.readTextFile(manifest);
  if (/^\s*\[workspace\]/m.test(text)) return;
  await Deno.writeTextFile(manifest, `${text.trimEnd()}\n\n[workspace]\n`);
}

/** The next build number: `state/cargo/builds/<n>/` made atomically. */
async function nextBuildDir(builds: string): Promise<{ n: number; dir: string }> {
  let n = 1;
  for await (const e of Deno.readDir(builds)) {
    if (e.isDirectory && /^\d+$/.test(e.name)) n = Math.max(n, Number(e.name) + 1);
  }
  for (;; n++) {
    try {
      await Deno.mkdir(join(builds, String(n)));
      return { n, dir: join(builds, String(n)) };
    } catch (e) {
      if (!(e instanceof Deno.errors.AlreadyExists)) throw e;
    }
  }
}

/** Everything a build needs, resolved by the host before the builder starts. */
export interface BuildJob {
  plugin: string;
  /** `plugins/<name>/source` on the host. */
  source: string;
  /** The copy of the source (in the cache; removed after the build). */
  work: string;
  /** Cargo's target folder: the build slot's. */
  targetDir: string;
  /** `state/cargo/builds` of the world. */
  buildsDir: string;
  /** The toolchain's variables (`RUSTC`, `RUSTDOC`, `CC_wasm32_wasip2`, ...). */
  toolchainEnv: Record<string, string>;
  /** The SDK folder that `sausage-plugin = "0.1"` resolves to: the world's, copied into the cache. */
  sdk: string;
  /** Notes on the SDK for the result's warnings. */
  sdkWarnings: string[];
}

/**
 * The `cargo` plugin. The host's thread takes a build slot, copies the
 * plugin's source into the cache and, at the end, the lock file back and the
 * built component into the world's `state/cargo/builds`; it also runs the
 * tests. Between the two copies, cargo runs in a worker whose Deno
 * permissions allow only what a build needs: to start `cargo` (through
 * `setsid`), and to read and write the copy and the slot's target folder (and
 * to read the SDK's copy), all in the cache.
 */
export function cargoPlugin(options: BuilderOptions): NativePlugin {
  const slots = options.slots ?? new BuildSlots(options.cacheDir);
  const cleanups = new Set<Promise<void>>();
  return {
    document: DISCOVER,
    settled: async () => {
      while (cleanups.size > 0) await Promise.all(cleanups);
    },
    methods: {
      "rpc.discover": () => Promise.resolve(DISCOVER),
      build: async (ctx, params) => {
        const job = await prepare(options, params).catch(async (e) => {
          const disks = { cacheDir: options.cacheDir, buildsDir: options.world.stateDir };
          throw (isNoSpace(e) ? await diskFull(e, disks) : undefined) ?? e;
        });
        const disks = { cacheDir: options.cacheDir, buildsDir: job.buildsDir };
        // a full disk refuses the build at once, not after minutes of compiling
        await checkRoom(disks);
        const slot = await slots.acquire(
          ctx.signal,
          (text) => ctx.notify("progress", { step: "slot", text }),
        );
        job.targetDir = slot.targetDir;
        job.work = slot.workDir(job.plugin);
        let built = false;
        try {
          // the host's thread copies in and out: the builder reaches nothing of the world
          ctx.notify("progress", { step: "copy", text: `copying /plugins/${job.plugin}/source` });
          await Deno.remove(job.work, { recursive: true }).catch(() => {});
          await copySource(job.source, job.work);
          const result = await deliver(
            job,
            await runInWorker(job, ctx, options.cache),
            ctx,
            options.discover,
          );
          built = true;
          return result;
        } catch (e) {
          throw (await diskFull(e, disks)) ?? e;
        } finally {
          await keepLockFile(job, ctx);
          await Deno.remove(job.work, { recursive: true }).catch(() => {});
          slot.release();
          // after the answer (a walk of the whole cache): bounded after each build, failed ones
          // too, as they fill the target folder; then slots without compiled crates get these
          const cleanup = afterBuild(options.cacheDir, job.targetDir).catch((e) => `${e}`).then(
            (over) => {
              if (over) ctx.log(`warning: ${over}`);
              if (built) slots.fill(slot.index).catch(() => {}); // not waited for
            },
          );
          cleanups.add(cleanup);
          cleanup.finally(() => cleanups.delete(cleanup));
        }
      },
    },
  };
}

/**
 * Puts the copy's `Cargo.lock` in the plugin's source folder when cargo made
 * or changed it: the next build resolves from it, offline, to the same
 * versions.
 */
async function keepLockFile(job: BuildJob, ctx: NativeContext): Promise<void> {
  let made: Uint8Array;
  try {
    made = await Deno.readFile(join(job.work, "Cargo.lock"));
  } catch {
    return; // resolution did not get that far
  }
  const kept = join(job.source, "Cargo.lock");
  const old = await Deno.readFile(kept).catch(() => undefined);
  if (old && old.length === made.length && old.every((b, i) => b === made[i])) return;
  try {
    const tmp = `${kept}.tmp-${crypto.randomUUID()}`;
    await Deno.writeFile(tmp, made);
    await Deno.rename(tmp, kept);
    ctx.log(`${old ? "updated" : "wrote"} /plugins/${job.plugin}/source/Cargo.lock`);
  } catch (e) {
    ctx.log(`warning: cannot write /plugins/${job.plugin}/source/Cargo.lock: ${e}`);
  }
}

/** Checks the call and resolves the job (on the host's thread). */
async function prepare(o: BuilderOptions, params: Record<string, unknown>): Promise<BuildJob> {
  const plugin = params.plugin;
  if (typeof plugin !== "string") {
    throw new RpcError(ErrorCode.InvalidParams, `cargo.build needs "plugin", a plugin name`);
  }
  const problem = pluginNameProblem(plugin);
  if (problem) throw new RpcError(ErrorCode.InvalidParams, `cargo.build: ${problem}`);
  const source = join(o.world.pluginDir(plugin), "source");
  try {
    await Deno.stat(join(source, "Cargo.toml"));
  } catch {
    throw new RpcError(
      ErrorCode.InvalidParams,
      `cargo.build: there is no /plugins/${plugin}/source/Cargo.toml: write the plugin's source there first`,
    );
  }
  let toolchain;
  try {
    toolchain = await findWasmToolchain();
  } catch (e) {
    if (e instanceof ToolchainMissing) throw buildFailed("finding a toolchain", e.message);
    throw e;
  }
  let sdk;
  try {
    sdk = await sdkForBuild(join(o.world.pluginDir("cargo"), "sdk"), o.cacheDir);
  } catch (e) {
    if (e instanceof SdkUnusable) throw buildFailed("finding the SDK", e.message);
    throw e;
  }
  const buildsDir = join(o.world.stateDir, "cargo", "builds");
  await Deno.mkdir(buildsDir, { recursive: true });
  await Deno.mkdir(join(o.cacheDir, "cargo", "work"), { recursive: true });
  return {
    plugin,
    source,
    work: "", // the build slot's, once the build holds one
    targetDir: "",
    buildsDir,
    toolchainEnv: toolchain.env,
    sdk: sdk.dir,
    sdkWarnings: sdk.changed.length === 0 ? [] : [
      `the SDK at /plugins/cargo/sdk/ differs from the one this host ships in ${
        sdk.changed.map((f) => f.replaceAll("\\", "/")).join(", ")
      }; the build used it as it is (a host start installs the shipped one again)`,
    ],
  };
}

/** A test binary cargo built, for the host to run. */
export interface TestTarget {
  /** The `.wasm` in the slot's target folder. */
  file: string;
  /** What cargo would say it runs, such as `unittests src/main.rs` or `tests/api.rs`. */
  label: string;
}

/** Messages of the build worker. */
export type FromBuilder =
  | { t: "log"; line: string }
  | { t: "group"; pgid: number; running: boolean }
  | { t: "notify"; name: string; params: unknown }
  | { t: "tests"; targets: TestTarget[]; env: Record<string, string> }
  | { t: "done"; result: Omit<Built, "tests"> }
  | { t: "failed"; error: { code: number; message: string; data?: unknown } };

/**
 * Runs a job in a worker with narrow permissions; ctx gets its logs and
 * progress. The worker may only start `setsid` and `cargo`, and Deno lets
 * only a thread with full run permission signal a process group, so the
 * host's thread ends cargo's group on a stop or a kill. Each test binary
 * runs on the host as soon as cargo has linked it, while cargo builds the
 * rest; a failing one ends the build.
 */
function runInWorker(job: BuildJob, ctx: NativeContext, cache: ComponentCache): Promise<Built> {
  const worker = new Worker(CARGO_WORKER, {
    type: "module",
    name: `sausage-cargo-${job.plugin}`,
    deno: {
      permissions: {
        read: [job.work, job.targetDir, job.sdk],
        write: [job.work, job.targetDir],
        run: ["setsid", "cargo"],
        env: false,
        net: false,
        ffi: false,
        sys: false,
        import: false,
      },
    },
  } as WorkerOptions);
  const { promise, resolve, reject } = Promise.withResolvers<Built>();
  const groups = new ProcessGroups();
  const onAbort = () => {
    worker.postMessage({ t: "abort", reason: ctx.signal.reason });
    groups.end(ctx.signal.reason === "kill" ? 0 : TERM_GRACE_MS);
  };
  ctx.signal.addEventListener("abort", onAbort, { once: true });
  let ended = false;
  const end = () => {
    ended = true;
    ctx.signal.removeEventListener("abort", onAbort);
    worker.terminate();
    groups.end(0); // none is left after a clean end; after a crash or failed tests, none may stay
  };
  const fail = (e: unknown) => {
    if (ended) return;
    end();
    reject(e);
  };
  const tests = new TestRuns(ctx, cache);
  worker.onmessage = (e: MessageEvent<FromBuilder | { t: "ready" }>) => {
    const m = e.data;
    if (m.t === "ready") worker.postMessage({ t: "job", job });
    else if (m.t === "group") {
      groups.update(m.pgid, m.running);
      if (m.running && (ctx.signal.aborted || ended)) groups.end(0);
    } else if (m.t === "log") ctx.log(m.line);
    else if (m.t === "notify") ctx.notify(m.name, m.params);
    else if (m.t === "tests") {
      // a failure ends the build at once: what cargo still builds is of no use
      for (const target of m.targets) tests.add(target, m.env).catch(fail);
    } else if (m.t === "done") {
      tests.all().then((t) => {
        if (ended) return;
        end();
        resolve({ ...m.result, tests: t });
      }, fail);
    } else if (m.t === "failed") {
      // failed tests are what the caller must see first, as when the build waited for them
      tests.all().then(
        () => fail(new RpcError(m.error.code, m.error.message, m.error.data)),
        fail,
      );
    }
  };
  worker.onerror = (e) => {
    e.preventDefault();
    fail(new RpcError(ErrorCode.InternalError, `the builder failed: ${e.message}`));
  };
  return promise;
}

/**
 * Runs the test binaries one after the other as they come, as `cargo test`
 * would, on the host's workers: each test in its own instance. The first
 * binary whose tests fail rejects with -32004 (the tests), as `cargo test`
 * stops there; the binaries after it do not run.
 */
class TestRuns {
  readonly #ctx: NativeContext;
  readonly #cache: ComponentCache;
  #last: Promise<void> = Promise.resolve();
  #output = "";

  constructor(ctx: NativeContext, cache: ComponentCache) {
    this.#ctx = ctx;
    this.#cache = cache;
  }

  /** Runs `target` after those added before it; rejects when its tests (or an earlier's) fail. */
  add(target: TestTarget, env: Record<string, string>): Promise<void> {
    this.#last = this.#last.then(() => this.#run(target, env));
    return this.#last;
  }

  /** The counts and output of all that were added, once they ran. */
  async all(): Promise<Built["tests"]> {
    await this.#last;
    return { ...testCounts(this.#output), output: tail(this.#output.trim()) };
  }

  async #run(target: TestTarget, env: Record<string, string>): Promise<void> {
    const ctx = this.#ctx;
    ctx.notify("progress", { step: "test", text: `running ${target.label}` });
    const bytes = await Deno.readFile(target.file);
    const component = await this.#cache.load(bytes, `the test binary ${basename(target.file)}`);
    let text = "";
    const code = await runTestBinary(component, {
      file: target.file,
      harness: isTestHarness(bytes),
      args: [],
      env,
      cacheDir: this.#cache.dir,
      write: (t) => text += t,
      stderr: (t) => text += t,
      signal: ctx.signal,
    });
    for (const line of text.split("\n")) {
      if (line.startsWith("test result: ")) ctx.notify("progress", { step: "test", text: line });
    }
    this.#output += text;
    if (code === 0) return;
    if (code !== TESTS_FAILED) this.#output += `error: ${target.label} ended with status ${code}\n`;
    const output = this.#output.trim();
    throw buildFailed("the tests", output, {
      tests: { ...testCounts(output), output: tail(output) },
    });
  }
}

/** The process groups of a build's running cargo steps, as the worker reports them. */
class ProcessGroups {
  readonly #running = new Set<number>();

  update(pgid: number, running: boolean): void {
    if (running) this.#running.add(pgid);
    else this.#running.delete(pgid);
  }

  /** SIGTERM then, after `graceMs`, SIGKILL (at once when 0) to every running group. */
  end(graceMs: number): void {
    const signal = (s: Deno.Signal) => {
      for (const pgid of this.#running) {
        try {
          Deno.kill(Deno.build.os === "linux" ? -pgid : pgid, s);
        } catch {
          this.#running.delete(pgid); // already gone
        }
      }
    };
    if (graceMs === 0) return signal("SIGKILL");
    signal("SIGTERM");
    setTimeout(() => signal("SIGKILL"), graceMs);
  }
}

/** What the build worker gives a build. */
export interface BuildContext extends NativeContext {
  /** Reports a process group cargo runs in, when it starts and when it ends. */
  group(pgid: number, running: boolean): void;
  /** Hands test binaries to the host as cargo links them; the host runs them in order. */
  tests(targets: TestTarget[], env: Record<string, string>): void;
}

/** The build itself (in the build worker). */
export async function runBuild(job: BuildJob, ctx: BuildContext): Promise<Omit<Built, "tests">> {
  const { plugin, work } = job;
  await standalone(join(work, "Cargo.toml"));
  const config = [
    // sausage-plugin = "0.1" is the world's SDK
    `patch.crates-io.sausage-plugin.path=${JSON.stringify(join(job.sdk, "sausage-plugin"))}`,
  ].flatMap((c) => ["--config", c]);
  const env = {
    ...job.toolchainEnv,
    CARGO_TARGET_DIR: job.targetDir,
    CARGO_TERM_COLOR: "never",
    CARGO_TERM_PROGRESS_WHEN: "never",
  };
  const resolved = await resolveDependencies(job, config, env, ctx);
  const progress = new CompileProgress(resolved.units, ctx);
  // resolved above, so cargo needs no network from here on (and prints no "Updating index")
  const common = [
    "--release",
    "--target",
    WASM_TARGET,
    "--message-format",
    "json",
    "--offline",
    ...config,
  ];

  // one cargo for the tests and the component: rustc compiles both at once, and each test
  // binary goes to the host as soon as it is linked, to run while the component still builds
  ctx.notify("progress", { step: "build", text: "compiling the tests and the release component" });
  const testEnv = {
    CARGO_MANIFEST_DIR: work,
    CARGO_PKG_NAME: resolved.name,
    CARGO_PKG_VERSION: resolved.version,
    CARGO_CRATE_NAME: resolved.name.replaceAll("-", "_"),
  };
  const built = await cargo(
    // what `cargo test --no-run` builds (unit and integration tests, examples), and the bins
    ["build", "--tests", "--examples", "--bins", ...common],
    work,
    env,
    ctx,
    progress,
    (m) => {
      const target = testTarget(m, work);
      if (target) ctx.tests([target], testEnv);
    },
  );
  const testsBuilt = built.messages.some((m) => testTarget(m, work));
  // the tests first, as `cargo test` would have stopped there
  const step = testsBuilt ? "the build" : "compiling the tests";
  const errors = errorsOf(built);
  if (errors) throw buildFailed(step, errors);
  if (built.code !== 0) throw cargoFailed(step, built.stderr, job);
  const artifact = pickArtifact(built.messages, plugin);
  if (!artifact) {
    throw buildFailed(
      "the build",
      `no ${WASM_TARGET} binary was built: the crate needs a \`fn main\` (a bin target)`,
    );
  }
  return {
    artifact,
    warnings: [...job.sdkWarnings, ...warningsOf(built.messages)],
  };
}

/** A test binary cargo reported linked, labelled as `cargo test` labels it; else undefined. */
function testTarget(m: CargoMessage, packageDir: string): TestTarget | undefined {
  if (m.reason !== "compiler-artifact" || !m.profile?.test || !m.executable) return undefined;
  const src = m.target?.src_path ?? "";
  const relative = src.startsWith(packageDir + "/") ? src.slice(packageDir.length + 1) : src;
  const kind = m.target?.kind ?? [];
  const unit = kind.includes("test") || kind.includes("bench") ? "" : "unittests ";
  return { file: m.executable, label: `${unit}${relative || m.target?.name}` };
}

/** What the builder gives back: the result, with the component still in cargo's target folder. */
export interface Built extends Omit<BuildResult, "wasm"> {
  artifact: string;
}

/**
 * Copies the built component into the world's `state/cargo/builds/<n>/`,
 * with its document beside it when it answers one (on the host's thread).
 */
async function deliver(
  job: BuildJob,
  built: Built,
  ctx: NativeContext,
  discover: BuilderOptions["discover"],
): Promise<BuildResult> {
  const { n, dir } = await nextBuildDir(job.buildsDir);
  const name = `${job.plugin}.wasm`;
  const warnings = [...built.warnings];
  let document: string | undefined;
  if (discover) {
    ctx.notify("progress", { step: "discover", text: "reading the component's rpc.discover" });
    const found = await discover(job.plugin, await Deno.readFile(built.artifact)).catch((e) => ({
      ok: false as const,
      reason: (e as Error).message,
    }));
    if (found.ok) document = JSON.stringify(found.document, null, 2) + "\n";
    else warnings.push(`the component answers no rpc.discover document: ${found.reason}`);
  }
  try {
    await Deno.copyFile(built.artifact, join(dir, name));
    if (document !== undefined) await Deno.writeTextFile(join(dir, "discover.json"), document);
    // a build that answered survives a power cut: its bytes, its name, its folder's name
    await syncFile(join(dir, name));
    await syncFolder(dir);
    await syncFolder(job.buildsDir);
  } catch (e) {
    await Deno.remove(dir, { recursive: true }).catch(() => {}); // no half a component
    throw e;
  }
  ctx.log(`built ${basename(built.artifact)} as /state/cargo/builds/${n}/${name}`);
  return {
    wasm: `/state/cargo/builds/${n}/${name}`,
    ...(document === undefined ? {} : { discover: `/state/cargo/builds/${n}/discover.json` }),
    tests: built.tests,
    warnings,
  };
}

/** The package a build resolved, and how many compiled units a build of it has. */
interface Resolved {
  name: string;
  version: string;
  /** Libraries, build scripts and the plugin's test and component: the M of "compiled N/M". */
  units: number;
}

interface Metadata {
  packages: { id: string; name: string; version: string; targets: { kind: string[] }[] }[];
  resolve: { root: string | null; nodes: { id: string }[] } | null;
}

/**
 * Resolves the dependencies offline from `Cargo.lock` and the local cache of
 * crates (making or extending the lock file); only when that fails, cargo
 * goes to the network for what is missing. Checks that the package is named
 * like the plugin.
 */
async function resolveDependencies(
  job: BuildJob,
  config: string[],
  env: Record<string, string>,
  ctx: BuildContext,
): Promise<Resolved> {
  const args = ["metadata", "--format-version", "1", "--filter-platform", WASM_TARGET, ...config];
  ctx.notify("progress", {
    step: "resolve",
    text: "resolving the dependencies offline (Cargo.lock and the local cache of crates)",
  });
  let step = await cargo([...args, "--offline"], job.work, env, ctx);
  if (step.code !== 0) {
    const offline = step;
    ctx.notify("progress", {
      step: "fetch",
      text: "fetching what is not in the local cache of crates from the network",
    });
    step = await cargo(args, job.work, env, ctx);
    if (step.code !== 0) {
      const source = `/plugins/${job.plugin}/source`;
      const shown = (text: string) => text.replaceAll(job.work, source);
      throw new RpcError(
        ErrorCode.BuildFailed,
        `cargo.build: fetching the dependencies failed: ${
          shown(cargoError(offline.stderr))
        } (not in the local cache of crates), and from the network: ${
          shown(cargoError(step.stderr))
        }. Check the names and versions in ${source}/Cargo.toml; a crate that is not in the ` +
          "cache needs the network once, after which builds of it work offline.",
        {
          step: "fetching the dependencies",
          output: tail(shown(`${offline.stderr}\n${step.stderr}`)),
        },
      );
    }
  }
  let metadata: Metadata;
  try {
    metadata = JSON.parse(step.stdout) as Metadata;
  } catch {
    throw buildFailed(
      "resolving the dependencies",
      `cargo metadata printed no JSON:\n${step.stdout}`,
    );
  }
  const byId = new Map(metadata.packages.map((p) => [p.id, p]));
  const root = byId.get(metadata.resolve?.root ?? "");
  if (!root) throw buildFailed("resolving the dependencies", "cargo metadata named no package");
  if (root.name.replaceAll("-", "_") !== job.plugin.replaceAll("-", "_")) {
    throw new RpcError(
      ErrorCode.BuildFailed,
      `cargo.build: /plugins/${job.plugin}/source/Cargo.toml names its package "${root.name}", ` +
        `but a plugin's package has the plugin's name: set name = "${job.plugin}" under [package]`,
      { step: "checking the package", output: "" },
    );
  }
  let units = 0;
  for (const node of metadata.resolve?.nodes ?? []) {
    const scripts = byId.get(node.id)?.targets.filter((t) => t.kind.includes("custom-build"));
    // the plugin itself: its tests and its component; a dependency: its library
    units += (node.id === root.id ? 2 : 1) + (scripts?.length ?? 0);
  }
  return { name: root.name, version: root.version, units };
}

/**
 * A step that cargo itself refused (no compiler message): cargo's first
 * error is in the message, such as a `rust-version` newer than the toolchain.
 */
function cargoFailed(step: string, stderr: string, job: BuildJob): RpcError {
  const shown = (text: string) => text.replaceAll(job.work, `/plugins/${job.plugin}/source`);
  const e = buildFailed(step, shown(stderr));
  e.message = `${e.message}: ${shown(cargoError(stderr))}`;
  return e;
}

/**
 * The first error cargo printed (with the lines that complete it when it
 * ends with a colon), and the last cause it gave for it.
 */
function cargoError(stderr: string): string {
  const lines = stderr.split("\n").map((l) => l.trim());
  const at = lines.findIndex((l) => l.startsWith("error:"));
  let first = at < 0 ? lines.find((l) => l) : lines[at].slice(6).trim();
  if (at >= 0 && first?.endsWith(":")) {
    const more = lines.slice(at + 1);
    const end = more.findIndex((l) => !l);
    first = [first, ...more.slice(0, end < 0 ? more.length : end)].join(" ");
  }
  const causes = lines.lastIndexOf("Caused by:");
  const cause = causes < 0 ? undefined : lines.slice(causes + 1).find((l) => l);
  return [first ?? "cargo failed", cause].filter((t) => t).join(": ");
}

/** Tells the caller `compiled N/M <crate>` as cargo finishes each unit. */
class CompileProgress {
  readonly #seen = new Set<string>();
  readonly #total: number;
  readonly #ctx: NativeContext;

  constructor(total: number, ctx: NativeContext) {
    this.#total = total;
    this.#ctx = ctx;
  }

  /** An artifact cargo reported: fresh ones count, compiled ones are told. */
  artifact(m: CargoMessage): void {
    const kind = m.target?.kind.join(",") ?? "";
    this.#seen.add(`${m.package_id} ${kind} ${m.target?.name} ${m.profile?.test}`);
    if (m.fresh) return;
    const total = Math.max(this.#total, this.#seen.size);
    this.#ctx.notify("progress", {
      step: "compile",
      compiled: this.#seen.size,
      total,
      text: `compiled ${this.#seen.size}/${total} ${m.target?.name}`,
    });
  }
}

/**
 * Runs cargo in a process group of its own, so a stop or a kill reaches
 * rustc, build scripts and the tests too; `ctx.group` tells the host's
 * thread, which sends the signals.
 */
async function cargo(
  args: string[],
  cwd: string,
  env: Record<string, string>,
  ctx: BuildContext,
  progress?: CompileProgress,
  onMessage?: (m: CargoMessage) => void,
): Promise<Step> {
  if (ctx.signal.aborted) throw new Error("cargo was stopped");
  const useSetsid = Deno.build.os === "linux";
  const child = new Deno.Command(useSetsid ? "setsid" : "cargo", {
    args: useSetsid ? ["cargo", ...args] : args,
    cwd,
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  // setsid, not a group leader when spawned, makes the group and execs cargo in place
  ctx.group(child.pid, true);
  const messages: CargoMessage[] = [];
  let stdout = "";
  let stderr = "";
  const readLines = async (stream: ReadableStream<Uint8Array>, onLine: (line: string) => void) => {
    let partial = "";
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      partial += chunk;
      const lines = partial.split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) onLine(line);
    }
    if (partial) onLine(partial);
  };
  await Promise.all([
    readLines(child.stdout, (line) => {
      if (line.startsWith("{")) {
        try {
          const m = JSON.parse(line) as CargoMessage;
          if (typeof m.reason === "string") {
            messages.push(m);
            if (m.reason === "compiler-artifact") progress?.artifact(m);
            onMessage?.(m);
            return;
          }
        } catch {
          // test output that starts with a brace
        }
      }
      stdout += line + "\n";
    }),
    readLines(child.stderr, (line) => {
      stderr += line + "\n";
      ctx.log(line);
    }),
  ]);
  const status = await child.status;
  ctx.group(child.pid, false);
  if (ctx.signal.aborted) throw new Error("cargo was stopped");
  return { code: status.code, stdout, stderr, messages };
}

function rendered(m: CargoMessage): string {
  return m.message?.rendered ?? m.message?.message ?? "";
}

/** The compiler's errors, each once: the tests and the component compile the same code. */
function errorsOf(step: Step): string {
  const errors = step.messages
    .filter((m) => m.reason === "compiler-message" && m.message?.level === "error")
    .map(rendered);
  return [...new Set(errors)].join("\n");
}

/**
 * The compiler's warnings, led by one line per imported method the plugin
 * does not use: the SDK's generated imports are private items whose span is
 * the `import!` line, so rustc reports each unused one there.
 */
export function warningsOf(messages: CargoMessage[]): string[] {
  const unused = new Set<string>();
  const seen = new Set<string>();
  for (const m of messages) {
    if (m.reason !== "compiler-message" || m.message?.level !== "warning") continue;
    const text = rendered(m).trim();
    if (text && !/^\d+ warnings? emitted/.test(m.message.message)) seen.add(text);
    // the lint's code decides; the message only gives the names
    const names = m.message.code?.code === "dead_code"
      ? m.message.message.match(
        /^(?:function|method|associated function)s? (.+) (?:is|are) never used$/,
      )
      : null;
    const line = m.message.spans?.find((s) => s.is_primary)?.text?.[0]?.text ?? "";
    const provider = line.match(/import!\s*\(\s*"([a-z0-9_-]+)"\s*\)/)?.[1];
    if (!names || !provider) continue;
    for (const name of names[1].matchAll(/`([^`]+)`/g)) {
      unused.add(
        `unused import: ${provider} ${
          name[1]
        } is imported but never used: remove it from imports/${provider}.json`,
      );
    }
  }
  return [...unused, ...seen];
}

/** Sums libtest's summary lines. */
export function testCounts(stdout: string): { passed: number; failed: number } {
  let passed = 0;
  let failed = 0;
  for (const m of stdout.matchAll(/test result: \w+\. (\d+) passed; (\d+) failed/g)) {
    passed += Number(m[1]);
    failed += Number(m[2]);
  }
  return { passed, failed };
}

/** The release binary of the crate: the bin named like the plugin, or the only bin. */
function pickArtifact(messages: CargoMessage[], plugin: string): string | undefined {
  const bins = messages.filter((m) =>
    m.reason === "compiler-artifact" && m.target?.kind.includes("bin") && !m.profile?.test &&
    m.executable?.endsWith(".wasm")
  );
  const wanted = plugin.replaceAll("-", "_");
  const named = bins.find((m) => m.target?.name.replaceAll("-", "_") === wanted);
  return (named ?? (bins.length === 1 ? bins[0] : undefined))?.executable ?? undefined;
}

/** The interface of `cargo`. */
const DISCOVER = {
  openrpc: "1.2.6",
  info: { title: "cargo", version: "0.1.0" },
  methods: [{
    name: "build",
    summary: "Build /plugins/<plugin>/source/ into a tested release component.",
    description:
      "Copies the source once, resolves its dependencies from Cargo.lock and the local cache of " +
      "crates (the network only for what is missing; the lock file is kept in the source folder), " +
      "runs its tests under WASI in the release profile, and builds the release wasm32-wasip2 " +
      "component to /state/cargo/builds/<n>/<plugin>.wasm. It does not activate it: call " +
      "core.activate next; `discover` is the path of its rpc.discover document, from which a " +
      "consumer's import can be made first. A failed step is the error -32004 with its output " +
      "and data.step.",
    paramStructure: "by-name",
    params: [{
      name: "plugin",
      required: true,
      schema: { type: "string" },
      description: "The plugin to build.",
    }],
    result: {
      name: "Built",
      schema: {
        type: "object",
        properties: {
          wasm: { type: "string" },
          discover: { type: "string" },
          tests: {
            type: "object",
            properties: {
              passed: { type: "integer", minimum: 0 },
              failed: { type: "integer", minimum: 0 },
              output: { type: "string" },
            },
            required: ["passed", "failed", "output"],
          },
          warnings: { type: "array", items: { type: "string" } },
        },
        required: ["wasm", "tests", "warnings"],
      },
    },
  }],
};
