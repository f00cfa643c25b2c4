/**
 * Build slots: real `flock`s on real files, held by this process and by
 * another (`flock(1)`, as a second host on the same cache would), and a new
 * slot seeded by copying a free one's target folder.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { BuildSlots, slotTarget } from "./slots.ts";

async function withCache(fn: (cacheDir: string) => Promise<void>): Promise<void> {
  const cacheDir = await Deno.makeTempDir({ prefix: "sausage-slots-" });
  try {
    await fn(cacheDir);
  } finally {
    await Deno.remove(cacheDir, { recursive: true });
  }
}

Deno.test("builds at once get slots of their own; one more waits, told so, until one is released", async () => {
  await withCache(async (cacheDir) => {
    const slots = new BuildSlots(cacheDir, 2);
    const told: string[] = [];
    const signal = new AbortController().signal;
    const a = await slots.acquire(signal, (t) => told.push(t));
    const b = await slots.acquire(signal, (t) => told.push(t));
    assert.deepEqual([a.index, b.index], [0, 1]);
    assert.equal(a.targetDir, join(cacheDir, "cargo", "target"));
    assert.equal(b.targetDir, join(cacheDir, "cargo", "target-1"));
    assert.notEqual(a.workDir("notes"), b.workDir("notes"));
    assert.equal(a.workDir("notes"), a.workDir("notes"), "the same path each build: cargo reuses");

    let third: number | undefined;
    const waiting = slots.acquire(signal, (t) => told.push(t)).then((s) => {
      third = s.index;
      return s;
    });
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(third, undefined, "a third build does not run beside two");
    assert.ok(
      told.some((t) => /^waiting for a build slot: 2 builds are running/.test(t)),
      `${told}`,
    );
    b.release();
    const c = await waiting;
    assert.equal(c.index, 1);
    a.release();
    c.release();
  });
});

Deno.test("a slot that another process holds is waited for; a wait ends with its caller's abort", async () => {
  await withCache(async (cacheDir) => {
    const slots = new BuildSlots(cacheDir, 1);
    const ready = await slots.acquire(new AbortController().signal, () => {});
    ready.release(); // the lock file exists now
    // another process holds slot 0, as a second host on the same cache would
    const lockFile = join(cacheDir, "cargo", "slots", "0.lock");
    const holder = new Deno.Command(Deno.execPath(), {
      args: [
        "eval",
        `const f = await Deno.open(${JSON.stringify(lockFile)}, { write: true });
         await f.lock(true);
         console.log("held");
         await new Promise((r) => setTimeout(r, 60_000));`,
      ],
      stdout: "piped",
    }).spawn();
    try {
      const reader = holder.stdout.pipeThrough(new TextDecoderStream()).getReader();
      assert.match((await reader.read()).value ?? "", /held/);
      reader.releaseLock();
      const abort = new AbortController();
      const told: string[] = [];
      const waiting = slots.acquire(abort.signal, (t) => told.push(t));
      await new Promise((r) => setTimeout(r, 400));
      assert.ok(told.some((t) => t.startsWith("waiting for a build slot")), `${told}`);
      abort.abort("stop");
      await assert.rejects(waiting, (e) => e === "stop");
    } finally {
      holder.kill("SIGKILL");
      await holder.status;
      await holder.stdout.cancel().catch(() => {});
    }
    const after = await slots.acquire(new AbortController().signal, () => {});
    assert.equal(after.index, 0, "the holder's end frees its slot");
    after.release();
  });
});

Deno.test("after a build, slots without a target folder are made as copies of its slot, times kept", async () => {
  await withCache(async (cacheDir) => {
    const first = slotTarget(cacheDir, 0);
    const rlib = join("wasm32-wasip2", "release", "deps", "libserde-0123.rlib");
    await Deno.mkdir(join(first, rlib, ".."), { recursive: true });
    await Deno.writeTextFile(join(first, rlib), "compiled");
    const old = new Date("2026-01-02T03:04:05Z");
    await Deno.utime(join(first, rlib), old, old);
    const slots = new BuildSlots(cacheDir, 3);
    const signal = new AbortController().signal;

    // a held slot may be half written: it is not copied
    const held = await slots.acquire(signal, () => {});
    assert.deepEqual(await slots.fill(0), []);
    held.release();

    assert.deepEqual(await slots.fill(0), [1, 2]);
    for (const i of [1, 2]) {
      const copy = join(slotTarget(cacheDir, i), rlib);
      assert.equal(await Deno.readTextFile(copy), "compiled");
      // cargo's fingerprints compare times: the copy's crates are as fresh as the original's
      assert.equal((await Deno.stat(copy)).mtime?.getTime(), old.getTime());
    }
    assert.deepEqual(await slots.fill(0), [], "slots that have a folder are left alone");
  });
});

Deno.test("a slot taken without a target folder starts as a copy of a free slot's", async () => {
  await withCache(async (cacheDir) => {
    const other = slotTarget(cacheDir, 1);
    await Deno.mkdir(other, { recursive: true });
    await Deno.writeTextFile(join(other, "marker"), "slot 1");
    const told: string[] = [];
    const slot = await new BuildSlots(cacheDir, 2).acquire(
      new AbortController().signal,
      (t) => told.push(t),
    );
    assert.equal(slot.index, 0);
    assert.equal(await Deno.readTextFile(join(slot.targetDir, "marker")), "slot 1");
    assert.deepEqual(told, ["making build slot 0: a copy of slot 1's compiled crates"]);
    slot.release();
  });
});
