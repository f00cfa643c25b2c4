/**
 * Calls (PROTOCOL 3.1 to 3.5) against real components: the test plugin
 * `probe` (tests/plugins/crates/probe), raw JSON-RPC on stdin and stdout.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Request } from "../core/jsonrpc.ts";
import { testPlugin } from "./setup.ts";
import { eventually, startWorld } from "./world.ts";

type AnyRecord = Record<string, unknown>;
/** `data` of -32002 (PROTOCOL 3.3). */
type EndedData = {
  pid: string;
  status: number | null;
  reason: string;
  detail: string;
  log: string[];
};

Deno.test("a call starts a process that gets its PID as request ID, and the answer returns with the caller's ID", async () => {
  await using w = await startWorld();
  const response = await w.request("probe.request", { x: 1 });
  const received = response.result as AnyRecord;
  assert.equal(response.id, 1);
  assert.match(String(received.id), /^probe-[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-/);
  assert.equal(received.method, "request");
  assert.deepEqual(received.params, { x: 1 });
  // the process ended after it answered: nothing is left running
  await eventually(() => w.host.processes.list().length === 0);
});

Deno.test("each call is a fresh process", async () => {
  await using w = await startWorld();
  const a = (await w.call("probe.env")) as { vars: AnyRecord };
  const b = (await w.call("probe.env")) as { vars: AnyRecord };
  assert.notEqual(a.vars.SAUSAGE_PID, b.vars.SAUSAGE_PID);
});

Deno.test("a missing plugin is -32001; a method name without a plugin is -32601", async () => {
  await using w = await startWorld();
  const missing = await w.request("nope.add", {});
  assert.equal(missing.error?.code, -32001);
  assert.match(missing.error!.message, /plugins\/nope\/plugin\.wasm/);
  const badName = await w.request("Nope.add", {});
  assert.equal(badName.error?.code, -32001);
  assert.match(badName.error!.message, /a-z, 0-9/);
  const noDot = await w.request("echo", {});
  assert.equal(noDot.error?.code, -32601);
  const noCore = await w.request("core.nothing", {});
  assert.equal(noCore.error?.code, -32601);
  assert.match(noCore.error!.message, /core\.call/);
});

Deno.test("an error answer of a plugin reaches the caller unchanged", async () => {
  await using w = await startWorld();
  const r = await w.request("probe.fail", {});
  assert.deepEqual(r.error, { code: 4711, message: "probe failed on purpose" });
  const unknown = await w.request("probe.nothing", {});
  assert.equal(unknown.error?.code, -32601);
});

Deno.test("params that are not an object get -32602; a batch gets -32600", async () => {
  await using w = await startWorld();
  const answers: unknown[] = [];
  const peer = w.host.client("console");
  const wait = new Promise<void>((resolve) => {
    peer.deliver = (m) => {
      answers.push(m);
      if (answers.length === 3) resolve();
    };
  });
  peer.send({ jsonrpc: "2.0", id: "a", method: "probe.echo", params: [1, 2] });
  peer.send({ jsonrpc: "2.0", id: "b", method: "probe.echo", params: "text" });
  peer.send([{ jsonrpc: "2.0", id: "c", method: "probe.echo", params: {} }]);
  await wait;
  const byId = Object.fromEntries(answers.map((a) => [JSON.stringify((a as AnyRecord).id), a]));
  assert.equal((byId['"a"'] as { error: { code: number } }).error.code, -32602);
  assert.equal((byId['"b"'] as { error: { code: number } }).error.code, -32602);
  assert.equal((byId["null"] as { error: { code: number } }).error.code, -32600);
});

Deno.test("a process that sends a batch or params that are not an object gets the error on stdin", async () => {
  await using w = await startWorld();
  const batch = (await w.call("probe.raw", {
    line: JSON.stringify([{ jsonrpc: "2.0", id: 1, method: "probe.echo", params: {} }]),
  })) as { answer: { id: unknown; error: { code: number } } };
  assert.equal(batch.answer.id, null);
  assert.equal(batch.answer.error.code, -32600);
  const params = (await w.call("probe.raw", {
    line: JSON.stringify({ jsonrpc: "2.0", id: 5, method: "probe.echo", params: [1] }),
  })) as { answer: { id: unknown; error: { code: number } } };
  assert.equal(params.answer.id, 5);
  assert.equal(params.answer.error.code, -32602);
});

Deno.test("lines that are not JSON-RPC are discarded with one journal warning, without their content", async () => {
  await using w = await startWorld();
  const r = await w.request("probe.noise", {});
  assert.equal(r.result, "after noise");
  const pid = lastPid(w.host.journal.query({ plugin: "probe" }));
  await eventually(() => w.host.journal.query({ pid, grep: "^exit" }).length === 1);
  const entries = w.host.journal.query({ pid });
  const warnings = entries.filter((e) => e.stream === "core" && /discarded a line/.test(e.line));
  assert.equal(warnings.length, 1);
  assert.ok(entries.every((e) => !e.line.includes("hello, this is not json")));
  assert.ok(entries.some((e) => /discarded 4 lines of stdout/.test(e.line)));
});

Deno.test("invalid UTF-8 on stdout is noise; on stderr it reaches the journal lossily", async () => {
  await using w = await startWorld();
  assert.equal(await w.call("probe.bad_utf8"), "after bad utf8");
  const lines = w.host.journal.query({ plugin: "probe", grep: "^bad " });
  assert.equal(lines.length, 1);
  assert.equal(lines[0].stream, "stderr");
  assert.match(lines[0].line, /^bad \uFFFD+ bytes$/);
});

Deno.test("each stderr line goes to the journal with the process and the plugin", async () => {
  await using w = await startWorld();
  await w.call("probe.log", { lines: 3, text: "hello" });
  const lines = w.host.journal.query({ plugin: "probe", grep: "^hello" });
  assert.deepEqual(lines.map((e) => e.line), ["hello 0", "hello 1", "hello 2"]);
  assert.ok(lines.every((e) => e.stream === "stderr" && e.pid?.startsWith("probe-")));
});

Deno.test("responses with unknown or late IDs are dropped and noted", async () => {
  await using w = await startWorld();
  assert.equal(await w.call("probe.wrong_id"), "right");
  assert.equal(await w.call("probe.twice"), "first");
  const dropped = () => w.host.journal.query({ plugin: "probe", grep: "dropped a response" });
  await eventually(() => dropped().length === 3);
  assert.ok(dropped().some((e) => /late/.test(e.line)));
  assert.ok(dropped().some((e) => /"not-my-id"/.test(e.line)));
});

Deno.test("a crash before the answer is -32002 with the status and the last journal lines", async () => {
  await using w = await startWorld();
  const panic = await w.request("probe.panic", {});
  assert.equal(panic.error?.code, -32002);
  const data = panic.error!.data as EndedData;
  assert.deepEqual(Object.keys(data).sort(), ["detail", "log", "pid", "reason", "status"]);
  assert.equal(data.status, null);
  assert.equal(data.reason, "trapped");
  assert.match(data.detail, /\S/);
  assert.ok(data.log.some((l) => l.includes("probe panicked on purpose")));
  assert.match(
    panic.error!.message,
    /^probe\.panic: the process probe-\S+ ended without an answer: it crashed \(/,
  );

  for (const code of [1, 0]) {
    const exit = await w.request("probe.exit", { code });
    assert.equal(exit.error?.code, -32002);
    const data = exit.error!.data as EndedData;
    // PROTOCOL 3.3: the same fields for every reason, `detail` included
    assert.deepEqual(Object.keys(data).sort(), ["detail", "log", "pid", "reason", "status"]);
    assert.equal(data.status, code);
    assert.equal(data.reason, "exited");
    assert.equal(data.detail, `it exited with status ${code} before it answered`);
    assert.match(
      exit.error!.message,
      new RegExp(`ended without an answer: it exited with status ${code}$`),
    );
  }
});

Deno.test("the core reads stdout to the end before it decides -32002", async () => {
  await using w = await startWorld();
  // `probe.echo` answers and ends at once: the answer must win over the exit
  for (let i = 0; i < 20; i++) assert.deepEqual(await w.call("probe.echo", { i }), { i });
});

Deno.test("a process calls another plugin and gets the answer on stdin", async () => {
  await using w = await startWorld();
  const r = (await w.call("probe.call", { method: "probe.echo", params: { deep: 1 } })) as {
    response: { id: number; result: unknown };
  };
  assert.equal(r.response.id, 1);
  assert.deepEqual(r.response.result, { deep: 1 });
});

Deno.test("a process has many calls in flight, answered by their exact IDs", async () => {
  await using w = await startWorld();
  const r = (await w.call("probe.fan_out", { method: "probe.echo", count: 6 })) as Record<
    string,
    { result: { i: number } }
  >;
  for (let i = 1; i <= 6; i++) assert.deepEqual(r[String(i)].result, { i });
});

Deno.test("a second request with an ID in flight gets -32600, even in the same batch of lines", async () => {
  await using w = await startWorld();
  for (const first of ["probe.sleep", "core.call"]) {
    const params = first === "core.call"
      ? { method: "probe.sleep", params: { ms: 300 } }
      : { ms: 300 };
    const line = [
      JSON.stringify({ jsonrpc: "2.0", id: 7, method: first, params }),
      JSON.stringify({ jsonrpc: "2.0", id: 7, method: "probe.echo", params: {} }),
    ].join("\n");
    const { answer } = (await w.call("probe.raw", { line })) as {
      answer: { id: number; error?: { code: number; message: string } };
    };
    assert.equal(answer.id, 7);
    assert.equal(answer.error?.code, -32600, JSON.stringify(answer));
    assert.match(answer.error!.message, /already in flight/);
  }
});

Deno.test("a notification to plugin.method starts an attached process, and nobody gets a result", async () => {
  await using w = await startWorld();
  const delivered: unknown[] = [];
  const peer = w.host.client("console");
  const answered = new Promise<void>((resolve) => {
    peer.deliver = (m) => {
      delivered.push(m);
      resolve();
    };
  });
  peer.send({
    jsonrpc: "2.0",
    id: 1,
    method: "probe.notify_plugin",
    params: { method: "probe.log", params: { lines: 1, text: "from-notification" } },
  });
  await answered;
  await eventually(() => w.host.journal.query({ grep: "^from-notification" }).length === 1);
  const started = w.host.journal.query({ grep: "^start log" });
  assert.equal(started.length, 1);
  await eventually(() =>
    w.host.journal.query({ pid: started[0].pid!, grep: "^exit" }).length === 1
  );
  // its answer had no caller: only the caller's own answer reached the console
  assert.deepEqual(delivered, [{ jsonrpc: "2.0", id: 1, result: "sent" }]);
});

Deno.test("the process a notification starts is attached to the caller, and stops when the caller ends", async () => {
  await using w = await startWorld();
  // `linger` stays until EOF, then its stop hook writes the file
  await w.call("probe.notify_plugin", {
    method: "probe.linger",
    params: { hook_file: "/state/hook.txt" },
  });
  const caller = w.host.journal.query({ grep: "^start notify_plugin" })[0].pid!;
  await eventually(() => w.host.journal.query({ grep: "^start linger" }).length === 1);
  const child = w.host.journal.query({ grep: "^start linger" })[0].pid!;
  // the caller answered and ended; its attached child was stopped because of that
  await eventually(() => w.host.journal.query({ pid: child, grep: "^exit" }).length === 1);
  const stops = w.host.journal.query({ pid: child, grep: "^stop: " }).map((e) => e.line);
  assert.deepEqual(stops, [`stop: its parent ${caller} ended`]);
  assert.equal(await Deno.readTextFile(join(w.root, "state", "hook.txt")), "stopped");
  assert.equal(w.host.processes.list().length, 0);
});

Deno.test("a notification's process whose caller ended while it was prepared still stops with it", async () => {
  // a version never run before: its first transpile takes long, and the caller ends meanwhile
  const probe = await Deno.readFile(await testPlugin("probe"));
  const unique = crypto.getRandomValues(new Uint8Array(16));
  const name = new TextEncoder().encode("sausage-test");
  const section = new Uint8Array([
    0,
    1 + name.length + unique.length,
    name.length,
    ...name,
    ...unique,
  ]);
  await using w = await startWorld();
  await Deno.mkdir(join(w.root, "plugins", "fresh"));
  await Deno.writeFile(
    join(w.root, "plugins", "fresh", "plugin.wasm"),
    new Uint8Array([...probe, ...section]),
  );
  await w.call("probe.notify_plugin", {
    method: "fresh.linger",
    params: { hook_file: "/state/hook.txt" },
  });
  const caller = w.host.journal.query({ grep: "^start notify_plugin" })[0].pid!;
  await eventually(() => w.host.journal.query({ pid: caller, grep: "^exit" }).length === 1);
  await eventually(() => w.host.journal.query({ grep: "^start linger" }).length === 1, 60_000);
  const [start] = w.host.journal.query({ grep: "^start linger" });
  const [callerExit] = w.host.journal.query({ pid: caller, grep: "^exit" });
  assert.ok(start.id > callerExit.id, "the caller ended before its notification's process started");
  await eventually(() => w.host.journal.query({ pid: start.pid!, grep: "^exit" }).length === 1);
  const stops = w.host.journal.query({ pid: start.pid!, grep: "^stop: " }).map((e) => e.line);
  assert.deepEqual(stops, [`stop: its parent ${caller} ended`]);
  // the discovery of the new plugin may still run
  await eventually(() => w.host.processes.list().length === 0);
});

Deno.test("core.call with detach, as a request: the result returns, and the process outlives its caller", async () => {
  await using w = await startWorld();
  const r = (await w.call("probe.call", {
    method: "core.call",
    params: { method: "probe.linger", params: {}, detach: true },
  })) as { response: { result: unknown } };
  assert.equal(r.response.result, "lingering");
  await eventually(() => w.host.processes.list().length === 1);
  const [lingering] = w.host.processes.list();
  assert.equal(lingering.method, "linger");
  assert.equal(lingering.detached, true);
  await w.call("core.stop", { pid: lingering.pid });
});

Deno.test("core.call with detach, as a notification: the process starts and is forgotten", async () => {
  await using w = await startWorld();
  await w.call("probe.notify_plugin", {
    method: "core.call",
    params: { method: "probe.linger", params: {}, detach: true },
  });
  await eventually(() => w.host.processes.list().some((p) => p.method === "linger"));
  await eventually(() => w.host.processes.list().length === 1); // the caller ended, the detached one stays
  const lingering = w.host.processes.list()[0];
  assert.equal(lingering.detached, true);
  await w.call("core.kill", { pid: lingering.pid });
});

Deno.test("core.notify reaches the caller with the caller's request ID, and not after the call", async () => {
  await using w = await startWorld();
  const seen: [string, unknown][] = [];
  const r = await w.client.request("probe.progress", { count: 3 }, {
    onNotify: (name, params) => seen.push([name, params]),
  });
  assert.deepEqual(r.result, { steps: 3 });
  assert.deepEqual(seen, [
    ["progress", { step: 0 }],
    ["progress", { step: 1 }],
    ["progress", { step: 2 }],
  ]);
  // nested: the notifications of the inner call reach the outer process with its own request ID
  const nested =
    (await w.call("probe.call", { method: "probe.progress", params: { count: 2 } })) as {
      notifications: Request[];
    };
  assert.equal(nested.notifications.length, 2);
  for (const n of nested.notifications) {
    assert.equal(n.method, "core.notify");
    assert.equal((n.params as AnyRecord).call, 1);
    assert.equal((n.params as AnyRecord).name, "progress");
  }

  // a core.notify sent after the answer is dropped: the caller sees the answer and nothing else
  const delivered: unknown[] = [];
  const peer = w.host.client("console");
  peer.deliver = (m) => delivered.push(m);
  peer.send({ jsonrpc: "2.0", id: "late", method: "probe.notify_late", params: {} });
  await eventually(() => w.host.journal.query({ grep: "^start notify_late" }).length === 1);
  const pid = w.host.journal.query({ grep: "^start notify_late" })[0].pid!;
  // the process wrote the notification before it ended, and the core reads stdout to the end
  await eventually(() => w.host.journal.query({ pid, grep: "^exit" }).length === 1);
  assert.ok(w.host.journal.query({ pid, grep: "sent a notification after the answer" }).length);
  await new Promise((r) => setTimeout(r, 50)); // room for a wrong delivery to show up
  assert.deepEqual(delivered, [{ jsonrpc: "2.0", id: "late", result: "answered" }]);
});

Deno.test("a stdout line of 400 MiB is cut at 16 MiB: the process is killed, the journal says why, the host's memory stays bounded", async () => {
  await using w = await startWorld();
  const before = Deno.memoryUsage().rss;
  const r = await w.request("probe.huge_line", { mb: 400 });
  const grown = Deno.memoryUsage().rss - before;
  assert.equal(r.error?.code, -32002);
  const data = r.error!.data as EndedData;
  assert.equal(data.reason, "killed");
  assert.match(data.detail, /16 MiB/);
  assert.match(r.error!.message, /ended without an answer: it was killed \(.*16 MiB/);
  // the host holds at most about one capped line, never the 400 MiB
  assert.ok(grown < 200 * 2 ** 20, `the host grew by ${Math.round(grown / 2 ** 20)} MiB`);
  const pid = (r.error!.data as { pid: string }).pid;
  assert.ok(w.host.journal.query({ pid, grep: "16 MiB" }).length >= 1);
  // the host is fine afterwards
  assert.deepEqual(await w.call("probe.echo", { after: true }), { after: true });
});

Deno.test("files a process writes land in the world folder", async () => {
  await using w = await startWorld();
  const r = (await w.call("probe.write_file", { path: "/state/x.txt", text: "hi" })) as AnyRecord;
  assert.equal(r.read, "hi", JSON.stringify(r));
  assert.ok(existsSync(join(w.root, "state", "x.txt")));
  const listed = (await w.call("probe.list_dir", { path: "/" })) as { names: string[] };
  for (const name of ["config", "plugins", "state"]) assert.ok(listed.names.includes(name));
  const escape =
    (await w.call("probe.read_file", { path: "/../../../../etc/hostname" })) as AnyRecord;
  assert.ok("error" in escape, "a path that climbs out of the world stays inside it");
});

function lastPid(entries: { pid: string | null }[]): string {
  const pid = entries.findLast((e) => e.pid !== null)?.pid;
  assert.ok(pid);
  return pid;
}
