/**
 * The network end to end: the test plugin `netprobe` (tests/plugins/crates/
 * netprobe) in a world with a real host. TCP between two processes, HTTP to
 * a server of the test, UDP, name lookup, errors, limits and kills.
 */
import assert from "node:assert/strict";
import dgram from "node:dgram";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { eventually, startWorld, type TestWorld } from "../../tests/world.ts";

type AnyRecord = Record<string, unknown>;

async function world(): Promise<TestWorld> {
  return await startWorld({ plugins: { netprobe: "netprobe" } });
}

async function waitFor(w: TestWorld, method: string): Promise<string> {
  await eventually(() => w.host.processes.list().some((p) => p.method === method));
  return w.host.processes.list().find((p) => p.method === method)!.pid;
}

/** Whether a TCP port accepts connections. */
async function accepts(port: number): Promise<boolean> {
  try {
    (await Deno.connect({ hostname: "127.0.0.1", port })).close();
    return true;
  } catch {
    return false;
  }
}

Deno.test("e2e: two processes talk over TCP; the address goes through a file of the world", async () => {
  await using w = await world();
  const server = w.call("netprobe.listen", { file: "/echo.addr", count: 1 });
  await eventually(() => existsSync(join(w.root, "echo.addr")));
  const endpoint = await Deno.readTextFile(join(w.root, "echo.addr"));
  assert.match(endpoint, /^tcp:127\.0\.0\.1:\d+\n$/);
  const client = (await w.call("netprobe.connect", {
    file: "/echo.addr",
    lines: ["hello", "wörld"],
    rounds: 500,
  })) as AnyRecord;
  assert.deepEqual(client.answers, ["echo: hello", "echo: wörld"]);
  assert.equal(client.peer, endpoint.trim().slice(4));
  const served = (await server) as AnyRecord;
  assert.equal(served.lines, 502);
  assert.deepEqual(served.peers, [client.local]);
  console.log(
    `    TCP round trip between two processes: ${Number(client.round_trip_us).toFixed(0)} µs`,
  );
  // both processes ended and closed their sockets
  await eventually(() => w.host.processes.list().length === 0);
  await eventually(async () => !(await accepts(Number(endpoint.trim().split(":")[2]))), 2000);
});

Deno.test("e2e: a listener serves several clients, one after the other", async () => {
  await using w = await world();
  const server = w.call("netprobe.listen", { file: "/multi.addr", count: 3 });
  await eventually(() => existsSync(join(w.root, "multi.addr")));
  for (const n of [1, 2, 3]) {
    const r = (await w.call("netprobe.connect", { file: "/multi.addr", lines: [`c${n}`] })) as {
      answers: string[];
    };
    assert.deepEqual(r.answers, [`echo: c${n}`]);
  }
  assert.equal(((await server) as AnyRecord).lines, 3);
});

Deno.test("e2e: a kill of a process blocked in accept ends it at once and closes its listener", async () => {
  await using w = await world();
  const pending = w.request("netprobe.listen", { file: "/blocked.addr", count: 1 });
  await eventually(() => existsSync(join(w.root, "blocked.addr")));
  const port = Number((await Deno.readTextFile(join(w.root, "blocked.addr"))).trim().split(":")[2]);
  const pid = await waitFor(w, "listen");
  await new Promise((r) => setTimeout(r, 50));
  const t = performance.now();
  await w.call("core.kill", { pid });
  const r = await pending;
  const took = performance.now() - t;
  assert.equal((r.error?.data as { reason: string }).reason, "killed");
  assert.ok(took < 1000, `kill took ${took} ms`);
  // the listener of a killed process is closed (Deno drops the socket a moment after the close)
  await eventually(async () => !(await accepts(port)), 2000);
});

Deno.test("e2e: a kill of a process blocked in a read ends it at once and closes its connection", async () => {
  await using w = await world();
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const accepted = listener.accept();
  const pending = w.request("netprobe.connect", {
    address: `127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    lines: ["anyone?"],
  });
  const conn = await accepted;
  const buffer = new Uint8Array(100);
  const n = await conn.read(buffer);
  assert.equal(new TextDecoder().decode(buffer.subarray(0, n!)), "anyone?\n");
  const pid = await waitFor(w, "connect");
  const t = performance.now();
  await w.call("core.kill", { pid });
  const r = await pending;
  assert.ok(performance.now() - t < 1000);
  assert.equal((r.error?.data as { reason: string }).reason, "killed");
  // the host closed the socket of the dead process: the peer reads the end
  assert.equal(await conn.read(buffer), null);
  conn.close();
  listener.close();
});

Deno.test("e2e: refused connections and unknown hosts give the right error codes", async () => {
  await using w = await world();
  const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (closed.addr as Deno.NetAddr).port;
  closed.close();
  const refused =
    (await w.call("netprobe.tcp_error", { address: `127.0.0.1:${port}` })) as AnyRecord;
  assert.deepEqual(refused, { wasi: "connection-refused", std: "ConnectionRefused" });
  const unspecified = (await w.call("netprobe.tcp_error", { address: "0.0.0.0:80" })) as AnyRecord;
  assert.equal(unspecified.wasi, "invalid-argument");
  const unknown = (await w.call("netprobe.resolve", { name: "nonexistent.invalid" })) as {
    wasi: AnyRecord;
    std: AnyRecord;
  };
  assert.deepEqual(unknown.wasi, { error: "name-unresolvable" });
  assert.ok(unknown.std.error, JSON.stringify(unknown));
  const bad = (await w.call("netprobe.resolve", { name: "not a name" })) as { wasi: AnyRecord };
  assert.deepEqual(bad.wasi, { error: "invalid-argument" });
});

Deno.test("e2e: name lookup uses the system resolver (localhost) and passes IP literals through", async () => {
  await using w = await world();
  const local = (await w.call("netprobe.resolve", { name: "localhost" })) as {
    std: string[];
    wasi: string[];
  };
  assert.ok(local.wasi.includes("127.0.0.1") || local.wasi.includes("::1"), JSON.stringify(local));
  assert.ok(local.std.includes("127.0.0.1") || local.std.includes("::1"), JSON.stringify(local));
  const literal = (await w.call("netprobe.resolve", { name: "::1" })) as { wasi: string[] };
  assert.deepEqual(literal.wasi, ["::1"]);
});

Deno.test("e2e: TCP socket options, states and the socket limit", async () => {
  await using w = await world();
  const o = (await w.call("netprobe.tcp_options")) as AnyRecord;
  assert.equal(o.keep_alive, true);
  assert.equal(o.idle_ns, 30_000_000_000);
  assert.equal(o.interval_ns, 1_000_000_000);
  assert.equal(o.count, 127);
  assert.equal(o.hop_limit, 9);
  assert.equal(o.zero_hop, "invalid-argument");
  assert.equal(o.rebind, "invalid-state");
  assert.equal(o.listen_unfinished, "not-in-progress");
  assert.equal(o.listening, true);
  assert.equal(o.accept_now, "would-block");
  assert.match(String(o.bound), /127, 0, 0, 1/);
  const limit = (await w.call("netprobe.tcp_limit")) as AnyRecord;
  assert.deepEqual(limit, { made: 256, error: "new-socket-limit", again: true });
});

Deno.test("e2e: UDP: datagrams to a server of the test, to the process itself, and between processes", async () => {
  await using w = await world();
  const server = dgram.createSocket("udp4");
  server.on("message", (m, from) => server.send(`echo: ${m}`, from.port, from.address));
  await new Promise<void>((r) => server.bind(0, "127.0.0.1", r));
  try {
    const address = `127.0.0.1:${server.address().port}`;
    const r = (await w.call("netprobe.udp_echo", { address, count: 2 })) as {
      answers: { data: string; from: string }[];
      connected: string;
    };
    assert.deepEqual(r.answers, [
      { data: "echo: ping 0", from: address },
      { data: "echo: ping 1", from: address },
    ]);
    assert.equal(r.connected, "echo: connected");
  } finally {
    server.close();
  }
  const own = (await w.call("netprobe.udp_echo", { count: 3 })) as { answers: { data: string }[] };
  assert.deepEqual(own.answers.map((a) => a.data), [
    "echo: ping 0",
    "echo: ping 1",
    "echo: ping 2",
  ]);

  const serving = w.call("netprobe.udp_serve", { file: "/udp.addr", count: 2 });
  await eventually(() => existsSync(join(w.root, "udp.addr")));
  const to = (await Deno.readTextFile(join(w.root, "udp.addr"))).trim().slice(4);
  const peer = (await w.call("netprobe.udp_echo", { address: to, count: 1 })) as {
    answers: { data: string }[];
    connected: string;
  };
  assert.equal(peer.answers[0].data, "echo: ping 0");
  assert.equal(peer.connected, "echo: connected");
  assert.equal(((await serving) as AnyRecord).served, 2);
});

/** An HTTP server for the plugin: echoes, streams, waits, as each path asks. */
function httpServer(): { url: string; seen: AnyRecord[]; close(): Promise<void> } {
  const seen: AnyRecord[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    const url = new URL(req.url);
    const info: AnyRecord = {
      method: req.method,
      path: url.pathname + url.search,
      contentLength: req.headers.get("content-length"),
      transferEncoding: req.headers.get("transfer-encoding"),
      custom: req.headers.get("x-probe"),
      acceptEncoding: req.headers.get("accept-encoding"),
    };
    seen.push(info);
    switch (url.pathname) {
      case "/upper": {
        // a full-duplex echo: each chunk of the request goes back upper-cased at once
        const reader = req.body!.getReader();
        let chunks = 0;
        return new Response(
          new ReadableStream({
            async pull(c) {
              const { done, value } = await reader.read();
              if (done) {
                info.chunks = chunks;
                c.close();
              } else {
                chunks++;
                c.enqueue(new TextEncoder().encode(new TextDecoder().decode(value).toUpperCase()));
              }
            },
          }),
        );
      }
      case "/count": {
        const body = new Uint8Array(await req.arrayBuffer());
        return new Response(`${req.method} ${body.length} bytes`, {
          headers: { "x-answer": "42" },
        });
      }
      case "/stream": {
        let i = 0;
        return new Response(
          new ReadableStream({
            async pull(c) {
              if (i === 4) return c.close();
              if (i > 0) await new Promise((r) => setTimeout(r, 30));
              c.enqueue(new TextEncoder().encode(`part${i++};`));
            },
          }),
        );
      }
      case "/slow":
        await new Promise((r) => setTimeout(r, 1000));
        return new Response("late");
      case "/redirect":
        return new Response(null, { status: 302, headers: { location: "/count" } });
      default:
        return new Response("ok");
    }
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}`,
    seen,
    close: () => server.shutdown(),
  };
}

Deno.test("e2e: HTTP with a streamed request body and a streamed response body, full duplex", async () => {
  await using w = await world();
  const s = httpServer();
  try {
    const r = (await w.call("netprobe.http", {
      url: `${s.url}/upper?x=1`,
      method: "POST",
      chunks: ["alpha ", "beta ", "gamma"],
      interleave: true,
      headers: [["x-probe", "yes"]],
    })) as AnyRecord;
    assert.equal(r.status, 200, JSON.stringify(r));
    // each chunk went out and came back before the next one was written
    assert.deepEqual(r.interleaved, ["ALPHA ", "BETA ", "GAMMA"]);
    assert.equal(r.body, "ALPHA BETA GAMMA");
    assert.equal(r.trailers, "Some(Ok(Ok(None)))");
    const seen = s.seen.at(-1)!;
    assert.equal(seen.path, "/upper?x=1");
    assert.equal(seen.transferEncoding, "chunked");
    assert.equal(seen.custom, "yes");
    assert.equal(seen.acceptEncoding, "identity");
    assert.equal(seen.chunks, 3);

    const streamed = (await w.call("netprobe.http", { url: `${s.url}/stream` })) as AnyRecord;
    assert.equal(streamed.body, "part0;part1;part2;part3;");
    assert.ok(Number(streamed.reads) >= 3, `read in ${streamed.reads} pieces`);
  } finally {
    await s.close();
  }
});

Deno.test("e2e: HTTP bodies of known length, methods, headers, redirects", async () => {
  await using w = await world();
  const s = httpServer();
  try {
    const put = (await w.call("netprobe.http", {
      url: `${s.url}/count`,
      method: "PUT",
      chunks: ["12345", "67890"],
      content_length: true,
    })) as { status: number; body: string; headers: [string, string][] };
    assert.equal(put.body, "PUT 10 bytes");
    assert.ok(put.headers.some(([k, v]) => k === "x-answer" && v === "42"));
    assert.equal(s.seen.at(-1)!.contentLength, "10");
    assert.equal(s.seen.at(-1)!.transferEncoding, null);

    const get = (await w.call("netprobe.http", { url: `${s.url}/count` })) as AnyRecord;
    assert.equal(get.body, "GET 0 bytes");

    const redirect = (await w.call("netprobe.http", { url: `${s.url}/redirect` })) as {
      status: number;
      headers: [string, string][];
    };
    assert.equal(redirect.status, 302, "redirects are not followed");
    assert.ok(redirect.headers.some(([k, v]) => k === "location" && v === "/count"));

    const forbidden = await w.request("netprobe.http", {
      url: `${s.url}/count`,
      headers: [["host", "example.com"]],
    });
    assert.match(forbidden.error!.message, /Forbidden/);

    const short = (await w.call("netprobe.http", {
      url: `${s.url}/count`,
      method: "POST",
      chunks: ["abc"],
      headers: [["content-length", "10"]],
    })) as AnyRecord;
    assert.equal(short.stage, "finish");
    assert.match(String(short.error), /HttpRequestBodySize\(Some\(3\)\)/);
  } finally {
    await s.close();
  }
});

Deno.test("e2e: HTTP errors: refused, unknown host, timeouts, TLS to a plain server", async () => {
  await using w = await world();
  const s = httpServer();
  try {
    const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (closed.addr as Deno.NetAddr).port;
    closed.close();
    const refused =
      (await w.call("netprobe.http", { url: `http://127.0.0.1:${port}/` })) as AnyRecord;
    assert.match(String(refused.error), /ConnectionRefused/);
    const unknown =
      (await w.call("netprobe.http", { url: "http://nonexistent.invalid/" })) as AnyRecord;
    assert.match(String(unknown.error), /DnsError/);
    const slow = (await w.call("netprobe.http", {
      url: `${s.url}/slow`,
      first_byte_timeout_ms: 100,
    })) as AnyRecord;
    assert.match(String(slow.error), /ConnectionReadTimeout/);
    const between = (await w.call("netprobe.http", {
      url: `${s.url}/stream`,
      between_bytes_timeout_ms: 5,
    })) as AnyRecord;
    assert.match(String(between.body_error), /ConnectionReadTimeout/);
    const tls =
      (await w.call("netprobe.http", { url: `${s.url.replace("http:", "https:")}/` })) as AnyRecord;
    assert.match(String(tls.error), /TlsProtocolError/);
  } finally {
    await s.close();
  }
});

/** A self-signed certificate for 127.0.0.1, valid for a century: no system trusts it. */
const TEST_CERT = `-----BEGIN CERTIFICATE-----
MIIBmDCCAT6gAwIBAgIUNnNxvzJPmpkEwq88CbfdXQTyeScwCgYIKoZIzj0EAwIw
FDESMBAGA1UEAwwJbG9jYWxob3N0MCAXDTI2MTEzMDAyNDMzNloYDzIxMjYxMTA2
MDI0MzM2WjAUMRIwEAYDVQQDDAlsb2NhbGhvc3QwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAARiGbUrpb1MHxU2G4mRHotSoSKjPQRd2XElyUmRx7xSKtqNHhcjVil3
DAi7iP2YiVITYWtiykYDQE0bWal5AROqo2wwajAdBgNVHQ4EFgQU+QKbgAgB59LZ
QzVZThHGoZRlaSAwHwYDVR0jBBgwFoAU+QKbgAgB59LZQzVZThHGoZRlaSAwDAYD
VR0TAQH/BAIwADAaBgNVHREEEzARhwR/AAABgglsb2NhbGhvc3QwCgYIKoZIzj0E
AwIDSAAwRQIgYjP/l77Ct/hHHJWZw3rPF5vSVkMPmQQIopGLDmuNw9gCIQDImXIi
EzhDwqO51M7LairSGCytVrY8yKaLDIfartDm0g==
-----END CERTIFICATE-----`;
const TEST_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgpSJsC7FiMzLb2pbd
p74M2ZdI1o5IlWOtTPcKl4xAKEahRANCAARiGbUrpb1MHxU2G4mRHotSoSKjPQRd
2XElyUmRx7xSKtqNHhcjVil3DAi7iP2YiVITYWtiykYDQE0bWal5AROq
-----END PRIVATE KEY-----`;

Deno.test("e2e: HTTPS checks certificates against the system's roots", async () => {
  await using w = await world();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, cert: TEST_CERT, key: TEST_KEY, onListen() {} },
    () => new Response("secret"),
  );
  try {
    const r = (await w.call("netprobe.http", {
      url: `https://127.0.0.1:${server.addr.port}/`,
    })) as AnyRecord;
    assert.match(String(r.error), /TlsCertificateError/);
  } finally {
    await server.shutdown();
  }
});

Deno.test("e2e: HTTP from a plugin costs little more than a plain fetch", async () => {
  await using w = await world();
  const s = httpServer();
  try {
    const n = 200;
    await w.call("netprobe.http_bench", { url: `${s.url}/`, n: 20 }); // warm up
    const guest = (await w.call("netprobe.http_bench", { url: `${s.url}/`, n })) as {
      mean_ms: number;
    };
    let t = performance.now();
    for (let i = 0; i < n; i++) await (await fetch(`${s.url}/`)).text();
    const plain = (performance.now() - t) / n;
    t = performance.now();
    console.log(
      `    HTTP GET: ${guest.mean_ms.toFixed(3)} ms from a plugin, ${
        plain.toFixed(3)
      } ms plain fetch`,
    );
    assert.ok(guest.mean_ms < plain * 5 + 2, `plugin ${guest.mean_ms} ms vs plain ${plain} ms`);
  } finally {
    await s.close();
  }
});
