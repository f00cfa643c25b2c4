/**
 * MCP over Streamable HTTP (`mcp/http.ts`, PROTOCOL section 13.1): the
 * official SDK's client against a real HTTP server on loopback, over a
 * world with real plugins.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { jsonSchemaValidator } from "../core/mcp_servers/validator.ts";
// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import {
  type CallToolResult,
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { LocalHostView } from "../core/host_view.ts";
import { McpHttp } from "../mcp/http.ts";
import { startWebServer } from "../web/server.ts";
import { testPlugin } from "./setup.ts";
import { eventually, probeAnswering, startWorld, type TestWorld } from "./world.ts";

/** The methods of the probe that these tests call (it answers rpc.discover with this file). */
const PROBE_DOCUMENT = {
  openrpc: "1.2.6",
  info: { title: "probe", version: "http" },
  methods: ["echo", "fail", "linger"].map((name) => ({ name, params: [] })).concat([{
    name: "progress",
    params: [{ name: "count", required: true, schema: { type: "integer" } }] as never[],
  }]),
};

/** A world with the probe, and `/mcp` served on a port of loopback. */
async function served(options: { maxSessions?: number } = {}): Promise<
  TestWorld & { url: URL; mcp: McpHttp; [Symbol.asyncDispose](): Promise<void> }
> {
  const w = await startWorld({
    wasm: { probe: await probeAnswering(PROBE_DOCUMENT) },
    files: { "state/probe-discover.json": JSON.stringify(PROBE_DOCUMENT) },
  });
  await Deno.mkdir(join(w.root, "state", "builds"), { recursive: true });
  await Deno.copyFile(await testPlugin("notes_v1"), join(w.root, "state", "builds", "notes.wasm"));
  const mcp = new McpHttp(() => new LocalHostView(w.host), { watchIntervalMs: 100, ...options });
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    (req) =>
      new URL(req.url).pathname === "/mcp" ? mcp.handle(req) : new Response("", { status: 404 }),
  );
  const url = new URL(`http://127.0.0.1:${server.addr.port}/mcp`);
  const dispose = w[Symbol.asyncDispose].bind(w);
  return Object.assign(w, {
    url,
    mcp,
    async [Symbol.asyncDispose]() {
      await mcp.close();
      await server.shutdown();
      await dispose();
    },
  });
}

async function connect(
  url: URL,
): Promise<{ client: Client; transport: StreamableHTTPClientTransport }> {
  const client = new Client({ name: "sausage-http-test", version: "1.0.0" }, {
    jsonSchemaValidator: jsonSchemaValidator(),
  });
  const transport = new StreamableHTTPClientTransport(url);
  await client.connect(transport);
  return { client, transport };
}

Deno.test("MCP over Streamable HTTP: tools, a call, isError, progress, list_changed, and the end of a session", async () => {
  await using w = await served();
  const { client, transport } = await connect(w.url);
  try {
    assert.ok(transport.sessionId, "the server gave a session");
    assert.equal(w.mcp.sessions, 1);
    const names = (await client.listTools()).tools.map((t) => t.name);
    assert.ok(names.includes("core_activate") && names.includes("probe_echo"), names.join(", "));

    const echo = await client.callTool({ name: "probe_echo", arguments: { a: 1 } });
    assert.deepEqual(echo.structuredContent, { a: 1 });
    const failed = await client.callTool({ name: "probe_fail", arguments: {} }) as CallToolResult;
    assert.equal(failed.isError, true);
    assert.match(JSON.stringify(failed.content), /probe failed on purpose/);

    const progress: number[] = [];
    await client.callTool({ name: "probe_progress", arguments: { count: 3 } }, undefined, {
      onprogress: (p) => progress.push(p.progress),
    });
    assert.deepEqual(progress, [1, 2, 3]);

    // an activation by someone else: the session's event stream gets list_changed
    let changes = 0;
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      changes++;
    });
    await w.call("core.activate", { plugin: "notes", wasm: "/state/builds/notes.wasm" });
    await eventually(() => changes > 0, 10_000);
    assert.ok((await client.listTools()).tools.some((t) => t.name === "notes_add"));

    // a session that ends stops what it called
    await client.callTool({ name: "probe_linger", arguments: {} });
    assert.equal(w.host.processes.list().filter((p) => p.method === "linger").length, 1);
    await transport.terminateSession();
    await eventually(() => w.mcp.sessions === 0);
    await eventually(() => w.host.processes.list().length === 0);
  } finally {
    await client.close();
  }
});

Deno.test("MCP over HTTP: an unknown session, a request that does not initialize, a body over 16 MiB", async () => {
  await using w = await served();
  const post = (body: string, headers: Record<string, string> = {}) =>
    fetch(w.url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        ...headers,
      },
      body,
    });
  const unknown = await post('{"jsonrpc":"2.0","id":1,"method":"tools/list"}', {
    "mcp-session-id": "nope",
  });
  assert.equal(unknown.status, 404);
  assert.match((await unknown.json()).error.message, /no such MCP session/);

  const notInit = await post('{"jsonrpc":"2.0","id":1,"method":"tools/list"}');
  assert.equal(notInit.status, 400);
  await notInit.body?.cancel();
  assert.equal(w.mcp.sessions, 0, "nothing stays open after a refused request");

  const get = await fetch(w.url);
  assert.equal(get.status, 400);
  await get.body?.cancel();

  const huge = await post(
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":"' + "a".repeat(17 << 20) + '"}}',
  );
  assert.equal(huge.status, 413);
  await huge.body?.cancel();

  const malformed = await post("{not json");
  assert.equal(malformed.status, 400);
  assert.match(JSON.stringify(await malformed.json()), /Parse error/i);

  // the host is unharmed
  assert.deepEqual(await w.call("probe.echo", { still: "up" }), { still: "up" });
});

Deno.test("MCP over HTTP: a subscribed world file reports its changes; paths complete; the log level filters", async () => {
  await using w = await served();
  const { client } = await connect(w.url);
  try {
    const updated: string[] = [];
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
      updated.push(n.params.uri);
    });
    const uri = "sausage:///state/watched.txt";
    assert.deepEqual(await client.subscribeResource({ uri }), {});
    // it need not exist yet: its appearance is a change
    await Deno.writeTextFile(join(w.root, "state", "watched.txt"), "one");
    await eventually(() => updated.length === 1, 10_000);
    await Deno.writeTextFile(join(w.root, "state", "watched.txt"), "two");
    await eventually(() => updated.length === 2, 10_000);
    assert.deepEqual(updated, [uri, uri]);
    await client.unsubscribeResource({ uri });
    await Deno.writeTextFile(join(w.root, "state", "watched.txt"), "three");
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(updated.length, 2, "no news after unsubscribe");
    await assert.rejects(client.subscribeResource({ uri: "test://other" }), /not a world file/);

    const done = await client.complete({
      ref: { type: "ref/resource", uri: "sausage:///{+path}" },
      argument: { name: "path", value: "/sta" },
    });
    assert.deepEqual(done.completion.values, ["/state/"]);
    const nested = await client.complete({
      ref: { type: "ref/resource", uri: "sausage:///{+path}" },
      argument: { name: "path", value: "/state/wat" },
    });
    assert.deepEqual(nested.completion.values, ["/state/watched.txt"]);

    // world changes come as info messages, unless the client asked for less
    const messages: string[] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
      messages.push(String(n.params.data));
    });
    await client.listTools();
    await client.setLoggingLevel("info");
    await w.call("core.activate", { plugin: "notes", wasm: "/state/builds/notes.wasm" });
    await eventually(() => messages.length === 1, 10_000);
    assert.match(messages[0], /plugins changed/);
  } finally {
    await client.close();
  }
});

Deno.test("the web server's /mcp wants the token as a bearer, and refuses a foreign Origin", async () => {
  await using w = await served();
  const page = new LocalHostView(w.host);
  const web = await startWebServer(page, { hostname: "127.0.0.1", port: 0, mcp: w.mcp });
  try {
    const url = new URL(`${web.origin}/mcp`);
    const initialize = JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: {
        protocolVersion: "2025-11-25",
        capabilities: {},
        clientInfo: { name: "t", version: "1" },
      },
    });
    const post = (headers: Record<string, string>) =>
      fetch(url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          ...headers,
        },
        body: initialize,
      });
    const bare = await post({});
    assert.equal(bare.status, 401);
    assert.match((await bare.json()).error, /Authorization: Bearer/);
    const inUrl = await fetch(`${url}?token=${web.token}`, { method: "POST", body: initialize });
    assert.equal(inUrl.status, 401, "a token in the URL is not taken: it would land in logs");
    await inUrl.body?.cancel();
    const foreign = await post({
      authorization: `Bearer ${web.token}`,
      origin: "http://evil.example",
    });
    assert.equal(foreign.status, 403);
    await foreign.body?.cancel();

    const client = new Client({ name: "bearer", version: "1" }, {
      jsonSchemaValidator: jsonSchemaValidator(),
    });
    await client.connect(
      new StreamableHTTPClientTransport(url, {
        requestInit: { headers: { authorization: `Bearer ${web.token}` } },
      }),
    );
    assert.ok((await client.listTools()).tools.some((t) => t.name === "probe_echo"));
    await client.close();
  } finally {
    await web.close();
    await page.close();
  }
});

Deno.test("MCP over HTTP: a session whose event stream is open stays past the idle time; one with nothing open ends", async () => {
  await using w = await served();
  const mcp = new McpHttp(() => new LocalHostView(w.host), { idleMs: 300 });
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    (req) => mcp.handle(req),
  );
  const url = new URL(`http://127.0.0.1:${server.addr.port}/mcp`);
  try {
    const { client, transport } = await connect(url); // it holds the GET event stream open
    const held = transport.sessionId!;
    // a second session by hand: initialize, and nothing more
    const bare = await fetch(url, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: {
          protocolVersion: "2025-11-25",
          capabilities: {},
          clientInfo: { name: "b", version: "1" },
        },
      }),
    });
    await bare.text();
    assert.equal(mcp.sessions, 2);
    await eventually(() => mcp.sessions === 1, 5000);
    await new Promise((r) => setTimeout(r, 700)); // more than twice the idle time
    assert.equal(mcp.sessions, 1, "the session with its stream open stays");
    assert.equal(transport.sessionId, held);
    assert.ok((await client.listTools()).tools.length > 0);
    await client.close();
  } finally {
    await mcp.close();
    await server.shutdown();
  }
});

/** A POST of `initialize` by hand, which opens no event stream. */
function postInitialize(url: URL): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
    body: JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "t", version: "1" },
      },
    }),
  });
}

/** A session started by hand: its id. */
async function initialize(url: URL): Promise<string> {
  const r = await postInitialize(url);
  assert.equal(r.status, 200);
  await r.body?.cancel();
  return r.headers.get("mcp-session-id")!;
}

function listTools(url: URL, id: string): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "mcp-session-id": id,
      "mcp-protocol-version": "2025-06-18",
    },
    body: '{"jsonrpc":"2.0","id":2,"method":"tools/list"}',
  });
}

Deno.test("MCP over HTTP: past the most sessions, the idlest ends for room; when every one has a stream open, 503", async () => {
  await using w = await served({ maxSessions: 3 });
  const ids = [];
  for (let i = 0; i < 3; i++) ids.push(await initialize(w.url));
  // the second was used last: the first and then the third are the idlest
  await (await listTools(w.url, ids[1])).body?.cancel();
  const fourth = await initialize(w.url);
  assert.equal(w.mcp.sessions, 3);
  assert.equal(w.mcp.evicted, 1);
  const gone = await listTools(w.url, ids[0]);
  assert.equal(gone.status, 404, "the idlest session ended");
  await gone.body?.cancel();
  const kept = await listTools(w.url, ids[1]);
  assert.equal(kept.status, 200);
  await kept.body?.cancel();

  // each session with its event stream open: none is idle, and one more is refused
  const streams = await Promise.all([ids[1], ids[2], fourth].map((id) =>
    fetch(w.url, {
      headers: {
        accept: "text/event-stream",
        "mcp-session-id": id,
        "mcp-protocol-version": "2025-06-18",
      },
    })
  ));
  assert.deepEqual(streams.map((r) => r.status), [200, 200, 200]);
  const refused = await postInitialize(w.url);
  assert.equal(refused.status, 503);
  assert.match((await refused.json()).error.message, /3 MCP sessions are open/);
  await Promise.all(streams.map((r) => r.body?.cancel()));
  // the host is unharmed
  assert.deepEqual(await w.call("probe.echo", { still: "up" }), { still: "up" });
});
