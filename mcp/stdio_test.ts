import assert from "node:assert/strict";
// @ts-types="@modelcontextprotocol/sdk/types"
import { type JSONRPCMessage, JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js";
import { bytePipe, type ByteSink, MAX_LINE_BYTES, StdioTransport, streamSource } from "./stdio.ts";

const encoder = new TextEncoder();

/** A started transport on one end of a pipe, and the other end as lines. */
function connected() {
  const [near, far] = bytePipe();
  const transport = new StdioTransport(near, near);
  const received: JSONRPCMessage[] = [];
  const arrived: Array<() => void> = [];
  transport.onmessage = (m) => {
    received.push(m);
    arrived.shift()?.();
  };
  transport.start();
  let text = "";
  const buffer = new Uint8Array(1 << 16);
  const decoder = new TextDecoder();
  return {
    transport,
    received,
    /** Resolves when `n` messages arrived in all. */
    async messages(n: number): Promise<JSONRPCMessage[]> {
      while (received.length < n) await new Promise<void>((r) => arrived.push(r));
      return received;
    },
    write: (text: string | Uint8Array) =>
      far.write(typeof text === "string" ? encoder.encode(text) : text),
    /** The next line the transport wrote, parsed. */
    async line(): Promise<Record<string, unknown>> {
      while (!text.includes("\n")) {
        const n = await far.read(buffer);
        if (n === null) throw new Error("the pipe ended");
        text += decoder.decode(buffer.subarray(0, n));
      }
      const nl = text.indexOf("\n");
      const line = text.slice(0, nl);
      text = text.slice(nl + 1);
      return JSON.parse(line);
    },
  };
}

Deno.test("stdio transport: a message split across reads, CRLF, and two in one read", async () => {
  const t = connected();
  await t.write('{"jsonrpc":"2.0","id":1,');
  await t.write('"method":"ping"}\r\n{"jsonrpc":"2.0","method":"a"}\n{"jsonrpc":"2.0",');
  await t.write('"id":"x","result":{}}\n');
  assert.deepEqual(await t.messages(3), [
    { jsonrpc: "2.0", id: 1, method: "ping" },
    { jsonrpc: "2.0", method: "a" },
    { jsonrpc: "2.0", id: "x", result: {} },
  ]);
  await t.transport.close();
});

Deno.test("stdio transport: sends are written whole and in order", async () => {
  const t = connected();
  const big = "x".repeat(200_000);
  await Promise.all([
    t.transport.send({ jsonrpc: "2.0", method: "first", params: { big } }),
    t.transport.send({ jsonrpc: "2.0", method: "second" }),
  ]);
  assert.equal((await t.line()).method, "first");
  assert.equal((await t.line()).method, "second");
  await t.transport.close();
});

Deno.test("stdio transport: not JSON, a batch, not a message, and a line over 16 MiB are answered, and the next line is read", async () => {
  const t = connected();
  const errors: string[] = [];
  t.transport.onerror = (e) => errors.push(e.message);
  await t.write('not json\n[1,2]\n{"id":7}\n{"jsonrpc":"2.0","id":8,"result":[]}\n');
  const notJson = await t.line();
  assert.equal((notJson as { error: { code: number } }).error.code, -32700);
  // without a known id, MCP leaves the id out (its schema refuses null)
  assert.ok(!("id" in notJson));
  assert.equal((await t.line() as { error: { code: number } }).error.code, -32600);
  const bad = await t.line();
  assert.equal(bad.id, 7);
  assert.equal((bad.error as { code: number }).code, -32600);
  // the broken response (its result is no object) is dropped, not answered, and reported
  assert.equal(errors.length, 1);
  assert.match(errors[0], /a response that is not JSON-RPC 2\.0 was dropped: .*"id":8/);
  const chunk = new Uint8Array(1 << 20).fill(0x61);
  for (let sent = 0; sent <= MAX_LINE_BYTES; sent += chunk.length) await t.write(chunk);
  await t.write('\n{"jsonrpc":"2.0","id":9,"method":"ping"}\n');
  const long = await t.line();
  assert.equal((long.error as { code: number; message: string }).code, -32600);
  assert.match((long.error as { message: string }).message, /16 MiB/);
  assert.deepEqual(await t.messages(1), [{ jsonrpc: "2.0", id: 9, method: "ping" }]);
  await t.transport.close();
});

Deno.test("stdio transport: every line it passes on, the SDK's schema accepts; every one it refuses, the schema refuses", async () => {
  const cases: unknown[] = [
    { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "a", arguments: {} } },
    { jsonrpc: "2.0", id: 1, method: "x", params: { _meta: { progressToken: 3 } } },
    { jsonrpc: "2.0", id: 1, method: "x", params: { _meta: { progressToken: 1.5 } } },
    { jsonrpc: "2.0", id: 1, method: "x", params: [1] },
    { jsonrpc: "2.0", id: 1, method: "x", params: null },
    { jsonrpc: "2.0", id: 1.5, method: "x" },
    { jsonrpc: "2.0", id: 2 ** 53 + 2, method: "x" },
    { jsonrpc: "2.0", id: 1e300, method: "x" },
    { jsonrpc: "2.0", id: 1e300, result: {} },
    { jsonrpc: "2.0", id: -(2 ** 53 - 1), method: "x" },
    { jsonrpc: "2.0", id: 1, error: { code: 1e20, message: "no" } },
    { jsonrpc: "2.0", id: null, method: "x" },
    { jsonrpc: "2.0", id: 1, method: "x", extra: true },
    { jsonrpc: "2.0", method: "notifications/initialized" },
    { jsonrpc: "2.0", method: 5 },
    { jsonrpc: "1.0", id: 1, method: "x" },
    { jsonrpc: "2.0", id: 1, result: { content: [] } },
    { jsonrpc: "2.0", id: 1, result: { _meta: {} } },
    { jsonrpc: "2.0", id: 1, result: [] },
    { jsonrpc: "2.0", id: 1, result: {}, error: { code: 1, message: "m" } },
    { jsonrpc: "2.0", id: 1, error: { code: -32601, message: "no", data: { a: 1 } } },
    { jsonrpc: "2.0", error: { code: -32700, message: "no" } },
    { jsonrpc: "2.0", id: 1, error: { code: 1.5, message: "no" } },
    { jsonrpc: "2.0", id: 1, error: { code: 1, message: "no", more: 1 } },
    { jsonrpc: "2.0", id: 1 },
  ];
  const t = connected();
  for (const c of cases) await t.write(JSON.stringify(c) + "\n");
  // a request that is fine closes the list, so that everything before it was read
  await t.write('{"jsonrpc":"2.0","id":"end","method":"end"}\n');
  const passed = await (async () => {
    for (;;) {
      const last = t.received.at(-1) as { id?: unknown } | undefined;
      if (last?.id === "end") return t.received.slice(0, -1);
      await t.messages(t.received.length + 1);
    }
  })();
  const accepted = cases.filter((c) => JSONRPCMessageSchema.safeParse(c).success);
  assert.deepEqual(passed, accepted);
  await t.transport.close();
});

Deno.test("stdio transport: a sink that takes a few bytes at a time still gets whole lines, in order", async () => {
  const written: number[] = [];
  const sink: ByteSink = {
    async write(bytes) {
      await new Promise((r) => setTimeout(r, 0));
      const n = Math.min(7, bytes.length);
      written.push(...bytes.subarray(0, n));
      return n;
    },
  };
  const [near] = bytePipe();
  const transport = new StdioTransport(near, sink);
  await transport.start();
  await Promise.all([
    transport.send({ jsonrpc: "2.0", method: "first", params: { text: "é".repeat(20) } }),
    transport.send({ jsonrpc: "2.0", method: "second" }),
  ]);
  const lines = new TextDecoder().decode(new Uint8Array(written)).split("\n");
  assert.deepEqual(lines.map((l) => l && JSON.parse(l).method), ["first", "second", ""]);
  await transport.close();
});

Deno.test("stdio transport: the end of input closes it once; a send after, or one that cannot be written, rejects", async () => {
  const [near, far] = bytePipe();
  let closes = 0;
  const transport = new StdioTransport(near, near);
  transport.onclose = () => closes++;
  await transport.start();
  far.close();
  while (closes === 0) await new Promise((r) => setTimeout(r, 1));
  await transport.close();
  assert.equal(closes, 1);
  await assert.rejects(transport.send({ jsonrpc: "2.0", method: "late" }), /closed/);

  // a sink that fails (stdout gone): the send rejects, onerror hears it, the transport closes
  const [source] = bytePipe();
  const broken = new StdioTransport(source, {
    write: () => Promise.reject(new Error("broken pipe")),
  });
  const errors: string[] = [];
  let closed = false;
  broken.onerror = (e) => errors.push(e.message);
  broken.onclose = () => closed = true;
  await broken.start();
  await assert.rejects(broken.send({ jsonrpc: "2.0", method: "x" }), /broken pipe/);
  assert.deepEqual(errors, ["broken pipe"]);
  assert.ok(closed);
});

Deno.test("stdio transport: closing it cancels a read of its stream that waits", async () => {
  const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
  const writer = writable.getWriter();
  const transport = new StdioTransport(streamSource(readable), {
    write: (b) => Promise.resolve(b.length),
  });
  const received: unknown[] = [];
  transport.onmessage = (m) => received.push(m);
  await transport.start();
  await writer.write(new TextEncoder().encode('{"jsonrpc":"2.0","method":"a"}\n{"jsonrpc":'));
  while (received.length === 0) await new Promise((r) => setTimeout(r, 1));
  await transport.close();
  // the stream was cancelled: the writer's side sees it
  await assert.rejects(writer.write(new TextEncoder().encode('"2.0","method":"b"}\n')));
  assert.deepEqual(received, [{ jsonrpc: "2.0", method: "a" }]);
});
