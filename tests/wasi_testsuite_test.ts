/**
 * The public WASI test suite (WebAssembly/wasi-testsuite, its prebuilt
 * `wasm32-wasip1` tests in `../shared/wasi-testsuite/`) run with
 * `sausage run`, by the suite's own rules (`adapters/wasmtime.py`): `--env`
 * for each variable, the test's `root` folder at `/`, its args, and the
 * expected exit code and stdout. Each test is wrapped once per machine into
 * a `wasi:cli/command` component with jco's preview1 adapter and cached under
 * `tests/plugins/target/wasi-testsuite/`.
 *
 * The test fails when a test outside {@linkcode EXPECTED_FAILURES} fails, and
 * when one inside it passes, so that the list stays true.
 *
 * Run it alone: `deno test --allow-all --unstable-worker-options tests/wasi_testsuite_test.ts`
 * (set `WASI_TESTSUITE` to use another copy of the suite).
 *
 * @module
 */
import assert from "node:assert/strict";
import { componentNew } from "@bytecodealliance/jco";
import { basename, join } from "node:path";
import { ComponentCache } from "../core/components/cache.ts";
import { TEST_CACHE_DIR } from "./world.ts";

/** Where the suite is looked for without `WASI_TESTSUITE`: beside the checkout. */
const BESIDE = new URL("../../shared/wasi-testsuite/", import.meta.url).pathname;
const SUITE = Deno.env.get("WASI_TESTSUITE") ?? (() => {
  try {
    return Deno.statSync(join(BESIDE, "tests")).isDirectory ? BESIDE : undefined;
  } catch {
    return undefined;
  }
})();
if (SUITE === undefined) {
  console.error(
    `wasi-testsuite: ignored, the suite is not in ${BESIDE}: put its branch ` +
      "prod/testsuite-base (github.com/WebAssembly/wasi-testsuite) there, or set WASI_TESTSUITE",
  );
}
const MAIN = new URL("../main.ts", import.meta.url).pathname;
const WRAPPED = new URL("./plugins/target/wasi-testsuite/", import.meta.url).pathname;
const LANGUAGES = ["assemblyscript", "c", "rust"];
/** Tests run at once: the machine of CI has 2 cores. */
const CONCURRENCY = 2;

/**
 * The tests that fail, each with its reason: `language/name` → why. Only
 * failures that Wasmtime shares, or that come from jco's preview1 adapter
 * itself (they fail under jco's own shim on Node too), belong here.
 */
const EXPECTED_FAILURES: Record<string, string> = {
  "assemblyscript/args_get-multiple-arguments":
    "jco's preview1 adapter traps on an assertion of its own in args_get (`assertion failed at " +
    "adapter line 2858`), under jco's own shim on Node too",
  "assemblyscript/environ_get-multiple-variables":
    "jco's preview1 adapter traps on an assertion of its own (`assertion failed at adapter line " +
    "2858`), under jco's own shim on Node too",
  "assemblyscript/fd_write-to-invalid-fd":
    "jco's preview1 adapter does not give the errno the test expects for an fd it does not " +
    "have; the test aborts under jco's own shim on Node too",
  "assemblyscript/proc_exit-failure":
    "the adapter maps proc_exit(33) to wasi:cli/exit's `err`, and WASI 0.2's exit carries no " +
    "code: the status is 1, with any host",
};

/** A test's `.json` beside its `.wasm`, as the suite's runner reads it. */
interface Spec {
  args?: string[];
  env?: Record<string, string>;
  root?: string;
  exit_code?: number;
  stdout?: string;
}

interface Case {
  id: string;
  wasm: string;
  spec: Spec;
  dir: string;
}

interface Outcome {
  id: string;
  passed: boolean;
  why: string;
  ms: number;
}

async function cases(): Promise<Case[]> {
  const found: Case[] = [];
  for (const language of LANGUAGES) {
    const dir = join(SUITE!, "tests", language, "testsuite", "wasm32-wasip1");
    for await (const entry of Deno.readDir(dir)) {
      if (!entry.isFile || !entry.name.endsWith(".wasm")) continue;
      const name = entry.name.slice(0, -".wasm".length);
      let spec: Spec = {};
      try {
        spec = JSON.parse(await Deno.readTextFile(join(dir, `${name}.json`)));
      } catch (e) {
        if (!(e instanceof Deno.errors.NotFound)) throw e;
      }
      found.push({ id: `${language}/${name}`, wasm: join(dir, entry.name), spec, dir });
    }
  }
  return found.sort((a, b) => a.id.localeCompare(b.id));
}

/** The test as a `wasi:cli/command` component, wrapped once and kept by the hash of its module. */
async function wrapped(adapter: Uint8Array, c: Case): Promise<string> {
  const module = await Deno.readFile(c.wasm);
  const hash = new Uint8Array(await crypto.subtle.digest("SHA-256", module));
  const hex = [...hash.slice(0, 8)].map((b) => b.toString(16).padStart(2, "0")).join("");
  const out = join(WRAPPED, `${c.id.replace("/", "-")}-${hex}.wasm`);
  try {
    await Deno.stat(out);
    return out;
  } catch {
    const component = await componentNew(module, [["wasi_snapshot_preview1", adapter]]);
    await Deno.mkdir(WRAPPED, { recursive: true });
    const tmp = `${out}.${crypto.randomUUID()}.tmp`;
    await Deno.writeFile(tmp, component);
    await Deno.rename(tmp, out);
    return out;
  }
}

/** Copies a test's root folder, writable (the suite's copy may be read-only): tests write into it. */
async function copyTree(from: string, to: string): Promise<void> {
  await Deno.mkdir(to, { recursive: true, mode: 0o755 });
  for await (const entry of Deno.readDir(from)) {
    const source = join(from, entry.name);
    const target = join(to, entry.name);
    if (entry.isDirectory) await copyTree(source, target);
    else if (entry.isSymlink) await Deno.symlink(await Deno.readLink(source), target);
    else {
      await Deno.copyFile(source, target);
      await Deno.chmod(target, 0o644);
    }
  }
}

async function runCase(c: Case, component: string): Promise<Outcome> {
  const started = performance.now();
  const args = ["run", "--cache-dir", TEST_CACHE_DIR];
  for (const [k, v] of Object.entries(c.spec.env ?? {})) args.push("--env", `${k}=${v}`);
  let root: string | undefined;
  if (c.spec.root) {
    root = await Deno.makeTempDir({ prefix: "sausage-wasi-" });
    await copyTree(join(c.dir, c.spec.root), root);
    args.push("--dir", `${root}::/`);
  }
  // the suite's name for argv[0]: the test's file name
  const named = join(await Deno.makeTempDir({ prefix: "sausage-wasi-bin-" }), basename(c.wasm));
  await Deno.symlink(component, named);
  args.push(named, ...(c.spec.args ?? []));
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--no-prompt", "--allow-all", "--unstable-worker-options", MAIN, ...args],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      env: { NO_COLOR: "1" },
    }).output();
    const stdout = new TextDecoder().decode(out.stdout);
    const stderr = new TextDecoder().decode(out.stderr).trim().split("\n").slice(-6).join("\n");
    const code = c.spec.exit_code ?? 0;
    const problems = [];
    if (out.code !== code) problems.push(`exit code ${out.code}, expected ${code}`);
    if (c.spec.stdout !== undefined && stdout !== c.spec.stdout) {
      problems.push(`stdout ${JSON.stringify(stdout)}, expected ${JSON.stringify(c.spec.stdout)}`);
    }
    const why = problems.length ? `${problems.join("; ")}\n    stderr: ${stderr}` : "";
    return { id: c.id, passed: !problems.length, why, ms: performance.now() - started };
  } finally {
    if (root) await Deno.remove(root, { recursive: true });
    await Deno.remove(join(named, ".."), { recursive: true });
  }
}

async function pool<T, R>(items: T[], size: number, f: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await f(items[i]);
    }
  };
  await Promise.all(Array.from({ length: size }, lane));
  return results;
}

Deno.test({
  name: "wasi-testsuite: every test passes under sausage run, but the known failures" +
    (SUITE === undefined ? ` ... ignored (not in ${BESIDE}, and no WASI_TESTSUITE)` : ""),
  ignore: SUITE === undefined,
}, async () => {
  try {
    await Deno.stat(join(SUITE!, "tests"));
  } catch {
    throw new Error(
      `the WASI test suite is not at ${SUITE}: get its branch prod/testsuite-base from ` +
        "github.com/WebAssembly/wasi-testsuite there, or set WASI_TESTSUITE to its folder",
    );
  }
  const started = performance.now();
  const adapter = await Deno.readFile(
    new URL(
      import.meta.resolve("@bytecodealliance/jco").replace(
        /dist\/api\.js$/,
        "lib/wasi_snapshot_preview1.command.wasm",
      ),
    ),
  );
  const all = await cases();
  const components = await pool(all, CONCURRENCY, (c) => wrapped(adapter, c));
  const wrappedAt = performance.now();
  // transpiled here, with jco loaded once, rather than by each `sausage run` (a miss costs seconds)
  const cache = new ComponentCache(TEST_CACHE_DIR);
  try {
    for (const w of components) await cache.load(await Deno.readFile(w), basename(w));
  } finally {
    cache.close();
  }
  const transpiledAt = performance.now();
  const outcomes = await pool(
    all.map((c, i) => [c, components[i]] as const),
    CONCURRENCY,
    ([c, w]) => runCase(c, w),
  );
  const seconds = (performance.now() - started) / 1000;
  const passed = outcomes.filter((o) => o.passed).length;
  const slowest = [...outcomes].sort((a, b) => b.ms - a.ms).slice(0, 3)
    .map((o) => `${o.id} ${(o.ms / 1000).toFixed(1)} s`);
  console.log(
    `wasi-testsuite: ${passed} of ${outcomes.length} pass in ${seconds.toFixed(1)} s ` +
      `(wrapping ${((wrappedAt - started) / 1000).toFixed(1)} s, ` +
      `transpiling ${((transpiledAt - wrappedAt) / 1000).toFixed(1)} s; ` +
      `slowest: ${slowest.join(", ")})`,
  );
  const unexpected = outcomes.filter((o) => !o.passed && !(o.id in EXPECTED_FAILURES));
  const fixed = outcomes.filter((o) => o.passed && o.id in EXPECTED_FAILURES);
  const unknown = Object.keys(EXPECTED_FAILURES).filter((id) => !all.some((c) => c.id === id));
  const report = [
    ...unexpected.map((o) => `${o.id} fails: ${o.why}`),
    ...fixed.map((o) => `${o.id} passes now: remove it from EXPECTED_FAILURES`),
    ...unknown.map((id) => `${id} is in EXPECTED_FAILURES but not in the suite`),
  ];
  assert.ok(report.length === 0, report.join("\n"));
});
