import assert from "node:assert/strict";
import { NetworkProcess, Notifier } from "./network_process.ts";

Deno.test("a wait that settled by its periodic refresh is never handed out again: a poll loop does not spin", async () => {
  const process = new NetworkProcess();
  const notifier = new Notifier(process);
  // what poll does for an idle listener: wait, look, wait again; for 2.5 s, past two refreshes
  let wakeUps = 0;
  const end = performance.now() + 2500;
  while (performance.now() < end) {
    await Promise.race([notifier.wait(), new Promise((r) => setTimeout(r, 50))]);
    wakeUps++;
  }
  // 50 per second from the timer, plus a few spurious wake-ups from the refreshes
  assert.ok(wakeUps < 80, `${wakeUps} wake-ups in 2.5 s: the wait settled again at once`);
  process.release();
});
