import assert from "node:assert/strict";
import { ByteQueue } from "./io.ts";

Deno.test("ByteQueue: takes from the front, splits a chunk at max, and counts what waits", () => {
  const q = new ByteQueue();
  assert.equal(q.take(4), null);
  q.push(new Uint8Array([1, 2, 3]));
  q.push(new Uint8Array([4, 5]));
  assert.equal(q.size, 5);
  assert.deepEqual(q.take(2), new Uint8Array([1, 2]));
  assert.deepEqual(q.take(10), new Uint8Array([3])); // never across chunks
  assert.equal(q.size, 2);
  assert.deepEqual(q.take(10), new Uint8Array([4, 5]));
  assert.ok(q.empty);
  q.push(new Uint8Array([6]));
  q.clear();
  assert.deepEqual([q.empty, q.size, q.take(1)], [true, 0, null]);
});
