/**
 * The control endpoint (PROTOCOL section 12): front ends reach a running
 * host over its Unix socket, in process and through `sausage call`, `ps`,
 * `log`, `stop` and `kill` run as subprocesses against a headless host.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  ControlEndpoint,
  type ControlOptions,
  controlPaths,
  TRANSPORT_ENV,
} from "../core/control.ts";
import { ControlClient, ControlError } from "../core/control_client.ts";
import { LocalHostView } from "../core/host_view.ts";
import type { Id } from "../core/jsonrpc.ts";
import { initWorld } from "../core/init.ts";
import {
  eventually,
  installPlugin,
  startHeadless,
  startWorld,
  TEST_CACHE_DIR,
  type TestWorld,
} from "./world.ts";

const MAIN = new URL("../main.ts", import.meta.url).pathname;
const cache = ["--cache-dir", TEST_CACHE_DIR];

/** A started world with its endpoint listening. */
async function worldWithEndpoint(
  options: ControlOptions = {},
): Promise<TestWorld & { endpoint: ControlEndpoint }> {
  const w = await startWorld();
  const endpoint = await ControlEndpoint.listen(w.host, options);
  assert.ok(endpoint, "the endpoint listens");
  const dispose = w[Symbol.asyncDispose].bind(w);
  return Object.assign(w, {
    endpoint,
    async [Symbol.asyncDispose]() {
      await endpoint.close();
      await dispose();
    },
  });
}

async function connect(root: string): Promise<ControlClient> {
  const client = await ControlClient.connect(root);
  assert.ok(client, "a host listens");
  return client;
}

Deno.test("a call through the endpoint gives its result, its error and its notifications", async () => {
  await using w = await worldWithEndpoint();
  const c = await connect(w.root);
  try {
    assert.deepEqual((await c.request("probe.echo", { a: [1, 2] })).result, { a: [1, 2] });
    const failed = await c.request("probe.fail");
    assert.equal(failed.error?.code, 4711);
    const notes: unknown[] = [];
    const progress = await c.request("probe.progress", { count: 3 }, {
      onNotify: (name, p) => notes.push([name, p]),
    });
    assert.deepEqual(progress.result, { steps: 3 });
    assert.deepEqual(notes, [0, 1, 2].map((step) => ["progress", { step }]));
    const info = c.info;
    assert.equal(info.world, w.root);
    assert.equal(info.pid, Deno.pid);
    assert.ok(info.coreMethods.includes("core.log"));
    // the core API is there like for the console
    const log = await c.request("core.log", { grep: "^start echo", limit: 5 });
    assert.equal((log.result as { entries: unknown[] }).entries.length, 1);
  } finally {
    await c.close();
  }
});

Deno.test("each connection is one caller: closing one stops its own calls and no other's", async () => {
  await using w = await worldWithEndpoint();
  const [a, b] = [await connect(w.root), await connect(w.root)];
  try {
    assert.equal((await a.request("probe.linger")).result, "lingering");
    assert.equal((await b.request("probe.linger")).result, "lingering");
    const listed = (await a.request("host/processes")).result as { pid: string; parent: string }[];
    assert.equal(listed.length, 2);
    assert.ok(listed.every((p) => p.parent === "console"));
    await a.close();
    await eventually(() => w.host.processes.list().length === 1);
    const stops = w.host.journal.query({ grep: "^stop: its caller disconnected" });
    assert.equal(stops.length, 1);
    const left = w.host.processes.list()[0];
    assert.notEqual(left.pid, stops[0].pid);
    assert.equal(w.endpoint.connections, 1);
  } finally {
    await b.close();
  }
  await eventually(() => w.host.processes.list().length === 0);
});

Deno.test("host/cancel stops the process of one call, and its caller gets -32002", async () => {
  await using w = await worldWithEndpoint();
  const c = await connect(w.root);
  try {
    let id: Id | undefined;
    const never = c.request("probe.never", {}, { onId: (sent) => id = sent });
    await eventually(() => w.host.processes.list().length === 1);
    await c.cancel(id!);
    const answer = await never;
    assert.equal(answer.error?.code, -32002);
    const unknown = await c.request("host/cancel", { id: 12345 });
    assert.equal(unknown.error?.code, -32602);
    assert.match(unknown.error!.message, /no call of this connection has the id 12345/);
  } finally {
    await c.close();
  }
});

/** Writes raw lines to the socket and reads the answers, one per line sent. */
async function rawExchange(socket: string, lines: string[], answers: number): Promise<unknown[]> {
  const conn = await Deno.connect({ transport: "unix", path: socket });
  try {
    await conn.write(new TextEncoder().encode(lines.map((l) => l + "\n").join("")));
    const got: unknown[] = [];
    let buffer = "";
    const decoder = new TextDecoder();
    const chunk = new Uint8Array(65536);
    while (got.length < answers) {
      const n = await conn.read(chunk);
      if (n === null) break;
      buffer += decoder.decode(chunk.subarray(0, n), { stream: true });
      let nl;
      while ((nl = buffer.indexOf("\n")) >= 0) {
        got.push(JSON.parse(buffer.slice(0, nl)));
        buffer = buffer.slice(nl + 1);
      }
    }
    return got;
  } finally {
    conn.close();
  }
}

Deno.test("bad input on the socket gets a clear error, and the connection goes on", async () => {
  await using w = await worldWithEndpoint();
  const deep = '{"jsonrpc":"2.0","id":9,"method":"probe.echo","params":{"a":' + "[".repeat(4000) +
    "]".repeat(4000) + "}}";
  const answers = await rawExchange(controlPaths(w.host.world).socket, [
    "garbage",
    "[1, 2]",
    deep,
    '{"jsonrpc":"2.0","id":3,"result":1}',
    '{"jsonrpc":"2.0","id":4,"method":"host/nothing"}',
    '{"jsonrpc":"2.0","id":5,"method":"probe.echo","params":"text"}',
    '{"jsonrpc":"2.0","id":6,"method":"probe.echo","params":{"ok":true}}',
  ], 7) as { id: Id; error?: { code: number; message: string }; result?: unknown }[];
  // answers to lines without a usable ID come in order; the others may overtake them
  const unnamed = answers.filter((a) => a.id === null);
  assert.deepEqual(unnamed.map((a) => a.error?.code), [-32700, -32600, -32600, -32600]);
  assert.match(unnamed[0].error!.message, /not JSON/);
  assert.match(unnamed[1].error!.message, /batches are not supported/);
  assert.match(unnamed[2].error!.message, /deeper than 256 levels/);
  assert.match(unnamed[3].error!.message, /requests and notifications, not responses/);
  const byId = new Map(answers.map((a) => [a.id, a]));
  assert.equal(byId.get(4)?.error?.code, -32601);
  assert.match(byId.get(4)!.error!.message, /host\/info, host\/processes/);
  assert.equal(byId.get(5)?.error?.code, -32602);
  assert.deepEqual(byId.get(6), { jsonrpc: "2.0", id: 6, result: { ok: true } });
  // an ID that is in use by a running call of the same connection
  const twice = await rawExchange(controlPaths(w.host.world).socket, [
    '{"jsonrpc":"2.0","id":"x","method":"probe.sleep","params":{"ms":300}}',
    '{"jsonrpc":"2.0","id":"x","method":"probe.echo"}',
  ], 2) as { id: Id; error?: { code: number; message: string }; result?: unknown }[];
  assert.equal(twice[0].error?.code, -32600);
  assert.match(twice[0].error!.message, /already used by a call of this connection/);
  assert.deepEqual(twice[1].result, { slept: 300 });
  await eventually(() => w.host.processes.list().length === 0);
});

Deno.test("past the most connections, the oldest silent one makes room; when all have spoken, one more is refused", async () => {
  await using w = await worldWithEndpoint({ maxConnections: 3 });
  const path = controlPaths(w.host.world).socket;
  const firstLine = async (conn: Deno.Conn): Promise<string> => {
    const buffer = new Uint8Array(4096);
    const n = await conn.read(buffer);
    return n === null ? "" : new TextDecoder().decode(buffer.subarray(0, n));
  };
  const silent = [];
  for (let i = 0; i < 3; i++) silent.push(await Deno.connect({ transport: "unix", path }));
  await eventually(() => w.endpoint.connections === 3);
  // a front end that speaks at once is served; the oldest silent connection is told why and closed
  const c = await connect(w.root);
  assert.deepEqual((await c.request("probe.echo", { in: "full" })).result, { in: "full" });
  const told = JSON.parse(await firstLine(silent[0]));
  assert.equal(told.error.code, -32000);
  assert.equal(told.error.data.limit, "control_connections");
  assert.match(told.error.message, /3 connections open, the most it keeps/);
  assert.equal(w.endpoint.connections, 3);
  for (const s of silent) s.close();
  // three that have spoken: none is cut, the fourth is refused with the same error
  const others = [await connect(w.root), await connect(w.root)];
  await eventually(() => w.endpoint.connections === 3);
  const late = await Deno.connect({ transport: "unix", path });
  const refused = JSON.parse(await firstLine(late));
  assert.equal(refused.error.data.limit, "control_connections");
  late.close();
  assert.deepEqual((await c.request("probe.echo", { still: "served" })).result, {
    still: "served",
  });
  assert.ok(w.endpoint.refused >= 2);
  await Promise.all([c, ...others].map((o) => o.close()));
});

Deno.test("an endpoint folder that other users could enter, or that another user owns, is refused", async () => {
  await using w = await worldWithEndpoint();
  const { folder } = controlPaths(w.host.world);
  assert.equal((await Deno.stat(folder)).mode! & 0o777, 0o700);
  assert.equal((await Deno.stat(join(folder, "socket"))).mode! & 0o777, 0o600);
  await Deno.chmod(folder, 0o755);
  await assert.rejects(
    ControlClient.connect(w.root),
    (e) => e instanceof ControlError && /other users \(mode 755\)/.test(e.message),
  );
  await Deno.chmod(folder, 0o700);
  if (Deno.uid() === 0) {
    await Deno.chown(folder, 4242, null);
    await assert.rejects(
      ControlClient.connect(w.root),
      (e) => e instanceof ControlError && /belongs to the user 4242/.test(e.message),
    );
    await Deno.chown(folder, 0, null);
  }
  const c = await connect(w.root);
  await c.close();
});

/** Runs `sausage` with `args`; `NO_COLOR` on. */
function sausage(args: string[]) {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-prompt", "--allow-all", "--unstable-worker-options", MAIN, ...args],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  });
}

async function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await sausage(args).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/** A headless host on a new world with the probe, once its endpoint listens. */
async function headless(): Promise<{ root: string; child: Deno.ChildProcess }> {
  const root = await Deno.makeTempDir({ prefix: "sausage-control-" });
  await initWorld(root);
  await installPlugin(root, "probe", "probe");
  return { root, child: await startHeadless(root) };
}

Deno.test("sausage call, ps, log, stop and kill reach a headless host through its endpoint", async () => {
  const { root, child } = await headless();
  try {
    const echo = await run(["call", root, "probe.echo", '{"x": 1}']);
    assert.equal(echo.code, 0, echo.stderr);
    assert.deepEqual(JSON.parse(echo.stdout), { x: 1 });
    const failed = await run(["call", root, "probe.fail"]);
    assert.equal(failed.code, 1);
    assert.equal(JSON.parse(failed.stdout).code, 4711);
    const notes = await run(["call", root, "probe.progress", '{"count": 2}']);
    assert.match(notes.stderr, /progress \{"step":0\}\nprogress \{"step":1\}/);

    // a caller that stays connected keeps its lingering processes
    const holder = await connect(root);
    try {
      await holder.request("probe.linger");
      await holder.request("probe.linger");
      const ps = await run(["ps", root, "--json"]);
      assert.equal(ps.code, 0);
      const listed = JSON.parse(ps.stdout) as { pid: string; method: string }[];
      assert.deepEqual(listed.map((p) => p.method), ["linger", "linger"]);
      const table = await run(["ps", root]);
      assert.match(table.stdout, /PID +CALL +STATE/);
      assert.match(table.stdout, /probe\.linger +running/);
      // a unique start of a process ID is enough
      const stop = await run(["stop", root, listed[0].pid.slice(0, -4)]);
      assert.equal(stop.code, 0, stop.stderr);
      assert.match(stop.stderr, new RegExp(`stopped ${listed[0].pid}`));
      const kill = await run(["kill", root, listed[1].pid]);
      assert.equal(kill.code, 0, kill.stderr);
      const gone = JSON.parse((await run(["ps", root, "--json"])).stdout);
      assert.deepEqual(gone, []);
      const log = await run(["log", root, "--pid", listed[1].pid, "--json"]);
      const lines = (JSON.parse(log.stdout) as { line: string }[]).map((e) => e.line);
      assert.ok(lines.some((l) => l.startsWith("kill: ")), lines.join("\n"));
    } finally {
      await holder.close();
    }
    const unknown = await run(["stop", root, "probe-00000000"]);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stdout, /-32602|no process/i);
  } finally {
    child.kill("SIGTERM");
    await child.status;
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
});

Deno.test("sausage call --timeout against a running host: the host's -32006, exit 1, the callee stopped", async () => {
  const { root, child } = await headless();
  try {
    const slow = await run(["call", root, "probe.never", "--timeout", "0.5"]);
    assert.equal(slow.code, 1, slow.stderr);
    const error = JSON.parse(slow.stdout);
    assert.equal(error.code, -32006);
    assert.equal(error.data.timeout_ms, 500);
    await eventually(async () =>
      JSON.parse((await run(["ps", root, "--json"])).stdout).length === 0
    );
    const fast = await run(["call", root, "probe.echo", '{"x": 2}', "--timeout", "30"]);
    assert.equal(fast.code, 0, fast.stderr);
    assert.deepEqual(JSON.parse(fast.stdout), { x: 2 });
    const tooLong = await run(["call", root, "probe.echo", "--timeout", "3000000"]);
    assert.equal(tooLong.code, 2);
    assert.match(tooLong.stderr, /--timeout takes a positive number of seconds, at most 2147483/);
  } finally {
    child.kill("SIGTERM");
    await child.status;
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
});

Deno.test("Ctrl-C of sausage call stops only that call's process; the host goes on", async () => {
  const { root, child } = await headless();
  const watcher = await connect(root);
  try {
    const call = sausage(["call", root, "probe.never"]).spawn();
    await eventually(async () => {
      const listed = (await watcher.request("host/processes")).result as unknown[];
      return listed.length === 1;
    }, 15_000);
    call.kill("SIGINT");
    const status = await call.status;
    assert.equal(status.code, 130);
    await eventually(async () => {
      const listed = (await watcher.request("host/processes")).result as unknown[];
      return listed.length === 0;
    });
    assert.deepEqual((await watcher.request("probe.echo", { still: "up" })).result, {
      still: "up",
    });
  } finally {
    await watcher.close();
    child.kill("SIGTERM");
    await child.status;
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
});

Deno.test("after a host is killed, its stale socket is found, removed, and the world runs one-shot", async () => {
  const { root, child } = await headless();
  let removed = false;
  try {
    child.kill("SIGKILL");
    await child.status;
    const { socket } = controlPaths({ coreStateDir: join(root, "state", "core") });
    assert.ok((await Deno.lstat(socket)).isSocket, "the killed host left its socket");
    assert.equal(await ControlClient.connect(root), null);
    const ps = await run(["ps", root]);
    assert.equal(ps.code, 0);
    assert.match(ps.stderr, /no host runs/);
    const stop = await run(["stop", root, "probe-x"]);
    assert.equal(stop.code, 3);
    assert.match(stop.stderr, /no host runs .*sausage --headless/);
    const echo = await run(["call", root, "probe.echo", '{"y": 2}', ...cache]);
    assert.equal(echo.code, 0, echo.stderr);
    assert.deepEqual(JSON.parse(echo.stdout), { y: 2 });
    await assert.rejects(Deno.lstat(socket), Deno.errors.NotFound);
    const log = await run(["log", root, "--grep", "did not stop cleanly", "--json"]);
    assert.equal(log.code, 0, log.stderr);
    assert.equal(JSON.parse(log.stdout).length, 1);
    removed = true;
  } finally {
    if (!removed) child.kill("SIGKILL");
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
});

/** Runs `sausage attach WORLD` with `script` on stdin (the console's script mode). */
function attachWith(root: string, script: string) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-prompt", "--allow-all", "--unstable-worker-options", MAIN, "attach", root],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).spawn();
  const writer = child.stdin.getWriter();
  writer.write(new TextEncoder().encode(script));
  return { child, writer };
}

Deno.test("sausage attach runs the console on a headless host: calls, ps, ls, cat and methods", async () => {
  const { root, child } = await headless();
  try {
    const { child: attached, writer } = attachWith(
      root,
      'probe.echo {"via": "attach"}\nprobe.fail\nls /plugins\ncat /proc/core/plugins/probe/discover.json\nmethods probe\nmethods nothing\nls /nothing\n',
    );
    await writer.close();
    const out = await attached.output();
    const stdout = new TextDecoder().decode(out.stdout);
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    assert.match(stdout, /"via": "attach"/);
    assert.match(stdout, /4711/);
    assert.match(stdout, /^ {2}agent\/\n {2}cargo\/\n {2}probe\/$/m);
    assert.match(stdout, /"openrpc"/);
    assert.match(stdout, /there is no plugin "nothing"/);
    assert.match(stdout, /ls: \/nothing: no such file or folder/);
  } finally {
    child.kill("SIGTERM");
    await child.status;
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
});

Deno.test("two attached consoles at once: each sees the other's calls, and leaving stops only its own", async () => {
  const { root, child } = await headless();
  const watcher = await connect(root);
  try {
    const a = attachWith(root, "probe.never\n"); // waits for its answer
    await eventually(async () => (await watcher.processes()).length === 1, 15_000);
    const [never] = await watcher.processes();
    const b = attachWith(root, "ps\nprobe.echo {}\n");
    await b.writer.close();
    const bOut = await b.child.output();
    assert.equal(bOut.code, 0);
    assert.match(new TextDecoder().decode(bOut.stdout), /probe\.never +running +console/);
    assert.equal((await watcher.processes()).length, 1, "b's leaving did not stop a's call");
    a.child.kill("SIGINT");
    assert.equal((await a.child.status).code, 130);
    await a.child.stdout.cancel();
    await a.child.stderr.cancel();
    await eventually(async () => (await watcher.processes()).length === 0);
    const stops = await watcher.request("core.log", {
      pid: never.pid,
      grep: "^stop: its caller disconnected",
    });
    assert.equal((stops.result as { entries: unknown[] }).entries.length, 1);
  } finally {
    await watcher.close();
    child.kill("SIGTERM");
    await child.status;
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
});

Deno.test("attach with no host says how to start one; a host that goes away ends the console with 1", async () => {
  const root = await Deno.makeTempDir({ prefix: "sausage-control-" });
  await initWorld(root);
  const none = await run(["attach", root]);
  assert.equal(none.code, 3);
  assert.match(none.stderr, /no host runs .*sausage --headless/);
  await Deno.remove(root, { recursive: true });

  const host = await headless();
  try {
    const a = attachWith(host.root, "probe.never\n");
    await eventually(async () => {
      const c = await ControlClient.connect(host.root);
      const n = (await c?.processes())?.length ?? 0;
      await c?.close();
      return n === 1;
    }, 15_000);
    host.child.kill("SIGKILL");
    await host.child.status;
    const out = await a.child.output();
    assert.equal(out.code, 1);
    assert.match(new TextDecoder().decode(out.stderr), /the host closed the connection/);
  } finally {
    await Deno.remove(host.root, { recursive: true }).catch(() => {});
  }
});

Deno.test("a front end follows the journal: each entry as it is made, until it stops following", async () => {
  await using w = await worldWithEndpoint();
  const c = await connect(w.root);
  try {
    const seen: string[] = [];
    const following = await c.follow((e) => seen.push(e.line));
    await c.request("probe.echo", { n: 1 });
    await eventually(() => seen.some((l) => l.startsWith("start echo")));
    following.close();
    await c.request("host/info"); // the unfollow went out before this answer came back
    const count = seen.length;
    await c.request("probe.echo", { n: 2 });
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(seen.length, count, "nothing after close");
    // in process, the same view
    const local = new LocalHostView(w.host);
    const lines: string[] = [];
    const f = await local.follow((e) => lines.push(e.line));
    w.host.journal.event(null, null, "a note of the core");
    assert.deepEqual(lines, ["a note of the core"]);
    f.close();
    await local.close();
  } finally {
    await c.close();
  }
});

Deno.test("sausage log -f prints the last entries, then each new one, until Ctrl-C (exit 0)", async () => {
  const { root, child } = await headless();
  try {
    const log = sausage(["log", root, "-f", "--json", "-n", "1"]).spawn();
    const reader = log.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    const lines = () => text.split("\n").filter((l) => l.trim() !== "");
    while (lines().length < 1) text += (await reader.read()).value ?? "";
    // a call made now shows up as it happens
    const c = await connect(root);
    await c.request("probe.echo", { followed: true });
    await c.close();
    while (!text.includes("followed")) text += (await reader.read()).value ?? "";
    const entries = lines().map((l) => JSON.parse(l) as { line: string });
    assert.ok(entries.some((e) => e.line.startsWith("start echo")));
    log.kill("SIGINT");
    reader.releaseLock();
    await log.stdout.cancel().catch(() => {});
    const status = await log.status;
    assert.equal(status.code, 0);
    await log.stderr.cancel().catch(() => {});
  } finally {
    child.kill("SIGTERM");
    await child.status;
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
});

/** Runs `body` with the endpoint put on loopback TCP, as where Unix sockets are missing. */
async function onTcp(body: () => Promise<void>): Promise<void> {
  Deno.env.set(TRANSPORT_ENV, "tcp");
  try {
    await body();
  } finally {
    Deno.env.delete(TRANSPORT_ENV);
  }
}

/** Lines sent on a raw TCP connection, and every line answered until the host closes it. */
async function rawTcp(port: number, lines: string[]): Promise<unknown[]> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  await conn.write(new TextEncoder().encode(lines.map((l) => l + "\n").join("")));
  const text = await new Response(conn.readable).text(); // until the host closes it
  return text.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l));
}

Deno.test("on loopback TCP the token of endpoint.json is required before anything is served", async () => {
  await onTcp(async () => {
    await using w = await worldWithEndpoint();
    assert.equal(w.endpoint.transport, "tcp");
    const { socket, tcpFile } = controlPaths(w.host.world);
    await assert.rejects(Deno.lstat(socket), Deno.errors.NotFound);
    assert.equal((await Deno.stat(tcpFile)).mode! & 0o777, 0o600);
    const file = JSON.parse(await Deno.readTextFile(tcpFile));
    assert.equal(file.hostname, "127.0.0.1");
    assert.match(file.token, /^[0-9a-f]{64}$/);

    // the client reads the file, says hello with the token, and works as on the socket
    const c = await connect(w.root);
    assert.deepEqual((await c.request("probe.echo", { over: "tcp" })).result, { over: "tcp" });
    const notes: string[] = [];
    c.onNote = (text) => notes.push(text);
    w.host.note("a service failed"); // what the person at the host is told reaches the front end
    await eventually(() => notes.length === 1);
    assert.deepEqual(notes, ["a service failed"]);

    // without the token, or with a wrong one, nothing is served and the connection is closed
    const echo = '{"jsonrpc":"2.0","id":1,"method":"probe.echo","params":{"x":1}}';
    const bare = await rawTcp(file.port, [echo]) as { id: Id; error?: { message: string } }[];
    assert.equal(bare.length, 1);
    assert.equal(bare[0].id, 1);
    assert.match(bare[0].error!.message, /first message must be `host\/hello/);
    const wrong = await rawTcp(file.port, [
      JSON.stringify({ jsonrpc: "2.0", id: 0, method: "host/hello", params: { token: "0" } }),
      echo,
    ]) as { error?: { message: string } }[];
    assert.equal(wrong.length, 1, "the echo after a wrong token is never answered");
    assert.match(wrong[0].error!.message, /token of state\/core\/control\/endpoint\.json/);
    await eventually(() => w.host.journal.query({ grep: "without the token" }).length === 2);

    // a file others could read is refused: its token is no secret any more
    await Deno.chmod(tcpFile, 0o644);
    await assert.rejects(
      ControlClient.connect(w.root),
      (e) => e instanceof ControlError && /read by other users \(mode 644\)/.test(e.message),
    );
    await Deno.chmod(tcpFile, 0o600);
    await c.close();
    await w.endpoint.close();
    await assert.rejects(Deno.lstat(tcpFile), Deno.errors.NotFound);
  });
});

Deno.test("a host on TCP killed with SIGKILL leaves endpoint.json; front ends see no host, the next host removes it", async () => {
  const root = await Deno.makeTempDir({ prefix: "sausage-control-" });
  await initWorld(root);
  await installPlugin(root, "probe", "probe");
  const child = await startHeadless(root, { [TRANSPORT_ENV]: "tcp" });
  try {
    const echo = await run(["call", root, "probe.echo", '{"via": "tcp"}']);
    assert.equal(echo.code, 0, echo.stderr);
    assert.deepEqual(JSON.parse(echo.stdout), { via: "tcp" });
    child.kill("SIGKILL");
    await child.status;
    const { tcpFile } = controlPaths({ coreStateDir: join(root, "state", "core") });
    assert.ok((await Deno.lstat(tcpFile)).isFile, "the killed host left its endpoint's file");
    assert.equal(await ControlClient.connect(root), null);
    const oneShot = await run(["call", root, "probe.echo", '{"y": 2}', ...cache]);
    assert.equal(oneShot.code, 0, oneShot.stderr);
    await assert.rejects(Deno.lstat(tcpFile), Deno.errors.NotFound);
  } finally {
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
});

Deno.test("a stale endpoint.json whose port another program took: the token is never sent, and the impostor is refused", async () => {
  const root = await Deno.makeTempDir({ prefix: "sausage-control-" });
  await initWorld(root);
  const { folder, tcpFile } = controlPaths({ coreStateDir: join(root, "state", "core") });
  await Deno.mkdir(folder, { recursive: true, mode: 0o700 });
  await Deno.chmod(folder, 0o700);
  const impostor = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const token = "ab".repeat(32);
  await Deno.writeTextFile(
    tcpFile,
    JSON.stringify({
      transport: "tcp",
      hostname: "127.0.0.1",
      port: impostor.addr.port,
      token,
      pid: 1,
    }),
    { mode: 0o600 },
  );
  // it answers every first line with a success, as a careless or hostile program would
  const seen: string[] = [];
  const serving = (async () => {
    const conn = await impostor.accept();
    const reader = conn.readable.pipeThrough(new TextDecoderStream()).getReader();
    const { value } = await reader.read();
    seen.push(value ?? "");
    const id = JSON.parse((value ?? "").split("\n")[0]).id;
    await conn.write(
      new TextEncoder().encode(JSON.stringify({ jsonrpc: "2.0", id, result: {} }) + "\n"),
    );
    await reader.read().catch(() => {}); // until the client gives up and closes
    await reader.cancel().catch(() => {});
  })();
  try {
    await assert.rejects(
      ControlClient.connect(root),
      (e) => e instanceof ControlError && /is not the host that wrote that file/.test(e.message),
    );
    await serving;
    assert.equal(seen.length, 1);
    assert.ok(!seen[0].includes(token), "the token did not go to the port");
    assert.match(seen[0], /"proof":"[0-9a-f]{64}"/);
  } finally {
    impostor.close();
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
});
