/**
 * `wasi:filesystem` end to end: real Rust components (`tests/plugins/crates/
 * fsprobe` for `std::fs`, `sqlprobe` for SQLite) run by `sausage run` with a
 * temporary folder mounted at `/`. `tests/fs_escape_test.ts` runs the same
 * checks as world processes, through a world's mount table.
 */
import assert from "node:assert/strict";
import { testPlugin } from "../../tests/setup.ts";

const MAIN = new URL("../../main.ts", import.meta.url).pathname;

interface Run {
  status: number;
  stdout: string;
  stderr: string;
}

async function sausageRun(wasm: string, dir: string, args: string[] = []): Promise<Run> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--unstable-worker-options",
      MAIN,
      "run",
      "--dir",
      `${dir}::/`,
      wasm,
      ...args,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  return {
    status: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
}

/** The check lines of a probe, by name: "ok", "skip" or the failure. */
function checks(run: Run): Map<string, string> {
  const result = new Map<string, string>();
  for (const line of run.stdout.split("\n")) {
    const m = line.match(/^(ok|skip|FAIL) (\w+)(?:: (.*))?$/);
    if (m) result.set(m[2], m[1] === "FAIL" ? `FAIL: ${m[3]}` : m[1]);
  }
  return result;
}

function describe(run: Run): string {
  return `exit ${run.status}\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}`;
}

Deno.test("e2e: std::fs works in a component, and nothing leaves the mounted folder", async () => {
  const wasm = await testPlugin("fsprobe");
  const outer = await Deno.makeTempDir({ prefix: "fsprobe_" });
  try {
    const world = `${outer}/world`;
    await Deno.mkdir(`${world}/pre`, { recursive: true });
    await Deno.writeTextFile(`${outer}/secret`, "SECRET");
    await Deno.writeTextFile(`${world}/pre/target.txt`, "T");
    await Deno.symlink("target.txt", `${world}/pre/rel`);
    await Deno.symlink("/pre/target.txt", `${world}/pre/abs`);
    await Deno.symlink("../../../..", `${world}/pre/up`);
    await Deno.symlink(`${outer}/secret`, `${world}/pre/out`);
    await Deno.symlink("loop", `${world}/pre/loop`);

    const run = await sausageRun(wasm, world);
    const results = checks(run);
    for (const [name, result] of results) {
      // Making links needs a thread with unscoped permissions (see FilesystemOptions.symlink).
      if (name === "symlinks_make" && result === "skip") continue;
      assert.equal(result, "ok", `${name}\n${describe(run)}`);
    }
    assert.equal(results.size, 12, describe(run));
    assert.equal(run.status, 0, describe(run));
    assert.match(run.stdout, /^done \d+ 0$/m);

    // What the component wrote is in the folder; outside, nothing changed.
    assert.equal(await Deno.readTextFile(`${world}/fsprobe/config.json`), '{"v":2}');
    assert.equal(await Deno.readTextFile(`${world}/fsprobe/dotdot.txt`), "in");
    assert.equal((await Deno.stat(`${world}/fsprobe/big.bin`)).size, 3_000_000);
    assert.deepEqual(
      [...Deno.readDirSync(outer)].map((e) => e.name).sort(),
      ["secret", "world"],
    );
    assert.equal(await Deno.readTextFile(`${outer}/secret`), "SECRET");
  } finally {
    await Deno.remove(outer, { recursive: true });
  }
});

Deno.test("e2e: SQLite (rusqlite, bundled C) works in a component", async () => {
  const wasm = await testPlugin("sqlprobe");
  const world = await Deno.makeTempDir({ prefix: "sqlprobe_" });
  try {
    await Deno.mkdir(`${world}/state`);
    const run = await sausageRun(wasm, world, ["/state/notes.db"]);
    const results = checks(run);
    assert.ok(results.size >= 6, describe(run));
    for (const [name, result] of results) assert.equal(result, "ok", `${name}\n${describe(run)}`);
    assert.equal(run.status, 0, describe(run));

    // A real SQLite file, and no journal or lock left behind.
    const header = (await Deno.readFile(`${world}/state/notes.db`)).subarray(0, 16);
    assert.equal(new TextDecoder().decode(header), "SQLite format 3\0");
    assert.deepEqual([...Deno.readDirSync(`${world}/state`)].map((e) => e.name), ["notes.db"]);
  } finally {
    await Deno.remove(world, { recursive: true });
  }
});
