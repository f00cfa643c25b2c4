import assert from "node:assert/strict";
import { jsonTextTooDeep, MAX_JSON_DEPTH, valueTooDeep } from "./json_depth.ts";
import { parseMessageLine } from "./stdio.ts";

const brackets = (n: number) => "[".repeat(n) + "]".repeat(n);

Deno.test("jsonTextTooDeep counts the brackets of arrays and objects outside strings", () => {
  assert.equal(jsonTextTooDeep(brackets(MAX_JSON_DEPTH)), false);
  assert.equal(jsonTextTooDeep(brackets(MAX_JSON_DEPTH + 1)), true);
  assert.equal(jsonTextTooDeep(`{"a": {"b": [1]}}`, 3), false);
  assert.equal(jsonTextTooDeep(`{"a": {"b": [[1]]}}`, 3), true);
  // brackets in strings, escaped quotes and escaped backslashes
  const inString = JSON.stringify({ s: "[".repeat(1000) + '\\"{{{' });
  assert.equal(jsonTextTooDeep(inString, 1), false);
  assert.equal(jsonTextTooDeep(`{"s": "\\\\", "a": [[1]]}`, 2), true);
});

Deno.test("valueTooDeep walks without recursion, and a cycle is too deep", () => {
  assert.equal(valueTooDeep(JSON.parse(brackets(MAX_JSON_DEPTH))), false);
  assert.equal(valueTooDeep(JSON.parse(brackets(100_000))), true);
  assert.equal(valueTooDeep({ a: [1, { b: 2 }] }, 3), false);
  assert.equal(valueTooDeep({ a: [1, { b: [] }] }, 3), true);
  const cycle: Record<string, unknown> = {};
  cycle.self = cycle;
  assert.equal(valueTooDeep(cycle), true);
  // shared objects are walked once: 2^200 paths, 200 levels
  let shared: unknown = [];
  for (let i = 0; i < 200; i++) shared = [shared, shared];
  assert.equal(valueTooDeep(shared), false);
  assert.equal(valueTooDeep(shared, 150), true);
  assert.equal(valueTooDeep("text"), false);
});

Deno.test("a stdout line nested deeper than the limit is noise, never parsed", () => {
  const line = (params: string) =>
    new TextEncoder().encode(`{"jsonrpc":"2.0","id":1,"method":"a.b","params":{"x":${params}}}`);
  assert.equal(parseMessageLine(line(brackets(100_000))), null);
  assert.ok(parseMessageLine(line(brackets(MAX_JSON_DEPTH - 2))));
  assert.equal(parseMessageLine(line(brackets(MAX_JSON_DEPTH - 1))), null);
});
