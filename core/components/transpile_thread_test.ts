/** The transpiler's worker: one job at a time, jco's memory left with the worker that ran it. */
import assert from "node:assert/strict";
import { Transpiler } from "./transpile_thread.ts";
import { withCustomSection } from "./wasm_sections.ts";
import { testPlugin } from "../../tests/setup.ts";

Deno.test("a component of a known shape goes to a worker that never ran jco", async () => {
  const transpiler = new Transpiler();
  try {
    const probe = await Deno.readFile(await testPlugin("probe"));
    const first = await transpiler.transpile(probe, "probe");
    assert.equal(transpiler.started, 1);
    // the same shape: no jco, on a fresh worker, which the next ones keep
    const [second, third] = await Promise.all([
      transpiler.transpile(withCustomSection(probe, "two"), "probe two"),
      transpiler.transpile(withCustomSection(probe, "three"), "probe three"),
    ]);
    assert.equal(transpiler.started, 2);
    for (const c of [second, third]) {
      assert.equal(c.js, first.js);
      assert.deepEqual(c.modules, first.modules);
    }
    // a new shape runs jco on the worker there is, and the one after it gets a fresh worker
    const fsprobe = await Deno.readFile(await testPlugin("fsprobe"));
    await transpiler.transpile(fsprobe, "fsprobe");
    assert.equal(transpiler.started, 2);
    await transpiler.transpile(withCustomSection(fsprobe, "again"), "fsprobe again");
    assert.equal(transpiler.started, 3);
  } finally {
    transpiler.close();
  }
});

Deno.test("a component that is not one fails its job alone; the jobs after it run", async () => {
  const transpiler = new Transpiler();
  try {
    const probe = await Deno.readFile(await testPlugin("probe"));
    const bad = new Uint8Array([0, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00, 1, 3, 1, 2, 3]);
    const [failed, ok] = await Promise.allSettled([
      transpiler.transpile(bad, "bad.wasm"),
      transpiler.transpile(probe, "probe"),
    ]);
    assert.equal(failed.status, "rejected");
    assert.match(String((failed as PromiseRejectedResult).reason), /bad\.wasm is not a valid/);
    assert.equal(ok.status, "fulfilled");
  } finally {
    transpiler.close();
  }
});

Deno.test("close() fails the jobs still waiting, with a reason", async () => {
  const transpiler = new Transpiler();
  const probe = await Deno.readFile(await testPlugin("probe"));
  const jobs = Promise.allSettled(
    [1, 2, 3].map((i) => transpiler.transpile(withCustomSection(probe, `${i}`), "p")),
  );
  // once their shapes are read: one runs, two wait
  while (transpiler.jobs < 3) await new Promise((r) => setTimeout(r, 1));
  transpiler.close();
  for (const job of await jobs) {
    assert.equal(job.status, "rejected");
    assert.match(String((job as PromiseRejectedResult).reason), /the transpiler was stopped/);
  }
});
