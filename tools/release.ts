/**
 * `deno task release`: the one executable for each platform Sausage ships
 * on, named `sausage-<version>-<target>`, and a `SHA256SUMS` beside them
 * (the format `sha256sum -c` checks).
 *
 * ```text
 * deno task release [--target TARGET]... [--denort-dir DIR] [--offline] [--out DIR]
 * ```
 *
 * Each build is `deno task compile`'s own command (its flags and
 * `--include`s, read from `deno.json`) with `--target`. `deno compile`
 * puts the program on a copy of Deno's runtime, `denort`, built for the
 * target: it downloads it from dl.deno.land, unless `--denort-dir` holds it
 * as `denort-<target>` (unzipped, of the same Deno version), or `DENORT_BIN`
 * names one for this machine's own target. Every runtime is found, and
 * checked to be an executable of its target and of this Deno's version
 * (and not the full `deno`) before anything is built, and the one of this
 * machine's target is run once built. Relative paths are taken from where
 * the command was typed (`deno task` keeps it in `INIT_CWD`).
 *
 * Exit codes: 0 built; 1 a runtime is missing or wrong, or a build failed;
 * 2 bad arguments.
 *
 * @module
 */
import { basename, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { SAUSAGE_VERSION } from "../cli/version.ts";

/** The platforms of a release, as `deno compile --target` names them. */
export const RELEASE_TARGETS = [
  "x86_64-unknown-linux-gnu",
  "aarch64-unknown-linux-gnu",
  "x86_64-apple-darwin",
  "aarch64-apple-darwin",
] as const;

/** One platform of {@linkcode RELEASE_TARGETS}. */
export type ReleaseTarget = (typeof RELEASE_TARGETS)[number];

/** The file name of the executable for `target`. */
export function releaseName(target: ReleaseTarget, version: string = SAUSAGE_VERSION): string {
  return `sausage-${version}-${target}`;
}

/**
 * The arguments of `deno` that build the executable for `target` into
 * `output`: those of the `compile` task, its `--output` replaced.
 *
 * @example
 * ```ts
 * const task = "deno compile --allow-read --include PROTOCOL.md --output dist/sausage main.ts";
 * releaseCompileArgs(task, "aarch64-apple-darwin", "out/s");
 * // ["compile", "--allow-read", "--include", "PROTOCOL.md", "--target",
 * //  "aarch64-apple-darwin", "--output", "out/s", "main.ts"]
 * ```
 */
export function releaseCompileArgs(
  compileTask: string,
  target: ReleaseTarget,
  output: string,
): string[] {
  const words = compileTask.trim().split(/\s+/);
  if (words[0] !== "deno" || words[1] !== "compile") {
    throw new Error(`the compile task is not a deno compile command: ${compileTask}`);
  }
  const args = words.slice(1);
  const entry = args.pop()!;
  const kept: string[] = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === "--output" || args[i] === "-o" || args[i] === "--target") i++;
    else kept.push(args[i]);
  }
  return [...kept, "--target", target, "--output", output, entry];
}

/** What a file is, read from its first bytes. */
export interface ExecutableKind {
  os: "linux" | "macos";
  arch: "x86_64" | "aarch64";
}

/** What `target` runs on. */
export function targetKind(target: ReleaseTarget): ExecutableKind {
  return {
    os: target.endsWith("linux-gnu") ? "linux" : "macos",
    arch: target.startsWith("x86_64") ? "x86_64" : "aarch64",
  };
}

/**
 * The platform of an ELF or Mach-O executable of 64 bits, from its header;
 * null for anything else.
 *
 * @example
 * ```ts
 * executableKind(Deno.readFileSync(Deno.execPath())); // { os: "linux", arch: "x86_64" } here
 * ```
 */
export function executableKind(head: Uint8Array): ExecutableKind | null {
  if (head.length < 20) return null;
  const view = new DataView(head.buffer, head.byteOffset, head.byteLength);
  // ELF, 64-bit, little-endian: e_machine at 18
  if (view.getUint32(0) === 0x7f454c46 && head[4] === 2 && head[5] === 1) {
    const machine = view.getUint16(18, true);
    if (machine === 0x3e) return { os: "linux", arch: "x86_64" };
    if (machine === 0xb7) return { os: "linux", arch: "aarch64" };
    return null;
  }
  // Mach-O, 64-bit, little-endian: cputype at 4
  if (view.getUint32(0, true) === 0xfeedfacf) {
    const cpu = view.getUint32(4, true);
    if (cpu === 0x01000007) return { os: "macos", arch: "x86_64" };
    if (cpu === 0x0100000c) return { os: "macos", arch: "aarch64" };
  }
  return null;
}

function kindText(kind: ExecutableKind): string {
  return `${kind.os === "linux" ? "Linux" : "macOS"} ${
    kind.arch === "x86_64" ? "x86-64" : "arm64"
  }`;
}

/** Where the runtime of each target comes from. */
export type RuntimeSource = { file: string } | "download";

/** A runtime that cannot be used, with the reason in words. */
export class RuntimeProblem extends Error {}

/** Text that the full `deno` holds (its `run --help`) and `denort` does not. */
const FULL_DENO_MARK = "Run a JavaScript or TypeScript program";

/**
 * The runtime of `target`: `denort-<target>` in `denortDir`, else
 * `DENORT_BIN` when `target` is this machine's, else a download. Throws
 * {@linkcode RuntimeProblem} for a file that is not an executable of the
 * target, not of this Deno's version, or the full `deno` (`deno compile`
 * would take each, and give an executable that fails on a user's machine).
 */
export async function runtimeOf(
  target: ReleaseTarget,
  denortDir: string | undefined,
  env: { DENORT_BIN?: string; hostTarget: string },
): Promise<RuntimeSource> {
  let file: string | undefined;
  if (denortDir !== undefined) {
    const candidate = join(denortDir, `denort-${target}`);
    if (await exists(candidate)) file = candidate;
  }
  if (file === undefined && env.DENORT_BIN && target === env.hostTarget) file = env.DENORT_BIN;
  if (file === undefined) return "download";
  let head: Uint8Array;
  try {
    using f = await Deno.open(file);
    head = new Uint8Array(64);
    const n = await f.read(head) ?? 0;
    head = head.subarray(0, n);
  } catch (e) {
    throw new RuntimeProblem(`${file} cannot be read: ${(e as Error).message}`);
  }
  const kind = executableKind(head);
  const wanted = targetKind(target);
  if (kind === null) {
    throw new RuntimeProblem(
      `${file} is not an executable (no ELF or Mach-O header of 64 bits); it should be ` +
        `denort for ${kindText(wanted)}, unzipped from denort-${target}.zip`,
    );
  }
  if (kind.os !== wanted.os || kind.arch !== wanted.arch) {
    throw new RuntimeProblem(
      `${file} is an executable for ${kindText(kind)}, not for ${kindText(wanted)} (${target})`,
    );
  }
  // its strings, as bytes: latin1 keeps one character per byte
  const text = new TextDecoder("latin1").decode(await Deno.readFile(file));
  if (text.includes(FULL_DENO_MARK)) {
    throw new RuntimeProblem(
      `${file} is the full deno, not its runtime denort: unzip denort-${target}.zip instead`,
    );
  }
  if (!text.includes(Deno.version.deno)) {
    throw new RuntimeProblem(
      `${file} is not the runtime of Deno ${Deno.version.deno}, which builds the release: ` +
        `take denort-${target}.zip of v${Deno.version.deno}`,
    );
  }
  return { file };
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

/** Whether dl.deno.land answers, within three seconds. */
export async function canDownload(): Promise<boolean> {
  try {
    const r = await fetch("https://dl.deno.land/", {
      method: "HEAD",
      signal: AbortSignal.timeout(3000),
    });
    await r.body?.cancel();
    return true;
  } catch {
    return false;
  }
}

/** The SHA-256 of a file, in hex. */
export async function sha256File(path: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", await Deno.readFile(path));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Writes `SHA256SUMS` in `dir` for `names` (files in `dir`), sorted, in
 * the format of `sha256sum`: the hash, two spaces, the name. Written whole
 * or not at all.
 */
export async function writeChecksums(dir: string, names: readonly string[]): Promise<string> {
  const lines: string[] = [];
  for (const name of [...names].sort()) lines.push(`${await sha256File(join(dir, name))}  ${name}`);
  const path = join(dir, "SHA256SUMS");
  const partial = `${path}.partial`;
  await Deno.writeTextFile(partial, lines.join("\n") + "\n");
  await Deno.rename(partial, path);
  return path;
}

/** The options of {@linkcode release}. */
export interface ReleaseOptions {
  targets: readonly ReleaseTarget[];
  out: string;
  denortDir?: string;
  /** Never download a runtime: each must be in `denortDir` (or `DENORT_BIN`). */
  offline: boolean;
  /** The repository, where `deno.json` is. */
  root: string;
  log: (line: string) => void;
}

/** A release that cannot be built, with what to do. */
export class ReleaseError extends Error {}

/** Builds each target's executable and the `SHA256SUMS` of the folder. */
export async function release(options: ReleaseOptions): Promise<string[]> {
  const { targets, out, root, log } = options;
  const env = { DENORT_BIN: Deno.env.get("DENORT_BIN"), hostTarget: Deno.build.target };
  const sources = new Map<ReleaseTarget, RuntimeSource>();
  const problems: string[] = [];
  for (const target of targets) {
    try {
      sources.set(target, await runtimeOf(target, options.denortDir, env));
    } catch (e) {
      if (!(e instanceof RuntimeProblem)) throw e;
      problems.push(e.message);
    }
  }
  if (problems.length > 0) throw new ReleaseError(problems.join("\n"));
  const downloads = targets.filter((t) => sources.get(t) === "download");
  if (downloads.length > 0 && (options.offline || !await canDownload())) {
    const where = `https://dl.deno.land/release/v${Deno.version.deno}/`;
    throw new ReleaseError(
      `no Deno runtime for ${downloads.join(", ")}: ` +
        (options.offline ? "--offline downloads nothing" : "dl.deno.land cannot be reached") +
        `. Get denort-<target>.zip from ${where} for each, unzip it as denort-<target> in a ` +
        `folder, and pass --denort-dir FOLDER` +
        (options.denortDir === undefined ? "" : ` (${options.denortDir} has none of them)`) +
        `; or build only some with --target`,
    );
  }
  const task = JSON.parse(await Deno.readTextFile(join(root, "deno.json"))).tasks?.compile;
  if (typeof task !== "string") throw new ReleaseError(`${root}/deno.json has no compile task`);
  await Deno.mkdir(out, { recursive: true });
  // sums of files about to change would lie until the end: there are none until all are built
  await Deno.remove(join(out, "SHA256SUMS")).catch(() => {});
  const built: string[] = [];
  for (const [i, target] of targets.entries()) {
    const name = releaseName(target);
    const output = join(out, name);
    const source = sources.get(target)!;
    log(
      `[${i + 1}/${targets.length}] ${name}` +
        (source === "download" ? " (downloads its runtime)" : ` on ${source.file}`),
    );
    // a DENORT_BIN of this machine's target must not reach the build of another one
    const { DENORT_BIN: _, ...inherited } = Deno.env.toObject();
    const args = releaseCompileArgs(task, target, output);
    if (options.offline) args.splice(1, 0, "--cached-only");
    const status = await new Deno.Command(Deno.execPath(), {
      args,
      cwd: root,
      clearEnv: true,
      env: source === "download" ? inherited : { ...inherited, DENORT_BIN: source.file },
      stdout: "inherit",
      stderr: "inherit",
    }).spawn().status;
    if (!status.success) {
      throw new ReleaseError(
        `deno compile for ${target} failed (exit ${status.code}); its output is above`,
      );
    }
    if (target === Deno.build.target) {
      // this machine can run its own: a runtime that passed the checks may still be broken
      const run = await new Deno.Command(output, { args: ["--version"], stdout: "piped" })
        .output().catch((e) => ({ success: false, stdout: new TextEncoder().encode(String(e)) }));
      const said = new TextDecoder().decode(run.stdout);
      if (!run.success || !said.startsWith(`sausage ${SAUSAGE_VERSION}`)) {
        throw new ReleaseError(
          `${output} does not run: its --version printed ${JSON.stringify(said.slice(0, 200))}`,
        );
      }
    }
    built.push(name);
  }
  // the sums cover every executable of this version in the folder, also ones built before
  const names: string[] = [];
  for await (const entry of Deno.readDir(out)) {
    if (entry.isFile && entry.name.startsWith(`sausage-${SAUSAGE_VERSION}-`)) {
      names.push(entry.name);
    }
  }
  const sums = await writeChecksums(out, names);
  log(`${basename(sums)}: ${names.length} file${names.length === 1 ? "" : "s"} in ${out}`);
  return built;
}

const USAGE = `deno task release [--target TARGET]... [--denort-dir DIR] [--offline] [--out DIR]

Builds sausage-${SAUSAGE_VERSION}-<target> for each target (all by default:
${RELEASE_TARGETS.join(", ")})
and SHA256SUMS, in --out (default dist/release).

  --target TARGET   build only this one (repeatable)
  --denort-dir DIR  Deno's runtimes, unzipped, as DIR/denort-<target>
  --offline         download nothing: each runtime must be in --denort-dir
  --out DIR         where the executables and SHA256SUMS go

Exit codes: 0 built; 1 a runtime is missing or wrong, or a build failed; 2 bad arguments.`;

/** Reads the command line; a message for a wrong one. */
export function parseReleaseArgs(
  args: readonly string[],
  root: string,
  cwd: string = Deno.env.get("INIT_CWD") ?? Deno.cwd(),
): ReleaseOptions | string {
  const targets: ReleaseTarget[] = [];
  let out = join(root, "dist", "release");
  let denortDir: string | undefined;
  let offline = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const value = () => {
      const v = args[++i];
      if (v === undefined) throw new ReleaseError(`${arg} needs a value`);
      return v;
    };
    try {
      if (arg === "--target") {
        const t = value();
        if (!(RELEASE_TARGETS as readonly string[]).includes(t)) {
          return `unknown target ${t}; the targets are ${RELEASE_TARGETS.join(", ")}`;
        }
        if (!targets.includes(t as ReleaseTarget)) targets.push(t as ReleaseTarget);
      } else if (arg === "--denort-dir") denortDir = resolve(cwd, value());
      else if (arg === "--out") out = resolve(cwd, value());
      else if (arg === "--offline") offline = true;
      else return `unknown argument ${arg}`;
    } catch (e) {
      return (e as Error).message;
    }
  }
  return {
    targets: targets.length > 0 ? targets : RELEASE_TARGETS,
    out,
    denortDir,
    offline,
    root,
    log: (line) => console.error(line),
  };
}

if (import.meta.main) {
  if (Deno.args.includes("--help") || Deno.args.includes("-h")) {
    console.log(USAGE);
    Deno.exit(0);
  }
  const root = fileURLToPath(new URL("..", import.meta.url));
  const options = parseReleaseArgs(Deno.args, root);
  if (typeof options === "string") {
    console.error(`release: ${options}\n\n${USAGE}`);
    Deno.exit(2);
  }
  try {
    await release(options);
  } catch (e) {
    if (!(e instanceof ReleaseError)) throw e;
    console.error(`release: ${e.message}`);
    Deno.exit(1);
  }
}
