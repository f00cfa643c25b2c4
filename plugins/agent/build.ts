/**
 * Builds the agent the host ships (`deno task build:agent`): this crate,
 * for `wasm32-wasip2` in release mode, against the SDK in `sdk/`, into
 * `dist/agent.wasm`, with `dist/agent.json` saying what it was built from
 * (`tests/agent_install_test.ts` checks that it is fresh).
 *
 * The build runs in a stage inside the target folder: the crate's files, and
 * the SDK as the host ships it in `.sdk/`, inside the crate's workspace
 * root. Cargo hashes a path dependency inside the workspace root by its
 * relative path (one outside by its absolute path, which would change every
 * symbol name with the checkout's folder), and the paths rustc writes into
 * the component (panic locations) are mapped to fixed ones, where they are
 * in a world (`/plugins/agent/source`, `/plugins/cargo/sdk`): so a build in
 * another checkout gives the same bytes.
 *
 * @module
 */
import { dirname, join, resolve } from "node:path";
import { findWasmToolchain, WASM_TARGET } from "../../core/cargo/toolchain.ts";
import {
  AGENT_CRATE,
  AGENT_DIST,
  type AgentManifest,
  agentSourceHash,
  readAgentSource,
} from "../../core/shipped_agent.ts";
import { sdkFiles, sdkVersion } from "../../core/cargo/sdk.ts";
import { sha256Hex } from "../../core/components/cache.ts";

/** Options of {@linkcode buildAgent}; tests build a copy elsewhere. */
export interface AgentBuildOptions {
  /** The crate folder (default: this one). */
  crate?: string;
  /** Cargo's target folder (default: `<crate>/target`). */
  targetDir?: string;
  /** Where `agent.wasm` and `agent.json` go (default: `<crate>/dist`; null: nowhere). */
  dist?: string | null;
  /** Cargo's messages on stderr (default true). */
  verbose?: boolean;
}

/** What {@linkcode buildAgent} built. */
export interface AgentBuild {
  /** The component cargo wrote. */
  artifact: string;
  wasm: Uint8Array;
  manifest: AgentManifest;
}

/** `--remap-path-prefix` for each folder whose path rustc could write into the component. */
export function remapFlags(folders: { crate: string; sdk: string; targetDir: string }): string[] {
  const home = Deno.env.get("CARGO_HOME") ??
    join(Deno.env.get("HOME") ?? Deno.env.get("USERPROFILE") ?? "/", ".cargo");
  // rustc applies the last prefix that matches: the most specific folder comes last
  return [
    [home, "/cargo"],
    [folders.targetDir, "/target"],
    [folders.crate, "/plugins/agent/source"],
    [folders.sdk, "/plugins/cargo/sdk"],
  ].map(([from, to]) => `--remap-path-prefix=${resolve(from)}=${to}`);
}

/**
 * Builds the crate and, unless `dist` is null, writes `agent.wasm` (by a
 * rename, so it is always whole) and `agent.json`.
 *
 * @example
 * ```ts
 * const built = await buildAgent();
 * console.log(built.manifest.wasm); // the sha256 of dist/agent.wasm
 * ```
 */
export async function buildAgent(options: AgentBuildOptions = {}): Promise<AgentBuild> {
  const crate = resolve(options.crate ?? AGENT_CRATE);
  const targetDir = resolve(options.targetDir ?? join(crate, "target"));
  const dist = options.dist === undefined ? join(crate, "dist") : options.dist;
  const toolchain = await findWasmToolchain();
  const before = await readAgentSource(crate);
  const { stage, sdk } = await stageAgent(join(targetDir, "stage"), before);
  const args = [
    "build",
    "--release",
    "--target",
    WASM_TARGET,
    "--message-format",
    "json-render-diagnostics",
    ...sdkPatch(sdk),
  ];
  const out = await new Deno.Command("cargo", {
    args,
    cwd: stage,
    env: {
      ...toolchain.env,
      CARGO_TARGET_DIR: targetDir,
      // the encoded form keeps paths with spaces whole; it overrides RUSTFLAGS and build.rustflags
      CARGO_ENCODED_RUSTFLAGS: remapFlags({ crate: stage, sdk, targetDir }).join("\x1f"),
    },
    stdout: "piped",
    stderr: options.verbose === false ? "piped" : "inherit",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  if (!out.success) {
    const detail = options.verbose === false ? new TextDecoder().decode(out.stderr) : "";
    throw new Error(`cargo build of the agent failed (in ${crate})\n${detail}`);
  }
  const artifact = text.split("\n").flatMap((line) => {
    if (!line.startsWith("{")) return [];
    const m = JSON.parse(line) as { reason?: string; executable?: string | null };
    return m.reason === "compiler-artifact" && m.executable ? [m.executable] : [];
  }).pop();
  if (!artifact) throw new Error(`cargo built no ${WASM_TARGET} binary in ${crate}`);
  const wasm = await Deno.readFile(artifact);
  // a Cargo.lock that cargo brought up to date goes back to the crate
  const lock = await Deno.readFile(join(stage, "Cargo.lock"));
  if (!sameBytes(lock, before.get("Cargo.lock"))) {
    await Deno.writeFile(join(crate, "Cargo.lock"), lock);
  }
  // read again after the build: an edit meanwhile would make agent.json name a
  // source the component was not built from
  const after = await readAgentSource(crate);
  const edited = [...new Set([...before.keys(), ...after.keys()])].filter((path) =>
    path !== "Cargo.lock" && !sameBytes(before.get(path), after.get(path))
  );
  if (edited.length > 0) {
    throw new Error(
      `the agent's source changed while it was built (${edited.join(", ")}): build it again`,
    );
  }
  const manifest: AgentManifest = {
    source: agentSourceHash(after, sdkVersion(await sdkFiles())),
    wasm: await sha256Hex(wasm),
  };
  if (dist !== null) {
    await Deno.mkdir(dist, { recursive: true });
    const tmp = join(dist, `.agent-${crypto.randomUUID()}.tmp`);
    await Deno.writeFile(tmp, wasm);
    await Deno.rename(tmp, join(dist, "agent.wasm"));
    await Deno.writeTextFile(join(dist, "agent.json"), JSON.stringify(manifest, null, 2) + "\n");
  }
  return { artifact, wasm, manifest };
}

/**
 * Lays out a stage of the agent's crate in `stage`: its files (`source`, by
 * default read from the crate now) and the SDK as the host ships it in
 * `.sdk/`. Cargo runs there with {@linkcode sdkPatch}.
 *
 * @example
 * ```ts
 * const { stage, sdk } = await stageAgent("/tmp/agent-stage");
 * console.log(stage, sdkPatch(sdk));
 * ```
 */
export async function stageAgent(
  stage: string,
  source?: Map<string, Uint8Array>,
): Promise<{ stage: string; sdk: string }> {
  await writeStage(stage, source ?? await readAgentSource(AGENT_CRATE), await sdkFiles());
  return { stage, sdk: join(stage, ".sdk") };
}

/** Cargo's arguments that point `sausage-plugin = "0.1"` at the staged SDK. */
export function sdkPatch(sdk: string): string[] {
  return [
    "--config",
    `patch.crates-io.sausage-plugin.path=${JSON.stringify(join(sdk, "sausage-plugin"))}`,
  ];
}

/** Lays out the stage: the crate's files (nothing else of an earlier stage) and the SDK in `.sdk/`. */
async function writeStage(
  stage: string,
  source: Map<string, Uint8Array>,
  sdk: Map<string, Uint8Array>,
): Promise<void> {
  await Deno.remove(join(stage, "src"), { recursive: true }).catch(() => {});
  await Deno.remove(join(stage, ".sdk"), { recursive: true }).catch(() => {});
  const files: [string, Uint8Array][] = [
    ...source,
    ...[...sdk].map(([path, bytes]) => [join(".sdk", path), bytes] as [string, Uint8Array]),
  ];
  for (const [path, bytes] of files) {
    await Deno.mkdir(dirname(join(stage, path)), { recursive: true });
    await Deno.writeFile(join(stage, path), bytes);
  }
}

function sameBytes(a: Uint8Array | undefined, b: Uint8Array | undefined): boolean {
  return a !== undefined && b !== undefined && a.length === b.length &&
    a.every((x, i) => x === b[i]);
}

if (import.meta.main) {
  const started = performance.now();
  const built = await buildAgent().catch((e) => {
    console.error(`build:agent: ${e instanceof Error ? e.message : e}`);
    Deno.exit(1);
  });
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  const shown = (path: string) => path.replace(dirname(dirname(AGENT_CRATE)) + "/", "");
  console.log(`built ${shown(built.artifact)} in ${seconds} s (${built.wasm.length} bytes)`);
  console.log(`wrote ${shown(join(AGENT_DIST, "agent.wasm"))} (sha256 ${built.manifest.wasm})`);
  console.log(
    `wrote ${shown(join(AGENT_DIST, "agent.json"))} (source ${built.manifest.source}: ` +
      "Cargo.toml, Cargo.lock, src/ and the SDK's version)",
  );
}
