import assert from "node:assert/strict";
import { classify, ErrorCode, idKey } from "./jsonrpc.ts";

Deno.test("classify: requests, notifications, responses", () => {
  assert.deepEqual(classify({ jsonrpc: "2.0", id: 1, method: "a.b" }), {
    kind: "request",
    id: 1,
    method: "a.b",
    params: {},
  });
  assert.equal(classify({ jsonrpc: "2.0", method: "a.b", params: { x: 1 } }).kind, "notification");
  assert.equal(classify({ jsonrpc: "2.0", id: "p", result: null }).kind, "response");
  assert.equal(
    classify({ jsonrpc: "2.0", id: null, error: { code: 1, message: "" } }).kind,
    "response",
  );
});

Deno.test("classify: params must be an object; batches and odd values are invalid", () => {
  for (const params of [[1], "x", 3, null]) {
    const c = classify({ jsonrpc: "2.0", id: 1, method: "a.b", params });
    assert.equal(c.kind, "invalid");
    if (c.kind === "invalid") assert.equal(c.error.code, ErrorCode.InvalidParams);
  }
  const batch = classify([{ jsonrpc: "2.0", id: 1, method: "a.b" }]);
  assert.equal(batch.kind === "invalid" && batch.error.code, ErrorCode.InvalidRequest);
  for (const odd of ["x", 1, null, { jsonrpc: "2.0" }, { jsonrpc: "2.0", id: {}, method: "a" }]) {
    const c = classify(odd);
    assert.equal(c.kind === "invalid" && c.error.code, ErrorCode.InvalidRequest);
  }
  // an invalid notification is never answered
  const n = classify({ jsonrpc: "2.0", method: "a.b", params: [] });
  assert.equal(n.kind === "invalid" && n.id, undefined);
});

Deno.test('idKey keeps 1 and "1" apart', () => {
  assert.notEqual(idKey(1), idKey("1"));
  assert.equal(idKey(undefined), idKey(null));
});
