/**
 * The listener's bounds (`listen.ts`), each met by a raw client on loopback
 * with the limits made small: slow headers, large headers, what is not
 * HTTP, a body that never ends, more connections than allowed, and a
 * client that drops a streamed answer.
 */
import assert from "node:assert/strict";
import { type BoundedServer, type HttpLimits, serveBounded } from "./listen.ts";

const encoder = new TextEncoder();

const LIMITS: Partial<HttpLimits> = {
  maxConnections: 4,
  headersTimeoutMs: 500,
  requestTimeoutMs: 1000,
  keepAliveTimeoutMs: 500,
  maxHeaderBytes: 4096,
};

/** Sends `text` (then `drip` every 100 ms) and reads until the server closes; the status and text. */
async function raw(
  port: number,
  text: string,
  drip?: string,
): Promise<{ status: number; text: string; ms: number }> {
  const started = performance.now();
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  if (text) await conn.write(encoder.encode(text)).catch(() => 0);
  const timer = drip
    ? setInterval(() => conn.write(encoder.encode(drip)).catch(() => 0), 100)
    : undefined;
  let out = "";
  const buffer = new Uint8Array(8192);
  try {
    while (true) {
      const n = await conn.read(buffer);
      if (n === null) break;
      out += new TextDecoder().decode(buffer.subarray(0, n));
      clearInterval(timer);
    }
  } catch {
    // reset after the answer
  } finally {
    clearInterval(timer);
    conn.close();
  }
  return {
    status: Number(/^HTTP\/1\.1 (\d{3})/.exec(out)?.[1] ?? 0),
    text: out,
    ms: performance.now() - started,
  };
}

function body(text: string): { error: string; status: number } {
  return JSON.parse(text.slice(text.indexOf("\r\n\r\n") + 4));
}

async function withServer(
  handler: (request: Request) => Promise<Response>,
  run: (server: BoundedServer) => Promise<void>,
): Promise<void> {
  const server = await serveBounded({ hostname: "127.0.0.1", port: 0, limits: LIMITS }, handler);
  try {
    await run(server);
  } finally {
    await server.close();
  }
}

const ok = () => Promise.resolve(new Response("ok\n"));

Deno.test("listen: headers that never end get 408 with a message after the headers' timeout", async () => {
  await withServer(ok, async ({ port }) => {
    const slow = await raw(port, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n", "X-Slow: 1\r\n");
    assert.equal(slow.status, 408);
    assert.match(body(slow.text).error, /did not arrive whole/);
    assert.ok(slow.ms < 3000, `${slow.ms} ms`);
    // a connection that says nothing at all goes the same way
    const silent = await raw(port, "");
    assert.equal(silent.status, 408);
  });
});

Deno.test("listen: headers over the limit get 431, what is not HTTP/1.1 gets 400, each with a message", async () => {
  await withServer(ok, async ({ port }) => {
    const big = await raw(
      port,
      `GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(64 * 1024)}\r\n\r\n`,
    );
    assert.equal(big.status, 431);
    assert.match(body(big.text).error, /over 4096 bytes/);
    for (
      const text of [
        "GARBAGE\r\n\r\n",
        "GET / HTTP/9.9\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
        "GET http://elsewhere/ HTTP/1.1\r\nHost: x\r\n\r\n",
      ]
    ) {
      const r = await raw(port, text);
      assert.equal(r.status, 400, JSON.stringify(text));
      assert.ok(body(r.text).error, r.text);
    }
  });
});

Deno.test("listen: a body that never ends gets 408 after the request's timeout", async () => {
  let handlerFailed = false;
  const reader = async (request: Request) => {
    try {
      await request.arrayBuffer();
    } catch {
      handlerFailed = true;
    }
    return new Response("read\n");
  };
  await withServer(reader, async ({ port }) => {
    const r = await raw(
      port,
      "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n{",
      " ",
    );
    assert.equal(r.status, 408);
    assert.ok(r.ms >= 900 && r.ms < 4000, `${r.ms} ms`);
  });
  assert.ok(handlerFailed, "the handler's read of the body ended");
});

Deno.test("listen: past the bound, the oldest idle connection makes room; when all are busy, 503", async () => {
  const hold = Promise.withResolvers<void>();
  const handler = (request: Request) => {
    if (new URL(request.url).pathname === "/slow") {
      return hold.promise.then(() => new Response("slow\n"));
    }
    return ok();
  };
  await withServer(handler, async (server) => {
    const idle = await Promise.all(
      Array.from({ length: 4 }, () => Deno.connect({ hostname: "127.0.0.1", port: server.port })),
    );
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(server.connections, 4);
    // a fifth: the oldest idle one is told 503 and closed, the new one is served
    const fifth = await raw(server.port, "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    assert.equal(fifth.status, 200);
    const buffer = new Uint8Array(1024);
    const n = await idle[0].read(buffer);
    assert.match(new TextDecoder().decode(buffer.subarray(0, n ?? 0)), /^HTTP\/1\.1 503/);
    for (const c of idle) c.close();
    // four requests in flight: none is cut, and one more is refused
    const busy = Array.from(
      { length: 4 },
      () => raw(server.port, "GET /slow HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"),
    );
    await new Promise((r) => setTimeout(r, 200));
    const refused = await raw(server.port, "GET / HTTP/1.1\r\nHost: x\r\n\r\n");
    assert.equal(refused.status, 503);
    assert.match(body(refused.text).error, /4 connections open/);
    assert.match(refused.text, /retry-after: 1/);
    hold.resolve();
    assert.deepEqual((await Promise.all(busy)).map((r) => r.status), [200, 200, 200, 200]);
    assert.ok(server.shed >= 2);
  });
});

Deno.test("listen: a client that drops a streamed answer cancels its source; cookies and HEAD pass", async () => {
  const cancelled = Promise.withResolvers<void>();
  const handler = (request: Request) => {
    if (new URL(request.url).pathname === "/stream") {
      const body = new ReadableStream<Uint8Array>({
        pull: (c) =>
          new Promise((r) => setTimeout(r, 20)).then(() => c.enqueue(encoder.encode("x\n"))),
        cancel: () => cancelled.resolve(),
      });
      return Promise.resolve(new Response(body));
    }
    const headers = new Headers();
    headers.append("set-cookie", "a=1");
    headers.append("set-cookie", "b=2");
    return Promise.resolve(new Response("hello\n", { headers }));
  };
  await withServer(handler, async ({ port }) => {
    const r = await fetch(`http://127.0.0.1:${port}/`);
    assert.deepEqual(r.headers.getSetCookie(), ["a=1", "b=2"]);
    assert.equal(await r.text(), "hello\n");
    const head = await fetch(`http://127.0.0.1:${port}/`, { method: "HEAD" });
    assert.equal(await head.text(), "");
    const stream = await fetch(`http://127.0.0.1:${port}/stream`);
    const reader = stream.body!.getReader();
    await reader.read();
    await reader.cancel();
    await cancelled.promise;
  });
});

Deno.test("listen: the head of a streamed answer goes before its first bytes (an event stream)", async () => {
  let controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  const handler = () =>
    Promise.resolve(
      new Response(new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) }), {
        headers: { "content-type": "text/event-stream" },
      }),
    );
  await withServer(handler, async ({ port }) => {
    const r = await fetch(`http://127.0.0.1:${port}/`);
    assert.equal(r.headers.get("content-type"), "text/event-stream");
    const reader = r.body!.getReader();
    controller!.enqueue(encoder.encode("data: 1\n\n"));
    assert.equal(new TextDecoder().decode((await reader.read()).value), "data: 1\n\n");
    await reader.cancel();
  });
});

Deno.test("listen: an answer given before the body came whole closes the connection", async () => {
  const refuse = () => Promise.resolve(new Response("too large\n", { status: 413 }));
  await withServer(refuse, async ({ port }) => {
    const r = await raw(
      port,
      "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n{",
      " ",
    );
    assert.equal(r.status, 413);
    assert.ok(r.ms < 900, `closed after ${r.ms} ms, not at the request's timeout`);
  });
});
