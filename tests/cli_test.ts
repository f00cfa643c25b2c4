/**
 * The `sausage` command line, run as a subprocess: init, call, --headless,
 * run, help and exit codes.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { initWorld } from "../core/world.ts";
import { testPlugin } from "./setup.ts";
import { installPlugin, TEST_CACHE_DIR } from "./world.ts";

const MAIN = new URL("../main.ts", import.meta.url).pathname;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function sausage(args: string[], stdin?: string): Promise<Run> {
  return spawn(args, stdin).output();
}

function spawn(args: string[], stdin?: string) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-prompt", "--allow-all", "--unstable-worker-options", MAIN, ...args],
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).spawn();
  if (stdin !== undefined) {
    const writer = child.stdin.getWriter();
    writer.write(new TextEncoder().encode(stdin)).then(() => writer.close());
  }
  const dec = new TextDecoder();
  return {
    child,
    async output(): Promise<Run> {
      const out = await child.output();
      return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
    },
  };
}

async function world(boot?: string): Promise<string> {
  const root = await Deno.makeTempDir({ prefix: "sausage-cli-" });
  await initWorld(root);
  await installPlugin(root, "probe", "probe");
  if (boot) await Deno.writeTextFile(join(root, "config", "boot.yaml"), boot);
  return root;
}

const cache = ["--cache-dir", TEST_CACHE_DIR];

Deno.test("--help on every command, and exit code 2 for bad arguments", async () => {
  const help = await sausage(["--help"]);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /Exit codes/);
  for (const command of ["init", "call", "run"]) {
    const r = await sausage([command, "--help"]);
    assert.equal(r.code, 0, command);
    assert.match(r.stdout, /--cache-dir/);
  }
  assert.equal((await sausage(["call"])).code, 2);
  assert.equal((await sausage(["--no-such-flag"])).code, 2);
});

Deno.test("sausage init creates a world and says what to edit; a second init keeps the files", async () => {
  const root = join(await Deno.makeTempDir(), "w");
  const first = await sausage(["init", root]);
  assert.equal(first.code, 0);
  assert.match(first.stdout, /created .*agent\.yaml/);
  assert.match(first.stdout, new RegExp(`Edit ${join(root, "config", "agent.yaml")}`));
  const second = await sausage(["init", root]);
  assert.match(second.stdout, /kept .*boot\.yaml/);
});

Deno.test("sausage call prints the result (exit 0) or the error object (exit 1)", async () => {
  const root = await world();
  const ok = await sausage(["call", root, "probe.echo", '{"a": [1, 2]}', ...cache]);
  assert.equal(ok.code, 0, ok.stderr);
  assert.deepEqual(JSON.parse(ok.stdout), { a: [1, 2] });
  const env = await sausage(["call", root, "probe.env", ...cache]);
  assert.equal(JSON.parse(env.stdout).vars.SAUSAGE_PARENT, "console");
  const fail = await sausage(["call", root, "probe.fail", "{}", ...cache]);
  assert.equal(fail.code, 1);
  assert.deepEqual(JSON.parse(fail.stdout), { code: 4711, message: "probe failed on purpose" });
  const missing = await sausage(["call", root, "nope.x", ...cache]);
  assert.equal(missing.code, 1);
  assert.equal(JSON.parse(missing.stdout).code, -32001);
});

Deno.test("sausage call: --timeout, params that are not an object, and a missing world", async () => {
  const root = await world();
  const slow = await sausage(["call", root, "probe.never", "--timeout", "0.5", ...cache]);
  assert.equal(slow.code, 1);
  assert.match(JSON.parse(slow.stdout).message, /no answer within 500 ms/);
  const bad = await sausage(["call", root, "probe.echo", "[1]", ...cache]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /must be a JSON object/);
  const notJson = await sausage(["call", root, "probe.echo", "{a:1}", ...cache]);
  assert.equal(notJson.code, 2);
  const gone = await sausage(["call", join(root, "nothing"), "probe.echo", ...cache]);
  assert.equal(gone.code, 3);
  assert.match(gone.stderr, /sausage init/);
});

Deno.test("--headless runs until SIGTERM (exit 0); core.exit stops it with 75", async () => {
  const root = await world();
  const run = spawn(["--headless", root, ...cache]);
  const reader = run.child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  while (!seen.includes("headless")) seen += (await reader.read()).value ?? "";
  reader.releaseLock();
  run.child.kill("SIGTERM");
  const status = await run.child.status;
  await run.child.stdout.cancel();
  assert.equal(status.code, 0);

  const exiting = await world("- method: probe.call\n  params: {method: core.exit, params: {}}\n");
  const r = await sausage(["--headless", exiting, ...cache]);
  assert.equal(r.code, 75, r.stderr);
});

Deno.test("a second host on a world is refused with exit 3, naming the holder", async () => {
  const root = await world();
  const run = spawn(["--headless", root, ...cache]);
  const reader = run.child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  while (!seen.includes("headless")) seen += (await reader.read()).value ?? "";
  reader.releaseLock();
  const second = await sausage(["call", root, "probe.echo", ...cache]);
  assert.equal(second.code, 3);
  assert.match(second.stderr, new RegExp(`already run by process ${run.child.pid}`));
  run.child.kill("SIGTERM");
  await run.child.status;
  await run.child.stdout.cancel();
  await run.child.stderr.cancel().catch(() => {});
});

Deno.test("sausage run passes stdin, stdout, args, --env and --dir through and exits with the status", async () => {
  const probe = await testPlugin("probe");
  const dir = await Deno.makeTempDir();
  await Deno.writeTextFile(join(dir, "hello.txt"), "hello from the host");
  const request = (method: string, params: unknown = {}) =>
    JSON.stringify({ jsonrpc: "2.0", id: 7, method, params }) + "\n";

  const env = await sausage(
    ["run", ...cache, "--env", "SAUSAGE_PID=x1", probe, "one", "--two"],
    request("env"),
  );
  assert.equal(env.code, 0, env.stderr);
  const answer = JSON.parse(env.stdout.trim());
  assert.equal(answer.id, 7);
  assert.deepEqual(answer.result.args, ["probe.wasm", "one", "--two"]);
  assert.equal(answer.result.vars.SAUSAGE_PID, "x1");

  const read = await sausage(
    ["run", ...cache, "--dir", `${dir}::/data`, probe],
    request("read_file", { path: "/data/hello.txt" }),
  );
  assert.equal(JSON.parse(read.stdout.trim()).result.text, "hello from the host");

  const exit1 = await sausage(["run", ...cache, probe], request("exit", { code: 1 }));
  assert.equal(exit1.code, 1);
  assert.match(exit1.stderr, /probe: exiting with 1/);
  const panic = await sausage(["run", ...cache, probe], request("panic"));
  assert.equal(panic.code, 134);
  assert.match(panic.stderr, /panicked on purpose/);
  const missing = await sausage(["run", ...cache, join(dir, "none.wasm")]);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /no such file/);
});
