/**
 * `sausage mcp`: the official SDK's MCP client against the server, as a
 * subprocess over stdio (its own host, and a headless host's through the
 * control endpoint), and in process over the SDK's in-memory transport for
 * the cases that need many plugins or no subprocess.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { jsonSchemaValidator } from "../core/mcp_servers/validator.ts";
// @ts-types="@modelcontextprotocol/sdk/client/stdio"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
// @ts-types="@modelcontextprotocol/sdk/inMemory"
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import {
  type CallToolResult,
  type JSONRPCMessage,
  McpError,
  ResourceListChangedNotificationSchema,
  type TextResourceContents,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { ControlClient } from "../core/control_client.ts";
import { LocalHostView } from "../core/host_view.ts";
import { initWorld } from "../core/init.ts";
import { exposedPlugins, McpConfigError } from "../mcp/config.ts";
import { createMcpServer } from "../mcp/server.ts";
import { testPlugin } from "./setup.ts";
import { eventually, probeAnswering, startHeadless, startWorld, TEST_CACHE_DIR } from "./world.ts";

const MAIN = new URL("../main.ts", import.meta.url).pathname;

/** The probe's interface for these tests (it answers rpc.discover with /state/probe-discover.json). */
const PROBE_DOCUMENT = {
  openrpc: "1.2.6",
  info: { title: "probe", version: "mcp" },
  methods: [
    {
      name: "echo",
      summary: "Return the params.",
      description: "Answers with exactly what it was given.",
      params: [],
      "x-sausage-params": { $ref: "#/components/schemas/Echo" },
      result: { name: "Echo", schema: { $ref: "#/components/schemas/Echo" } },
    },
    { name: "fail", summary: "Fail on purpose (error 4711).", params: [] },
    {
      name: "progress",
      summary: "Send `count` progress notifications, then answer.",
      params: [{ name: "count", required: true, schema: { type: "integer", minimum: 0 } }],
      result: {
        name: "Steps",
        schema: { type: "object", properties: { steps: { type: "integer" } }, required: ["steps"] },
      },
    },
    { name: "never", summary: "Never answer; end at EOF.", params: [] },
    {
      name: "request",
      summary: "Answers with an object, though its document promises a string.",
      params: [],
      result: { name: "text", schema: { type: "string" } },
    },
    { name: "rpc.retired", params: [] },
  ],
  components: {
    schemas: {
      Echo: {
        type: "object",
        properties: { text: { type: "string" }, n: { type: "integer" } },
        required: ["text"],
      },
    },
  },
};

/** A world with the probe answering `document`, and notes_v1 staged in /state/builds. */
async function makeWorld(document: unknown = PROBE_DOCUMENT): Promise<string> {
  const root = await Deno.makeTempDir({ prefix: "sausage-mcp-" });
  await initWorld(root);
  await Deno.mkdir(join(root, "plugins", "probe"), { recursive: true });
  await Deno.writeFile(
    join(root, "plugins", "probe", "plugin.wasm"),
    await probeAnswering(document),
  );
  await Deno.writeTextFile(join(root, "state", "probe-discover.json"), JSON.stringify(document));
  await Deno.mkdir(join(root, "state", "builds"), { recursive: true });
  for (const crate of ["notes_v1", "notes_v2"]) {
    await Deno.copyFile(await testPlugin(crate), join(root, "state", "builds", `${crate}.wasm`));
  }
  return root;
}

/** An MCP client connected to `sausage mcp ARGS` run as a subprocess. */
async function mcpClient(
  args: string[],
): Promise<{
  client: Client;
  stderr: () => string;
  negotiated: () => string | undefined;
  received: JSONRPCMessage[];
}> {
  const transport = new StdioClientTransport({
    command: Deno.execPath(),
    args: ["run", "-A", "--unstable-worker-options", MAIN, "mcp", ...args],
    env: { ...Deno.env.toObject(), NO_COLOR: "1" },
    stderr: "pipe",
  });
  let version: string | undefined;
  // the client tells its transport the version the server chose
  (transport as { setProtocolVersion?: (v: string) => void }).setProtocolVersion = (v) =>
    version = v;
  let stderr = "";
  transport.stderr?.on("data", (chunk: Uint8Array) => stderr += new TextDecoder().decode(chunk));
  const client = new Client({ name: "sausage-test", version: "1.0.0" }, {
    jsonSchemaValidator: jsonSchemaValidator(),
  });
  client.onerror = (e) => console.error("CLIENT ERROR", e);
  await client.connect(transport);
  // what arrives, before the client's own dispatch (which may drop late progress, see server.ts)
  const received: JSONRPCMessage[] = [];
  const dispatch = transport.onmessage!;
  transport.onmessage = (message) => {
    received.push(message);
    dispatch(message);
  };
  return { client, stderr: () => stderr, negotiated: () => version, received };
}

function text(result: CallToolResult): string {
  return result.content.map((c) => c.type === "text" ? c.text : "").join("\n");
}

/** The processes of the world, as the client sees them in /proc. */
async function processes(client: Client): Promise<string[]> {
  const listing = await client.readResource({ uri: "sausage:///proc" });
  const { entries } = JSON.parse((listing.contents[0] as TextResourceContents).text) as {
    entries: { name: string }[];
  };
  return entries.map((e) => e.name.replace(/\/$/, "")).filter((n) => n !== "core");
}

async function starts(client: Client, method: string): Promise<number> {
  const log = await client.callTool({
    name: "core_log",
    arguments: { grep: `^start ${method}\\b` },
  }) as CallToolResult;
  return (log.structuredContent as { entries: unknown[] }).entries.length;
}

Deno.test("sausage mcp over stdio: tools from rpc.discover, calls, errors, resources, progress, cancellation", async () => {
  const root = await makeWorld();
  const { client, stderr, negotiated, received } = await mcpClient([
    root,
    "--cache-dir",
    TEST_CACHE_DIR,
  ]);
  try {
    assert.equal(negotiated(), "2025-11-25");
    assert.equal(client.getServerVersion()?.name, "sausage");
    assert.deepEqual(client.getServerCapabilities()?.tools, { listChanged: true });

    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name);
    assert.deepEqual(names.slice(0, 6), [
      "core_activate",
      "core_revert",
      "core_log",
      "core_stop",
      "core_kill",
      "cargo_build",
    ]);
    // the agent the host installs, then the probe: plugins by name, methods in document order
    assert.deepEqual(names.slice(6).filter((n) => !n.startsWith("agent_")), [
      "probe_echo",
      "probe_fail",
      "probe_progress",
      "probe_never",
      "probe_request",
    ], "rpc.* methods are no tools");
    assert.ok(names.indexOf("agent_chat") < names.indexOf("probe_echo"));
    const echo = tools.find((t) => t.name === "probe_echo")!;
    assert.equal(echo.title, "probe.echo");
    assert.equal(echo.description, "Return the params.\n\nAnswers with exactly what it was given.");
    assert.deepEqual(echo.inputSchema.required, ["text"]);
    assert.deepEqual(echo.inputSchema.properties, {
      text: { type: "string" },
      n: { type: "integer" },
    });
    assert.equal(echo.outputSchema?.type, "object");
    assert.deepEqual(
      tools.find((t) => t.name === "probe_progress")!.inputSchema,
      {
        type: "object",
        properties: { count: { type: "integer", minimum: 0 } },
        required: ["count"],
      },
    );

    // a result: structuredContent and the same JSON as text
    const answer = await client.callTool({ name: "probe_echo", arguments: { text: "hi", n: 2 } });
    assert.deepEqual(answer.structuredContent, { text: "hi", n: 2 });
    assert.deepEqual(JSON.parse(text(answer as CallToolResult)), { text: "hi", n: 2 });
    assert.equal(answer.isError, undefined);

    // a JSON-RPC error: isError with its message and code
    const failed = await client.callTool({ name: "probe_fail", arguments: {} }) as CallToolResult;
    assert.equal(failed.isError, true);
    assert.match(
      text(failed),
      /probe\.fail failed: probe failed on purpose \(JSON-RPC error 4711\)/,
    );

    // arguments that do not fit: isError naming the field, and no process started
    const before = await starts(client, "echo");
    const wrongType = await client.callTool({ name: "probe_echo", arguments: { text: 5 } });
    assert.equal(wrongType.isError, true);
    assert.match(text(wrongType as CallToolResult), /"text" must be string/);
    const missing = await client.callTool({ name: "probe_echo", arguments: { n: 1 } });
    assert.match(text(missing as CallToolResult), /"text" is required but missing/);
    assert.equal(await starts(client, "echo"), before, "no process started for bad arguments");

    // a result that breaks the plugin's own interface
    const broken = await client.callTool({ name: "probe_request", arguments: {} });
    assert.equal(broken.isError, true);
    assert.match(text(broken as CallToolResult), /"result" must be string/);

    // an unknown tool is a protocol error
    await assert.rejects(
      client.callTool({ name: "probe_nothing", arguments: {} }),
      (e) =>
        e instanceof McpError && e.code === -32602 && /no tool "probe_nothing"/.test(e.message),
    );

    // resources: the core's documents, a plugin's, a world file by template, a folder
    const { resources } = await client.listResources();
    const uris = resources.map((r) => r.uri);
    for (
      const uri of [
        "sausage:///proc/core/PROTOCOL.md",
        "sausage:///proc/core/graph.json",
        "sausage:///proc/core/graph.dot",
        "sausage:///proc/core/plugins/probe/discover.json",
        "sausage:///proc/core/plugins/probe/client.rs",
        "sausage:///proc/core/plugins/cargo/discover.json",
      ]
    ) assert.ok(uris.includes(uri), uri);
    const protocol = await client.readResource({ uri: "sausage:///proc/core/PROTOCOL.md" });
    assert.equal(protocol.contents[0].mimeType, "text/markdown");
    assert.match(
      (protocol.contents[0] as TextResourceContents).text,
      /## 12\. The control endpoint/,
    );
    const discovered = await client.readResource({
      uri: "sausage:///proc/core/plugins/probe/discover.json",
    });
    assert.equal(
      JSON.parse((discovered.contents[0] as TextResourceContents).text).info.version,
      "mcp",
    );
    const { resourceTemplates } = await client.listResourceTemplates();
    assert.equal(resourceTemplates[0].uriTemplate, "sausage:///{+path}");
    const file = await client.readResource({ uri: "sausage:///state/probe-discover.json" });
    assert.deepEqual(JSON.parse((file.contents[0] as TextResourceContents).text), PROBE_DOCUMENT);
    const folder = await client.readResource({ uri: "sausage:///plugins" });
    assert.match((folder.contents[0] as TextResourceContents).text, /"probe\/"/);
    await assert.rejects(
      client.readResource({ uri: "sausage:///state/nothing.json" }),
      (e) => e instanceof McpError && e.code === -32002 && /nothing\.json/.test(e.message),
    );

    // progress: each core.notify of the call, in order, before its answer
    const progress: { progress: number; message?: string }[] = [];
    const steps = await client.callTool(
      { name: "probe_progress", arguments: { count: 3 } },
      undefined,
      { onprogress: (p) => progress.push(p) },
    );
    assert.deepEqual(steps.structuredContent, { steps: 3 });
    const notes = received.flatMap((m) =>
      "method" in m && m.method === "notifications/progress"
        ? [m.params as Record<string, unknown>]
        : []
    );
    assert.equal(new Set(notes.map((n) => n.progressToken)).size, 1, "one token: the call's");
    assert.deepEqual(notes.map((n) => [n.progress, n.message]), [
      [1, 'progress {"step":0}'],
      [2, 'progress {"step":1}'],
      [3, 'progress {"step":2}'],
    ]);
    assert.deepEqual(
      progress.map((p) => p.progress),
      [1, 2, 3],
      "the client's onprogress got each",
    );

    // cancellation stops the call's process
    const abort = new AbortController();
    const never = client.callTool({ name: "probe_never", arguments: {} }, undefined, {
      signal: abort.signal,
    });
    await eventually(async () => (await processes(client)).length === 1, 15_000);
    abort.abort("the test gave up");
    await assert.rejects(never);
    await eventually(async () => (await processes(client)).length === 0, 10_000);
    const stops = await client.callTool({
      name: "core_log",
      arguments: { grep: "^stop: its caller cancelled the call" },
    });
    assert.equal((stops.structuredContent as { entries: unknown[] }).entries.length, 1);
  } catch (e) {
    console.error(stderr());
    throw e;
  } finally {
    await client.close();
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
});

Deno.test("sausage mcp: an activation, a revert, a copy by hand and a removal each send tools/list_changed", async () => {
  const root = await makeWorld();
  const { client, stderr } = await mcpClient([root, "--cache-dir", TEST_CACHE_DIR]);
  let toolChanges = 0;
  let resourceChanges = 0;
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    toolChanges++;
  });
  client.setNotificationHandler(ResourceListChangedNotificationSchema, () => {
    resourceChanges++;
  });
  const toolNames = async () => (await client.listTools()).tools.map((t) => t.name);
  try {
    assert.ok(!(await toolNames()).includes("notes_add"));
    await client.listResources();
    let before = toolChanges;
    // a new plugin, activated by the client itself
    const activated = await client.callTool({
      name: "core_activate",
      arguments: { plugin: "notes", wasm: "/state/builds/notes_v1.wasm" },
    });
    assert.equal(activated.isError, undefined, text(activated as CallToolResult));
    await eventually(() => toolChanges > before, 10_000);
    await eventually(() => resourceChanges === 1, 5_000);
    const { tools } = await client.listTools();
    const add = tools.find((t) => t.name === "notes_add");
    assert.ok(add, "the new plugin's methods are tools");
    assert.deepEqual(Object.keys(add.inputSchema.properties ?? {}), ["text"]);
    const added = await client.callTool({ name: "notes_add", arguments: { text: "milk" } });
    assert.deepEqual(added.structuredContent, { count: 1 });
    // a non-object result comes wrapped
    const listed = await client.callTool({ name: "notes_list", arguments: {} });
    assert.deepEqual(listed.structuredContent, { result: [] });

    const addParams = async () =>
      Object.keys(
        (await client.listTools()).tools.find((t) => t.name === "notes_add")!.inputSchema
          .properties ?? {},
      );
    // a compatible version with an optional param, activated, then reverted
    before = toolChanges;
    const v2 = await client.callTool({
      name: "core_activate",
      arguments: { plugin: "notes", wasm: "/state/builds/notes_v2.wasm" },
    });
    assert.equal(v2.isError, undefined, text(v2 as CallToolResult));
    await eventually(() => toolChanges > before, 10_000);
    assert.deepEqual(await addParams(), ["text", "tag"]);
    before = toolChanges;
    const reverted = await client.callTool({ name: "core_revert", arguments: { plugin: "notes" } });
    assert.equal(reverted.isError, undefined, text(reverted as CallToolResult));
    await eventually(() => toolChanges > before, 10_000);
    assert.deepEqual(await addParams(), ["text"]);

    // a copy by hand of a version with another interface
    before = toolChanges;
    const wasm = join(root, "plugins", "notes", "plugin.wasm");
    await Deno.copyFile(join(root, "state", "builds", "notes_v2.wasm"), `${wasm}.tmp`);
    await Deno.rename(`${wasm}.tmp`, wasm);
    await eventually(() => toolChanges > before, 10_000);
    assert.deepEqual(await addParams(), ["text", "tag"]);
    assert.equal(resourceChanges, 1, "the same plugins: no resources/list_changed");

    // a removed plugin
    before = toolChanges;
    await Deno.remove(join(root, "plugins", "notes"), { recursive: true });
    await eventually(() => toolChanges > before, 10_000);
    assert.ok(!(await toolNames()).includes("notes_add"));
    await eventually(() => resourceChanges === 2, 5_000);
  } catch (e) {
    console.error(stderr());
    throw e;
  } finally {
    await client.close();
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
});

Deno.test("sausage mcp on a world a headless host runs: served through its endpoint; a client that leaves mid-call stops its processes", async () => {
  const root = await makeWorld();
  const host = await startHeadless(root);
  const watcher = await ControlClient.connect(root);
  assert.ok(watcher);
  try {
    const { client, stderr } = await mcpClient([root]);
    try {
      assert.match(stderr(), /serving the host that runs/);
      const answer = await client.callTool({ name: "probe_echo", arguments: { text: "remote" } });
      assert.deepEqual(answer.structuredContent, { text: "remote" });
      // another front end of that host activates a plugin: this client hears of it
      let changes = 0;
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
        changes++;
      });
      await client.listTools();
      const activated = await watcher.request("core.activate", {
        plugin: "notes",
        wasm: "/state/builds/notes_v1.wasm",
      });
      assert.equal(activated.error, undefined, JSON.stringify(activated.error));
      await eventually(() => changes > 0, 10_000);
      assert.ok((await client.listTools()).tools.some((t) => t.name === "notes_add"));
      client.callTool({ name: "probe_never", arguments: {} }).catch(() => {});
      await eventually(async () => (await watcher.processes()).length === 1, 15_000);
    } finally {
      await client.close(); // the client goes away in the middle of the call
    }
    await eventually(async () => (await watcher.processes()).length === 0, 10_000);
    // the server cancels what it serves when its client goes, or the host sees the connection go
    const stops = await watcher.request("core.log", {
      grep: "^stop: its caller (cancelled the call|disconnected)",
    });
    assert.equal((stops.result as { entries: unknown[] }).entries.length, 1);
    // the host goes on
    assert.deepEqual((await watcher.request("probe.echo", { text: "up" })).result, { text: "up" });
  } finally {
    await watcher.close();
    host.kill("SIGTERM");
    await host.status;
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
});

Deno.test("sausage mcp: malformed lines get JSON-RPC errors; a client that leaves mid-call ends the server and its own host (exit 0)", async () => {
  const root = await makeWorld();
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--unstable-worker-options",
      MAIN,
      "mcp",
      root,
      "--cache-dir",
      TEST_CACHE_DIR,
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).spawn();
  const writer = child.stdin.getWriter();
  const send = (m: unknown) => writer.write(new TextEncoder().encode(JSON.stringify(m) + "\n"));
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  const next = async (): Promise<Record<string, unknown>> => {
    while (!buffer.includes("\n")) {
      const { value, done } = await lines.read();
      if (done) throw new Error("stdout ended");
      buffer += value;
    }
    const nl = buffer.indexOf("\n");
    const line = buffer.slice(0, nl);
    buffer = buffer.slice(nl + 1);
    return JSON.parse(line);
  };
  try {
    // malformed messages get JSON-RPC errors, and the server goes on
    await send({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "raw", version: "1" },
      },
    });
    const init = await next();
    assert.equal((init.result as { protocolVersion: string }).protocolVersion, "2025-06-18");
    await send({ jsonrpc: "2.0", method: "notifications/initialized" });
    await writer.write(new TextEncoder().encode('not json\n[1,2]\n{"id":7}\n'));
    assert.equal(((await next()).error as { code: number }).code, -32700);
    assert.equal(((await next()).error as { code: number }).code, -32600);
    const bad = await next();
    assert.equal(bad.id, 7);
    assert.equal((bad.error as { code: number }).code, -32600);
    await send({ jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "probe_never" } });
    // the host this server started listens: others reach it as they reach any host
    const watcher = await ControlClient.connect(root);
    assert.ok(watcher, "the server's own host has a control endpoint");
    try {
      await eventually(async () => (await watcher.processes()).length === 1, 15_000);
    } finally {
      await watcher.close();
    }
    // stdin ends while the call runs
    await writer.close();
    const status = await child.status;
    assert.equal(status.code, 0);
    const log = new TextDecoder().decode(
      (await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "-A",
          "--unstable-worker-options",
          MAIN,
          "log",
          root,
          "--grep",
          "^stop: its caller cancelled the call|^stop: the MCP client went away",
          "--json",
        ],
        stdout: "piped",
        stderr: "null",
      }).output()).stdout,
    );
    assert.equal(JSON.parse(log).length, 1, log);
  } finally {
    await lines.cancel().catch(() => {});
    await child.stderr.cancel().catch(() => {});
    try {
      child.kill("SIGKILL");
    } catch {
      // ended
    }
    await child.status;
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
});

/** An in-process server on a LocalHostView, and a client on the in-memory transport. */
async function inProcess(
  view: LocalHostView,
  plugins?: string[],
): Promise<{ client: Client; close: () => Promise<void> }> {
  const server = createMcpServer(view, { plugins });
  const [a, b] = InMemoryTransport.createLinkedPair();
  await server.connect(a);
  const client = new Client({ name: "in-process", version: "1.0.0" }, {
    jsonSchemaValidator: jsonSchemaValidator(),
  });
  await client.connect(b);
  return {
    client,
    close: async () => {
      await client.close();
      await server.close();
    },
  };
}

Deno.test("1,000 tools: 10 plugins of 100 methods each are listed in a bounded time, in a stable order", async () => {
  const methods = Array.from({ length: 100 }, (_, i) => ({
    name: i === 0 ? "echo" : `m${String(i).padStart(3, "0")}`,
    summary: `method ${i}`,
    params: [{ name: "text", schema: { type: "string" } }],
  }));
  const document = { openrpc: "1.2.6", info: { title: "many", version: "1" }, methods };
  const bytes = await probeAnswering(document);
  const wasm: Record<string, Uint8Array> = {};
  for (let i = 0; i < 10; i++) wasm[`p${i}`] = bytes;
  await using w = await startWorld({
    plugins: {},
    wasm,
    files: { "state/probe-discover.json": JSON.stringify(document) },
  });
  const view = new LocalHostView(w.host);
  const { client, close } = await inProcess(view);
  try {
    const started = performance.now();
    const { tools } = await client.listTools();
    const ms = performance.now() - started;
    assert.equal(tools.length, 6 + 1000);
    assert.ok(ms < 10_000, `tools/list took ${ms} ms`);
    assert.deepEqual(tools.slice(6, 8).map((t) => t.name), ["p0_echo", "p0_m001"]);
    assert.equal(tools.at(-1)!.name, "p9_m099");
    const again = await client.listTools();
    assert.deepEqual(again.tools.map((t) => t.name), tools.map((t) => t.name));
    const answer = await client.callTool({ name: "p7_echo", arguments: { text: "x" } });
    assert.deepEqual(answer.structuredContent, { text: "x" });
    const missing = await client.callTool({ name: "p7_m042", arguments: {} });
    assert.equal(missing.isError, true);
    assert.match(text(missing as CallToolResult), /-32601/);
  } finally {
    await close();
    await view.close();
  }
});

Deno.test("--plugins and config/mcp.yaml choose the plugins and their order; the core's tools stay", async () => {
  await using w = await startWorld({
    plugins: { probe: "probe", notes: "notes_v1", agent: "agent_v1" },
    wasm: { junk: new TextEncoder().encode("not wasm") },
  });
  const view = new LocalHostView(w.host);
  try {
    assert.equal(await exposedPlugins(view, undefined), undefined);
    await Deno.writeTextFile(join(w.root, "config", "mcp.yaml"), "plugins: [notes, probe]\n");
    assert.deepEqual(await exposedPlugins(view, undefined), ["notes", "probe"]);
    assert.deepEqual(await exposedPlugins(view, "agent,core"), ["agent"]);
    await Deno.writeTextFile(join(w.root, "config", "mcp.yaml"), "plugins: notes\n");
    await assert.rejects(
      exposedPlugins(view, undefined),
      (e) => e instanceof McpConfigError && /plugins must be a list/.test(e.message),
    );
    // a config/mcp.yaml that cannot be read is not taken for a missing one (which exposes all)
    await Deno.remove(join(w.root, "config", "mcp.yaml"));
    await Deno.mkdir(join(w.root, "config", "mcp.yaml"));
    await assert.rejects(
      exposedPlugins(view, undefined),
      (e) => e instanceof McpConfigError && /cannot read \/config\/mcp.yaml/.test(e.message),
    );
    await Deno.remove(join(w.root, "config", "mcp.yaml"));
    await Deno.writeTextFile(join(w.root, "config", "mcp.yaml"), "plugins: notes\n");
    await assert.rejects(
      exposedPlugins(view, "Bad Name"),
      (e) =>
        e instanceof McpConfigError && /--plugins: "Bad Name" is not a plugin name/.test(e.message),
    );
    const { client, close } = await inProcess(view, ["notes", "probe"]);
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      assert.deepEqual(names, [
        "core_activate",
        "core_revert",
        "core_log",
        "core_stop",
        "core_kill",
        "cargo_build",
        "notes_add",
        "notes_list",
        "probe_echo",
      ]);
      const uris = (await client.listResources()).resources.map((r) => r.uri);
      assert.ok(!uris.some((u) => u.includes("/plugins/agent/")));
    } finally {
      await close();
    }
    // all plugins: one whose discovery fails has no tools, and a call of one is an unknown tool
    const all = await inProcess(view);
    try {
      const names = (await all.client.listTools()).tools.map((t) => t.name);
      assert.ok(names.includes("agent_chat") && names.includes("notes_add"));
      assert.ok(!names.some((n) => n.startsWith("junk_")));
      await assert.rejects(
        all.client.callTool({ name: "junk_run", arguments: {} }),
        (e) =>
          e instanceof McpError && e.code === -32602 &&
          /no tool "junk_run"; junk has no tools: its discovery failed: .*not WebAssembly/.test(
            e.message,
          ),
      );
    } finally {
      await all.close();
    }
  } finally {
    await view.close();
  }
});

Deno.test("sausage mcp on the command line: --help, bad --plugins (exit 2), no world (exit 3)", async () => {
  const run = async (args: string[]) => {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--unstable-worker-options", MAIN, "mcp", ...args],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      env: { NO_COLOR: "1" },
    }).output();
    const dec = new TextDecoder();
    return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
  };
  const help = await run(["--help"]);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /--plugins <names>/);
  assert.match(help.stdout, /Exit codes: 0 the client closed stdin/);
  const bad = await run(["/nowhere", "--plugins", "notes,Bad Name"]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--plugins: "Bad Name" is not a plugin name/);
  assert.equal(bad.stdout, "", "stdout is the protocol's alone");
  const missing = await run(["/nowhere/world"]);
  assert.equal(missing.code, 3);
  assert.match(missing.stderr, /there is no world at \/nowhere\/world/);
  assert.equal(missing.stdout, "");
});
