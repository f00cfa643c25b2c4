import assert from "node:assert/strict";
import { clipUtf8, fitLine } from "./turn.ts";

const bytes = (s: string) => new TextEncoder().encode(s).byteLength;

Deno.test("clipUtf8 keeps whole characters", () => {
  assert.equal(clipUtf8("hello", 10), "hello");
  assert.equal(clipUtf8("héllo", 2), "h"); // é is two bytes
  assert.equal(clipUtf8("ééé", 4), "éé");
});

Deno.test("a line within the limit is one line", () => {
  assert.deepEqual(fitLine({ type: "delta", text: "hi" }, 100), ['{"type":"delta","text":"hi"}']);
});

Deno.test("a long delta splits into lines under the limit that add up to its text", () => {
  const text = 'ab"c😀'.repeat(500);
  const lines = fitLine({ type: "delta", text }, 300);
  assert.ok(lines.length > 1);
  for (const line of lines) assert.ok(bytes(line) + 1 <= 300, `${bytes(line)}`);
  assert.equal(lines.map((l) => JSON.parse(l).text).join(""), text);
});

Deno.test("a long step is cut, with a note", () => {
  const [line] = fitLine(
    { type: "step", role: "tool", text: "x".repeat(5000), blocks: ["toolResponse"], tools: [] },
    2000,
  );
  assert.ok(bytes(line) <= 2000);
  const step = JSON.parse(line);
  assert.equal(step.role, "tool");
  assert.match(step.text, /\[cut: the message was over the 8 MB line limit\]$/);
});

Deno.test("a step with a large field beside its text is cut under the limit too", () => {
  const [line] = fitLine(
    {
      type: "step",
      role: "tool",
      text: "x".repeat(50_000),
      tools: ["notes.add"],
      args: "y".repeat(200_000),
    } as never,
    100_000,
  );
  assert.ok(bytes(line) + 1 <= 100_000, `${bytes(line)}`);
  const step = JSON.parse(line);
  assert.deepEqual(step.tools, ["notes.add"]);
  assert.equal(step.args, undefined);
  assert.match(step.text, /large fields were left out/);
});
