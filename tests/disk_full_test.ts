/**
 * A world on a disk that a plugin fills: a tmpfs of its own (so the test
 * needs root, to mount it). The writer gets insufficient-space, the host
 * stays up, the journal keeps its entries in memory while it cannot write,
 * and nothing journaled is lost once there is room again.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { Host } from "../core/host.ts";
import { initWorld } from "../core/init.ts";
import { eventually, installPlugin, TEST_CACHE_DIR } from "./world.ts";
import { findWasmToolchain } from "../core/cargo/toolchain.ts";
import { cannotMount, fillDisk, run } from "../faults/disk.ts";

/** Why no tmpfs can be mounted here (not root, no mount namespace), or undefined. */
const noMount = cannotMount();
if (noMount) console.error(`disk_full_test: skipped: ${noMount}`);
const canMount = () => noMount === undefined;

Deno.test({
  name:
    "a plugin fills the world's disk: it gets insufficient-space, the host goes on, and the journal loses nothing",
  ignore: !canMount(),
}, async () => {
  const disk = await Deno.makeTempDir({ prefix: "sausage-small-disk-" });
  await run("mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", disk);
  const notes: string[] = [];
  let host: Host | undefined;
  try {
    const root = join(disk, "world");
    await initWorld(root);
    await installPlugin(root, "fsprobe", "fsprobe");
    host = await Host.start({
      world: root,
      cacheDir: TEST_CACHE_DIR,
      onNote: (text) => notes.push(text),
    });
    await host.discovered;
    const client = host.client("console");
    const call = async (method: string, params: Record<string, unknown>) => {
      const r = await client.request(method, params);
      assert.equal(r.error, undefined, JSON.stringify(r.error));
      return r.result as Record<string, unknown>;
    };
    assert.deepEqual(await call("fsprobe.write", { path: "/state/before", text: "x" }), {
      ok: "x",
    });

    // a plugin fills the disk: its write fails with insufficient-space, what it wrote is intact
    const filled = await call("fsprobe.fill", { path: "/state/big", keep: "/state/keep.txt" });
    const error = filled.error as { errno: string; code: string; kind: string };
    assert.deepEqual([error.errno, error.code, error.kind], [
      "ENOSPC",
      "insufficient-space",
      "StorageFull",
    ]);
    assert.deepEqual((filled.read_back as { ok: unknown }).ok, {
      len: (filled.size as { ok: number }).ok,
      first_bad: null,
    });
    assert.deepEqual(filled.keep_read, { ok: "earlier data" });
    assert.equal((filled.small_write as { err?: { errno: string } }).err?.errno, "ENOSPC");
    // it removed its file: the space came back
    assert.deepEqual([filled.remove, filled.after_remove], [{ ok: true }, { ok: 4096 }]);

    // full again, to the last page, while the host must journal
    const filler = await Deno.open(join(root, "state", "filler"), { write: true, create: true });
    try {
      const page = new Uint8Array(4096);
      for (;;) await filler.write(page);
    } catch (e) {
      assert.match(String(e), /No space left|os error 28/);
    } finally {
      filler.close();
    }
    // while the disk is full: calls still answer, and the journal says it keeps entries in memory
    const whileFull = await call("fsprobe.write", { path: "/state/during", text: "y" });
    assert.equal((whileFull.err as { errno: string } | undefined)?.errno, "ENOSPC");
    await eventually(() => notes.some((n) => /the journal cannot be written/.test(n)));

    // room again: every entry reaches the database, those of the full disk too
    await Deno.remove(join(root, "state", "filler"));
    await eventually(() => notes.some((n) => /can be written again; no entry was lost/.test(n)));
    await host.shutdown();
    const reopened = await Host.start({ world: root, cacheDir: TEST_CACHE_DIR, services: false });
    try {
      const starts = reopened.journal.query({ grep: "^start (write|fill) " }).map((e) => e.line);
      assert.deepEqual(starts, [
        'start write {"path":"/state/before","text":"x"} (parent console)',
        'start fill {"path":"/state/big","keep":"/state/keep.txt"} (parent console)',
        'start write {"path":"/state/during","text":"y"} (parent console)',
      ]);
    } finally {
      await reopened.shutdown();
    }
  } finally {
    await host?.shutdown();
    await run("umount", disk).catch(() => {});
    await Deno.remove(disk, { recursive: true }).catch(() => {});
  }
});

Deno.test({
  name:
    "a build whose cache is on a full disk fails with an error that says so and how to make room",
  ignore: !canMount() || !(await hasWasmToolchain()),
}, async () => {
  const disk = await Deno.makeTempDir({ prefix: "sausage-small-cache-" });
  await run("mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", disk);
  const root = await Deno.makeTempDir({ prefix: "sausage-world-" });
  let host: Host | undefined;
  try {
    await initWorld(root, { installAgent: false, examples: true });
    host = await Host.start({ world: root, cacheDir: disk, services: false, installAgent: false });
    await host.discovered;
    const client = host.client("console");
    // cargo's target folder fills the 16 MiB long before the SDK's dependencies are compiled
    const built = await client.request("cargo.build", { plugin: "notes" }, { timeoutMs: 600_000 });
    assert.equal(built.error?.code, -32004, JSON.stringify(built.result ?? built.error));
    // told by a probe write on each disk after the failed step, not by cargo's words
    assert.match(built.error!.message, /a disk is full \(No space left on device/);
    assert.match(built.error!.message, new RegExp(`the cache folder ${disk}`));
    assert.match(built.error!.message, /sausage cache gc/);
    assert.match(built.error!.message, /--cache-dir/);
    const data = built.error!.data as {
      step: string;
      output: string;
      disk: string;
      full: string[];
    };
    assert.equal(data.disk, "full");
    assert.deepEqual(data.full, ["cache"]);
    assert.notEqual(data.step, "checking for room");
    // the next build is refused at once, before cargo starts
    const t = performance.now();
    const again = await client.request("cargo.build", { plugin: "notes" });
    const refusedMs = performance.now() - t;
    assert.equal(again.error?.code, -32004, JSON.stringify(again.result ?? again.error));
    assert.equal((again.error!.data as { step: string }).step, "checking for room");
    assert.ok(refusedMs < 2000, `refused after ${refusedMs} ms`);
    // the host goes on, and nothing of the world was touched
    const ps = await client.request("core.log", { limit: 1 });
    assert.equal(ps.error, undefined, JSON.stringify(ps.error));
    await assert.rejects(Deno.stat(join(root, "plugins", "notes", "plugin.wasm")));
    // with room again, the next build works on what the failed one left in the cache
    await run("mount", "-o", "remount,size=2g", disk);
    const after = await client.request("cargo.build", { plugin: "notes" }, { timeoutMs: 600_000 });
    assert.equal(after.error, undefined, JSON.stringify(after.error));
    assert.equal((after.result as { tests: { passed: number } }).tests.passed, 2);
  } finally {
    await host?.shutdown();
    await run("umount", disk).catch(() => {});
    await Deno.remove(disk, { recursive: true }).catch(() => {});
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
});

Deno.test({
  name:
    "a build into a full world is refused at once with an error that names the world, and builds once there is room",
  ignore: !canMount() || !(await hasWasmToolchain()),
}, async () => {
  const disk = await Deno.makeTempDir({ prefix: "sausage-small-world-" });
  await run("mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", disk);
  const root = join(disk, "world");
  let host: Host | undefined;
  try {
    await initWorld(root, { installAgent: false, examples: true });
    host = await Host.start({
      world: root,
      cacheDir: TEST_CACHE_DIR,
      services: false,
      installAgent: false,
    });
    await host.discovered;
    const client = host.client("console");
    await fillDisk(join(root, "state", "filler"));
    const t = performance.now();
    const refused = await client.request("cargo.build", { plugin: "notes" });
    const refusedMs = performance.now() - t;
    assert.equal(refused.error?.code, -32004, JSON.stringify(refused.result ?? refused.error));
    assert.match(refused.error!.message, /a disk is full \(No space left on device/);
    assert.match(refused.error!.message, new RegExp(`the world's ${root}/state/cargo/builds`));
    assert.match(refused.error!.message, /old \/state\/cargo\/builds\/<n>\/ folders/);
    const data = refused.error!.data as { step: string; disk: string; full: string[] };
    assert.deepEqual([data.step, data.disk, data.full], ["checking for room", "full", ["world"]]);
    assert.ok(refusedMs < 2000, `refused after ${refusedMs} ms`);

    // room again: the same host builds, and the component is on the disk (synced)
    await Deno.remove(join(root, "state", "filler"));
    const built = await client.request("cargo.build", { plugin: "notes" }, { timeoutMs: 600_000 });
    assert.equal(built.error, undefined, JSON.stringify(built.error));
    assert.equal((built.result as { wasm: string }).wasm, "/state/cargo/builds/1/notes.wasm");
    assert.ok(
      (await Deno.stat(join(root, "state", "cargo", "builds", "1", "notes.wasm"))).size > 0,
    );
  } finally {
    await host?.shutdown();
    await run("umount", disk).catch(() => {});
    await Deno.remove(disk, { recursive: true }).catch(() => {});
  }
});

async function hasWasmToolchain(): Promise<boolean> {
  try {
    await findWasmToolchain();
    return true;
  } catch {
    return false;
  }
}
