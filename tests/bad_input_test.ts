/**
 * Bad input: each gets a clear error, the host stays up, and nothing already
 * journaled is lost.
 */
import assert from "node:assert/strict";
import { componentEmbed, componentNew } from "@bytecodealliance/jco";
import { join } from "node:path";
import { type Entry, Journal } from "../core/journal.ts";
import type { Response } from "../core/jsonrpc.ts";
import { eventually, startWorld, type TestWorld } from "./world.ts";

async function putPlugin(w: TestWorld, name: string, bytes: Uint8Array): Promise<void> {
  await Deno.mkdir(join(w.root, "plugins", name), { recursive: true });
  await Deno.writeFile(join(w.root, "plugins", name, "plugin.wasm"), bytes);
}

/** A component built from WIT alone (its functions trap), for import and export checks. */
async function dummyComponent(world: string): Promise<Uint8Array> {
  const wit = `package test:bad;
interface missing { hello: func() -> string; }
interface other { ping: func(); }
world with-missing-import { import missing; export wasi:cli/run@0.2.6; }
world without-run { export other; }
world with-future-version { import wasi:cli/environment@9.2.6; export wasi:cli/run@0.2.6; }
package wasi:cli@0.2.6 { interface run { run: func() -> result; } }
package wasi:cli@9.2.6 { interface environment { get-arguments: func() -> list<string>; } }`;
  const core = await componentEmbed({ dummy: true, witSource: wit, world });
  return await componentNew(core, []);
}

/**
 * Journals marker lines, runs `bad`, and checks that every entry journaled
 * before it is still there, in the running host and on disk after it stops.
 */
async function assertNothingLost(w: TestWorld, bad: () => Promise<void>): Promise<void> {
  await w.call("probe.log", { lines: 5, text: "journaled-before" });
  const marker = w.host.journal.query({ grep: "^journaled-before" });
  assert.equal(marker.length, 5);
  await eventually(() => w.host.journal.query({ pid: marker[0].pid!, grep: "^exit" }).length === 1);
  const before = w.host.journal.query({ limit: 10_000 });
  assert.ok(before.length < 10_000);
  const last = before.at(-1)!;
  await bad();
  const check = (entries: Entry[]) => {
    assert.deepEqual(entries, before.slice(0, -1));
    assert.ok(entries.length >= marker.length);
  };
  check(w.host.journal.query({ until: last.id, limit: 10_000 }));
  await w.host.shutdown();
  const reopened = new Journal(join(w.root, "state", "core", "journal.sqlite"));
  try {
    check(reopened.query({ until: last.id, limit: 10_000 }));
    assert.deepEqual(reopened.query({ since: last.id, limit: 1 }).length, 1);
    assert.equal(reopened.query({ grep: "^journaled-before", limit: 10 }).length, 5);
  } finally {
    reopened.close();
  }
}

function failure(r: Response): { detail: string; reason: string } {
  assert.equal(r.error?.code, -32002, JSON.stringify(r));
  return r.error!.data as { detail: string; reason: string };
}

Deno.test("a plugin.wasm that is not WebAssembly, empty, or a core module gets a clear error", async () => {
  await using w = await startWorld();
  await putPlugin(w, "text", new TextEncoder().encode("#!/bin/sh\necho hi\n"));
  await putPlugin(w, "empty", new Uint8Array());
  const text = failure(await w.request("text.run", {}));
  assert.equal(text.reason, "failed");
  assert.match(text.detail, /not WebAssembly .*23 21 2f 62.*wasm32-wasip2/);
  assert.match(
    failure(await w.request("empty.run", {})).detail,
    /not WebAssembly \(it starts with nothing\)/,
  );
  await putPlugin(w, "module", new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0]));
  assert.match(
    failure(await w.request("module.run", {})).detail,
    /core WebAssembly module, not a component/,
  );
  // the journal tells the same, and the host still works
  assert.ok(w.host.journal.query({ grep: "cannot start: .*not a component" }).length >= 1);
  assert.deepEqual(await w.call("probe.echo", { still: "up" }), { still: "up" });
});

Deno.test("a bad plugin.wasm loses nothing already journaled", async () => {
  await using w = await startWorld();
  await assertNothingLost(w, async () => {
    await putPlugin(w, "broken", new TextEncoder().encode("not a component"));
    assert.equal(failure(await w.request("broken.run", {})).reason, "failed");
  });
});

Deno.test("a line of 400 MiB on stdout loses nothing already journaled", async () => {
  await using w = await startWorld();
  await assertNothingLost(w, async () => {
    const r = await w.request("probe.huge_line", { mb: 400 });
    assert.match(failure(r).detail, /16 MiB/);
  });
});

Deno.test("a component that imports an interface Sausage does not provide is refused, naming it", async () => {
  await using w = await startWorld();
  await putPlugin(w, "needy", await dummyComponent("with-missing-import"));
  const detail = failure(await w.request("needy.hello", {})).detail;
  assert.match(detail, /imports test:bad\/missing/);
  assert.match(detail, /which Sausage does not provide/);
});

Deno.test("a component that imports a version of a WASI interface Sausage does not provide is refused, naming it and the versions provided", async () => {
  await using w = await startWorld();
  await putPlugin(w, "future", await dummyComponent("with-future-version"));
  const detail = failure(await w.request("future.hello", {})).detail;
  assert.match(detail, /imports wasi:cli\/environment@9\.2\.6, a version Sausage does not provide/);
  assert.match(detail, /versions 0\.2\.x/);
});

Deno.test("a component that is not a wasi:cli/command is refused", async () => {
  await using w = await startWorld();
  await putPlugin(w, "reactor", await dummyComponent("without-run"));
  assert.match(failure(await w.request("reactor.ping", {})).detail, /not a wasi:cli\/command/);
});

Deno.test("a process that floods stderr is rate-limited, the journal says so, stays usable and loses nothing already journaled", async () => {
  await using w = await startWorld();
  await assertNothingLost(w, async () => {
    const r = await w.call("probe.log", { lines: 50_000, text: "flood" });
    assert.deepEqual(r, { logged: 50_000 });
    await eventually(() =>
      w.host.journal.query({ grep: "^dropped \\d+ lines of stderr" }).length >= 1
    );
    const kept = w.host.journal.query({ grep: "^flood", limit: 10_000 }).length;
    assert.ok(kept >= 1000 && kept < 10_000, `kept ${kept} lines`);
    const started = performance.now();
    w.host.journal.query({ grep: "^flood 49999" });
    assert.ok(performance.now() - started < 2000);
    assert.deepEqual(await w.call("probe.echo", {}), {});
  });
});

Deno.test("messages that are not JSON-RPC objects from a client get -32600, and nothing breaks", async () => {
  await using w = await startWorld();
  const got: unknown[] = [];
  const peer = w.host.client("console");
  peer.deliver = (m) => got.push(m);
  for (const m of ["text", 42, null, { jsonrpc: "2.0" }, { jsonrpc: "2.0", id: 1, method: 7 }]) {
    peer.send(m);
  }
  await eventually(() => got.length === 5);
  for (const m of got as { error: { code: number } }[]) assert.equal(m.error.code, -32600);
});
