/**
 * The world folder (PROTOCOL section 2), the environment of a process
 * (section 3.8), services (section 8), and the journal (section 7), in whole
 * worlds.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { Host } from "../core/host.ts";
import { initWorld, World, WorldError } from "../core/world.ts";
import { eventually, startWorld, TEST_CACHE_DIR } from "./world.ts";

type Vars = { vars: Record<string, string> };

Deno.test("a world with proc, run or self is refused, naming the folder", async () => {
  for (const name of ["proc", "run", "self"]) {
    const root = await Deno.makeTempDir();
    try {
      await initWorld(root);
      await Deno.mkdir(join(root, name));
      await assert.rejects(
        Host.start({ world: root, cacheDir: TEST_CACHE_DIR }),
        (e: Error) => e instanceof WorldError && e.message.includes(join(root, name)),
      );
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  }
});

Deno.test("a missing world is refused with the command that creates it", async () => {
  const root = join(await Deno.makeTempDir(), "absent");
  await assert.rejects(
    Host.start({ world: root, cacheDir: TEST_CACHE_DIR }),
    (e: Error) => e instanceof WorldError && e.message.includes(`sausage init ${root}`),
  );
});

Deno.test("a second host on the same world is refused, naming the process that holds it", async () => {
  await using w = await startWorld();
  await assert.rejects(
    Host.start({ world: w.root, cacheDir: TEST_CACHE_DIR }),
    (e: Error) => e instanceof WorldError && e.message.includes(`process ${Deno.pid}`),
  );
  // the first host is unharmed
  assert.deepEqual(await w.call("probe.echo", { ok: 1 }), { ok: 1 });
});

Deno.test("the lock goes with the host: a new host starts after a shutdown", async () => {
  const w = await startWorld();
  await w.host.shutdown();
  const again = await Host.start({ world: w.root, cacheDir: TEST_CACHE_DIR });
  await again.shutdown();
  await Deno.remove(w.root, { recursive: true });
});

Deno.test("sausage init writes commented templates, never overwrites, and creates the folders", async () => {
  const root = join(await Deno.makeTempDir(), "w");
  const first = await initWorld(root);
  assert.equal(first.created.length, 3); // agent.yaml, boot.yaml, and the SDK
  assert.ok(
    (await Deno.stat(join(root, "plugins", "cargo", "sdk", "sausage-plugin", "Cargo.toml"))).isFile,
  );
  const agent = await Deno.readTextFile(join(root, "config", "agent.yaml"));
  for (const api of ["OpenAI", "OpenRouter", "Anthropic", "Ollama"]) {
    assert.match(agent, new RegExp(api));
  }
  assert.match(agent, /allow_no_token: true/);
  await Deno.writeTextFile(join(root, "config", "boot.yaml"), "# mine\n[]\n");
  const second = await initWorld(root);
  assert.deepEqual(second.created, []);
  assert.equal(await Deno.readTextFile(join(root, "config", "boot.yaml")), "# mine\n[]\n");
  for (const dir of ["plugins", "state/core", "config"]) {
    assert.ok((await Deno.stat(join(root, dir))).isDirectory);
  }
  assert.deepEqual(await new World(root).plugins(), []);
});

Deno.test("SAUSAGE_PID, SAUSAGE_PLUGIN and SAUSAGE_PARENT for the console, a caller, and a detached process", async () => {
  await using w = await startWorld();
  const fromConsole = (await w.call("probe.env")) as Vars;
  assert.equal(fromConsole.vars.SAUSAGE_PARENT, "console");
  assert.equal(fromConsole.vars.SAUSAGE_PLUGIN, "probe");
  assert.match(fromConsole.vars.SAUSAGE_PID, /^probe-/);

  const nested = (await w.call("probe.call", { method: "probe.env", params: {} })) as {
    response: { result: Vars };
  };
  const inner = nested.response.result.vars;
  assert.match(inner.SAUSAGE_PARENT, /^probe-/);
  assert.notEqual(inner.SAUSAGE_PARENT, inner.SAUSAGE_PID);

  const detached = (await w.call("probe.call", {
    method: "core.call",
    params: { method: "probe.env", params: {}, detach: true },
  })) as { response: { result: Vars } };
  assert.equal(detached.response.result.vars.SAUSAGE_PARENT, "core");
});

Deno.test("services start in order at boot, detached with the parent core; a failure is journaled and the next one starts", async () => {
  await using w = await startWorld({
    files: {
      "config/boot.yaml": `
- method: probe.linger
  params: {}
- method: nope.start
- method: probe.exit
  params: {code: 3}
- method: probe.linger
  params: {hook_file: /second.txt}
`,
    },
  });
  await w.host.servicesStarted;
  const running = w.host.processes.list();
  assert.equal(running.length, 2);
  assert.ok(running.every((p) => p.detached && p.method === "linger"));
  const events = w.host.journal.query({ grep: "^service " }).map((e) => e.line);
  assert.deepEqual(events.map((l) => l.replace(/:.*/, "")), [
    "service probe.linger",
    "service probe.linger",
    "service nope.start",
    "service nope.start failed",
    "service probe.exit",
    "service probe.exit failed",
    "service probe.linger",
    "service probe.linger",
  ]);
  assert.ok(events.some((l) => /nope\.start failed: there is no plugin "nope"/.test(l)));
  const env = (await w.call("probe.call", {
    method: "core.call",
    params: { method: "probe.env", params: {}, detach: true },
  })) as { response: { result: Vars } };
  assert.equal(env.response.result.vars.SAUSAGE_PARENT, "core");
});

Deno.test("a boot.yaml that is not a list of services is journaled, and the host runs", async () => {
  await using w = await startWorld({ files: { "config/boot.yaml": "method: probe.echo\n" } });
  await w.host.servicesStarted;
  const lines = w.host.journal.query({ grep: "services not started" });
  assert.equal(lines.length, 1);
  assert.match(lines[0].line, /boot\.yaml must be a list/);
  assert.deepEqual(await w.call("probe.echo", { a: 1 }), { a: 1 });
});

Deno.test("the journal: start with method and params, stderr, exit status; core.log filters", async () => {
  await using w = await startWorld();
  await w.call("probe.log", { lines: 2, text: "alpha" });
  const pid = w.host.journal.query({ grep: "^alpha 0" })[0].pid!;
  await eventually(() => w.host.journal.query({ pid, grep: "^exit" }).length === 1);
  const t0 = new Date().toISOString();
  await w.call("probe.log", { lines: 1, text: "beta" });
  await eventually(() => w.host.journal.query({ grep: "^beta" }).length === 1);

  const byPid = (await w.call("core.log", { pid })) as {
    entries: { line: string; stream: string }[];
  };
  assert.deepEqual(byPid.entries.map((e) => e.line), [
    'start log {"lines":2,"text":"alpha"}',
    "alpha 0",
    "alpha 1",
    "exit status 0",
  ]);
  assert.deepEqual(byPid.entries.map((e) => e.stream), ["core", "stderr", "stderr", "core"]);

  const since = (await w.call("core.log", { since: t0, grep: "^(alpha|beta)" })) as {
    entries: unknown[];
  };
  assert.equal(since.entries.length, 1);
  const limited = (await w.call("core.log", { plugin: "probe", limit: 2 })) as {
    entries: { line: string }[];
  };
  assert.equal(limited.entries.length, 2);
  const until = (await w.call("core.log", { until: t0, grep: "^beta" })) as { entries: unknown[] };
  assert.equal(until.entries.length, 0);

  const badGrep = await w.request("core.log", { grep: "(" });
  assert.equal(badGrep.error?.code, -32602);
  const badLimit = await w.request("core.log", { limit: 0 });
  assert.equal(badLimit.error?.code, -32602);
  const badSince = await w.request("core.log", { since: "yesterday" });
  assert.equal(badSince.error?.code, -32602);
});

Deno.test("the journal survives the host: entries are there at the next start", async () => {
  const w = await startWorld();
  await w.call("probe.log", { lines: 1, text: "persisted" });
  await w.host.shutdown();
  const again = await Host.start({ world: w.root, cacheDir: TEST_CACHE_DIR, services: false });
  try {
    assert.equal(again.journal.query({ grep: "^persisted" }).length, 1);
  } finally {
    await again.shutdown();
    await Deno.remove(w.root, { recursive: true });
  }
});

Deno.test("core.lock: FIFO per path, wait false, unlock, and release when the holder ends", async () => {
  await using w = await startWorld();
  const a = w.host.client("a");
  const b = w.host.client("b");
  assert.deepEqual((await a.request("core.lock", { path: "/state/x" })).result, { held: true });
  assert.deepEqual((await b.request("core.lock", { path: "/state/x", wait: false })).result, {
    held: false,
  });
  const waiting = b.request("core.lock", { path: "/state/x" });
  assert.equal(w.host.locks.snapshot()[0].waiting[0], "b");
  a.notify("core.unlock", { path: "/state/x" });
  assert.deepEqual((await waiting).result, { held: true });
  const bad = await a.request("core.lock", { path: 42 });
  assert.equal(bad.error?.code, -32602);

  // a process that holds a lock and ends releases it
  const r = (await w.call("probe.call", { method: "core.lock", params: { path: "/state/y" } })) as {
    response: { result: unknown };
  };
  assert.deepEqual(r.response.result, { held: true });
  await eventually(() => w.host.locks.snapshot().every((l) => l.path !== "/state/y"));
});

Deno.test("core.exit answers, then the host is asked to stop with 75", async () => {
  await using w = await startWorld();
  const r = (await w.call("probe.call", { method: "core.exit", params: {} })) as {
    response: { result: unknown };
  };
  assert.deepEqual(r.response.result, {});
  assert.equal(await w.host.exitRequested, 75);
});
