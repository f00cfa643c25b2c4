import assert from "node:assert/strict";
import { LOG_LINES_PER_SECOND, MAX_LOG_LINE_BYTES } from "./messages.ts";
import {
  LogLineSink,
  MessageLineSink,
  type OutputPort,
  parseMessageLine,
  StdinSource,
} from "./stdio.ts";

const enc = (s: string) => new TextEncoder().encode(s);

function port() {
  const seen = { messages: [] as unknown[], discarded: 0, lines: [] as string[], dropped: 0 };
  const p: OutputPort = {
    message: (m) => seen.messages.push(m),
    discarded: () => seen.discarded++,
    logLine: (l) => seen.lines.push(l),
    logDropped: (n) => seen.dropped += n,
  };
  return { p, seen };
}

Deno.test("parseMessageLine keeps JSON-RPC objects and batches, and nothing else", () => {
  assert.deepEqual(parseMessageLine(enc('{"jsonrpc":"2.0","id":1,"result":2}')), {
    message: { jsonrpc: "2.0", id: 1, result: 2 },
  });
  assert.ok(parseMessageLine(enc('[{"jsonrpc":"2.0","method":"a.b"}]')));
  for (const noise of ["hello", "[1,2]", "[]", '{"jsonrpc":"1.0"}', "{bad", "42", '"x"']) {
    assert.equal(parseMessageLine(enc(noise)), null, noise);
  }
  assert.equal(parseMessageLine(new Uint8Array([0x7b, 0xff, 0x7d])), null);
});

Deno.test("stdout: a message split over writes, a print! without newline before a message, blank lines", () => {
  const { p, seen } = port();
  const sink = new MessageLineSink(p, () => assert.fail("no overflow"));
  sink.write(enc('\n{"jsonrpc":"2.0",'));
  sink.write(enc('"id":1,"result":1}\n'));
  sink.write(enc("progress 50%"));
  sink.write(enc('\n{"jsonrpc":"2.0","id":2,"result":2}\n\n\n'));
  sink.finish();
  assert.equal(seen.messages.length, 2);
  assert.equal(seen.discarded, 1);
});

Deno.test("stdout: a line over the limit calls the overflow once, without keeping the bytes", () => {
  const { p } = port();
  let overflows = 0;
  const sink = new MessageLineSink(p, () => overflows++);
  const chunk = new Uint8Array(1 << 20).fill(0x78);
  for (let i = 0; i < 17; i++) sink.write(chunk);
  assert.equal(overflows, 1);
});

Deno.test("stderr: lines are cut at the limit and rate-limited, with a count of dropped lines", () => {
  const { p, seen } = port();
  const sink = new LogLineSink(p);
  sink.write(enc("x".repeat(MAX_LOG_LINE_BYTES + 10) + "\nshort\r\n"));
  assert.match(seen.lines[0], /… \(10 more bytes cut\)$/);
  assert.equal(seen.lines[1], "short");
  const many = Array.from({ length: LOG_LINES_PER_SECOND * 3 }, (_, i) => `l${i}`).join("\n") +
    "\n";
  sink.write(enc(many));
  sink.finish();
  assert.ok(seen.dropped > 0);
  assert.equal(seen.lines.length - 2 + seen.dropped, LOG_LINES_PER_SECOND * 3);
});

Deno.test("stdin: chunks, partial reads, then EOF", async () => {
  const s = new StdinSource();
  assert.deepEqual(s.read(10), new Uint8Array(0));
  const waiting = s.whenReadable();
  s.push(enc("hello"));
  await waiting;
  assert.deepEqual(s.read(2), enc("he"));
  assert.deepEqual(s.read(10), enc("llo"));
  s.end();
  assert.equal(s.read(10), null);
});

Deno.test("stdin: a killed process's wait never settles", async () => {
  const kill = new AbortController();
  const s = new StdinSource(kill.signal);
  let settled = false;
  s.whenReadable().then(() => settled = true, () => settled = true);
  kill.abort();
  s.push(enc("late"));
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(settled, false);
});
