/**
 * The build itself, in the build worker (`build_worker.ts`): the package
 * made standalone, its dependencies resolved offline first, then one
 * `cargo build` of the tests and the release component, each test binary
 * handed to the host as soon as cargo reports it linked. It imports nothing
 * of the host, so the worker starts in a few milliseconds.
 *
 * @module
 */
import { join } from "node:path";
import { ErrorCode, RpcError } from "../jsonrpc.ts";
import type { NativeContext } from "../native.ts";
import { WASM_TARGET } from "./toolchain.ts";

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
interface Step {
  code: number;
  stdout: string;
  stderr: string;
  messages: CargoMessage[];
}

export interface CargoMessage {
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

export function tail(text: string): string {
  return text.length > MAX_OUTPUT
    ? `… (${text.length - MAX_OUTPUT} bytes cut)\n${text.slice(-MAX_OUTPUT)}`
    : text;
}

export function buildFailed(
  step: string,
  output: string,
  extra: Record<string, unknown> = {},
): RpcError {
  return new RpcError(ErrorCode.BuildFailed, `cargo.build: ${step} failed`, {
    step,
    output: tail(output),
    ...extra,
  });
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
