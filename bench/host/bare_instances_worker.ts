/**
 * One thread of `instantiationCeiling` (`bare_instances.ts`): bare instances of the
 * modules it is given, as fast as it can, counted per window.
 *
 * @module
 */
/// <reference lib="deno.worker" />
import {
  bareInterrupts,
  type BarePlan,
  type CeilingAnswer,
  type CeilingMessage,
  instantiateBare,
  planBare,
} from "./bare_instances.ts";

const interrupts = bareInterrupts();
let plan: BarePlan | undefined;

function answer(a: CeilingAnswer): void {
  self.postMessage(a);
}

self.onmessage = (event: MessageEvent<CeilingMessage>) => {
  const m = event.data;
  if (m.t === "warm") {
    plan = planBare(m.modules);
    for (let i = 0; i < m.count; i++) instantiateBare(plan, interrupts);
    answer({ t: "warm" });
    return;
  }
  const counts = new Array<number>(Math.floor(m.ms / m.windowMs)).fill(0);
  const start = performance.now();
  for (;;) {
    const window = Math.floor((performance.now() - start) / m.windowMs);
    if (window >= counts.length) break;
    instantiateBare(plan!, interrupts);
    counts[window]++;
  }
  answer({ t: "counts", counts });
};
