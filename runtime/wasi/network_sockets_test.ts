/**
 * Unit tests of `wasi:sockets`: the resources called as jco calls them,
 * through the imports of one process.
 */
import assert from "node:assert/strict";
import dgram from "node:dgram";
import { type InputStream, type OutputStream, poll, type StreamError } from "./io.ts";
import { networkImports, releaseNetwork } from "./network.ts";
import { hostSocketUse, MAX_SOCKETS_PER_PROCESS, WAIT_REFRESH_MS } from "./network_process.ts";
import { checkName } from "./sockets_lookup.ts";
import {
  fitsFamily,
  formatIpv6,
  type IpSocketAddress,
  isUnicast,
  isValidRemote,
  parseIp,
  socketErrorCode,
} from "./sockets_network.ts";
import type { TcpSocket } from "./sockets_tcp.ts";
import type { UdpSocket } from "./sockets_udp.ts";

// deno-lint-ignore no-explicit-any
type Any = any;

const enc = (s: string) => new TextEncoder().encode(s);

/** The imports of a fresh process, and what a test needs to end it. */
function process(options: { onWake?: () => void } = {}) {
  const kill = new AbortController();
  const imports = networkImports({ kill: kill.signal, onWake: options.onWake }) as Any;
  const network = imports["wasi:sockets/instance-network"].instanceNetwork();
  return {
    imports,
    network,
    kill,
    tcp: (family = "ipv4"): TcpSocket =>
      imports["wasi:sockets/tcp-create-socket"].createTcpSocket(family),
    udp: (family = "ipv4"): UdpSocket =>
      imports["wasi:sockets/udp-create-socket"].createUdpSocket(family),
    release: () => releaseNetwork(imports),
  };
}

function v4(a: [number, number, number, number], port: number): IpSocketAddress {
  return { tag: "ipv4", val: { address: a, port } };
}

function v6(text: string, port: number): IpSocketAddress {
  const ip = parseIp(text);
  assert.ok(ip && ip.tag === "ipv6");
  return { tag: "ipv6", val: { address: ip.val, port, flowInfo: 0, scopeId: 0 } };
}

const LOOPBACK = v4([127, 0, 0, 1], 0);

/** The error code a call throws. */
function code(f: () => unknown): unknown {
  try {
    f();
  } catch (e) {
    return e;
  }
  return "no error";
}

async function settle<T>(
  socket: { subscribe(): { block(): Promise<void> } },
  f: () => T,
): Promise<T> {
  for (;;) {
    try {
      return f();
    } catch (e) {
      if (e !== "would-block") throw e;
      await socket.subscribe().block();
    }
  }
}

/** A listening socket on 127.0.0.1 and its port. */
function listen(p: ReturnType<typeof process>): [TcpSocket, number] {
  const server = p.tcp();
  server.startBind(p.network, LOOPBACK);
  server.finishBind();
  server.startListen();
  server.finishListen();
  const address = server.localAddress();
  return [server, address.val.port];
}

async function readAll(input: InputStream): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for (;;) {
    try {
      parts.push(await input.blockingRead(65536n));
    } catch (e) {
      if ((e as StreamError).tag === "closed") break;
      throw e;
    }
  }
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

async function writeAll(output: OutputStream, bytes: Uint8Array): Promise<void> {
  let rest = bytes;
  while (rest.length > 0) {
    const room = Number(output.checkWrite());
    if (room === 0) {
      await output.subscribe().block();
      continue;
    }
    output.write(rest.subarray(0, room));
    rest = rest.subarray(room);
  }
}

Deno.test("addresses: IPv6 text forms, families, unicast and remote checks", () => {
  assert.equal(formatIpv6([0, 0, 0, 0, 0, 0, 0, 1]), "::1");
  assert.equal(formatIpv6([0x2001, 0xdb8, 0, 0, 1, 0, 0, 1]), "2001:db8::1:0:0:1");
  assert.equal(formatIpv6([1, 2, 3, 4, 5, 6, 7, 8]), "1:2:3:4:5:6:7:8");
  assert.deepEqual(parseIp("::ffff:127.0.0.1"), {
    tag: "ipv6",
    val: [0, 0, 0, 0, 0, 0xffff, 0x7f00, 1],
  });
  assert.deepEqual(parseIp("fe80::1%eth0"), { tag: "ipv6", val: [0xfe80, 0, 0, 0, 0, 0, 0, 1] });
  assert.deepEqual(parseIp("[::]"), { tag: "ipv6", val: [0, 0, 0, 0, 0, 0, 0, 0] });
  for (
    const bad of ["1.2.3", "1.2.3.256", "01.2.3.4", "1::2::3", ":::", "g::1", "1:2:3:4:5:6:7:8:9"]
  ) {
    assert.equal(parseIp(bad), null, bad);
  }
  assert.ok(fitsFamily(v6("::1", 1), "ipv6"));
  assert.ok(!fitsFamily(v6("::ffff:1.2.3.4", 1), "ipv6"), "IPv4-mapped");
  assert.ok(!fitsFamily(v6("::1.2.3.4", 1), "ipv6"), "IPv4-compatible");
  assert.ok(!fitsFamily(LOOPBACK, "ipv6"));
  assert.ok(!isUnicast(v4([224, 0, 0, 1], 1)));
  assert.ok(!isUnicast(v4([255, 255, 255, 255], 1)));
  assert.ok(!isUnicast(v6("ff02::1", 1)));
  assert.ok(!isValidRemote(v4([0, 0, 0, 0], 80)));
  assert.ok(!isValidRemote(v4([127, 0, 0, 1], 0)));
  assert.ok(!isValidRemote(v6("::", 80)));
});

Deno.test("host errors map to error codes; anything else is a bug and is thrown on", () => {
  assert.equal(socketErrorCode(new Deno.errors.ConnectionRefused("x")), "connection-refused");
  assert.equal(
    socketErrorCode(Object.assign(new Error("x"), { code: "EADDRINUSE" })),
    "address-in-use",
  );
  assert.equal(
    socketErrorCode(Object.assign(new Error("x"), { code: "ENETUNREACH" })),
    "remote-unreachable",
  );
  assert.equal(
    socketErrorCode(Object.assign(new Error("x"), { code: "EMFILE" })),
    "new-socket-limit",
  );
  assert.equal(socketErrorCode(Object.assign(new Error("x"), { code: "EWHATEVER" })), "unknown");
  assert.equal(socketErrorCode("would-block"), "would-block");
  assert.throws(() => socketErrorCode(new TypeError("a bug")), TypeError);
});

Deno.test("tcp: listen, connect, accept, talk both ways, shut down, addresses", async () => {
  const p = process();
  try {
    const [server, port] = listen(p);
    assert.equal(server.isListening(), true);
    assert.equal(code(() => server.accept()), "would-block");
    const client = p.tcp();
    client.startConnect(p.network, v4([127, 0, 0, 1], port));
    assert.equal(
      code(() => client.startConnect(p.network, v4([127, 0, 0, 1], port))),
      "concurrency-conflict",
    );
    const [cin, cout] = await settle(client, () => client.finishConnect());
    const [peer, sin, sout] = await settle(server, () => server.accept());
    assert.deepEqual(peer.remoteAddress(), client.localAddress());
    assert.deepEqual(client.remoteAddress(), v4([127, 0, 0, 1], port));

    await cout.blockingWriteAndFlush(new TextEncoder().encode("hello"));
    assert.equal(new TextDecoder().decode(await sin.blockingRead(100n)), "hello");
    await writeAll(sout, new TextEncoder().encode("back"));
    assert.equal(new TextDecoder().decode(await cin.blockingRead(100n)), "back");

    // a half-close: the server reads the end, and can still answer
    client.shutdown("send");
    assert.deepEqual(await readAll(sin), new Uint8Array(0));
    assert.equal((code(() => cout.checkWrite()) as StreamError).tag, "closed");
    await writeAll(sout, new TextEncoder().encode("bye"));
    peer.shutdown("both");
    assert.equal(new TextDecoder().decode(await readAll(cin)), "bye");
    for (const r of [cin, cout, sin, sout, peer, client, server]) r[Symbol.dispose]();
  } finally {
    p.release();
  }
});

Deno.test("tcp: the states and arguments a guest can get wrong", async () => {
  const p = process();
  try {
    const s = p.tcp();
    assert.equal(code(() => s.finishBind()), "not-in-progress");
    assert.equal(code(() => s.startListen()), "invalid-state");
    assert.equal(code(() => s.finishConnect()), "not-in-progress");
    assert.equal(code(() => s.accept()), "invalid-state");
    assert.equal(code(() => s.localAddress()), "invalid-state");
    assert.equal(code(() => s.remoteAddress()), "invalid-state");
    assert.equal(code(() => s.shutdown("both")), "invalid-state");
    assert.equal(code(() => s.startBind(p.network, v6("::1", 0))), "invalid-argument");
    assert.equal(code(() => s.startBind(p.network, v4([224, 0, 0, 1], 0))), "invalid-argument");
    assert.equal(code(() => s.startConnect(p.network, v4([0, 0, 0, 0], 80))), "invalid-argument");
    assert.equal(code(() => s.startConnect(p.network, v4([127, 0, 0, 1], 0))), "invalid-argument");
    assert.equal(code(() => s.startBind({}, LOOPBACK)), "invalid-argument");
    assert.equal(code(() => s.setListenBacklogSize(0n)), "invalid-argument");
    assert.equal(code(() => s.setKeepAliveIdleTime(0n)), "invalid-argument");
    assert.equal(code(() => s.setReceiveBufferSize(0n)), "invalid-argument");

    // an address in use, then a refused connection
    const [server, port] = listen(p);
    const other = p.tcp();
    assert.equal(
      code(() => other.startBind(p.network, v4([127, 0, 0, 1], port))),
      "address-in-use",
    );
    server[Symbol.dispose]();
    await new Promise((r) => setTimeout(r, 10)); // Deno closes the socket once its pending accept is gone
    const refused = p.tcp();
    refused.startConnect(p.network, v4([127, 0, 0, 1], port));
    await refused.subscribe().block();
    assert.equal(code(() => refused.finishConnect()), "connection-refused");
    assert.equal(code(() => refused.localAddress()), "invalid-state");

    // IPv6 works too
    const six = p.tcp("ipv6");
    six.startBind(p.network, v6("::1", 0));
    six.finishBind();
    assert.equal(six.localAddress().tag, "ipv6");
    assert.equal(six.addressFamily(), "ipv6");
  } finally {
    p.release();
  }
});

Deno.test("tcp: a flush waits until written bytes went out; a closed connection sends what is queued", async () => {
  const p = process();
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    const accepted = listener.accept();
    const s = p.tcp();
    s.startConnect(p.network, v4([127, 0, 0, 1], (listener.addr as Deno.NetAddr).port));
    const [, out] = await settle(s, () => s.finishConnect());
    const conn = await accepted;
    const big = new Uint8Array(3 * 1024 * 1024).map((_, i) => i & 0xff);
    const reading = (async () => {
      const got: number[] = [];
      const buf = new Uint8Array(1 << 16);
      for (;;) {
        const n = await conn.read(buf);
        if (n === null) break;
        for (let i = 0; i < n; i++) got.push(buf[i]);
      }
      return got.length;
    })();
    let at = Number(out.checkWrite());
    out.write(big.subarray(0, at));
    out.flush();
    assert.equal(out.checkWrite(), 0n, "nothing more until the flush is done");
    await out.blockingFlush();
    assert.ok(out.checkWrite() > 0n);
    // queue the rest, then end the process at once: the rest still goes out
    while (at < big.length) {
      const n = Math.min(Number(out.checkWrite()), big.length - at);
      if (n === 0) {
        await out.subscribe().block();
        continue;
      }
      out.write(big.subarray(at, at + n));
      at += n;
    }
    p.release();
    assert.equal(await reading, big.length);
    conn.close();
  } finally {
    listener.close();
    p.release();
  }
});

Deno.test("tcp: a killed process's waits never settle, and its release closes its listener", async () => {
  const p = process();
  const [server, port] = listen(p);
  let settled = false;
  server.subscribe().block().then(() => settled = true);
  p.kill.abort();
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(settled, false, "a wait of a killed process never settles");
  p.release();
  conn.close();
  await new Promise((r) => setTimeout(r, 10)); // Deno closes the socket once its pending accept is gone
  await assert.rejects(Deno.connect({ hostname: "127.0.0.1", port }));
});

Deno.test("tcp: each completion that a guest may wait for wakes the worker", async () => {
  let wakes = 0;
  const p = process({ onWake: () => wakes++ });
  try {
    const [server, port] = listen(p);
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    await server.subscribe().block();
    assert.ok(wakes >= 1, "the accept woke the worker");
    const [, input] = server.accept();
    const before = wakes;
    await conn.write(enc("x"));
    await input.blockingRead(1n);
    assert.ok(wakes > before, "the read woke the worker");
    conn.close();
  } finally {
    p.release();
  }
});

Deno.test("a wait pending for long is released now and then, without waking the worker", async () => {
  let wakes = 0;
  const p = process({ onWake: () => wakes++ });
  try {
    const [server, port] = listen(p);
    const pollable = server.subscribe();
    let refreshed = false;
    pollable.whenReady().then(() => refreshed = true);
    let polled = false;
    const polling = poll([pollable]).then(() => polled = true);
    await new Promise((r) => setTimeout(r, WAIT_REFRESH_MS + 200));
    assert.equal(refreshed, true, "the wait itself settled");
    assert.equal(polled, false, "poll looked again and still waits");
    assert.equal(wakes, 0, "the guest was not woken");
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    await polling;
    assert.ok(wakes > 0);
    conn.close();
  } finally {
    p.release();
  }
});

Deno.test("tcp: at most MAX_SOCKETS_PER_PROCESS sockets; the end of the process gives them back", () => {
  const p = process();
  const before = hostSocketUse().open;
  const held: TcpSocket[] = [];
  for (let i = 0; i < MAX_SOCKETS_PER_PROCESS; i++) held.push(p.tcp());
  assert.equal(code(() => p.tcp()), "new-socket-limit");
  assert.equal(code(() => p.udp()), "new-socket-limit");
  held.pop()![Symbol.dispose]();
  held.push(p.tcp());
  assert.equal(hostSocketUse().open, before + MAX_SOCKETS_PER_PROCESS);
  p.release();
  assert.equal(hostSocketUse().open, before);
  for (const s of held) s[Symbol.dispose]();
  assert.equal(hostSocketUse().open, before);
});

Deno.test("udp: bind, stream, send and receive; connected streams; sizes and permits", async () => {
  const p = process();
  try {
    const a = p.udp();
    const b = p.udp();
    assert.equal(code(() => a.stream(undefined)), "invalid-state");
    for (const s of [a, b]) {
      s.startBind(p.network, LOOPBACK);
      await settle(s, () => s.finishBind());
    }
    assert.equal(code(() => a.finishBind()), "not-in-progress");
    const aAddress = a.localAddress();
    const bAddress = b.localAddress();
    const [aIn] = a.stream(undefined);
    const [, bOut] = b.stream(undefined);
    // sending without a permit of check-send traps (a JS error, not an error code)
    assert.throws(
      () => bOut.send([{ data: new Uint8Array(1), remoteAddress: aAddress }]),
      /more datagrams than check-send permitted/,
    );
    assert.ok(bOut.checkSend() > 0n);
    assert.equal(code(() => bOut.send([{ data: new Uint8Array(1) }])), "invalid-argument");
    bOut.checkSend();
    assert.equal(
      code(() => bOut.send([{ data: new Uint8Array(70000), remoteAddress: aAddress }])),
      "datagram-too-large",
    );
    bOut.checkSend();
    assert.equal(
      bOut.send([
        { data: new TextEncoder().encode("one"), remoteAddress: aAddress },
        { data: new TextEncoder().encode("two"), remoteAddress: aAddress },
      ]),
      2n,
    );
    const got: string[] = [];
    while (got.length < 2) {
      await aIn.subscribe().block();
      for (const d of aIn.receive(10n)) {
        got.push(new TextDecoder().decode(d.data));
        assert.deepEqual(d.remoteAddress, bAddress);
      }
    }
    assert.deepEqual(got, ["one", "two"]);

    // connected to b: only b's datagrams arrive; sends need no address
    const [aIn2, aOut2] = a.stream(bAddress);
    assert.deepEqual(a.remoteAddress(), bAddress);
    assert.equal(code(() => aIn.receive(1n)), "invalid-state", "the older streams stop working");
    const c = p.udp();
    c.startBind(p.network, LOOPBACK);
    await settle(c, () => c.finishBind());
    const [, cOut] = c.stream(undefined);
    cOut.checkSend();
    cOut.send([{ data: new TextEncoder().encode("stranger"), remoteAddress: aAddress }]);
    bOut.checkSend();
    bOut.send([{ data: new TextEncoder().encode("friend"), remoteAddress: aAddress }]);
    await aIn2.subscribe().block();
    await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(aIn2.receive(10n).map((d) => new TextDecoder().decode(d.data)), ["friend"]);
    aOut2.checkSend();
    assert.equal(
      code(() => aOut2.send([{ data: new Uint8Array(1), remoteAddress: aAddress }])),
      "invalid-argument",
      "a connected stream sends only to its peer",
    );

    a.setUnicastHopLimit(7);
    assert.equal(a.unicastHopLimit(), 7);
    assert.equal(code(() => a.setUnicastHopLimit(0)), "invalid-argument");
    a.setReceiveBufferSize(100_000n);
    assert.ok(a.receiveBufferSize() >= 50_000n);
  } finally {
    p.release();
  }
});

Deno.test("udp: a bind on a port in use fails at finish-bind; a test server echoes to a socket", async () => {
  const p = process();
  const server = dgram.createSocket("udp4");
  server.on("message", (m, from) => server.send(m, from.port, from.address));
  await new Promise<void>((r) => server.bind(0, "127.0.0.1", r));
  try {
    const taken = p.udp();
    taken.startBind(p.network, v4([127, 0, 0, 1], server.address().port));
    await taken.subscribe().block();
    assert.equal(code(() => taken.finishBind()), "address-in-use");
    const s = p.udp();
    s.startBind(p.network, LOOPBACK);
    await settle(s, () => s.finishBind());
    const [input, output] = s.stream(v4([127, 0, 0, 1], server.address().port));
    await output.subscribe().block();
    output.checkSend();
    assert.equal(output.send([{ data: new TextEncoder().encode("ping") }]), 1n);
    await poll([input.subscribe()]);
    assert.equal(new TextDecoder().decode(input.receive(1n)[0].data), "ping");
  } finally {
    server.close();
    p.release();
  }
});

Deno.test("ip-name-lookup: names are checked, literals pass, localhost resolves, unknown names fail", async () => {
  assert.deepEqual(checkName("127.0.0.1"), { tag: "ipv4", val: [127, 0, 0, 1] });
  assert.deepEqual(checkName("[::1]"), { tag: "ipv6", val: [0, 0, 0, 0, 0, 0, 0, 1] });
  assert.equal(checkName("Example.COM"), "example.com");
  assert.equal(checkName("bücher.example"), "xn--bcher-kva.example");
  for (const bad of ["", "a b", "host:80", "a/b", "user@host", "a?b", "#"]) {
    assert.equal(code(() => checkName(bad)), "invalid-argument", bad);
  }
  const p = process();
  try {
    const lookup = p.imports["wasi:sockets/ip-name-lookup"];
    const literal = lookup.resolveAddresses(p.network, "::1");
    assert.deepEqual(literal.resolveNextAddress(), { tag: "ipv6", val: [0, 0, 0, 0, 0, 0, 0, 1] });
    assert.equal(literal.resolveNextAddress(), undefined);
    const local = lookup.resolveAddresses(p.network, "localhost");
    assert.equal(code(() => local.resolveNextAddress()), "would-block");
    await local.subscribe().block();
    const found: unknown[] = [];
    for (let a = local.resolveNextAddress(); a; a = local.resolveNextAddress()) found.push(a);
    assert.ok(found.length > 0);
    const unknown = lookup.resolveAddresses(p.network, "nonexistent.invalid");
    await unknown.subscribe().block();
    assert.equal(code(() => unknown.resolveNextAddress()), "name-unresolvable");
    assert.equal(code(() => lookup.resolveAddresses(p.network, "a b")), "invalid-argument");
  } finally {
    p.release();
  }
});
