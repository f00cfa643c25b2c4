/**
 * The SDK under the real host: the `notes` example with concurrent calls,
 * and the runtime's behaviours (PROTOCOL 3.1 to 3.6 and 6) through the test
 * plugin `sdk/test-plugins/probe`.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { eventually, startWorld } from "../tests/world.ts";
import { install, plugin } from "./build.ts";

const MAIN_TS = new URL("../main.ts", import.meta.url).pathname;

async function world(plugins: Record<string, string>) {
  const w = await startWorld({ plugins: {} });
  await install(w.root, plugins);
  return w;
}

Deno.test("notes: concurrent adds are all kept, each with its own count", async () => {
  await using w = await world({ notes: "notes" });
  const texts = Array.from({ length: 16 }, (_, i) => `note ${i}`);
  const added = await Promise.all(
    texts.map((text) => w.call("notes.add", { text }) as Promise<{ count: number }>),
  );
  assert.deepEqual(added.map((a) => a.count).sort((a, b) => a - b), texts.map((_, i) => i + 1));
  const list = (await w.call("notes.list")) as string[];
  assert.deepEqual([...list].sort(), [...texts].sort());
  const file = JSON.parse(await Deno.readTextFile(join(w.root, "state/notes/notes.json")));
  assert.deepEqual(file, list);
  await eventually(() => w.host.processes.list().length === 0);
});

Deno.test("notes: bad params are -32602 and an unknown method is -32601, with the methods named", async () => {
  await using w = await world({ notes: "notes" });
  const bad = await w.request("notes.add", { txt: "milk" });
  assert.equal(bad.error?.code, -32602);
  assert.match(bad.error!.message, /missing field `text`/);
  const unknown = await w.request("notes.remove", {});
  assert.equal(unknown.error?.code, -32601);
  assert.match(unknown.error!.message, /add, list/);
});

Deno.test("a background task keeps the process alive after the answer", async () => {
  await using w = await world({ probe: "probe" });
  const file = "/state/later.txt";
  const pid = await w.call("probe.later", { ms: 300, file });
  assert.ok(!existsSync(join(w.root, file)), "answered before the task ended");
  assert.ok(w.host.processes.get(String(pid)), "the process still runs");
  await eventually(() => existsSync(join(w.root, file)));
  await eventually(() => w.host.processes.list().length === 0);
});

Deno.test("EOF on stdin runs the stop hook, and the process ends", async () => {
  await using w = await world({ probe: "probe" });
  const pid = String(await w.call("probe.linger", { file: "/state/hook.txt" }));
  await new Promise((r) => setTimeout(r, 100));
  assert.ok(w.host.processes.get(pid), "a background task keeps it");
  const started = performance.now();
  await w.call("core.stop", { pid });
  assert.ok(performance.now() - started < 4000, "it ended by itself, before the kill");
  assert.equal(await Deno.readTextFile(join(w.root, "state/hook.txt")), "stopped");
});

Deno.test("exit_after_response ends the process although a background task runs", async () => {
  await using w = await world({ probe: "probe" });
  const pid = String(await w.call("probe.quit"));
  await eventually(() => !w.host.processes.get(pid), 3000);
  const log = w.host.journal.query({ pid });
  assert.ok(log.some((e) => e.line === "exit status 0"), JSON.stringify(log));
});

Deno.test("ctx.notify reaches the caller with its request ID, before the answer", async () => {
  await using w = await world({ probe: "probe" });
  const seen: string[] = [];
  const response = await w.client.request("probe.progress", { n: 3 }, {
    onNotify: (name, params) => seen.push(`${name} ${JSON.stringify(params)}`),
  });
  assert.equal(response.result, 3);
  assert.deepEqual(seen, ['step {"i":0}', 'step {"i":1}', 'step {"i":2}']);
});

Deno.test("a call's on_notify gets the callee's notifications", async () => {
  await using w = await world({ probe: "probe" });
  assert.deepEqual(await w.call("probe.relay", { n: 4 }), {
    names: ["step", "step", "step", "step"],
    result: 4,
  });
});

Deno.test("many calls in flight at once", async () => {
  await using w = await world({ probe: "probe" });
  const n = 12;
  assert.deepEqual(
    await w.call("probe.fanout", { n }),
    Array.from({ length: n }, (_, i) => String(i)),
  );
});

Deno.test("a detached call outlives its caller", async () => {
  await using w = await world({ probe: "probe" });
  const pid = String(await w.call("probe.spawn", { file: "/state/detached.txt" }));
  assert.match(pid, /^probe-/);
  await eventually(() => w.host.processes.list().length === 1); // only the detached one is left
  assert.ok(w.host.processes.get(pid));
  await w.call("core.stop", { pid });
  assert.equal(await Deno.readTextFile(join(w.root, "state/detached.txt")), "stopped");
});

Deno.test("a lock granted to an acquisition that was given up is released", async () => {
  await using w = await world({ probe: "probe" });
  const path = "/state/contended";
  const holder = w.call("probe.hold", { path, ms: 400 });
  await new Promise((r) => setTimeout(r, 100));
  // gives up after 50 ms, then waits behind its own given-up acquisition
  const abandoned = await w.client.request("probe.abandon", { path, ms: 50 }, { timeoutMs: 5000 });
  await holder;
  assert.equal(abandoned.result, true);
  assert.equal(await w.call("probe.try_lock", { path, ms: 0 }), true);
});

Deno.test("EOF fails the calls in flight", async () => {
  await using w = await world({ probe: "probe" });
  const stranded = w.client.request("probe.stranded", {});
  await eventually(() => w.host.processes.list().length === 2); // stranded, and the sleep it called
  const pid = w.host.processes.list()[0].pid;
  await w.call("core.stop", { pid });
  const answer = await stranded;
  // the pending call failed at EOF; the handler answered with that error
  assert.equal(answer.error?.code, -32000, JSON.stringify(answer));
  assert.match(answer.error!.message, /the process is stopping/);
  const log = w.host.journal.query({ pid, grep: "^stranded" });
  assert.equal(log.length, 1, JSON.stringify(w.host.journal.query({ pid })));
  assert.match(log[0].line, /the process is stopping/);
});

Deno.test("rpc.retired goes to the #[on_retired] method; without one it answers null", async () => {
  await using w = await world({ probe: "probe", notes: "notes" });
  assert.equal(await w.call("probe.rpc.retired", { previous: "ab12" }), "retired ab12");
  assert.equal(await w.call("notes.rpc.retired", { previous: "ab12" }), null);
});

Deno.test("an error answer keeps its code and data; print! does not break a message", async () => {
  await using w = await world({ probe: "probe" });
  const failed = await w.request("probe.fail", {});
  assert.deepEqual(failed.error, {
    code: 4711,
    message: "failed on purpose",
    data: { why: "a test" },
  });
  assert.equal(await w.call("probe.noise"), "after noise");
});

Deno.test("on the wire: a newline before each message, and unknown response IDs noted on stderr", async () => {
  const wasm = await plugin("probe");
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--unstable-worker-options", MAIN_TS, "run", wasm],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  const encode = (m: unknown) => new TextEncoder().encode(JSON.stringify(m) + "\n");
  await writer.write(encode({ jsonrpc: "2.0", id: 7, method: "sleep", params: { ms: 300 } }));
  await writer.write(encode({ jsonrpc: "2.0", id: 42, result: true }));
  await writer.write(new TextEncoder().encode("this is not json\n"));
  const stdout = child.stdout.getReader();
  let out = "";
  while (!out.includes('"id":7')) {
    const { value, done } = await stdout.read();
    if (done) break;
    out += new TextDecoder().decode(value);
  }
  await writer.close();
  stdout.releaseLock();
  const result = await child.output();
  out += new TextDecoder().decode(result.stdout);
  const err = new TextDecoder().decode(result.stderr);
  assert.equal(out, '\n{"jsonrpc":"2.0","id":7,"result":300}\n');
  assert.match(err, /dropped a response with the unknown or late id 42/);
  assert.match(err, /ignored a line that is not JSON/);
  assert.equal(result.code, 0);
});

/** A TCP port that is free now. */
function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

Deno.test("secrets: a client connects to the vault through /run/secrets", async () => {
  await using w = await world({ secrets: "secrets", client: "client" });
  await w.call("core.call", { method: "secrets.serve", params: {}, detach: true });
  assert.equal(await w.call("client.vault", { name: "key", value: "s3cret" }), "s3cret");
  assert.equal(await w.call("client.vault", { name: "other", value: "x" }), "x");
});

Deno.test("secrets as a service of boot.yaml: the vault runs from the start, and a client uses it", async () => {
  await using w = await startWorld({
    plugins: {},
    wasm: {
      secrets: await Deno.readFile(await plugin("secrets")),
      client: await Deno.readFile(await plugin("client")),
    },
    files: { "config/boot.yaml": "- method: secrets.serve\n" },
  });
  await w.host.servicesStarted;
  assert.equal(w.host.journal.query({ grep: "^service secrets.serve: ready$" }).length, 1);
  assert.equal(await w.call("client.vault", { name: "key", value: "s3cret" }), "s3cret");
  const [vault] = w.host.processes.list().filter((p) => p.plugin === "secrets");
  assert.ok(vault?.detached, "the vault is a detached service process");
});

Deno.test("connect waits a short time for an endpoint file that does not exist yet", async () => {
  await using w = await world({ secrets: "secrets", client: "client" });
  const vault = w.call("client.vault", { name: "key", value: "early" });
  await new Promise((r) => setTimeout(r, 500));
  await w.call("core.call", { method: "secrets.serve", params: {}, detach: true });
  assert.equal(await vault, "early");
});

Deno.test("a stale endpoint file is refused after rpc.endpoint", async () => {
  await using w = await world({ secrets: "secrets", client: "client", probe: "probe" });
  await w.call("core.call", { method: "secrets.serve", params: {}, detach: true });
  const line = String(await w.call("probe.read", { file: "/run/secrets" }));
  assert.match(line, /^tcp:127\.0\.0\.1:\d+ secrets-[0-9a-f-]{36} vault\n$/);
  const stale = line.replace(
    /secrets-[0-9a-f-]{36}/,
    "secrets-0197f3a2-7c1e-7d2b-9a41-5f0c2e8b1d34",
  );
  await w.call("probe.write", { file: "/run/stale", text: stale });
  const refused = await w.request("client.vault", { name: "k", value: "v", path: "/run/stale" });
  assert.match(refused.error?.message ?? "", /\/run\/stale is stale: it names secrets-0197f3a2/);
});

Deno.test("www: the server answers HTTP, its endpoint counts the hits and stops it", async () => {
  await using w = await world({ www: "www", client: "client" });
  await Deno.mkdir(join(w.root, "state/www"), { recursive: true });
  await Deno.writeTextFile(join(w.root, "state/www/index.html"), "<h1>hello</h1>");
  const port = freePort();
  const pid = String(
    await w.call("core.call", { method: "www.start", params: { port }, detach: true }),
  );
  for (const path of ["/", "/index.html", "/missing"]) {
    const response = await fetch(`http://127.0.0.1:${port}${path}`);
    const body = await response.text();
    assert.equal(response.status, path === "/missing" ? 404 : 200, body);
    if (response.status === 200) assert.equal(body, "<h1>hello</h1>");
  }
  assert.equal(await w.call("client.hits", { pid }), 3);
  await w.call("client.stop", { pid });
  await eventually(() => !w.host.processes.get(pid));
});

Deno.test("the seed's import example: a note, a detached server, its hits", async () => {
  await using w = await world({ notes: "notes", www: "www", client: "client" });
  assert.equal(await w.call("client.example", { port: freePort() }), 0);
  assert.deepEqual(await w.call("notes.list"), ["milk"]);
});
