import assert from "node:assert/strict";
import { testPlugin } from "../../tests/setup.ts";
import { BASELINE_BIN, buildPinger, type Built, WasmtimeBaseline } from "./baseline.ts";

// never a build here: the first build of wasmtime takes many minutes (`deno task bench` makes it)
const built: Built = await Deno.stat(BASELINE_BIN).then(
  () => ({ path: BASELINE_BIN }),
  () => ({ skipped: "the baseline is not built (deno task bench --only wasmtime builds it)" }),
);

Deno.test({
  name: "wasmtime baseline: a fresh instance per call of a real component, by stage",
  ignore: "skipped" in built,
  async fn() {
    if ("skipped" in built) return;
    await using wt = WasmtimeBaseline.start(built.path);
    const request = JSON.stringify({ jsonrpc: "2.0", id: "t", method: "echo", params: { a: 1 } });
    const compileMs = await wt.load({
      name: "probe",
      path: await testPlugin("probe"),
      request,
      expect: '"result":{"a":1}',
    });
    assert.ok(compileMs > 0);
    const calls = await wt.run("probe", 5);
    for (const stage of ["total", "instantiate", "run", "drop"] as const) {
      assert.equal(calls[stage].length, 5, stage);
      assert.ok(calls[stage].every((us) => us > 0), `${stage}: ${calls[stage]}`);
    }
    // the stages are parts of the whole
    assert.ok(calls.instantiate[0] + calls.run[0] + calls.drop[0] <= calls.total[0] + 1e-6);
  },
});

Deno.test({
  name: "wasmtime baseline: an answer that is not the expected one fails with its stdout",
  ignore: "skipped" in built,
  async fn() {
    if ("skipped" in built) return;
    const pinger = await buildPinger();
    assert.ok("path" in pinger, "skipped" in pinger ? pinger.skipped : "");
    await using wt = WasmtimeBaseline.start(built.path);
    await assert.rejects(
      () =>
        wt.load({
          name: "pinger",
          path: pinger.path,
          request: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "nothing", params: {} }),
          expect: '"result"',
        }),
      /does not contain "\\"result\\"".*pinger has no method/,
    );
  },
});
