/**
 * Unit tests of `wasi:http`: fields, requests and bodies, and the outgoing
 * handler against a server of the test, called as jco calls them.
 */
import assert from "node:assert/strict";
import { gzipSync } from "node:zlib";
import type { InputStream, StreamError } from "./io.ts";
import { networkImports, releaseNetwork } from "./network.ts";
import {
  MAX_BODY_BYTES_PER_PROCESS,
  MAX_REQUESTS_PER_PROCESS,
  NetworkProcess,
} from "./network_process.ts";
import { Fields, MAX_FIELDS_BYTES } from "./http_fields.ts";
import { fetchErrorCode } from "./http_outgoing.ts";
import {
  type FutureIncomingResponse,
  httpErrorCode,
  IncomingBody,
  type IncomingResponse,
  MAX_BUFFERED_BODY,
  OutgoingBody,
  OutgoingRequest,
  RequestBody,
  RequestOptions,
} from "./http_types.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);

function thrown(f: () => unknown): unknown {
  try {
    f();
  } catch (e) {
    return e;
  }
  return "no error";
}

function process() {
  const kill = new AbortController();
  const imports = networkImports({ kill: kill.signal }) as Any;
  const handle = imports["wasi:http/outgoing-handler"].handle as (
    r: OutgoingRequest,
    o: RequestOptions | undefined,
  ) => FutureIncomingResponse;
  return { imports, handle, kill, release: () => releaseNetwork(imports) };
}

function request(url: string, method = "get", headers = new Fields()): OutgoingRequest {
  const u = new URL(url);
  const r = new OutgoingRequest(headers);
  r.setScheme({ tag: u.protocol === "https:" ? "HTTPS" : "HTTP" });
  r.setAuthority(u.host);
  r.setPathWithQuery(u.pathname + u.search);
  if (method !== "get") {
    r.setMethod(
      ["post", "put", "head", "delete", "patch"].includes(method)
        ? { tag: method } as Any
        : { tag: "other", val: method },
    );
  }
  return r;
}

async function response(future: FutureIncomingResponse): Promise<IncomingResponse> {
  await future.subscribe().block();
  const got = future.get()!;
  assert.equal(got.tag, "ok");
  if (got.val.tag === "err") throw got.val.val;
  return got.val.val;
}

async function readAll(input: InputStream): Promise<string> {
  let text = "";
  for (;;) {
    try {
      text += dec(await input.blockingRead(65536n));
    } catch (e) {
      if ((e as StreamError).tag === "closed") return text;
      throw e;
    }
  }
}

function server(handler: (req: Request) => Response | Promise<Response>) {
  const s = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, handler);
  return { url: `http://127.0.0.1:${s.addr.port}`, close: () => s.shutdown() };
}

Deno.test("fields: names are tokens in lower case, values bytes without controls, some names forbidden", () => {
  const f = Fields.fromList([["Content-Type", enc("text/plain")], ["X-A", enc("1")]]);
  f.append("x-a", enc("2"));
  assert.deepEqual(f.get("X-a").map(dec), ["1", "2"]);
  assert.ok(f.has("content-type"));
  assert.deepEqual(f.entries().map(([n, v]) => [n, dec(v)]), [
    ["content-type", "text/plain"],
    ["x-a", "1"],
    ["x-a", "2"],
  ]);
  f.set("x-a", [enc("3")]);
  assert.deepEqual(f.get("x-a").map(dec), ["3"]);
  f.delete("x-a");
  assert.equal(f.has("x-a"), false);
  assert.deepEqual(thrown(() => f.append("bad name", enc("x"))), { tag: "invalid-syntax" });
  assert.deepEqual(thrown(() => f.append("x-b", enc("a\r\nb"))), { tag: "invalid-syntax" });
  assert.deepEqual(thrown(() => f.append("Host", enc("example.com"))), { tag: "forbidden" });
  assert.deepEqual(thrown(() => Fields.fromList([["connection", enc("close")]])), {
    tag: "forbidden",
  });
  f.append("x-tab", enc("a\tb\u00ff")); // tab and bytes above 0x7f are allowed
  const copy = f.clone();
  copy.append("x-c", enc("c"));
  assert.equal(f.has("x-c"), false);
  assert.deepEqual(thrown(() => f.append("x", new Uint8Array(MAX_FIELDS_BYTES))), {
    tag: "invalid-syntax",
  });

  // the headers of a request are immutable, and so are the copies it hands out
  const r = new OutgoingRequest(f);
  assert.deepEqual(thrown(() => f.append("x-d", enc("d"))), { tag: "immutable" });
  assert.deepEqual(thrown(() => r.headers().delete("content-type")), { tag: "immutable" });
  assert.equal(dec(r.headers().get("content-type")[0]), "text/plain");
});

Deno.test("outgoing-request: setters check what they are given; the body comes once", () => {
  const r = new OutgoingRequest(new Fields());
  assert.deepEqual(r.method(), { tag: "get" });
  assert.equal(thrown(() => r.setMethod({ tag: "other", val: "BAD METHOD" })), undefined);
  r.setMethod({ tag: "other", val: "PURGE" });
  assert.equal(thrown(() => r.setPathWithQuery("/a b")), undefined);
  r.setPathWithQuery("/a/b?c=d%20e");
  assert.equal(thrown(() => r.setScheme({ tag: "other", val: "1x" })), undefined);
  assert.equal(thrown(() => r.setAuthority("user@host")), undefined);
  assert.equal(thrown(() => r.setAuthority("host:70000")), undefined);
  r.setAuthority("[::1]:8080");
  assert.equal(r.authority(), "[::1]:8080");
  r.body();
  assert.equal(thrown(() => r.body()), undefined, "a second body() fails");
  const bad = new OutgoingRequest(Fields.fromList([["content-length", enc("ten")]]));
  assert.equal(thrown(() => bad.body()), undefined);
  const options = new RequestOptions();
  options.setConnectTimeout(5n);
  assert.equal(options.connectTimeout(), 5n);
  assert.equal(options.firstByteTimeout(), undefined);
});

Deno.test("outgoing-body: content-length is enforced; the stream error maps to an http error code", () => {
  const r = new OutgoingRequest(Fields.fromList([["content-length", enc("4")]]));
  const body = r.body();
  const out = body.write();
  out.write(enc("abc"));
  assert.equal(out.checkWrite(), 1n);
  out.write(enc("d"));
  assert.equal(out.checkWrite(), 1n, "one byte more may be tried, and fails");
  const e = thrown(() => out.write(enc("e"))) as StreamError;
  assert.equal(e.tag, "last-operation-failed");
  assert.deepEqual(httpErrorCode((e as Any).val), { tag: "HTTP-request-body-size", val: 5n });

  const short = new OutgoingRequest(Fields.fromList([["content-length", enc("4")]]));
  const shortBody = short.body();
  shortBody.write().write(enc("ab"));
  assert.deepEqual(thrown(() => OutgoingBody.finish(shortBody, undefined)), {
    tag: "HTTP-request-body-size",
    val: 2n,
  });
});

Deno.test("a body of known length is sent whole while its process has room for it", () => {
  const p = new NetworkProcess();
  const mib = 1024 * 1024;
  assert.equal(new RequestBody(MAX_BUFFERED_BODY + 1, p).buffered, false);
  assert.equal(new RequestBody(null, p).buffered, false);
  const a = new RequestBody(15 * mib, p);
  const b = new RequestBody(15 * mib, p);
  const c = new RequestBody(15 * mib, p);
  assert.deepEqual([a.buffered, b.buffered, c.buffered], [true, true, false]);
  a.fail(null); // a failed (or sent) body gives its room back
  assert.equal(new RequestBody(15 * mib, p).buffered, true);
  assert.ok(MAX_BODY_BYTES_PER_PROCESS < 3 * 15 * mib);
});

Deno.test("handle: GET, then a streamed POST both ways, headers in and out", async () => {
  const seen: Record<string, unknown>[] = [];
  const s = server(async (req) => {
    const body = await req.text();
    seen.push({
      method: req.method,
      body,
      te: req.headers.get("transfer-encoding"),
      x: req.headers.get("x-probe"),
    });
    return new Response(`${req.method}:${body}`, {
      headers: [["set-cookie", "a=1"], ["set-cookie", "b=2"], ["x-answer", "42"]],
    });
  });
  const p = process();
  try {
    const get = await response(p.handle(request(`${s.url}/x?y=1`), undefined));
    assert.equal(get.status(), 200);
    assert.deepEqual(get.headers().get("set-cookie").map(dec), ["a=1", "b=2"]);
    assert.equal(dec(get.headers().get("x-answer")[0]), "42");
    assert.equal(get.headers().has("transfer-encoding"), false);
    const getBody = get.consume();
    assert.equal(await readAll(getBody.stream()), "GET:");

    const post = request(`${s.url}/`, "post", Fields.fromList([["x-probe", enc("p")]]));
    const body = post.body();
    const future = p.handle(post, undefined);
    const out = body.write();
    await out.blockingWriteAndFlush(enc("one "));
    await out.blockingWriteAndFlush(enc("two"));
    out[Symbol.dispose]();
    OutgoingBody.finish(body, undefined);
    const r = await response(future);
    assert.equal(await readAll(r.consume().stream()), "POST:one two");
    assert.deepEqual(seen.at(-1), { method: "POST", body: "one two", te: "chunked", x: "p" });
    assert.deepEqual(future.get(), { tag: "err", val: undefined }, "a second get is an error");
  } finally {
    p.release();
    await s.close();
  }
});

Deno.test("handle: the trailers come after the body; finishing early drops the rest", async () => {
  const s = server(() => new Response("x".repeat(300_000)));
  const p = process();
  try {
    const r = await response(p.handle(request(`${s.url}/`), undefined));
    const body = r.consume();
    const stream = body.stream();
    assert.ok((await stream.blockingRead(10n)).length > 0);
    stream[Symbol.dispose]();
    const trailers = IncomingBody.finish(body);
    await trailers.subscribe().block();
    assert.deepEqual(trailers.get(), { tag: "ok", val: { tag: "ok", val: undefined } });
  } finally {
    p.release();
    await s.close();
  }
});

Deno.test("handle: an encoding the guest asked for is decoded, and its headers go", async () => {
  const s = server((req) => {
    const accept = req.headers.get("accept-encoding") ?? "";
    if (accept.includes("gzip")) {
      return new Response(new Uint8Array(gzipSync(enc("squeezed"))), {
        headers: { "content-encoding": "gzip" },
      });
    }
    return new Response(`plain (${accept})`);
  });
  const p = process();
  try {
    const plain = await response(p.handle(request(`${s.url}/`), undefined));
    assert.equal(await readAll(plain.consume().stream()), "plain (identity)");
    const asked = request(`${s.url}/`, "get", Fields.fromList([["accept-encoding", enc("gzip")]]));
    const gz = await response(p.handle(asked, undefined));
    assert.equal(gz.headers().has("content-encoding"), false);
    assert.equal(gz.headers().has("content-length"), false);
    assert.equal(await readAll(gz.consume().stream()), "squeezed");
  } finally {
    p.release();
    await s.close();
  }
});

Deno.test("handle: errors before the request leaves, and the request limit of a process", async () => {
  const s = server(() => new Promise(() => {})); // never answers
  const p = process();
  try {
    const noAuthority = new OutgoingRequest(new Fields());
    assert.deepEqual(thrown(() => p.handle(noAuthority, undefined)), {
      tag: "HTTP-request-URI-invalid",
    });
    const other = request(`${s.url}/`);
    other.setScheme({ tag: "other", val: "ftp" });
    assert.deepEqual(thrown(() => p.handle(other, undefined)), { tag: "HTTP-protocol-error" });
    const connect = request(`${s.url}/`, "CONNECT");
    assert.deepEqual(thrown(() => p.handle(connect, undefined)), {
      tag: "HTTP-request-method-invalid",
    });
    const pending: FutureIncomingResponse[] = [];
    for (let i = 0; i < MAX_REQUESTS_PER_PROCESS; i++) {
      pending.push(p.handle(request(`${s.url}/${i}`), undefined));
    }
    assert.deepEqual(thrown(() => p.handle(request(`${s.url}/over`), undefined)), {
      tag: "connection-limit-reached",
    });
    // dropping a future cancels its request and frees its place
    pending.pop()![Symbol.dispose]();
    pending.push(p.handle(request(`${s.url}/again`), undefined));
    // the end of the process cancels the rest
    p.release();
    await new Promise((r) => setTimeout(r, 20));
    for (const f of pending) {
      assert.equal(f.subscribe().ready(), true);
      assert.equal((f.get()!.val as Any).tag, "err");
    }
  } finally {
    p.release();
    await s.close();
  }
});

Deno.test("handle: a first-byte timeout, and a body dropped before it was finished", async () => {
  const s = server(async (req) => {
    await req.text().catch(() => {});
    await new Promise((r) => setTimeout(r, 1000));
    return new Response("late");
  });
  const p = process();
  try {
    const options = new RequestOptions();
    options.setFirstByteTimeout(50_000_000n);
    const t = performance.now();
    const future = p.handle(request(`${s.url}/`), options);
    await future.subscribe().block();
    // the timeout (50 ms), well before the answer (1 s)
    assert.ok(performance.now() - t < 800);
    assert.deepEqual(future.get(), {
      tag: "ok",
      val: { tag: "err", val: { tag: "connection-read-timeout" } },
    });

    const post = request(`${s.url}/`, "post");
    const body = post.body();
    const dropped = p.handle(post, undefined);
    body.write().write(enc("partial"));
    body[Symbol.dispose]();
    await dropped.subscribe().block();
    const got = dropped.get()!.val as Any;
    assert.equal(got.tag, "err");
    assert.equal(got.val.tag, "internal-error");
  } finally {
    p.release();
    await s.close();
  }
});

Deno.test("fetch errors map to error codes", () => {
  const cause = (message: string) => new TypeError("fetch failed", { cause: new Error(message) });
  assert.deepEqual(
    fetchErrorCode(
      cause(
        "client error (Connect): dns error: failed to lookup address information: Name or service not known",
      ),
    ),
    { tag: "DNS-error", val: { rcode: "Name or service not known", infoCode: undefined } },
  );
  assert.deepEqual(fetchErrorCode(cause("tcp connect error: Connection refused (os error 111)")), {
    tag: "connection-refused",
  });
  assert.deepEqual(fetchErrorCode(cause("invalid peer certificate: UnknownIssuer")), {
    tag: "TLS-certificate-error",
  });
  assert.deepEqual(fetchErrorCode(cause("received corrupt message of type InvalidContentType")), {
    tag: "TLS-protocol-error",
  });
  assert.deepEqual(fetchErrorCode(new TypeError("Fetch failed: Requests to port 1 are blocked")), {
    tag: "HTTP-request-denied",
  });
  assert.deepEqual(fetchErrorCode(cause("connection closed before message completed")), {
    tag: "HTTP-response-incomplete",
  });
  assert.equal(fetchErrorCode(new TypeError("something new")).tag, "internal-error");
  // the URL in Deno's message decides nothing: a host named like an error is still refused
  const refusedAt = (url: string) =>
    new TypeError(`error sending request for url (${url})`, {
      cause: new Error(
        "client error (Connect): tcp connect error: Connection refused (os error 111)",
      ),
    });
  for (const url of ["http://tls-certificate.test/", "http://x.test/timed out/handshake"]) {
    assert.deepEqual(fetchErrorCode(refusedAt(url)), { tag: "connection-refused" });
  }
  const reset = new TypeError("error sending request for url (https://dns-error.test/)", {
    cause: new Error("connection error: Connection reset by peer (os error 104)"),
  });
  assert.deepEqual(fetchErrorCode(reset), { tag: "connection-terminated" });
});
