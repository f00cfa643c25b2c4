/**
 * `sausage test`: the runner of `wasm32-wasip2` binaries for cargo
 * (`CARGO_TARGET_WASM32_WASIP2_RUNNER="sausage test"`), PROTOCOL section 11.
 *
 * The target aborts on a panic, so one panicking test would end a whole
 * test binary. The runner lists the tests of a libtest binary and runs each
 * in its own instance, in parallel, then reports in libtest's format, so
 * cargo shows its usual summary.
 *
 * Each test gets an empty temporary world as `/`, the package folder at its
 * host path (fixtures through `CARGO_MANIFEST_DIR`), its own `/proc`,
 * `/self` and `/run`, and `/` as its current folder. The runner answers
 * `core.lock`, `core.unlock`, `core.notify` and `core.log`; a call to a
 * plugin fails, since a test has no other plugins. A binary that is not a
 * test harness (`cargo run`) runs once in the same setting.
 *
 * @module
 */
import { basename, join, resolve } from "node:path";
import { uuidv7 } from "uuidv7";
import { ComponentCache, type LoadedComponent } from "../components/cache.ts";
import { CoreFiles } from "../core_files.ts";
import { PROTOCOL_MD } from "../embedded.ts";
import { Journal } from "../journal.ts";
import { CoreApi, NO_ANSWER } from "../core_api.ts";
import { classify, error, ErrorCode, type Id, result, RpcError } from "../jsonrpc.ts";
import { CORE, splitMethod } from "../names.ts";
import { toRpcError } from "../router.ts";
import { LockTable } from "../locks.ts";
import { WorkerPool } from "../pool.ts";
import { Process } from "../process.ts";
import { parseMessageLine } from "../../runtime/stdio.ts";
import type { ExitReport } from "../../runtime/messages.ts";
import { type FileSystem, FileSystemServer } from "../../vfs/mod.ts";

/** Options of `sausage test`: a binary on disk, run for cargo. */
export interface TestRunOptions {
  /** The `.wasm` cargo built. */
  file: string;
  /** The arguments cargo passes (filters, `--ignored`, `--list`, ...). */
  args: string[];
  cacheDir: string;
  /** Where the report goes (default: stdout). */
  write?: (text: string) => void;
}

/** libtest's exit code when a test failed. */
export const TESTS_FAILED = 101;

/** What one instance did. */
interface InstanceRun {
  report: ExitReport;
  /** Stdout lines that were not JSON-RPC messages, and stderr, interleaved as they came. */
  output: string;
}

/** A test harness has libtest's summary line among its data. */
export function isTestHarness(bytes: Uint8Array): boolean {
  const needle = new TextEncoder().encode("test result: ");
  outer: for (let i = 0; i + needle.length <= bytes.length; i++) {
    if (bytes[i] !== needle[0]) continue;
    for (let j = 1; j < needle.length; j++) if (bytes[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** One run of the runner: a pool, a journal in memory, and a folder per test. */
class TestRun {
  readonly pool: WorkerPool;
  readonly journal = new Journal(":memory:");
  readonly locks = new LockTable();
  /** The core API of a test: its own locks and journal, and no world. */
  readonly #core = new CoreApi({
    locks: this.locks,
    journal: this.journal,
    alone: "in a test: a test has no other plugins or processes",
    ownEntriesOnly: true,
  });
  readonly #component: LoadedComponent;
  readonly #root: string;
  readonly #packageDir: string | undefined;
  readonly #package: string;
  readonly #protocol: string;
  readonly #argv0: string;
  readonly #layers = new Map<string, FileSystem>();
  #next = 0;

  readonly #env: [string, string][];

  constructor(
    file: string,
    component: LoadedComponent,
    root: string,
    env: Record<string, string>,
    cacheDir: string,
    protocol: string,
  ) {
    this.#argv0 = basename(file);
    this.#component = component;
    this.#root = root;
    const manifest = env.CARGO_MANIFEST_DIR;
    this.#packageDir = manifest ? resolve(manifest) : undefined;
    this.#env = Object.entries(env).filter(([k]) => /^(CARGO|RUST)_/.test(k));
    this.#package = (env.CARGO_PKG_NAME ?? "test").toLowerCase().replace(/[^a-z0-9_-]/g, "-");
    this.#protocol = protocol;
    const dirs = [root, ...(this.#packageDir ? [this.#packageDir] : [])];
    this.pool = new WorkerPool({
      permissions: { read: [...dirs, cacheDir], write: dirs, net: true },
      files: new FileSystemServer((name) => this.#layers.get(name)),
    });
  }

  /** Runs the binary once with `args`; stdout text and stderr are collected or passed on. */
  async run(
    args: string[],
    label: string,
    live?: { stdout(t: string): void; stderr(t: string): void },
  ): Promise<InstanceRun> {
    const id = this.#next++;
    const world = join(this.#root, `t${id}`);
    await Deno.mkdir(world);
    const pid = `${this.#package}-${uuidv7()}`;
    const process = new Process({
      pid,
      plugin: this.#package,
      version: this.#component.hash,
      method: label,
      params: {},
      parent: null,
      origin: null,
      write: (m) => this.pool.write(pid, encoder.encode(JSON.stringify(m) + "\n")),
    });
    const files = new CoreFiles({
      protocol: this.#protocol,
      processes: () => [process],
      locks: this.locks,
      journal: this.journal,
      worldRoot: world,
    });
    files.add(process);
    const layers = {
      proc: `proc:${id}`,
      run: `run:${id}`,
      self: `self:${id}`,
      world: `world:${id}`,
    };
    this.#layers.set(layers.proc, files.proc);
    this.#layers.set(layers.run, files.run);
    this.#layers.set(layers.self, files.layer(`self:${pid}`)!);
    this.#layers.set(layers.world, files.world);
    this.journal.track(pid);

    let output = "";
    let partial = "";
    const done = Promise.withResolvers<ExitReport>();
    const onStdoutLine = (line: string) => {
      const parsed = line.trim().startsWith("{") ? parseMessageLine(encoder.encode(line)) : null;
      if (parsed) {
        this.#answer(process, parsed.message);
        return;
      }
      if (live) live.stdout(line + "\n");
      else output += line + "\n";
    };
    const env: [string, string][] = [
      ...this.#env,
      ["SAUSAGE_PID", pid],
      ["SAUSAGE_PLUGIN", this.#package],
      ["SAUSAGE_PARENT", "test"],
    ];
    this.pool.spawn(this.#component, {
      pid,
      env,
      args: [this.#argv0, ...args],
      cwd: "/",
      files: {
        world,
        layers,
        mounts: this.#packageDir
          ? [{ guestPath: this.#packageDir, hostPath: this.#packageDir }]
          : [],
      },
      stdio: "raw",
    }, {
      raw: (fd, data) => {
        const text = decoder.decode(data, { stream: true });
        if (fd === 2) {
          for (const line of text.split("\n")) {
            if (line) this.journal.append(pid, this.#package, "stderr", line);
          }
          if (live) live.stderr(text);
          else output += text;
          return;
        }
        partial += text;
        const lines = partial.split("\n");
        partial = lines.pop() ?? "";
        for (const line of lines) onStdoutLine(line);
      },
      exit: (report) => {
        if (partial) onStdoutLine(partial);
        done.resolve(report);
      },
    });
    const report = await done.promise;
    for (const name of Object.values(layers)) this.#layers.delete(name);
    this.locks.releaseAll(pid);
    this.journal.untrack(pid);
    await Deno.remove(world, { recursive: true }).catch(() => {});
    return { report, output };
  }

  /**
   * A message from a test: the core API without a world (locks,
   * notifications and the journal; a test has no other plugins or
   * processes), and a refusal for a call to a plugin.
   */
  #answer(process: Process, message: unknown): void {
    const c = classify(message);
    if (c.kind !== "request" && c.kind !== "notification") return;
    const id: Id | undefined = c.kind === "request" ? c.id : undefined;
    const fail = (e: unknown) => {
      if (id !== undefined) process.deliver(error(id, toRpcError(e)));
    };
    const split = splitMethod(c.method);
    if (split?.target !== CORE) {
      return fail(
        new RpcError(
          ErrorCode.NoSuchPlugin,
          `${c.method} cannot be called in a test: a test has no other plugins (the test runner ` +
            "answers core.lock, core.unlock, core.notify and core.log)",
        ),
      );
    }
    if (id === undefined) {
      this.#core.notify(process, split.method, c.params).catch(() => {});
      return;
    }
    this.#core.request(process, id, split.method, c.params).then((value) => {
      if (value !== NO_ANSWER) process.deliver(result(id, value));
    }, fail);
  }

  close(): void {
    this.pool.close();
    this.journal.close();
  }
}

/** Arguments that select tests, passed on to the listing. */
function listingArgs(args: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (["--nocapture", "--no-capture", "--show-output", "-q", "--quiet"].includes(a)) continue;
    if (a === "--test-threads" || a === "--format" || a === "--color" || a === "-Z") {
      i++;
      continue;
    }
    if (/^--(test-threads|format|color)=/.test(a)) continue;
    out.push(a);
  }
  return out;
}

function concurrency(args: string[], workers: number): number {
  for (let i = 0; i < args.length; i++) {
    const m = args[i].match(/^--test-threads(?:=(\d+))?$/);
    if (m) return Math.max(1, Number(m[1] ?? args[i + 1]) || 1);
  }
  return workers * 2;
}

/** Runs a cargo-built binary; returns the exit code for cargo. */
export async function runTests(options: TestRunOptions): Promise<number> {
  const write = options.write ?? ((t: string) => Deno.stdout.writeSync(encoder.encode(t)));
  const bytes = await Deno.readFile(options.file);
  const cache = new ComponentCache(options.cacheDir);
  cache.onWarning = (m) => console.error(`sausage: ${m}`);
  const component = await cache.load(bytes, options.file).finally(() => cache.close());
  return await runTestBinary(component, {
    file: options.file,
    harness: isTestHarness(bytes),
    args: options.args,
    env: Deno.env.toObject(),
    cacheDir: options.cacheDir,
    write,
    stderr: (t) => Deno.stderr.writeSync(encoder.encode(t)),
  });
}

/** A test binary to run, already loaded. */
export interface TestBinary {
  /** Its path: argv[0] is its base name. */
  file: string;
  /** Whether it is a libtest harness (`isTestHarness`); else it runs once, as `cargo run` would. */
  harness: boolean;
  /** What cargo would pass: test name filters, `--ignored`, `--list`, ... */
  args: string[];
  /**
   * The variables cargo gives a test: `CARGO_MANIFEST_DIR` (the package
   * folder, mounted at its path), `CARGO_PKG_NAME` (the plugin's name in its
   * pid); the tests see those named `CARGO_*` and `RUST_*`.
   */
  env: Record<string, string>;
  cacheDir: string;
  /** Gets the report in libtest's format. */
  write(text: string): void;
  /** Gets a binary's stderr when it runs once. */
  stderr(text: string): void;
  /** Ends every instance: the run rejects with the signal's reason. */
  signal?: AbortSignal;
}

/**
 * Runs a loaded test binary, each test in its own instance, and reports in
 * libtest's format; returns the exit code libtest would (`TESTS_FAILED` when
 * a test failed). The host's `cargo.build` calls it with its own component
 * cache; `sausage test` with one of its own.
 */
export async function runTestBinary(component: LoadedComponent, b: TestBinary): Promise<number> {
  b.signal?.throwIfAborted();
  const root = await Deno.makeTempDir({ prefix: "sausage-test-" });
  const protocol = await Deno.readTextFile(PROTOCOL_MD);
  const run = new TestRun(b.file, component, root, b.env, b.cacheDir, protocol);
  const aborted = Promise.withResolvers<never>();
  const onAbort = () => aborted.reject(b.signal?.reason);
  b.signal?.addEventListener("abort", onAbort, { once: true });
  const work = (async () => {
    await run.pool.start();
    if (!b.harness || b.args.includes("--list")) {
      // not a test harness (cargo run), or a listing cargo asked for: one instance, passed through
      const single = await run.run(b.args, "main", { stdout: b.write, stderr: b.stderr });
      return single.report.reason === "exited" ? single.report.status ?? 1 : 134;
    }
    return await runHarness(run, b.args, b.write);
  })();
  try {
    return await Promise.race([work, aborted.promise]);
  } finally {
    b.signal?.removeEventListener("abort", onAbort);
    run.close(); // ends the instances of an aborted run too
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
}

type Outcome = "ok" | "FAILED" | "ignored";

async function runHarness(
  run: TestRun,
  args: string[],
  write: (t: string) => void,
): Promise<number> {
  const started = performance.now();
  const listing = await run.run([...listingArgs(args), "--list", "--format", "terse"], "--list");
  if (listing.report.reason !== "exited" || listing.report.status !== 0) {
    write(listing.output);
    write(
      `error: the test binary could not list its tests (${
        listing.report.detail ?? `exit ${listing.report.status}`
      })\n`,
    );
    return TESTS_FAILED;
  }
  const names = (output: string) =>
    output.split("\n").filter((l) => l.endsWith(": test")).map((l) => l.slice(0, -6));
  const tests = names(listing.output);
  const all = listingArgs(args).length > 0
    ? names((await run.run(["--list", "--format", "terse"], "--list")).output).length
    : tests.length;
  const ignoredFlag = args.includes("--include-ignored")
    ? ["--include-ignored"]
    : args.includes("--ignored")
    ? ["--ignored"]
    : [];
  write(`\nrunning ${tests.length} test${tests.length === 1 ? "" : "s"}\n`);
  const results = new Map<string, { outcome: Outcome; output: string; note?: string }>();
  let index = 0;
  const worker = async () => {
    while (index < tests.length) {
      const name = tests[index++];
      const r = await run.run(
        [name, "--exact", "--nocapture", "--test-threads=1", ...ignoredFlag],
        name,
      );
      let outcome: Outcome = "FAILED";
      let note: string | undefined;
      // libtest's summary is its last line; with --nocapture the test's own output comes before
      // it and may say anything, so only the last summary counts
      const summary = [
        ...r.output.matchAll(/^test result: \w+\. (\d+) passed; (\d+) failed; (\d+) ignored/gm),
      ].at(-1);
      if (r.report.reason === "exited" && r.report.status === 0 && summary) {
        outcome = summary[1] === "1" ? "ok" : summary[3] === "1" ? "ignored" : "FAILED";
        if (outcome === "ignored" && r.output.includes(`test ${name} - should panic ... ignored`)) {
          note = "#[should_panic] is not supported: WASI cannot catch a panic";
        }
      }
      results.set(name, { outcome, output: testOutput(r, name), note });
      write(`test ${name} ... ${outcome}${note ? `, ${note}` : ""}\n`);
    }
  };
  await Promise.all(
    Array.from(
      { length: Math.min(concurrency(args, run.pool.workers), tests.length || 1) },
      worker,
    ),
  );
  const failed = tests.filter((t) => results.get(t)?.outcome === "FAILED");
  const passed = tests.filter((t) => results.get(t)?.outcome === "ok").length;
  const ignored = tests.filter((t) => results.get(t)?.outcome === "ignored").length;
  if (failed.length > 0) {
    write("\nfailures:\n\n");
    for (const name of failed) write(`---- ${name} stdout ----\n${results.get(name)!.output}\n`);
    write("\nfailures:\n");
    for (const name of failed) write(`    ${name}\n`);
  }
  const seconds = ((performance.now() - started) / 1000).toFixed(2);
  write(
    `\ntest result: ${
      failed.length ? "FAILED" : "ok"
    }. ${passed} passed; ${failed.length} failed; ` +
      `${ignored} ignored; 0 measured; ${Math.max(0, all - tests.length)} filtered out; ` +
      `finished in ${seconds}s\n\n`,
  );
  return failed.length ? TESTS_FAILED : 0;
}

/** The test's own output, without libtest's lines around it. */
function testOutput(r: InstanceRun, name: string): string {
  const text = r.output
    .replace(/^\nrunning 1 test\n/, "")
    .replace(`test ${name} ... `, "")
    .replace(/\n*test result: [^\n]*\n*$/, "\n");
  const crash = r.report.reason === "exited"
    ? ""
    : `(${r.report.reason}: ${r.report.detail ?? "no detail"})\n`;
  return text + crash;
}
