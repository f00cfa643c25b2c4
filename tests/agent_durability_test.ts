/**
 * The agent's durable sessions: a host killed with SIGKILL in the middle of
 * a tool call and in the middle of a model stream, a person's Stop, and
 * state from a newer agent. The host runs as `sausage call`, a subprocess,
 * so that a kill takes all of it.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { initWorld } from "../core/init.ts";
import { agentWorld, agentYaml, history, messagesOf } from "./agent_world.ts";
import { type ModelServer, type Reply, startModelServer } from "./model_server.ts";
import { eventually, installPlugin, TEST_CACHE_DIR } from "./world.ts";

const MAIN = new URL("../main.ts", import.meta.url).pathname;

/** A world with the shipped agent and `probe`, talking to a model server. */
async function subprocessWorld(script: Reply[]): Promise<{ root: string; server: ModelServer }> {
  const server = await startModelServer({
    api: "openai-chat-completions",
    script,
    token: "test-key",
  });
  const root = await Deno.makeTempDir({ prefix: "sausage-agent-" });
  await initWorld(root, { installAgent: true });
  await installPlugin(root, "probe", "probe");
  await Deno.writeTextFile(
    join(root, "config", "agent.yaml"),
    agentYaml(server, "openai-chat-completions"),
  );
  return { root, server };
}

function sausageCall(root: string, method: string, params: unknown) {
  return new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--no-prompt",
      "--allow-all",
      "--unstable-worker-options",
      MAIN,
      "call",
      "--cache-dir",
      TEST_CACHE_DIR,
      root,
      method,
      JSON.stringify(params),
    ],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).spawn();
}

async function callOnce(root: string, method: string, params: unknown): Promise<unknown> {
  const out = await sausageCall(root, method, params).output();
  const stdout = new TextDecoder().decode(out.stdout);
  assert.equal(out.code, 0, `${method}: ${stdout}\n${new TextDecoder().decode(out.stderr)}`);
  return JSON.parse(stdout);
}

/** The session's journal entries of one kind. */
async function entries(root: string, kind: string): Promise<Record<string, unknown>[]> {
  let text = "";
  try {
    text = await Deno.readTextFile(join(root, "state", "agent", "default", "journal.jsonl"));
  } catch {
    return [];
  }
  return text.split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l))
    .filter((e) => e.kind === kind).map((e) => e.data);
}

/** Lines of the world's journal that match. */
function journalLines(root: string, like: string): string[] {
  const db = new DatabaseSync(join(root, "state", "core", "journal.sqlite"), { readOnly: true });
  try {
    return db.prepare("SELECT line FROM entries WHERE line LIKE ?").all(like).map((r) =>
      String(r.line)
    );
  } finally {
    db.close();
  }
}

Deno.test("a host killed in the middle of a tool call: the call is not repeated, and the model is told", async () => {
  const { root, server } = await subprocessWorld([
    { toolCalls: [{ name: "call", arguments: { method: "probe.never" }, id: "call_never" }] },
    { text: "I will check what happened first." },
  ]);
  await using _ = server;
  const host = sausageCall(root, "agent.chat", { text: "run probe.never" });
  await eventually(
    async () => (await entries(root, "agent.op.v1")).some((o) => o.type === "tool"),
    30_000,
  );
  // probe runs the call (its start is journaled) when the host dies
  await eventually(() => journalLines(root, "start never%").length === 1, 10_000);
  host.kill("SIGKILL");
  await host.status;
  await host.stdout.cancel();
  await host.stderr.cancel();
  assert.equal(server.requests.length, 1);

  const answer = await callOnce(root, "agent.chat", { text: "what happened?" });
  assert.equal(answer, "I will check what happened first.");
  const told = messagesOf(server, 2).find((m) =>
    m.role === "tool" && m.tool_call_id === "call_never"
  );
  assert.match(String(told?.content), /did not complete.*not repeated/s);
  const results = await entries(root, "agent.op-result.v1");
  assert.ok(results.some((r) => r.status === "unresolved"), JSON.stringify(results));
  const steps = await callOnce(root, "agent.history", {}) as {
    role: string;
    text: string;
    blocks: string[];
  }[];
  assert.deepEqual(steps.map((s) => s.role), ["user", "assistant", "tool", "user", "assistant"]);
  assert.match(steps[2].text, /did not complete; not repeated/);
  assert.equal(journalLines(root, "start never%").length, 1, "probe.never ran once");
  assert.ok(steps[1].blocks.includes("toolRequest"));
  await Deno.remove(root, { recursive: true });
});

Deno.test("a host killed in the middle of a model stream: the model call is closed as cancelled", async () => {
  const { root, server } = await subprocessWorld([
    { partial: { text: "This answer is cut off somewhere in the middle of it." }, thenHang: true },
    { text: "Second try." },
  ]);
  await using _ = server;
  const host = sausageCall(root, "agent.chat", { text: "first" });
  await server.streaming(1);
  await new Promise((r) => setTimeout(r, 300));
  host.kill("SIGKILL");
  await host.status;
  await host.stdout.cancel();
  await host.stderr.cancel();

  assert.equal(await callOnce(root, "agent.chat", { text: "again" }), "Second try.");
  const users = messagesOf(server, 2).filter((m) => m.role === "user").map((m) => m.content);
  assert.deepEqual(users, ["first", "again"]);
  const results = await entries(root, "agent.op-result.v1");
  assert.equal(results[0].status, "cancelled");
  const steps = await callOnce(root, "agent.history", {}) as { role: string; text: string }[];
  assert.deepEqual(steps.map((s) => s.role), ["user", "error", "user", "assistant"]);
  assert.match(steps[1].text, /cut off while the model answered/);
  await Deno.remove(root, { recursive: true });
});

Deno.test("a Stop (core.stop of the agent) ends the turn at once, keeping what was streamed", async () => {
  await using w = await agentWorld({
    script: [
      { partial: { text: "Streaming a long answer that the person stops." }, thenHang: true },
      { text: "after the stop" },
    ],
  });
  const texts: string[] = [];
  const chat = w.client.request("agent.chat", { text: "tell me" }, {
    onNotify: (name, p) => name === "text" && texts.push((p as { text: string }).text),
  });
  await eventually(() => texts.length > 0);
  const agent = w.host.processes.list().find((p) => p.plugin === "agent")!;
  const started = performance.now();
  await w.call("core.stop", { pid: agent.pid });
  const response = await chat;
  assert.equal(response.error?.code, -32002);
  assert.ok(performance.now() - started < 4000, "at once, not after the 5 s kill");
  await eventually(() => w.server.disconnects >= 1);
  const steps = await history(w);
  assert.deepEqual(steps.map((s) => s.role), ["user", "assistant", "error"]);
  assert.equal(steps[1].text, texts.join(""));
  assert.ok(steps[1].blocks.includes("cancelled"));
  assert.match(steps[2].text, /Stopped/);
  const results = (await Deno.readTextFile(join(w.root, "state/agent/default/journal.jsonl")))
    .split("\n").filter(Boolean).map((l) => JSON.parse(l)).filter((e) =>
      e.kind === "agent.op-result.v1"
    );
  assert.equal(results.at(-1).data.status, "cancelled");

  assert.equal((await w.chat("go on")).response.result, "after the stop");
  const assistant = messagesOf(w.server, 2).find((m) => m.role === "assistant");
  assert.equal(assistant?.content, texts.join(""));
});

Deno.test("state of a newer format is kept, not overwritten: a fresh context and a reset step", async () => {
  const newer = JSON.stringify({
    format: 7,
    seq: 1,
    journal_bytes: 0,
    context: "a shape of the future",
  });
  const step = JSON.stringify({
    seq: 1,
    time: "2026-12-01T00:00:00.000Z",
    kind: "agent.step.v1",
    data: { role: "user", text: "from the future", blocks: ["text"] },
  });
  await using w = await agentWorld({
    script: [{ text: "fresh" }],
    files: {
      "state/agent/default/state.json": newer,
      "state/agent/default/journal.jsonl": step + "\n",
    },
  });
  assert.equal((await w.chat("hello")).response.result, "fresh");
  assert.equal(
    await Deno.readTextFile(join(w.root, "state/agent/default/state.format-7.json")),
    newer,
  );
  const steps = await history(w);
  assert.deepEqual(steps.map((s) => s.role), ["user", "notice", "user", "assistant"]);
  assert.match(steps[1].text, /format 7, newer than this agent's 1/);
  const users = messagesOf(w.server, 1).filter((m) => m.role === "user").map((m) => m.content);
  assert.deepEqual(users, ["hello"], "the model gets a fresh context");
});

/** The same component with a custom section added: another version of it. */
function anotherVersion(wasm: Uint8Array, tag: string): Uint8Array {
  const name = new TextEncoder().encode("sausage-test");
  const payload = new TextEncoder().encode(tag);
  const body = [name.length, ...name, ...payload];
  return new Uint8Array([...wasm, 0, body.length, ...body]);
}

Deno.test("an upgrade of the agent during a turn: the turn finishes, the next message gets the new version", async () => {
  await using w = await agentWorld({
    script: [
      {
        text: "An answer that streams for a while, word by word, while the agent is upgraded.",
        delayMs: 30,
      },
      { text: "Now from the new version.", delayMs: 30 },
    ],
  });
  const wasmPath = join(w.root, "plugins", "agent", "plugin.wasm");
  const first = w.chat("one");
  await w.server.streaming(1);
  const old = w.host.processes.list().find((p) => p.plugin === "agent")!;
  const next = anotherVersion(await Deno.readFile(wasmPath), "v2");
  await Deno.writeFile(`${wasmPath}.tmp`, next);
  await Deno.rename(`${wasmPath}.tmp`, wasmPath); // a copy by hand: no checks, an upgrade all the same
  const answer = await first;
  assert.equal(
    answer.response.result,
    "An answer that streams for a while, word by word, while the agent is upgraded.",
  );
  const document = await w.call("agent.rpc.discover") as Record<string, unknown>;
  assert.equal(document["x-sausage-grace"], 600, "a turn may take 10 minutes after an upgrade");
  const second = w.chat("two");
  await w.server.streaming(2);
  const current = w.host.processes.list().find((p) =>
    p.plugin === "agent" && p.state === "running"
  )!;
  assert.notEqual(current.version, old.version);
  assert.equal((await second).response.result, "Now from the new version.");
  const users = messagesOf(w.server, 2).filter((m) => m.role === "user").map((m) => m.content);
  assert.deepEqual(users, ["one", "two"], "the new version read the old one's session");
});
