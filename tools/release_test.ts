import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  canDownload,
  executableKind,
  parseReleaseArgs,
  RELEASE_TARGETS,
  releaseCompileArgs,
  releaseName,
  runtimeOf,
  RuntimeProblem,
  writeChecksums,
} from "./release.ts";
import { SAUSAGE_VERSION } from "../cli/version.ts";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const TOOL = join(ROOT, "tools", "release.ts");
const decoder = new TextDecoder();

/** `sha256sum ARGS` in `dir`: its exit code and stdout. */
async function sha256sum(dir: string, ...args: string[]) {
  const out = await new Deno.Command("sha256sum", {
    args,
    cwd: dir,
    stdout: "piped",
    stderr: "null",
  }).output();
  return { code: out.code, stdout: decoder.decode(out.stdout) };
}

async function runTool(args: string[], env: Record<string, string> = {}) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", TOOL, ...args],
    env: { NO_COLOR: "1", ...env },
    stdout: "piped",
    stderr: "piped",
  }).output();
  return { code: out.code, stdout: decoder.decode(out.stdout), stderr: decoder.decode(out.stderr) };
}

Deno.test("a release builds with the compile task's own flags and includes, for each target", async () => {
  const task: string = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json"))).tasks.compile;
  /** The values after each `flag` in `words`. */
  const valuesOf = (words: string[], flag: string) =>
    words.flatMap((word, i) => words[i - 1] === flag ? [word] : []);
  const includes = valuesOf(task.split(/\s+/), "--include");
  assert.ok(includes.length > 10, "the compile task includes the files the host reads");
  for (const target of RELEASE_TARGETS) {
    const output = join("dist", "release", releaseName(target));
    const args = releaseCompileArgs(task, target, output);
    assert.equal(args[0], "compile");
    assert.equal(args.at(-1), "main.ts");
    assert.deepEqual(valuesOf(args, "--include"), includes);
    assert.deepEqual(valuesOf(args, "--output"), [output]);
    assert.deepEqual(valuesOf(args, "--target"), [target]);
    assert.ok(!args.includes("dist/sausage"));
  }
  assert.equal(
    releaseName("aarch64-apple-darwin"),
    `sausage-${SAUSAGE_VERSION}-aarch64-apple-darwin`,
  );
  assert.throws(() => releaseCompileArgs("deno run main.ts", "x86_64-apple-darwin", "o"));
});

Deno.test("SHA256SUMS is what sha256sum writes and checks", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sausage-release-" });
  try {
    await Deno.writeTextFile(join(dir, "sausage-b"), "two\n");
    await Deno.writeFile(join(dir, "sausage-a"), new Uint8Array(70_000).fill(7));
    const sums = await writeChecksums(dir, ["sausage-b", "sausage-a"]);
    const text = await Deno.readTextFile(sums);
    const lines = text.trimEnd().split("\n");
    assert.deepEqual(lines.map((l) => l.split("  ")[1]), ["sausage-a", "sausage-b"]);
    // the line of sha256sum itself
    assert.equal(lines[1], (await sha256sum(dir, "sausage-b")).stdout.trimEnd());
    const check = await sha256sum(dir, "-c", "SHA256SUMS");
    assert.equal(check.code, 0);
    assert.match(check.stdout, /sausage-a: OK\nsausage-b: OK/);
    // a changed file fails the check
    await Deno.writeTextFile(join(dir, "sausage-b"), "changed\n");
    const again = await sha256sum(dir, "-c", "SHA256SUMS");
    assert.equal(again.code, 1);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a runtime is checked against its target before anything is built", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sausage-denort-" });
  try {
    // the header is all that is read: a runtime's first bytes stand for it
    const head = new Uint8Array(64);
    {
      using deno = await Deno.open(Deno.execPath());
      await deno.read(head);
    }
    const here = executableKind(head);
    assert.deepEqual(here, {
      os: Deno.build.os === "darwin" ? "macos" : "linux",
      arch: Deno.build.arch,
    });
    const env = { hostTarget: Deno.build.target };
    // this machine's deno is an executable of one target: named as another's, it is refused
    const other = RELEASE_TARGETS.find((t) => t !== Deno.build.target)!;
    await Deno.writeFile(join(dir, `denort-${other}`), head);
    await assert.rejects(
      runtimeOf(other, dir, env),
      (e: Error) =>
        e instanceof RuntimeProblem && /is an executable for .*, not for/.test(e.message),
    );
    await Deno.writeTextFile(join(dir, "denort-aarch64-apple-darwin"), "#!/bin/sh\n");
    await assert.rejects(
      runtimeOf("aarch64-apple-darwin", dir, env),
      /is not an executable .*denort-aarch64-apple-darwin\.zip/,
    );
    // the right kind, of this Deno's version, is used; the full deno and another version are not
    if ((RELEASE_TARGETS as readonly string[]).includes(Deno.build.target)) {
      const own = Deno.build.target as (typeof RELEASE_TARGETS)[number];
      const file = join(dir, `denort-${own}`);
      const withText = (text: string) =>
        new Uint8Array([...head, ...new TextEncoder().encode(text)]);
      await Deno.writeFile(file, withText(`\0deno ${Deno.version.deno}\0`));
      assert.deepEqual(await runtimeOf(own, dir, env), { file });
      await Deno.writeFile(file, withText("\0deno 1.0.0\0"));
      await assert.rejects(runtimeOf(own, dir, env), /is not the runtime of Deno .*\.zip of v/);
      await Deno.writeFile(
        file,
        withText(`${Deno.version.deno}\0Run a JavaScript or TypeScript program, or a task`),
      );
      await assert.rejects(runtimeOf(own, dir, env), /is the full deno, not its runtime denort/);
    }
    await Deno.remove(join(dir, "denort-aarch64-apple-darwin"));
    assert.equal(await runtimeOf("aarch64-apple-darwin", dir, env), "download");
    // DENORT_BIN serves this machine's target only
    assert.equal(
      await runtimeOf("aarch64-apple-darwin", undefined, { ...env, DENORT_BIN: Deno.execPath() }),
      Deno.build.target === "aarch64-apple-darwin" ? { file: Deno.execPath() } : "download",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("relative --out and --denort-dir are taken from where the command was typed", () => {
  const options = parseReleaseArgs(
    ["--out", "rel", "--denort-dir", "../runtimes", "--target", "aarch64-apple-darwin"],
    "/repo",
    "/home/me/work",
  );
  assert.ok(typeof options !== "string");
  assert.equal(options.out, "/home/me/work/rel");
  assert.equal(options.denortDir, "/home/me/runtimes");
  assert.deepEqual(options.targets, ["aarch64-apple-darwin"]);
  const defaults = parseReleaseArgs([], "/repo", "/elsewhere");
  assert.ok(typeof defaults !== "string");
  assert.equal(defaults.out, "/repo/dist/release");
  assert.deepEqual(defaults.targets, RELEASE_TARGETS);
  assert.equal(parseReleaseArgs(["--what"], "/repo"), "unknown argument --what");
});

Deno.test("deno task release: bad arguments exit 2; missing or wrong runtimes exit 1 with the fix, and nothing is built", async () => {
  const out = await Deno.makeTempDir({ prefix: "sausage-release-out-" });
  const empty = await Deno.makeTempDir({ prefix: "sausage-denort-" });
  try {
    const help = await runTool(["--help"]);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /Exit codes/);
    for (const target of RELEASE_TARGETS) assert.ok(help.stdout.includes(target));

    const unknown = await runTool(["--target", "riscv64-unknown-linux-gnu"]);
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /unknown target riscv64-unknown-linux-gnu; the targets are/);
    assert.equal((await runTool(["--denort-dir"])).code, 2);

    const offline = await runTool(["--offline", "--denort-dir", empty, "--out", out], {
      DENORT_BIN: "",
    });
    assert.equal(offline.code, 1, offline.stderr);
    for (const target of RELEASE_TARGETS) assert.ok(offline.stderr.includes(target));
    assert.match(offline.stderr, /--offline downloads nothing/);
    assert.match(offline.stderr, /unzip it as denort-<target> .*--denort-dir FOLDER/);
    assert.ok(offline.stderr.includes(empty));

    await Deno.writeTextFile(join(empty, "denort-x86_64-apple-darwin"), "not a runtime");
    const wrong = await runTool([
      "--target",
      "x86_64-apple-darwin",
      "--denort-dir",
      empty,
      "--out",
      out,
    ]);
    assert.equal(wrong.code, 1);
    assert.match(wrong.stderr, /denort-x86_64-apple-darwin is not an executable/);
    assert.deepEqual([...Deno.readDirSync(out)], []);
  } finally {
    await Deno.remove(out, { recursive: true });
    await Deno.remove(empty, { recursive: true });
  }
});

Deno.test({
  name: "deno task release for this machine's target: the executable runs, and SHA256SUMS checks",
  // needs Deno's runtime: DENORT_BIN, or dl.deno.land
  ignore: !(RELEASE_TARGETS as readonly string[]).includes(Deno.build.target) ||
    !(Deno.env.get("DENORT_BIN") || await canDownload()),
  async fn() {
    const out = await Deno.makeTempDir({ prefix: "sausage-release-out-" });
    try {
      const built = await runTool(["--target", Deno.build.target, "--out", out]);
      assert.equal(built.code, 0, built.stderr);
      const name = releaseName(Deno.build.target as (typeof RELEASE_TARGETS)[number]);
      const check = await sha256sum(out, "-c", "SHA256SUMS");
      assert.equal(check.code, 0);
      assert.equal(check.stdout, `${name}: OK\n`);
      const version = await new Deno.Command(join(out, name), {
        args: ["--version"],
        stdout: "piped",
      }).output();
      assert.equal(version.code, 0);
      assert.match(decoder.decode(version.stdout), new RegExp(`sausage ${SAUSAGE_VERSION}`));
    } finally {
      await Deno.remove(out, { recursive: true });
    }
  },
});
