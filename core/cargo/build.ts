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
import { findWasmToolchain, ToolchainMissing } from "./toolchain.ts";
import { sdkForBuild, SdkUnusable } from "./sdk.ts";
import { afterBuild } from "../components/cache_gc.ts";
import type { World } from "../world.ts";
import { isNoSpace, probeRoom, type Room } from "../disk_room.ts";
import { syncFile, syncFolder } from "../durable.ts";
import type { ComponentCache } from "../components/cache.ts";
import { BuildSlots } from "./slots.ts";
import { isTestHarness, runTestBinary, TESTS_FAILED } from "./test_run.ts";
import {
  buildFailed,
  type BuildJob,
  type BuildResult,
  type Built,
  type FromBuilder,
  tail,
  testCounts,
  type TestTarget,
} from "./compile.ts";

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

/** After a stop, cargo gets this long to end before SIGKILL. */
const TERM_GRACE_MS = 2000;

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
          const copied = Deno.remove(job.work, { recursive: true }).catch(() => {})
            .then(() => copySource(job.source, job.work));
          // the builder's worker starts while the source is copied
          const result = await deliver(
            job,
            await runInWorker(job, ctx, options.cache, copied),
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

/**
 * Runs a job in a worker with narrow permissions, once `copied` (the
 * source's copy) resolves; ctx gets its logs and progress. The worker may only start `setsid` and `cargo`, and Deno lets
 * only a thread with full run permission signal a process group, so the
 * host's thread ends cargo's group on a stop or a kill. Each test binary
 * runs on the host as soon as cargo has linked it, while cargo builds the
 * rest; a failing one ends the build.
 */
function runInWorker(
  job: BuildJob,
  ctx: NativeContext,
  cache: ComponentCache,
  copied: Promise<void>,
): Promise<Built> {
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
  copied.catch(fail); // a copy that fails ends the build, whether the worker is ready or not
  const tests = new TestRuns(ctx, cache);
  worker.onmessage = (e: MessageEvent<FromBuilder | { t: "ready" }>) => {
    const m = e.data;
    if (m.t === "ready") copied.then(() => ended || worker.postMessage({ t: "job", job }), fail);
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
