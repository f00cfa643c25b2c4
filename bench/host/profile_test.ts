import assert from "node:assert/strict";
import { benchWorld, call } from "../fixture.ts";
import { profiling, takeMarks } from "../../runtime/profile.ts";
import { profileCalls } from "./profile.ts";

Deno.test("profile: every stage of a call from a process is measured, and the WASI calls named", async () => {
  const figures = await profileCalls(() => {}, 3, 1);
  const byName = new Map(figures.map((f) => [f.name, f]));
  for (
    const stage of [
      "total",
      "hop_up",
      "route",
      "hop_spawn",
      "instantiate",
      "first_read",
      "guest_answer",
      "answered_in_worker",
      "answer_in_worker",
      "hop_answer",
      "hop_down",
      "caller_read",
    ]
  ) {
    const f = byName.get(`profile.${stage}`);
    assert(f, `no figure profile.${stage}`);
    assert(Number.isFinite(f.median) && f.median >= 0, `profile.${stage}: ${f.median}`);
    assert.deepEqual(f.runs, 3);
  }
  const wasi = byName.get("profile.wasi")!;
  const names = (wasi.extra!.perImport as { name: string }[]).map((i) => i.name);
  assert(names.some((n) => n.includes("input-stream.blocking-read")), names.join(", "));
  assert(names.some((n) => n.includes("blocking-write-and-flush")), names.join(", "));
  assert(!names.some((n) => n.startsWith("#")), `unnamed shim slots: ${names.join(", ")}`);
  assert.deepEqual(profiling(), false, "the profile turns profiling off again");
});

Deno.test("profile: off by default, a call records no marks", async () => {
  assert.deepEqual(profiling(), false);
  takeMarks();
  await using w = await benchWorld({ probe: "probe" });
  const client = w.host.client("console");
  await call(client, "probe.call", { method: "probe.echo", params: {} });
  assert.deepEqual(takeMarks(), []);
});
