/**
 * The world folder (PROTOCOL section 2), the environment of a process
 * (section 3.8), services (section 8), and the journal (section 7), in whole
 * worlds.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { Host } from "../core/host.ts";
import type { Response } from "../core/jsonrpc.ts";
import { DEFAULT_LIMITS, parseLimits } from "../core/limits.ts";
import { World, WorldError } from "../core/world.ts";
import { initWorld, limitsTemplate } from "../core/init.ts";
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
  assert.equal(first.created.length, 4); // agent.yaml, boot.yaml, limits.yaml, and the SDK
  assert.ok(
    (await Deno.stat(join(root, "plugins", "cargo", "sdk", "sausage-plugin", "Cargo.toml"))).isFile,
  );
  const agent = await Deno.readTextFile(join(root, "config", "agent.yaml"));
  for (const api of ["OpenAI", "OpenRouter", "Anthropic", "Ollama"]) {
    assert.match(agent, new RegExp(api));
  }
  assert.match(agent, /allow_no_token: true/);
  assert.equal(await Deno.readTextFile(join(root, "config", "limits.yaml")), limitsTemplate());
  await Deno.writeTextFile(join(root, "config", "boot.yaml"), "# mine\n[]\n");
  await Deno.writeTextFile(join(root, "config", "limits.yaml"), "processes: 5\n");
  const second = await initWorld(root);
  assert.deepEqual(second.created, []);
  assert.equal(await Deno.readTextFile(join(root, "config", "boot.yaml")), "# mine\n[]\n");
  assert.equal(await Deno.readTextFile(join(root, "config", "limits.yaml")), "processes: 5\n");
  for (const dir of ["plugins", "state/core", "config"]) {
    assert.ok((await Deno.stat(join(root, dir))).isDirectory);
  }
  assert.deepEqual(await new World(root).plugins(), []);
});

Deno.test("the limits.yaml template lists every limit at its default, with what it counts; as written it gives the defaults", () => {
  const template = limitsTemplate();
  assert.deepEqual(parseLimits(template), { limits: { ...DEFAULT_LIMITS }, problems: [] });
  const settings = template.split("\n").filter((line) => /^# [a-z_]+: \d+/.test(line));
  assert.deepEqual(
    settings.map((line) => line.match(/^# ([a-z_]+):/)![1]),
    Object.keys(DEFAULT_LIMITS),
  );
  for (const line of settings) assert.match(line, /^# [a-z_]+: \d+ +# \S/, "what it counts");
  // uncommented, each line is valid and says its default
  const uncommented = settings.map((line) => line.slice(2)).join("\n");
  assert.deepEqual(parseLimits(uncommented), { limits: { ...DEFAULT_LIMITS }, problems: [] });
  // a raised limit in it reads as raised
  const raised = template.replace(/^# processes: \d+/m, "processes: 4000");
  assert.equal(parseLimits(raised).limits.processes, 4000);
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
    'start log {"lines":2,"text":"alpha"} (parent console)',
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

Deno.test("a lock is released when its holder crashes holding it: the next waiter gets it", async () => {
  await using w = await startWorld();
  const path = "/state/counter";
  // the holder takes the lock, then panics once the file /state/go exists
  const holder = w.request("probe.locked_panic", { path, go: "/state/go" });
  await eventually(() => w.host.locks.snapshot().some((l) => l.path === path));
  const [held] = w.host.locks.snapshot();
  assert.match(held.holder, /^probe-/);
  const waiter = w.request("probe.locked_increment", { path });
  await eventually(() => w.host.locks.snapshot()[0].waiting.length === 1);
  assert.equal(w.host.locks.snapshot()[0].holder, held.holder);
  await Deno.writeTextFile(join(w.root, "state", "go"), "");
  const crashed = await holder;
  assert.equal(crashed.error?.code, -32002);
  assert.equal((crashed.error!.data as { reason: string }).reason, "trapped");
  // bounded: a lock never released would leave the waiter waiting for ever
  let answer: Response | undefined;
  waiter.then((r) => answer = r);
  await eventually(() => answer !== undefined);
  assert.deepEqual(answer!.result, { was: 0 });
  assert.equal(await Deno.readTextFile(join(w.root, "state", "counter")), "1");
  await eventually(() => w.host.locks.snapshot().length === 0);
});

Deno.test("folders of plugins/ with names that are not plugin names get one journal warning each, with the rule and the fix", async () => {
  await using w = await startWorld({
    files: {
      "plugins/Bad/plugin.wasm": "not run",
      "plugins/core/plugin.wasm": "not run",
      "plugins/a.b/notes.txt": "",
      "plugins/.git/HEAD": "", // hidden: not meant as a plugin
      "plugins/fine/notes.txt": "", // a valid name without plugin.wasm yet
      "plugins/Loose.txt": "", // a file, not a folder
    },
  });
  const warnings = w.host.journal.query({ grep: "^warning: the folder plugins/" });
  assert.deepEqual(warnings.map((e) => e.line), [
    'warning: the folder plugins/Bad is ignored: "Bad" is not a plugin name: use only a-z, 0-9, "-" and "_"; rename the folder, for example to plugins/bad',
    'warning: the folder plugins/a.b is ignored: "a.b" is not a plugin name: use only a-z, 0-9, "-" and "_"; rename the folder, for example to plugins/a-b',
    'warning: the folder plugins/core is ignored: "core" is reserved for the host; rename the folder: at most 64 characters of a-z, 0-9, "-" and "_", not "core"',
  ]);
  assert.ok(warnings.every((e) => e.stream === "core" && e.pid === null));
  // the host runs on, and the folders stay ignored
  assert.equal((await w.request("Bad.run", {})).error?.code, -32001);
  assert.deepEqual(await w.call("probe.echo", { ok: 1 }), { ok: 1 });
});

Deno.test("core.exit answers, then the host is asked to stop with 75", async () => {
  await using w = await startWorld();
  const r = (await w.call("probe.call", { method: "core.exit", params: {} })) as {
    response: { result: unknown };
  };
  assert.deepEqual(r.response.result, {});
  assert.equal(await w.host.exitRequested, 75);
});

interface Clocks {
  wall_ms: number;
  slept_us: number;
  wall: { seconds: number; nanoseconds: number };
  wall_resolution_ns: number;
  monotonic_ns: [number, number];
  monotonic_resolution_ns: number;
  random: string;
  random_again: string;
  random_u64: string;
  insecure: string;
}

Deno.test("wasi:clocks and wasi:random: the wall clock is now, the monotonic clock advances, random bytes differ", async () => {
  await using w = await startWorld();
  const before = Date.now();
  const first = (await w.call("probe.clocks", { random_len: 33 })) as Clocks;
  const second = (await w.call("probe.clocks", { random_len: 33 })) as Clocks;
  const after = Date.now();

  for (const c of [first, second]) {
    // the wall clock, through std and through wasi:clocks/wall-clock, is the host's time
    assert.ok(c.wall_ms >= before - 1000 && c.wall_ms <= after + 1000, `${c.wall_ms}`);
    const wallMs = c.wall.seconds * 1000 + c.wall.nanoseconds / 1e6;
    assert.ok(wallMs >= before - 1000 && wallMs <= after + 1000, `${wallMs}`);
    assert.ok(c.wall.nanoseconds >= 0 && c.wall.nanoseconds < 1e9);
    // the monotonic clock advanced over a 20 ms sleep, and the sleep lasted at least that
    const [t0, t1] = c.monotonic_ns;
    assert.ok(t1 - t0 >= 20e6, `monotonic ${t0} → ${t1}`);
    assert.ok(t1 - t0 < 10e9, `monotonic ${t0} → ${t1}`);
    assert.ok(c.slept_us >= 20_000 && c.slept_us < 10_000_000, `${c.slept_us}`);
    // resolutions: positive, and finer than a millisecond
    for (const r of [c.wall_resolution_ns, c.monotonic_resolution_ns]) {
      assert.ok(r > 0 && r <= 1e6, `resolution ${r} ns`);
    }
    // random bytes: the length asked for, different each time
    for (const hex of [c.random, c.random_again, c.insecure]) {
      assert.match(hex, /^[0-9a-f]{66}$/);
    }
    assert.notEqual(c.random, c.random_again);
    assert.match(c.random_u64, /^\d+$/);
  }
  assert.notEqual(first.random, second.random);
  assert.notEqual(first.insecure, second.insecure);
  assert.notEqual(first.random_u64, second.random_u64);
  // no bytes asked, none given
  const none = (await w.call("probe.clocks", { random_len: 0 })) as Clocks;
  assert.equal(none.random, "");
});

Deno.test("core.log: since and until as milliseconds since 1970 and as an entry id", async () => {
  await using w = await startWorld();
  type Log = { entries: { id: string; time: string; pid: string; line: string }[] };
  const log = async (params: Record<string, unknown>) =>
    ((await w.call("core.log", { grep: "^(gamma|delta) ", ...params })) as Log).entries
      .map((e) => e.line);

  await w.call("probe.log", { lines: 1, text: "gamma" });
  await eventually(() => w.host.journal.query({ grep: "^gamma " }).length === 1);
  const gamma = ((await w.call("core.log", { grep: "^gamma " })) as Log).entries[0];
  // wait until the clock is past gamma's millisecond, by its id and by its time
  const gammaMs = Math.max(
    parseInt(gamma.id.slice(0, 8) + gamma.id.slice(9, 13), 16),
    Date.parse(gamma.time),
  );
  await eventually(() => Date.now() > gammaMs);
  const t1 = Date.now();
  await w.call("probe.log", { lines: 1, text: "delta" });
  await eventually(() => w.host.journal.query({ grep: "^delta " }).length === 1);
  const delta = ((await w.call("core.log", { grep: "^delta " })) as Log).entries[0];

  // milliseconds: since includes, until excludes
  assert.deepEqual(await log({ since: t1 }), ["delta 0"]);
  assert.deepEqual(await log({ until: t1 }), ["gamma 0"]);
  assert.deepEqual(await log({ since: 0, until: Date.now() + 60_000 }), ["gamma 0", "delta 0"]);
  // entry ids: since includes the entry, until excludes it
  assert.deepEqual(await log({ since: gamma.id }), ["gamma 0", "delta 0"]);
  assert.deepEqual(await log({ since: delta.id }), ["delta 0"]);
  assert.deepEqual(await log({ until: delta.id }), ["gamma 0"]);
  assert.deepEqual(await log({ since: gamma.id, until: delta.id }), ["gamma 0"]);
  // gamma's process from the id of its line on: its start is left out, its exit is in
  await eventually(() => w.host.journal.query({ pid: gamma.pid, grep: "^exit" }).length === 1);
  const fromGamma = (await w.call("core.log", { pid: gamma.pid, since: gamma.id })) as Log;
  assert.deepEqual(fromGamma.entries.map((e) => e.line), ["gamma 0", "exit status 0"]);

  for (const bad of [-5, "not a time", true, { at: 1 }]) {
    const r = await w.request("core.log", { since: bad });
    assert.equal(r.error?.code, -32602, JSON.stringify(bad));
    assert.match(r.error!.message, /since/);
  }
});
