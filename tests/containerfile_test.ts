/**
 * The container recipe: checked by a Dockerfile linter (dockerfile-utils,
 * the validator of the Dockerfile language server), held to what the README
 * promises (Debian slim, a non-root user, the world and the cache as
 * volumes, Rust with wasm32-wasip2, the health check, SIGTERM), and built
 * and run where a container engine and the base images are at hand.
 */
import assert from "node:assert/strict";
import { validate } from "dockerfile-utils";

const ROOT = new URL("../", import.meta.url).pathname;
const RECIPE = await Deno.readTextFile(`${ROOT}Containerfile`);

/** The instructions, continuation lines joined, comments dropped. */
function instructions(text: string): { op: string; args: string }[] {
  return text.replace(/\\\n/g, " ").split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("#"))
    .map((l) => {
      const [op, ...rest] = l.split(/\s+/);
      return { op: op.toUpperCase(), args: rest.join(" ") };
    });
}

Deno.test("Containerfile: the linter finds nothing", () => {
  const problems = validate(RECIPE).map((d) =>
    `line ${d.range.start.line + 1}: ${d.message} (severity ${d.severity})`
  );
  assert.deepEqual(problems, []);
  // the linter does find what is wrong: it is not silent on everything
  assert.ok(validate("FROM debian:bookworm-slim\nRUNN true\n").length > 0);
});

Deno.test("Containerfile: Debian slim, non-root, two volumes, Rust for wasm32-wasip2", () => {
  const steps = instructions(RECIPE);
  const froms = steps.filter((s) => s.op === "FROM").map((s) => s.args);
  const last = froms.at(-1)!;
  assert.match(last, /^docker\.io\/library\/debian:\$\{DEBIAN\}-slim$/);
  assert.match(RECIPE, /^ARG DEBIAN=bookworm$/m);
  assert.ok(froms.some((f) => / AS rust$/.test(f)), "a build stage for Rust");
  assert.match(RECIPE, /--target wasm32-wasip2/);
  // what runs: after the last FROM
  const final = steps.slice(steps.findLastIndex((s) => s.op === "FROM"));
  const user = final.find((s) => s.op === "USER");
  assert.ok(user && !/^(root|0)(:|$)/.test(user.args), "a user that is not root");
  assert.equal(final.find((s) => s.op === "VOLUME")?.args, '["/world", "/cache"]');
  assert.ok(final.some((s) => s.op === "COPY" && s.args.includes("--from=rust /opt/rust")));
  assert.equal(final.find((s) => s.op === "STOPSIGNAL")?.args, "SIGTERM");
  assert.match(
    final.find((s) => s.op === "HEALTHCHECK")?.args ?? "",
    /"sausage", "health", "\/world"/,
  );
  assert.equal(
    final.find((s) => s.op === "CMD")?.args,
    '["--log-format", "json", "--headless", "/world"]',
  );
  // the commands the README gives
  const readme = Deno.readTextFileSync(`${ROOT}README.md`);
  for (const line of RECIPE.match(/^# {3}(podman .*)$/gm) ?? []) {
    assert.ok(readme.includes(line.slice(4)), `the README has: ${line.slice(4)}`);
  }
});

Deno.test(".containerignore keeps build output and the checkout's state out", () => {
  const ignored = Deno.readTextFileSync(`${ROOT}.containerignore`).split("\n");
  for (const path of [".git", "**/target", "dist"]) assert.ok(ignored.includes(path), path);
  // what the image needs stays in
  for (const path of ["deno.lock", "sdk", "plugins", "main.ts"]) {
    assert.ok(!ignored.includes(path), path);
  }
});

/** Whether `cmd ARGS` succeeds; null when `cmd` is not installed. */
async function succeeds(cmd: string, args: string[]): Promise<boolean | null> {
  try {
    return (await new Deno.Command(cmd, { args, stdout: "null", stderr: "null" }).output())
      .success;
  } catch {
    return null;
  }
}

const BASE_IMAGES = ["docker.io/library/debian:bookworm-slim", "docker.io/denoland/deno:bin-2.9.6"];

/** A container engine that answers, and has the base images; else why not. */
async function engine(): Promise<{ cmd: string } | { skip: string }> {
  for (const cmd of ["podman", "docker"]) {
    const info = await succeeds(cmd, ["info"]);
    if (info === null) continue;
    if (!info) return { skip: `${cmd} is installed but does not answer (no daemon running)` };
    for (const image of BASE_IMAGES) {
      if (!await succeeds(cmd, ["image", "inspect", image])) {
        return { skip: `the base image ${image} is not here, and no registry is reachable` };
      }
    }
    return { cmd };
  }
  return { skip: "no container engine is installed: apt-get install podman (or docker)" };
}

const ENGINE = await engine();
if ("skip" in ENGINE) console.error(`containerfile_test: not building the image: ${ENGINE.skip}`);

Deno.test({
  name: "the image builds, and runs sausage --version and doctor" +
    ("skip" in ENGINE ? ` ... ignored (${ENGINE.skip})` : ""),
  ignore: "skip" in ENGINE,
  async fn() {
    const { cmd } = ENGINE as { cmd: string };
    const tag = `sausage-test-${crypto.randomUUID().slice(0, 8)}`;
    const build = await new Deno.Command(cmd, {
      args: ["build", "-t", tag, "-f", "Containerfile", "."],
      cwd: ROOT,
      stdout: "null",
      stderr: "piped",
    }).output();
    assert.ok(build.success, new TextDecoder().decode(build.stderr).slice(-4000));
    try {
      const run = await new Deno.Command(cmd, {
        args: ["run", "--rm", tag, "--version"],
        stdout: "piped",
      }).output();
      assert.match(new TextDecoder().decode(run.stdout), /^sausage \d+\.\d+\.\d+/);
      const doctor = await new Deno.Command(cmd, {
        args: ["run", "--rm", tag, "doctor", "/world", "--json"],
        stdout: "piped",
      }).output();
      const findings = JSON.parse(new TextDecoder().decode(doctor.stdout)) as {
        topic: string;
        level: string;
      }[];
      assert.equal(findings.find((f) => f.topic === "toolchain")?.level, "ok");
    } finally {
      await new Deno.Command(cmd, { args: ["rmi", "-f", tag], stdout: "null", stderr: "null" })
        .output();
    }
  },
});
