/**
 * The native plugin `mcp` (PROTOCOL section 13.2): a world's external MCP
 * servers, made with the official SDK's `McpServer`
 * (`tests/mcp_external_server.ts`), reached with ordinary calls over stdio
 * and over Streamable HTTP, from the console's client and from a plugin.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { stringify } from "yaml";
import { McpServers } from "../core/mcp_servers/plugin.ts";
import { agentWorld, history } from "./agent_world.ts";
import type { ModelApi } from "./model_server.ts";
import { eventually, startWorld } from "./world.ts";

const SERVER = new URL("./mcp_external_server.ts", import.meta.url).pathname;

/** `agent.yaml` with these servers (the agent's own fields left out: the plugin reads its part). */
function agentYaml(servers: Record<string, unknown>): string {
  return stringify({ mcp_servers: servers });
}

function scripted(...args: string[]): Record<string, unknown> {
  return { command: Deno.execPath(), args: ["run", "-A", SERVER, ...args] };
}

/**
 * A world whose server `scripted` writes what it cancelled into a file (`cancelled`); `more` adds
 * servers. Disposing of it removes the file's folder too.
 */
async function cancellingWorld(more: Record<string, unknown> = {}) {
  const dir = await Deno.makeTempDir({ prefix: "sausage-mcp-" });
  const cancelled = join(dir, "cancelled");
  const w = await startWorld({
    files: {
      "config/agent.yaml": agentYaml({
        scripted: { ...scripted(), env: { CANCELLED_FILE: cancelled } },
        ...more,
      }),
    },
  });
  return {
    w,
    cancelled,
    async [Symbol.asyncDispose]() {
      await w[Symbol.asyncDispose]();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    },
  };
}

/** Resolves once the file at `path` exists and `ok` accepts its text. */
function fileSays(path: string, ok: (text: string) => boolean, ms: number): Promise<void> {
  return eventually(async () => {
    try {
      return ok(await Deno.readTextFile(path));
    } catch {
      return false;
    }
  }, ms);
}

Deno.test("mcp.tools and mcp.call reach a server over stdio: results, isError, progress, unknown tools", async () => {
  await using w = await startWorld({
    plugins: { probe: "probe" },
    files: { "config/agent.yaml": agentYaml({ scripted: scripted("--tools", "3") }) },
  });
  const listed = await w.call("mcp.tools", { server: "scripted" }) as {
    tools: { server: string; name: string; inputSchema: { properties?: object } }[];
  };
  assert.deepEqual(
    listed.tools.map((t) => t.name),
    ["echo", "fail", "slow", "hang", "many_0", "many_1", "many_2"],
  );
  assert.ok(listed.tools.every((t) => t.server === "scripted"));
  assert.deepEqual(Object.keys(listed.tools[0].inputSchema.properties ?? {}), ["text"]);

  const echo = await w.call("mcp.call", {
    server: "scripted",
    tool: "echo",
    arguments: { text: "milk" },
  }) as { content: unknown[]; structuredContent: unknown };
  assert.deepEqual(echo.content, [{ type: "text", text: "milk" }]);
  assert.deepEqual(echo.structuredContent, { echoed: "milk" });

  const failed = await w.request("mcp.call", { server: "scripted", tool: "fail" });
  assert.equal(failed.error?.code, -32005);
  assert.match(failed.error!.message, /scripted\.fail failed: the disk is on fire/);
  assert.equal((failed.error!.data as { isError: boolean }).isError, true);

  const unknown = await w.request("mcp.call", { server: "scripted", tool: "nothing" });
  assert.ok(unknown.error, "an unknown tool is an error");
  assert.match(unknown.error!.message, /nothing/);
  const badArgs = await w.request("mcp.call", {
    server: "scripted",
    tool: "echo",
    arguments: { text: 7 },
  });
  assert.ok(badArgs.error, "arguments the server's schema refuses are an error");

  // progress of a tool comes to the caller as core.notify
  const notes: [string, unknown][] = [];
  const slow = await w.client.request("mcp.call", {
    server: "scripted",
    tool: "slow",
    arguments: { steps: 3 },
  }, { onNotify: (name, p) => notes.push([name, p]) });
  assert.deepEqual(slow.result, { content: [{ type: "text", text: "took 3 steps" }] });
  const steps = notes.filter(([, p]) => (p as { progress?: number }).progress !== undefined);
  assert.deepEqual(steps.map(([, p]) => (p as { progress: number }).progress), [1, 2, 3]);

  // one connection served every call: the server was started once
  const starts = w.host.journal.query({ plugin: "mcp", grep: "^scripted: starting" });
  assert.equal(starts.length, 1);

  // a plugin reaches it with an ordinary call
  const viaPlugin = await w.call("probe.call", {
    method: "mcp.call",
    params: { server: "scripted", tool: "echo", arguments: { text: "from wasm" } },
  }) as { response: { result: { structuredContent: unknown } } };
  assert.deepEqual(viaPlugin.response.result.structuredContent, { echoed: "from wasm" });
});

Deno.test("core.stop of an mcp.call cancels the server's request", async () => {
  await using world = await cancellingWorld();
  const { w, cancelled } = world;
  let pid = "";
  const call = w.client.request("mcp.call", {
    server: "scripted",
    tool: "slow",
    arguments: { steps: 400 },
  }, { onNotify: () => {} });
  await eventually(() => {
    const p = w.host.processes.list().find((x) => x.plugin === "mcp");
    pid = p?.pid ?? "";
    return pid !== "";
  }, 20_000);
  // wait for the server to be working on it, then stop the process
  await eventually(() => {
    const log = w.host.journal.query({ plugin: "mcp", grep: "connected" });
    return log.length === 1;
  }, 20_000);
  await new Promise((r) => setTimeout(r, 200));
  assert.deepEqual(await w.call("core.stop", { pid }), {});
  const answer = await call;
  assert.ok(answer.error, "the stopped call gets an error");
  await fileSays(cancelled, (t) => t.startsWith("cancelled at step"), 10_000);
});

Deno.test("a caller's deadline bounds mcp.call and cancels the request; the SDK's own timeout is -32005, not -32001", async () => {
  await using world = await cancellingWorld({ short: { ...scripted(), timeout_seconds: 1 } });
  const { w, cancelled } = world;
  // connected first, so that the deadline below is the request's alone
  const echo = await w.request("mcp.call", {
    server: "scripted",
    tool: "echo",
    arguments: { text: "up" },
  });
  assert.ok(echo.result, JSON.stringify(echo));
  const bounded = await w.request("core.call", {
    method: "mcp.call",
    params: { server: "scripted", tool: "hang" },
    timeout_ms: 700,
  });
  assert.equal(bounded.error?.code, -32006, JSON.stringify(bounded));
  await fileSays(cancelled, (t) => t === "hang cancelled", 10_000);
  // timeout_seconds of the entry: the SDK's RequestTimeout is -32001, Sausage's "no such plugin"
  const timedOut = await w.request("mcp.call", { server: "short", tool: "hang" });
  assert.equal(timedOut.error?.code, -32005, JSON.stringify(timedOut));
  assert.equal((timedOut.error?.data as { mcp_code: number }).mcp_code, -32001);
  assert.match(timedOut.error!.message, /the MCP server "short": .*timed out/i);
  await eventually(() => w.host.processes.list().length === 0);
});

Deno.test("a server that does not start, a missing one and a wrong entry get errors that name them", async () => {
  await using w = await startWorld({
    files: {
      "config/agent.yaml": agentYaml({
        crashing: scripted("--crash"),
        missing: { command: "/nonexistent/mcp-server" },
        wrong: { command: "x", url: "http://127.0.0.1:1/mcp" },
        "Bad Name": { command: "x" },
        good: scripted(),
      }),
    },
  });
  const crash = await w.request("mcp.tools", { server: "crashing" });
  assert.equal(crash.error?.code, -32005);
  assert.match(crash.error!.message, /the MCP server "crashing" .* did not start/);
  assert.match(crash.error!.message, /cannot open its database/, "its stderr is in the error");
  assert.match(crash.error!.message, /mcp_servers\.crashing in \/config\/agent\.yaml/);

  const missing = await w.request("mcp.tools", { server: "missing" });
  assert.equal(missing.error?.code, -32005);
  assert.match(missing.error!.message, /"missing" \(`\/nonexistent\/mcp-server`\) did not start/);

  const wrong = await w.request("mcp.call", { server: "wrong", tool: "x" });
  assert.equal(wrong.error?.code, -32602);
  assert.match(wrong.error!.message, /mcp_servers\.wrong .* exactly one of `command`/);

  const none = await w.request("mcp.call", { server: "other", tool: "x" });
  assert.match(none.error!.message, /no server "other" .*\(it has crashing, missing, good\)/);

  // all of them: the good server's tools, and a problem for each other entry
  const all = await w.call("mcp.tools") as { tools: { server: string }[]; problems: string[] };
  assert.deepEqual([...new Set(all.tools.map((t) => t.server))], ["good"]);
  assert.equal(all.problems.length, 4, all.problems.join("\n"));
  assert.ok(all.problems.some((p) => /Bad Name.*lowercase/.test(p)));
  const servers = await w.call("mcp.servers") as {
    servers: { name: string; connected: boolean }[];
  };
  assert.deepEqual(
    servers.servers.map((s) => [s.name, s.connected]),
    [["crashing", false], ["missing", false], ["good", true]],
  );
});

Deno.test("a Streamable HTTP server by url; an edited entry makes a new connection", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = listener.addr.port;
  listener.close();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", SERVER, "--http", String(port)],
    stdout: "null",
    stderr: "null",
  }).spawn();
  try {
    await using w = await startWorld({
      files: { "config/agent.yaml": agentYaml({ web: { url: `http://127.0.0.1:${port}/mcp` } }) },
    });
    // the server may still be starting: the first calls can find no one listening
    await eventually(async () => {
      const r = await w.request("mcp.call", {
        server: "web",
        tool: "echo",
        arguments: { text: "over http" },
      });
      return r.error === undefined;
    }, 20_000);
    const again = await w.call("mcp.call", {
      server: "web",
      tool: "echo",
      arguments: { text: "twice" },
    }) as { structuredContent: unknown };
    assert.deepEqual(again.structuredContent, { echoed: "twice" });
    // the entry changes: the old connection closes and a new one is made (now over stdio)
    await Deno.writeTextFile(join(w.root, "config", "agent.yaml"), agentYaml({ web: scripted() }));
    const viaStdio = await w.call("mcp.call", {
      server: "web",
      tool: "echo",
      arguments: { text: "stdio now" },
    }) as { structuredContent: unknown };
    assert.deepEqual(viaStdio.structuredContent, { echoed: "stdio now" });
    const closed = w.host.journal.query({ plugin: "mcp", grep: "closing the connection" });
    assert.match(closed.at(-1)!.line, /web: closing the connection \(its entry changed\)/);
  } finally {
    child.kill();
    await child.status;
  }
});

Deno.test("a server with 1,000 tools is listed whole", async () => {
  await using w = await startWorld({
    files: { "config/agent.yaml": agentYaml({ big: scripted("--tools", "1000") }) },
  });
  const listed = await w.call("mcp.tools", { server: "big" }) as { tools: unknown[] };
  assert.equal(listed.tools.length, 1004);
});

for (const api of ["openai-chat-completions", "anthropic-messages"] as ModelApi[]) {
  Deno.test(`${api}: the agent gets the servers' tools as its own, and calls one through mcp.call`, async () => {
    await using w = await agentWorld({
      api,
      yaml: agentYaml({ scripted: scripted(), broken: scripted("--crash") }),
      script: [
        { toolCalls: [{ name: "mcp__scripted__echo", arguments: { text: "from the model" } }] },
        { text: "The server echoed it." },
      ],
    });
    const chat = await w.chat("echo something");
    assert.equal(chat.response.result, "The server echoed it.", JSON.stringify(chat.response));
    // the model was offered the tool with the server's schema, and told of the broken server
    const first = w.server.requests[0].body as {
      tools: Record<string, unknown>[];
      system?: string;
      messages: { role: string; content: unknown }[];
    };
    const names = first.tools.map((t) =>
      String((t.function as { name?: string } | undefined)?.name ?? t.name)
    );
    assert.ok(names.includes("call"), names.join(", "));
    assert.ok(names.includes("mcp__scripted__echo"), names.join(", "));
    const system = first.system ?? String(first.messages[0].content);
    assert.match(system, /mcp__<server>__<tool>/);
    assert.match(system, /"broken" .* did not start/);
    // the tool's result reached the model as text
    const second = JSON.stringify(w.server.requests[1].body);
    assert.match(second, /from the model/);
    assert.match(second, /structuredContent: \{\\"echoed\\":\\"from the model\\"\}/);
    const steps = await history(w);
    const tool = steps.find((s) => s.role === "tool");
    assert.ok(tool, "the tool step is in the history");
    assert.match(String(tool.text), /^ok, from the model/);
  });
}

Deno.test("a call longer than the idle time keeps its connection; an idle one is closed; a failed start is not retried at once", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sausage-mcp-idle-" });
  const configPath = join(dir, "agent.yaml");
  await Deno.writeTextFile(
    configPath,
    agentYaml({ scripted: scripted(), crashing: scripted("--crash") }),
  );
  const lines: string[] = [];
  const servers = new McpServers({ configPath, log: (l) => lines.push(l), idleMs: 300 });
  const mcp = servers.plugin();
  const ctx = {
    pid: "test-1",
    log: () => {},
    notify: () => {},
    signal: new AbortController().signal,
  };
  try {
    // 20 steps of 50 ms: past the idle time, with a request in flight all along
    const slow = await mcp.methods.call(ctx, {
      server: "scripted",
      tool: "slow",
      arguments: { steps: 20 },
    }) as { content: { text: string }[] };
    assert.equal(slow.content[0].text, "took 20 steps");
    assert.ok(!lines.some((l) => /closing the connection/.test(l)), lines.join("\n"));
    await eventually(
      () => lines.some((l) => /scripted: closing the connection \(idle/.test(l)),
      5000,
    );

    await assert.rejects(mcp.methods.tools(ctx, { server: "crashing" }), /did not start/);
    const before = performance.now();
    await assert.rejects(mcp.methods.tools(ctx, { server: "crashing" }), /not tried again before/);
    assert.ok(performance.now() - before < 100, "the second try fails at once");
    assert.equal(lines.filter((l) => /^crashing: starting/.test(l)).length, 1);
  } finally {
    await servers.close();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
});
