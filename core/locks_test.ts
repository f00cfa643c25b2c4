import assert from "node:assert/strict";
import { LockTable } from "./locks.ts";

Deno.test("locks are FIFO per path, one place per acquisition", async () => {
  const locks = new LockTable();
  const order: string[] = [];
  await locks.acquire("/f", "a");
  const b = locks.acquire("/f", "b").then(() => order.push("b"));
  const a2 = locks.acquire("/f", "a").then(() => order.push("a2")); // waits behind its own first
  const c = locks.acquire("/f", "c").then(() => order.push("c"));
  assert.deepEqual(locks.snapshot()[0].waiting, ["b", "a", "c"]);
  assert.ok(locks.release("/f", "a"));
  await b;
  assert.ok(!locks.release("/f", "a"), "a does not hold it now");
  assert.ok(locks.release("/f", "b"));
  await a2;
  assert.ok(locks.release("/f", "a"));
  await c;
  assert.deepEqual(order, ["b", "a2", "c"]);
});

Deno.test("wait: false answers at once", async () => {
  const locks = new LockTable();
  assert.equal(await locks.acquire("/f", "a", false), true);
  assert.equal(await locks.acquire("/f", "b", false), false);
  assert.equal(await locks.acquire("/g", "b", false), true);
});

Deno.test("releaseAll frees held locks and drops queued places", async () => {
  const locks = new LockTable();
  await locks.acquire("/f", "dead");
  const queued = locks.acquire("/g", "x");
  await queued;
  const deadWaits = locks.acquire("/g", "dead");
  const next = locks.acquire("/f", "next");
  locks.releaseAll("dead");
  assert.equal(await next, true);
  assert.equal(await deadWaits, false);
  assert.deepEqual(locks.snapshot().map((l) => [l.path, l.holder]), [["/f", "next"], ["/g", "x"]]);
});

Deno.test("a waiter whose signal aborts leaves the queue, answered false; the next one gets the lock", async () => {
  const locks = new LockTable();
  await locks.acquire("/f", "a");
  const gaveUp = new AbortController();
  const b = locks.acquire("/f", "b", true, gaveUp.signal);
  const c = locks.acquire("/f", "c");
  gaveUp.abort();
  assert.equal(await b, false);
  assert.deepEqual(locks.snapshot()[0].waiting, ["c"]);
  assert.ok(locks.release("/f", "a"));
  assert.equal(await c, true);
  assert.equal(locks.snapshot()[0].holder, "c");
  // an abort after the grant changes nothing
  const held = new AbortController();
  assert.equal(await locks.acquire("/g", "d", true, held.signal), true);
  held.abort();
  assert.equal(locks.snapshot().find((l) => l.path === "/g")?.holder, "d");
});
