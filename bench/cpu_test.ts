import assert from "node:assert/strict";
import { othersShare, parseProcStat, parseSelfStat } from "./cpu.ts";

Deno.test("/proc/stat: total and idle ticks of all CPUs", () => {
  const text = "cpu  100 5 50 800 20 1 2 3 0 0\ncpu0 50 2 25 400 10 0 1 1 0 0\n";
  assert.deepEqual(parseProcStat(text), { total: 981, idle: 820 });
  assert.equal(parseProcStat("intr 1 2 3\n"), undefined);
});

Deno.test("/proc/self/stat: user and system ticks of the process and its children", () => {
  // a command name with spaces and parentheses must not shift the fields
  const text = "4711 (deno (x) y) S 1 4711 4711 0 -1 4194560 100 0 0 0 70 30 5 4 20 0 9 0";
  assert.equal(parseSelfStat(text), 109);
  assert.equal(parseSelfStat("4711 (deno) S 1"), undefined);
});

Deno.test("others' share is busy time that was not ours, over all time", () => {
  const a = { total: 1000, idle: 600, own: 100 };
  assert.equal(othersShare(a, { total: 2000, idle: 1000, own: 400 }), 0.3);
  assert.equal(othersShare(a, { total: 2000, idle: 1600, own: 100 }), 0);
  assert.equal(othersShare(a, a), undefined);
  assert.equal(othersShare(undefined, a), undefined);
});
