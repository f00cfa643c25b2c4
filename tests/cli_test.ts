/**
 * The `sausage` command line, run as a subprocess: init, call, --headless,
 * run, help and exit codes.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { sha256Hex } from "../core/components/cache.ts";
import { initWorld } from "../core/init.ts";
import { testPlugin } from "./setup.ts";
import { needs } from "./tools.ts";
import { eventually, installPlugin, TEST_CACHE_DIR } from "./world.ts";

const MAIN = new URL("../main.ts", import.meta.url).pathname;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Where the child runs: more environment variables, and its folder. */
interface Place {
  env?: Record<string, string>;
  cwd?: string;
}

function sausage(args: string[], stdin?: string, place: Place = {}): Promise<Run> {
  return spawn(args, stdin, place).output();
}

function spawn(args: string[], stdin?: string, place: Place = {}) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-prompt", "--allow-all", "--unstable-worker-options", MAIN, ...args],
    stdin: stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1", ...place.env },
    cwd: place.cwd,
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
  // as README says: the token on every address, loopback too
  const web = await sausage(["web", "--help"]);
  for (const text of [help.stdout, web.stdout]) {
    const flat = text.replace(/\s+/g, " ");
    assert.match(flat, /every address needs the printed token, loopback too/);
    assert.doesNotMatch(flat, /elsewhere a token|another address needs/);
  }
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

Deno.test({
  ...needs(["git"], "sausage init warns about a new world that a git work tree would commit"),
  async fn() {
    const tree = await Deno.makeTempDir({ prefix: "sausage-work-tree-" });
    try {
      const git = (...args: string[]) =>
        new Deno.Command("git", { args, cwd: tree, stdout: "null", stderr: "null" }).output();
      assert.ok((await git("init", "-q")).success);
      const made = await sausage(["init", join(tree, "world"), "--cache-dir", TEST_CACHE_DIR]);
      assert.equal(made.code, 0, made.stderr);
      assert.match(
        made.stderr,
        /warning: the world .*\/world is inside the git work tree .*, which does not ignore it: .*API key.*add its folder to .*\.gitignore/,
      );
      // a second init makes nothing: no warning
      const again = await sausage(["init", join(tree, "world"), "--cache-dir", TEST_CACHE_DIR]);
      assert.doesNotMatch(again.stderr, /warning/);

      await Deno.writeTextFile(join(tree, ".gitignore"), "/ignored/\n");
      const ignored = await sausage(["init", join(tree, "ignored"), "--cache-dir", TEST_CACHE_DIR]);
      assert.equal(ignored.code, 0, ignored.stderr);
      assert.doesNotMatch(ignored.stderr, /warning/);
      // the work tree's own top is a world kept in git on purpose
      const outside = await Deno.makeTempDir({ prefix: "sausage-no-tree-" });
      const plain = await sausage(["init", outside, "--cache-dir", TEST_CACHE_DIR]);
      assert.doesNotMatch(plain.stderr, /warning/);
      await Deno.remove(outside, { recursive: true });
    } finally {
      await Deno.remove(tree, { recursive: true });
    }
  },
});

Deno.test("README's examples make their worlds outside the checkout", async () => {
  const readme = await Deno.readTextFile(new URL("../README.md", import.meta.url));
  const worlds = [...readme.matchAll(/sausage (?:init(?: --examples)?|call|attach) (\S+)/g)]
    .map((m) => m[1]).filter((w) => !/^[A-Z[<]/.test(w));
  assert.ok(worlds.length > 0);
  for (const world of worlds) {
    assert.match(world, /^(~|\/)/, `a README example makes a world in the checkout: ${world}`);
  }
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
  // the host keeps the deadline: -32006, with what was left of 0.5 s after the host started
  const expired = JSON.parse(slow.stdout);
  assert.equal(expired.code, -32006);
  assert.match(expired.message, /^probe\.never: no answer within the call's deadline of \d+ ms/);
  assert.ok(expired.data.timeout_ms <= 500);
  // giving up kills the call's process at once, even one that would not stop
  const spinning = await sausage(["call", root, "probe.spin", "--timeout", "0.5", ...cache]);
  assert.equal(spinning.code, 1);
  assert.match(
    JSON.parse(spinning.stdout).message,
    /probe\.spin: no answer within the call's deadline/,
  );
  const db = new DatabaseSync(join(root, "state", "core", "journal.sqlite"), { readOnly: true });
  try {
    const kills = db.prepare("SELECT plugin FROM entries WHERE line = ?")
      .all("kill: sausage call gave up (--timeout)");
    // probe.never above, and probe.spin
    assert.deepEqual(kills.map((k) => k.plugin), ["probe", "probe"]);
  } finally {
    db.close();
  }
  const bad = await sausage(["call", root, "probe.echo", "[1]", ...cache]);
  assert.equal(bad.code, 1);
  assert.equal(JSON.parse(bad.stdout).code, -32602);
  const notJson = await sausage(["call", root, "probe.echo", "{a:1}", ...cache]);
  assert.equal(notJson.code, 2);
  assert.match(notJson.stderr, /PARAMS is not JSON/);
  const gone = await sausage(["call", join(root, "nothing"), "probe.echo", ...cache]);
  assert.equal(gone.code, 3);
  assert.match(gone.stderr, /sausage init/);
});

Deno.test("sausage call: --timeout covers a boot.yaml service that never gets ready; a slow one is named", async () => {
  const root = await world("- method: probe.never\n  params: {}\n");
  const stuck = await sausage(["call", root, "probe.echo", "--timeout", "1", ...cache]);
  assert.equal(stuck.code, 1, stuck.stderr);
  assert.match(JSON.parse(stuck.stdout).message, /services of boot\.yaml did not start within 1 s/);
  // giving up kills the call's processes only: the service stopped as at any shutdown
  const db = new DatabaseSync(join(root, "state", "core", "journal.sqlite"), { readOnly: true });
  try {
    const lines = (db.prepare("SELECT line FROM entries WHERE plugin = 'probe'").all() as {
      line: string;
    }[]).map((r) => r.line);
    assert.ok(lines.some((l) => l.startsWith("stop: ")), lines.join("\n"));
    assert.ok(!lines.some((l) => l.startsWith("kill: ")), lines.join("\n"));
  } finally {
    db.close();
  }
  const slow = await sausage(["call", root, "probe.echo", "--timeout", "7", ...cache]);
  assert.equal(slow.code, 1, slow.stderr);
  assert.match(slow.stderr, /service probe\.never \(probe-[^)]+\) is not ready after 5 s/);
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

/** Waits until a spawned `sausage` wrote `text` on stderr; returns what it wrote. */
async function stderrUntil(run: ReturnType<typeof spawn>, text: string): Promise<string> {
  const reader = run.child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  try {
    while (!seen.includes(text)) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`sausage ended before it wrote ${JSON.stringify(text)}:\n${seen}`);
      seen += value;
    }
  } finally {
    reader.releaseLock();
  }
  return seen;
}

Deno.test("--headless ends on SIGINT with exit 0: the services are stopped and the journal closed", async () => {
  const root = await world("- method: probe.linger\n");
  const run = spawn(["--headless", root, ...cache]);
  await stderrUntil(run, "headless");
  const journal = join(root, "state", "core", "journal.sqlite");
  /** Lines of the journal that match a LIKE pattern, read beside the running host. */
  const lines = (like: string) => {
    const db = new DatabaseSync(journal, { readOnly: true });
    try {
      return db.prepare("SELECT line FROM entries WHERE line LIKE ?").all(like).length;
    } finally {
      db.close();
    }
  };
  // the service runs before the signal
  await eventually(() => lines("service probe.linger: ready") === 1, 20_000);
  run.child.kill("SIGINT");
  const status = await run.child.status;
  await run.child.stdout.cancel();
  await run.child.stderr.cancel().catch(() => {});
  assert.equal(status.code, 0);
  assert.equal(status.signal, null, "it exited by itself, not by the signal");
  assert.equal(lines("probe: stop hook ran"), 1, "the service was stopped");
  assert.equal(lines("host stopped"), 1);
  // the world is free again
  const after = await sausage(["call", root, "probe.echo", '{"again": true}', ...cache]);
  assert.equal(after.code, 0, after.stderr);
});

Deno.test("after a SIGKILL of the host, the next start journals and says that the previous run did not stop cleanly", async () => {
  const root = await world();
  const run = spawn(["--headless", root, ...cache]);
  await stderrUntil(run, "headless");
  run.child.kill("SIGKILL");
  await run.child.status;
  await run.child.stdout.cancel();
  await run.child.stderr.cancel().catch(() => {});
  const params = JSON.stringify({ grep: "did not stop cleanly" });
  const next = await sausage(["call", root, "core.log", params, ...cache]);
  assert.equal(next.code, 0, next.stderr);
  assert.match(
    next.stderr,
    new RegExp(`previous run \\(pid ${run.child.pid},.*did not stop cleanly`),
  );
  assert.equal((JSON.parse(next.stdout) as { entries: unknown[] }).entries.length, 1, next.stdout);
  // that start stopped cleanly: the one after it says nothing
  const again = await sausage(["call", root, "core.log", params, ...cache]);
  assert.equal(again.code, 0, again.stderr);
  assert.doesNotMatch(again.stderr, /did not stop cleanly/);
  assert.equal(
    (JSON.parse(again.stdout) as { entries: unknown[] }).entries.length,
    1,
    again.stdout,
  );
});

Deno.test("sausage call --params-file takes 1 MiB of params from a file or from stdin (-); a missing file or bad JSON is exit 2", async () => {
  const root = await world();
  const params = JSON.stringify({ text: "x".repeat(1024 * 1024) });
  const file = join(root, "params.json");
  await Deno.writeTextFile(file, params);
  const fromFile = await sausage(["call", root, "probe.echo", "--params-file", file, ...cache]);
  assert.equal(fromFile.code, 0, fromFile.stderr);
  assert.deepEqual(JSON.parse(fromFile.stdout), JSON.parse(params));
  const fromStdin = await sausage(
    ["call", root, "probe.echo", "--params-file", "-", ...cache],
    params,
  );
  assert.equal(fromStdin.code, 0, fromStdin.stderr);
  assert.deepEqual(JSON.parse(fromStdin.stdout), JSON.parse(params));

  const missing = await sausage([
    "call",
    root,
    "probe.echo",
    "--params-file",
    file + ".no",
    ...cache,
  ]);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /--params-file: cannot read .*params\.json\.no/);
  await Deno.writeTextFile(file, "{not json");
  const bad = await sausage(["call", root, "probe.echo", "--params-file", file, ...cache]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /the params in .*params\.json is not JSON/);
  const both = await sausage(["call", root, "probe.echo", "{}", "--params-file", file, ...cache]);
  assert.equal(both.code, 2);
  assert.match(both.stderr, /not both/);
});

Deno.test("sausage call core.log: since and until as milliseconds and as an entry id", async () => {
  const root = await world();
  const t0 = Date.now();
  const logged = await sausage([
    "call",
    root,
    "probe.log",
    '{"lines": 1, "text": "cli"}',
    ...cache,
  ]);
  assert.equal(logged.code, 0, logged.stderr);
  type Log = { entries: { id: string; line: string }[] };
  const query = async (params: Record<string, unknown>): Promise<Log> => {
    const r = await sausage(["call", root, "core.log", JSON.stringify(params), ...cache]);
    assert.equal(r.code, 0, r.stderr);
    return JSON.parse(r.stdout);
  };
  const since = await query({ since: t0, grep: "^cli 0$" });
  assert.deepEqual(since.entries.map((e) => e.line), ["cli 0"]);
  const id = since.entries[0].id;
  assert.deepEqual((await query({ since: id, grep: "^cli 0$" })).entries.map((e) => e.id), [id]);
  assert.deepEqual((await query({ until: id, grep: "^cli 0$" })).entries, []);
  const bad = await sausage(["call", root, "core.log", '{"until": -1}', ...cache]);
  assert.equal(bad.code, 1);
  assert.equal(JSON.parse(bad.stdout).code, -32602);
});

/** Deno's own cache: a child with another HOME or XDG_CACHE_HOME must keep using it. */
async function denoDir(): Promise<string> {
  const info = await new Deno.Command(Deno.execPath(), { args: ["info", "--json"] }).output();
  return JSON.parse(new TextDecoder().decode(info.stdout)).denoDir;
}

Deno.test("sausage without WORLD creates and runs the default world in ~/.local/share/sausage/world", async () => {
  const home = await Deno.makeTempDir({ prefix: "sausage-home-" });
  const place = { env: { HOME: home, XDG_DATA_HOME: "", DENO_DIR: await denoDir() }, cwd: home };
  try {
    const expected = join(home, ".local", "share", "sausage", "world");
    // the console, reading a script on stdin (kept open): it runs until stdin ends
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "--no-prompt", "--allow-all", "--unstable-worker-options", MAIN, ...cache],
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
      env: { NO_COLOR: "1", ...place.env },
      cwd: home,
    }).spawn();
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode("ls /config\n"));
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let out = "";
    while (!out.includes("boot.yaml")) {
      const { value, done } = await reader.read();
      if (done) break;
      out += value;
    }
    assert.match(out, /agent\.yaml/);
    // while it runs, the world is there, with its files, and held by this host
    for (const file of ["config/agent.yaml", "config/boot.yaml", "state/core/journal.sqlite"]) {
      assert.ok((await Deno.stat(join(expected, file))).isFile, file);
    }
    // a call goes through the console's host; a second host is refused
    const through = await sausage(["call", expected, "core.log", ...cache], undefined, place);
    assert.equal(through.code, 0, through.stderr);
    assert.ok(Array.isArray(JSON.parse(through.stdout).entries));
    const held = await sausage(["--headless", expected, ...cache], undefined, place);
    assert.equal(held.code, 3, held.stderr);
    await writer.close(); // the end of the script stops it
    while (!(await reader.read()).done) {
      // the rest of the output
    }
    const stderr = new TextDecoder().decode(await new Response(child.stderr).arrayBuffer());
    assert.equal((await child.status).code, 0, stderr);
    assert.match(stderr, new RegExp(`created the world ${expected}`));

    // the next run finds the world: nothing is created
    const again = await sausage([...cache], "ls /config\n", place);
    assert.equal(again.code, 0, again.stderr);
    assert.doesNotMatch(again.stderr, /created the world/);
    // --headless has no default world
    const headless = await sausage(["--headless", ...cache], undefined, place);
    assert.equal(headless.code, 2);
    assert.match(headless.stderr, /--headless needs a WORLD folder/);

    // $XDG_DATA_HOME, when set, holds the default world instead
    const xdg = join(home, "data");
    const other = await sausage([...cache], "ls /config\n", {
      ...place,
      env: { ...place.env, XDG_DATA_HOME: xdg },
    });
    assert.equal(other.code, 0, other.stderr);
    assert.match(other.stderr, new RegExp(`created the world ${join(xdg, "sausage", "world")}`));
    assert.ok((await Deno.stat(join(xdg, "sausage", "world", "config", "boot.yaml"))).isFile);
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("a second host on a world is refused with exit 3, naming the holder", async () => {
  const root = await world();
  const run = spawn(["--headless", root, ...cache]);
  const reader = run.child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  while (!seen.includes("headless")) seen += (await reader.read()).value ?? "";
  reader.releaseLock();
  const second = await sausage(["--headless", root, ...cache]);
  assert.equal(second.code, 3);
  assert.match(second.stderr, new RegExp(`already run by process ${run.child.pid}`));
  assert.match(second.stderr, /sausage attach/);
  // a call is not a second host: it goes through the first one's control endpoint
  const call = await sausage(["call", root, "probe.echo", '{"via": "endpoint"}', ...cache]);
  assert.equal(call.code, 0, call.stderr);
  assert.deepEqual(JSON.parse(call.stdout), { via: "endpoint" });
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

Deno.test("without --cache-dir the components are kept in $XDG_CACHE_HOME/sausage, by sha256", async () => {
  const probe = await testPlugin("probe");
  const hash = await sha256Hex(await Deno.readFile(probe));
  const xdg = await Deno.makeTempDir({ prefix: "sausage-xdg-cache-" });
  const place = { env: { XDG_CACHE_HOME: xdg, DENO_DIR: await denoDir() } };
  const request = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "echo", params: { n: 1 } });
  try {
    const first = await sausage(["run", probe], request + "\n", place);
    assert.equal(first.code, 0, first.stderr);
    assert.deepEqual(JSON.parse(first.stdout.trim()).result, { n: 1 });
    const entry = join(xdg, "sausage", "components", hash);
    const meta = await Deno.stat(join(entry, "meta.json"));
    // a second run uses the entry as it is: it is not written again
    const second = await sausage(["run", probe], request + "\n", place);
    assert.equal(second.code, 0, second.stderr);
    assert.deepEqual(
      (await Deno.stat(join(entry, "meta.json"))).mtime,
      meta.mtime,
      "the entry was not written again",
    );
    const names = [];
    for await (const e of Deno.readDir(join(xdg, "sausage", "components"))) names.push(e.name);
    assert.deepEqual(names, [hash]);
  } finally {
    await Deno.remove(xdg, { recursive: true });
  }
});

Deno.test("without XDG_CACHE_HOME the cache is ~/.cache/sausage; --cache-dir counts before the command too", async () => {
  const probe = await testPlugin("probe");
  const hash = await sha256Hex(await Deno.readFile(probe));
  const home = await Deno.makeTempDir({ prefix: "sausage-home-cache-" });
  const env = { HOME: home, XDG_CACHE_HOME: "", DENO_DIR: await denoDir() };
  const request = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "echo", params: { n: 1 } });
  try {
    const plain = await sausage(["run", probe], request + "\n", { env });
    assert.equal(plain.code, 0, plain.stderr);
    await Deno.stat(join(home, ".cache", "sausage", "components", hash, "meta.json"));
    const chosen = join(home, "chosen");
    const before = await sausage(["--cache-dir", chosen, "run", probe], request + "\n", { env });
    assert.equal(before.code, 0, before.stderr);
    await Deno.stat(join(chosen, "components", hash, "meta.json"));
    const root = join(home, "world");
    assert.equal((await sausage(["init", root], undefined, { env })).code, 0);
    await Deno.mkdir(join(root, "plugins", "probe"));
    await Deno.copyFile(probe, join(root, "plugins", "probe", "plugin.wasm"));
    const other = join(home, "other");
    const call = await sausage(["--cache-dir", other, "call", root, "probe.echo"], undefined, {
      env,
    });
    assert.equal(call.code, 0, call.stderr);
    await Deno.stat(join(other, "components", hash, "meta.json"));
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

Deno.test("sausage init reads no SAUSAGE_* variable: the files are the same with and without them", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sausage-init-env-" });
  const files = ["config/agent.yaml", "config/boot.yaml"];
  try {
    const plain = await sausage(["init", join(dir, "plain")]);
    assert.equal(plain.code, 0, plain.stderr);
    const env = {
      SAUSAGE_MODEL: "gpt-x",
      SAUSAGE_API_KEY: "secret",
      SAUSAGE_BASE_URL: "http://example.invalid",
      SAUSAGE_PROVIDER: "anthropic",
    };
    const set = await sausage(["init", join(dir, "set")], undefined, { env });
    assert.equal(set.code, 0, set.stderr);
    for (const file of files) {
      assert.equal(
        await Deno.readTextFile(join(dir, "set", file)),
        await Deno.readTextFile(join(dir, "plain", file)),
        file,
      );
    }
    assert.doesNotMatch(set.stdout + set.stderr, /gpt-x|secret|example\.invalid/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
