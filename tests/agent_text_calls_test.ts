/**
 * Tool calls that local models write as text when their chat template's
 * parser misses (Hermes and Qwen, Llama 3.x, Mistral, a bare JSON object),
 * streamed with `finish_reason: "stop"`: the agent runs them as calls,
 * journals them as such and sends them back in OpenAI's form; ordinary text,
 * JSON in a code block and unknown tools stay the answer.
 */
import assert from "node:assert/strict";
import { agentWorld, history, messagesOf } from "./agent_world.ts";

const READ = { name: "read_file", arguments: { path: "/state/demo/hello.txt" } };

/** Each form as a model writes it, and the prose that stays with the call. */
const FORMS: [string, string, string][] = [
  [
    "hermes",
    `Let me read it.\n<tool_call>\n${JSON.stringify(READ)}\n</tool_call>`,
    "Let me read it.",
  ],
  ["qwen, closing tag left out", `<tool_call>\n${JSON.stringify(READ)}\n`, ""],
  [
    "llama python_tag",
    `<|python_tag|>${JSON.stringify({ name: READ.name, parameters: READ.arguments })}<|eom_id|>`,
    "",
  ],
  ["llama bare object", JSON.stringify({ name: READ.name, parameters: READ.arguments }), ""],
  ["mistral", `[TOOL_CALLS][${JSON.stringify({ ...READ, id: "abcDEF123" })}]`, ""],
  ["mistral v11", `[TOOL_CALLS]read_file[ARGS]${JSON.stringify(READ.arguments)}`, ""],
  ["bare json", `  ${JSON.stringify(READ)}\n`, ""],
];

for (const [form, text, prose] of FORMS) {
  Deno.test(`a tool call written as text (${form}) runs as a call`, async () => {
    await using w = await agentWorld({
      files: { "state/demo/hello.txt": "hello, file\n" },
      script: [{ text }, { text: "The file says hello." }],
    });
    const chat = await w.chat("what does the file say?");
    assert.equal(chat.response.result, "The file says hello.");
    assert.equal(w.server.requests.length, 2);
    // the next request tells the model in the provider's form: its call, then the result
    const messages = messagesOf(w.server, 2);
    const assistant = messages.at(-2) as {
      role: string;
      content: string | null;
      tool_calls: { id: string; function: { name: string; arguments: string } }[];
    };
    assert.equal(assistant.role, "assistant");
    assert.equal(assistant.content ?? "", prose);
    assert.equal(assistant.tool_calls.length, 1);
    assert.equal(assistant.tool_calls[0].function.name, "read_file");
    assert.deepEqual(JSON.parse(assistant.tool_calls[0].function.arguments), READ.arguments);
    assert.match(assistant.tool_calls[0].id, /^[a-zA-Z0-9]{9}$/);
    const result = messages.at(-1) as { role: string; tool_call_id: string; content: string };
    assert.equal(result.role, "tool");
    assert.equal(result.tool_call_id, assistant.tool_calls[0].id);
    assert.equal(result.content, "hello, file\n");
    // journaled as a tool call and its result
    const steps = await history(w);
    const request = steps.find((s) => s.blocks.includes("toolRequest"));
    assert.deepEqual(request?.tools, ["read_file"]);
    assert.equal(request?.args, "/state/demo/hello.txt");
    assert.ok(steps.some((s) => s.blocks.includes("toolResponse") && s.ok === true));
    assert.equal(steps.at(-1)?.text, "The file says hello.");
  });
}

Deno.test("two calls as text in one answer both run, in order", async () => {
  const list = { name: "list_dir", arguments: { path: "/state/demo" } };
  await using w = await agentWorld({
    files: { "state/demo/hello.txt": "hello, file\n" },
    script: [
      {
        text: `<tool_call>${JSON.stringify(READ)}</tool_call>\n<tool_call>${
          JSON.stringify(list)
        }</tool_call>`,
      },
      { text: "done" },
    ],
  });
  assert.equal((await w.chat("look")).response.result, "done");
  const messages = messagesOf(w.server, 2);
  const results = messages.filter((m) => m.role === "tool").map((m) => String(m.content));
  assert.deepEqual(results.length, 2);
  assert.equal(results[0], "hello, file\n");
  assert.match(results[1], /hello\.txt \(12 bytes\)/);
});

Deno.test("text that only shows a call, or names no known tool, stays the answer", async () => {
  const answers = [
    "To read it yourself, send:\n```json\n" + JSON.stringify(READ) + "\n```",
    "Example:\n```\n<tool_call>" + JSON.stringify(READ) + "</tool_call>\n```",
    `<tool_call>${JSON.stringify({ name: "rm_rf", arguments: {} })}</tool_call>`,
    JSON.stringify({ name: "read_file", arguments: {}, description: "a tool's card" }),
    "The answer is 42.",
  ];
  for (const text of answers) {
    await using w = await agentWorld({ script: [{ text }] });
    const chat = await w.chat("hi");
    assert.equal(chat.response.result, text);
    assert.equal(w.server.requests.length, 1, text);
    const steps = await history(w);
    assert.ok(!steps.some((s) => s.blocks.includes("toolRequest")), text);
  }
});

Deno.test("an answer cut off for length is not read for calls", async () => {
  await using w = await agentWorld({
    script: [{ text: `<tool_call>${JSON.stringify(READ)}</tool_call>`, finishReason: "length" }],
  });
  const chat = await w.chat("hi");
  assert.equal(w.server.requests.length, 1);
  assert.ok(
    !(await history(w)).some((s) => s.blocks.includes("toolRequest")),
    JSON.stringify(chat),
  );
});
