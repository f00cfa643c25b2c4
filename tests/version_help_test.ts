/**
 * `sausage --version` and `sausage help [COMMAND]`, run as a user runs them.
 */
import assert from "node:assert/strict";
import { gitCommit, importVersion, SAUSAGE_VERSION } from "../cli/version.ts";

const MAIN = new URL("../main.ts", import.meta.url).pathname;

async function sausage(args: string[], env: Record<string, string> = {}) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--unstable-worker-options", MAIN, ...args],
    env: { NO_COLOR: "1", ...env },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
}

Deno.test("sausage --version: Sausage and its commit, Deno, jco and the SDK", async () => {
  const { code, stdout } = await sausage(["--version"], { SAUSAGE_COMMIT: "0123456789abcdef" });
  assert.equal(code, 0);
  const lines = stdout.trim().split("\n");
  assert.equal(lines[0], `sausage ${SAUSAGE_VERSION} (commit 0123456789ab)`);
  assert.equal(lines[1].split(" ").slice(0, 2).join(" "), `deno ${Deno.version.deno}`);
  assert.match(lines[2], /^jco \d+\.\d+\.\d+, jco-transpile \d+\.\d+\.\d+$/);
  assert.match(lines[3], /^sdk sausage-plugin \d+\.\d+\.\d+ \(files [0-9a-f]{16}\)$/);
  assert.equal((await sausage(["-V"])).code, 0);
});

Deno.test("the versions' sources: deno.json's imports, the checkout's HEAD", async () => {
  assert.equal(importVersion({ "@x/jco": "npm:@x/jco@1.2.3" }, "@x/jco"), "1.2.3");
  assert.equal(importVersion({ y: "npm:y@^4.0.0" }, "y"), "^4.0.0");
  assert.equal(importVersion({}, "z"), null);
  const repo = await Deno.makeTempDir({ prefix: "sausage-git-" });
  try {
    await Deno.mkdir(`${repo}/.git/refs/heads`, { recursive: true });
    await Deno.writeTextFile(`${repo}/.git/HEAD`, "ref: refs/heads/main\n");
    assert.equal(await gitCommit(repo), null, "a branch without a commit");
    await Deno.writeTextFile(`${repo}/.git/packed-refs`, `${"a".repeat(40)} refs/heads/main\n`);
    assert.equal(await gitCommit(repo), "a".repeat(40));
    await Deno.writeTextFile(`${repo}/.git/refs/heads/main`, `${"b".repeat(40)}\n`);
    assert.equal(await gitCommit(repo), "b".repeat(40));
    assert.equal(await gitCommit(`${repo}/nowhere`), null);
  } finally {
    await Deno.remove(repo, { recursive: true });
  }
});

Deno.test("sausage help [COMMAND]: the help, not a world named help", async () => {
  const all = await sausage(["help"]);
  assert.equal(all.code, 0);
  assert.match(all.stdout, /^Usage: sausage /);
  for (const command of ["doctor", "cache", "health"]) {
    assert.match(all.stdout, new RegExp(`\\n  ${command}\\b`));
  }
  const doctor = await sausage(["help", "doctor"]);
  assert.equal(doctor.code, 0);
  assert.match(doctor.stdout, /^Usage: sausage doctor \[options\] \[world\]/);
  assert.match(doctor.stdout, /Exit codes: 0 all ok; 4 warnings, no error; 1 an error/);
  const cache = await sausage(["help", "cache"]);
  assert.match(cache.stdout, /^Usage: sausage cache \[options\] \[command\]/);
  assert.match(cache.stdout, /\n {2}gc \[options\] /);
  assert.match(cache.stdout, /SAUSAGE_CACHE_LIMIT/);
});
