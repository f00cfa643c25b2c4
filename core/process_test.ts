import assert from "node:assert/strict";
import type { Message } from "./jsonrpc.ts";
import { Process } from "./process.ts";

function process(pid: string, written: Message[], origin?: { peer: Process; id: number }) {
  return new Process({
    pid,
    plugin: "probe",
    version: "v",
    method: "echo",
    params: {},
    parent: origin?.peer ?? null,
    origin: origin ?? null,
    write: (m) => written.push(m),
  });
}

Deno.test("an answer the worker wrote is booked and not written again: the caller may reuse its ID", () => {
  const toCaller: Message[] = [];
  const caller = process("probe-caller", toCaller);
  assert.ok(caller.reserveCall(1, "probe.echo"));
  const callee = process("probe-callee", [], { peer: caller, id: 1 });
  callee.answerWrittenByWorker();
  assert.ok(callee.answer({ result: { a: 1 } }));
  assert.deepEqual(toCaller, [], "the worker wrote it already");
  assert.equal(caller.outgoingCall(1), undefined);
  assert.ok(caller.reserveCall(1, "probe.echo"), "the ID is free again");
  assert.equal(callee.answer({ result: "second" }), false, "a second answer is late");
});

Deno.test("an answer through the host is written to the caller with the caller's ID", () => {
  const toCaller: Message[] = [];
  const caller = process("probe-caller", toCaller);
  caller.reserveCall(1, "probe.fail");
  const callee = process("probe-callee", [], { peer: caller, id: 1 });
  callee.answer({ error: { code: 4711, message: "no" } });
  assert.deepEqual(toCaller, [{ jsonrpc: "2.0", id: 1, error: { code: 4711, message: "no" } }]);
});
