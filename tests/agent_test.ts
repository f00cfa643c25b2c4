/**
 * The agent against scripted model servers that speak OpenAI's and
 * Anthropic's streaming formats: answers, tool calls, each provider's
 * quirks, retries, errors, the session lock, the loop breaker, compaction
 * and bad input.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { agentWorld, history, messagesOf } from "./agent_world.ts";
import { eventually } from "./world.ts";
import type { ModelApi } from "./model_server.ts";

const APIS: ModelApi[] = ["openai-chat-completions", "anthropic-messages"];

function errorOf(chat: { response: { error?: { message: string; code: number } } }): string {
  assert.ok(chat.response.error, "the chat should have failed");
  return chat.response.error.message;
}

/** The tool results the model got in a request, by call ID, in either format. */
function toolResults(messages: Record<string, unknown>[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const m of messages) {
    if (m.role === "tool") out.set(String(m.tool_call_id), String(m.content));
    if (m.role === "user" && Array.isArray(m.content)) {
      for (const b of m.content as Record<string, unknown>[]) {
        if (b.type === "tool_result") out.set(String(b.tool_use_id), String(b.content));
      }
    }
  }
  return out;
}

Deno.test("an unconfigured agent names the missing field and the file", async () => {
  await using w = await agentWorld({ script: [], config: "# api: openai-chat-completions\n" });
  const cases: [string, RegExp][] = [
    ["# nothing yet\n", /sets no `api`/],
    ["api: openai-chat-completions\n", /sets no `base_url`/],
    [`api: openai-chat-completions\nbase_url: ${w.server.url}\n`, /sets no `model`/],
    [`api: openai-chat-completions\nbase_url: ${w.server.url}\nmodel: m\n`, /sets no `token`/],
    [`api: gpt\n`, /`api` .* is `gpt`/],
    [
      `api: openai-chat-completions\nbase_url: ${w.server.url}\nmodel: m\ntoken: k\nmax_steps: -1\n`,
      /`max_steps`/,
    ],
  ];
  for (const [yaml, expected] of cases) {
    await Deno.writeTextFile(join(w.root, "config", "agent.yaml"), yaml);
    const message = errorOf(await w.chat("hello"));
    assert.match(message, expected);
    assert.match(message, /\/config\/agent\.yaml/);
  }
  assert.equal(w.server.requests.length, 0);
});

for (const api of APIS) {
  Deno.test(`${api}: a streamed answer arrives as deltas and is journaled with its usage`, async () => {
    await using w = await agentWorld({
      api,
      script: [{ text: "Hello from the scripted model.", usage: { input: 120, output: 9 } }],
    });
    const chat = await w.chat("hi");
    assert.equal(chat.response.result, "Hello from the scripted model.");
    assert.ok(chat.texts.length > 1, "several deltas");
    assert.equal(chat.texts.join(""), "Hello from the scripted model.");
    const steps = await history(w);
    assert.deepEqual(steps.map((s) => s.role), ["user", "assistant"]);
    assert.equal(steps[0].text, "hi");
    assert.equal(steps[1].input_tokens, 120);
    assert.equal(steps[1].output_tokens, 9);
    assert.ok((steps[1].ms ?? -1) >= 0);
    const request = w.server.requests[0];
    if (api === "openai-chat-completions") {
      assert.equal(request.headers["authorization"], "Bearer test-key");
      assert.equal(messagesOf(w.server, 1)[0].role, "system");
    } else {
      assert.equal(request.headers["x-api-key"], "test-key");
      assert.match(String((request.body as { system: string }).system), /PROTOCOL\.md/);
    }
  });

  Deno.test(`${api}: two tool calls in one turn; their results go back to the model`, async () => {
    await using w = await agentWorld({
      api,
      files: { "state/demo/hello.txt": "hello, file\n" },
      script: [
        {
          toolCalls: [
            { name: "read_file", arguments: { path: "/state/demo/hello.txt" }, id: "call_a" },
            { name: "list_dir", arguments: { path: "/state/demo" }, id: "call_b" },
          ],
        },
        { text: "The file says hello." },
      ],
    });
    const chat = await w.chat("what does the file say?");
    assert.equal(chat.response.result, "The file says hello.");
    const results = toolResults(messagesOf(w.server, 2));
    assert.equal(results.get("call_a"), "hello, file\n");
    assert.match(results.get("call_b") ?? "", /hello\.txt \(12 bytes\)/);
    if (api === "anthropic-messages") {
      const last = messagesOf(w.server, 2).at(-1) as { role: string; content: { type: string }[] };
      assert.equal(last.role, "user");
      assert.deepEqual(last.content.map((b) => b.type), ["tool_result", "tool_result"]);
    }
    const calls = chat.steps.filter((s) => (s.blocks as string[]).includes("toolRequest"));
    const answers = chat.steps.filter((s) => (s.blocks as string[]).includes("toolResponse"));
    assert.deepEqual(calls.map((s) => s.args), ["/state/demo/hello.txt", "/state/demo"]);
    assert.deepEqual(answers.map((s) => s.ok), [true, true]);
    const roles = (await history(w)).map((s) => s.role);
    assert.deepEqual(roles, ["user", "assistant", "tool", "assistant", "tool", "assistant"]);
  });
}

Deno.test("openai: SSE comments and a stream split into single bytes", async () => {
  await using w = await agentWorld({
    script: [{ text: "Grüße aus dem Modell ✓", quirks: { comments: true, splitBytes: 1 } }],
  });
  assert.equal((await w.chat("hi")).response.result, "Grüße aus dem Modell ✓");
});

Deno.test("openai: tool-call deltas without index, and Ollama's repeated index 0", async () => {
  for (const quirks of [{ omitIndex: true }, { repeatIndex: true }]) {
    await using w = await agentWorld({
      files: { "state/a.txt": "A", "state/b.txt": "B" },
      script: [
        {
          toolCalls: [
            { name: "read_file", arguments: { path: "/state/a.txt" }, id: "call_1" },
            { name: "read_file", arguments: { path: "/state/b.txt" }, id: "call_2" },
          ],
          quirks,
        },
        { text: "done" },
      ],
    });
    assert.equal((await w.chat("read both")).response.result, "done");
    const results = toolResults(messagesOf(w.server, 2));
    assert.deepEqual([...results.values()], ["A", "B"], JSON.stringify(quirks));
  }
});

Deno.test("openai: reasoning_content is kept and sent back with the tool calls", async () => {
  await using w = await agentWorld({
    script: [
      {
        reasoning: "I should list the folder.",
        toolCalls: [{ name: "list_dir", arguments: { path: "/" } }],
      },
      { text: "ok" },
    ],
  });
  assert.equal((await w.chat("look")).response.result, "ok");
  const assistant = messagesOf(w.server, 2).find((m) => m.role === "assistant")!;
  assert.equal(assistant.reasoning_content, "I should list the folder.");
});

Deno.test("anthropic: a thinking block goes back byte for byte with its signature; empty input is {}", async () => {
  await using w = await agentWorld({
    api: "anthropic-messages",
    script: [
      {
        reasoning: "Let me look — carefully.",
        signature: "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds",
        toolCalls: [{ name: "list_dir", arguments: {} }],
      },
      { text: "ok" },
    ],
  });
  const chat = await w.chat("look");
  assert.equal(chat.response.result, "ok");
  const assistant = messagesOf(w.server, 2)[1] as { content: Record<string, unknown>[] };
  assert.deepEqual(assistant.content[0], {
    type: "thinking",
    thinking: "Let me look — carefully.",
    signature: "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds",
  });
  assert.deepEqual(assistant.content[1].input, {});
  // the tool got {} and said what is missing
  assert.match([...toolResults(messagesOf(w.server, 2)).values()][0], /`path` is missing/);
});

Deno.test("a stream that ends without finish_reason is cut off, not an answer; the session goes on", async () => {
  await using w = await agentWorld({
    script: [{ text: "Half an ans", quirks: { noFinishReason: true } }, { text: "whole" }],
  });
  const cut = await w.chat("one");
  assert.match(errorOf(cut), /finish_reason/);
  assert.equal(w.server.requests.length, 1, "not retried: deltas were shown");
  assert.equal((await w.chat("two")).response.result, "whole");
  const steps = await history(w);
  assert.deepEqual(steps.map((s) => s.role), ["user", "assistant", "error", "user", "assistant"]);
  assert.equal(steps[1].text, "Half an ans");
});

Deno.test("an error inside a 200 stream: retried before any delta, an error after one", async () => {
  await using w = await agentWorld({
    script: [
      {
        text: "x",
        quirks: { errorInStream: { message: "upstream overloaded", code: 502, afterDeltas: 0 } },
      },
      { text: "fine" },
      {
        text: "abcdefghijklmnopqrstuvwxyz",
        quirks: { errorInStream: { message: "provider died", code: 502, afterDeltas: 2 } },
      },
    ],
  });
  assert.equal((await w.chat("one")).response.result, "fine");
  assert.equal(w.server.requests.length, 2);
  assert.match(errorOf(await w.chat("two")), /provider died/);
  assert.equal(w.server.requests.length, 3);
});

Deno.test("anthropic: an overloaded error event and a 529 are retried", async () => {
  await using w = await agentWorld({
    api: "anthropic-messages",
    script: [
      { text: "x", quirks: { errorInStream: { message: "Overloaded", afterDeltas: 0 } } },
      { status: 529 },
      { text: "made it" },
    ],
  });
  assert.equal((await w.chat("hi")).response.result, "made it");
  assert.equal(w.server.requests.length, 3);
});

Deno.test("retries honour Retry-After; 5xx is retried with backoff", async () => {
  await using w = await agentWorld({
    script: [
      { status: 429, headers: { "retry-after": "1" } },
      { status: 500 },
      { text: "third time" },
    ],
  });
  const chat = await w.chat("hi");
  assert.equal(chat.response.result, "third time");
  const [a, b, c] = w.server.requests.map((r) => r.time);
  assert.ok(b - a >= 900, `waited ${b - a} ms for Retry-After: 1`);
  assert.ok(c - b >= 300, `backed off ${c - b} ms after a 500`);
  assert.equal(chat.steps.filter((s) => (s.blocks as string[]).includes("retry")).length, 2);
});

Deno.test("a wrong key, an unknown model and a bad base_url are clear errors, not retried", async () => {
  await using w = await agentWorld({ script: [], models: ["scripted"] });
  const yaml = join(w.root, "config", "agent.yaml");
  await Deno.writeTextFile(
    yaml,
    `api: openai-chat-completions\nbase_url: ${w.server.url}\nmodel: scripted\ntoken: wrong\n`,
  );
  assert.match(
    errorOf(await w.chat("hi")),
    /refused the key \(HTTP 401.*`token` in \/config\/agent\.yaml/,
  );
  await Deno.writeTextFile(
    yaml,
    `api: openai-chat-completions\nbase_url: ${w.server.url}\nmodel: nosuch\ntoken: test-key\n`,
  );
  assert.match(errorOf(await w.chat("hi")), /no model `nosuch`.*check `model`/);
  assert.equal(w.server.requests.length, 2);
  const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (closed.addr as Deno.NetAddr).port;
  closed.close();
  await Deno.writeTextFile(
    yaml,
    `api: openai-chat-completions\nbase_url: http://127.0.0.1:${port}/v1\nmodel: scripted\ntoken: k\n`,
  );
  assert.match(errorOf(await w.chat("hi")), /nothing answers at .*check `base_url`/);
});

Deno.test("a model that never answers ends the turn after timeout_seconds", async () => {
  await using w = await agentWorld({
    script: [{ hang: true }, { text: "back" }],
    yaml: "timeout_seconds: 1",
  });
  assert.match(errorOf(await w.chat("hi")), /timeout_seconds \(1 s\)/);
  assert.equal((await w.chat("again")).response.result, "back");
});

for (const api of ["openai-chat-completions", "anthropic-messages"] as const) {
  Deno.test(`${api}: a model that sends only keep-alives ends the turn after timeout_seconds`, async () => {
    // each keep-alive resets the wait for the next byte; the turn must still end
    await using w = await agentWorld({
      api,
      script: [{ keepAlive: true, everyMs: 100 }, { text: "back" }],
      yaml: "timeout_seconds: 1",
    });
    assert.match(
      errorOf(await w.chat("hi")),
      /nothing but keep-alives for timeout_seconds \(1 s\)/,
    );
    assert.equal((await w.chat("again")).response.result, "back");
  });
}

Deno.test("a second message to a session waits until the first turn has ended", async () => {
  await using w = await agentWorld({
    script: [{ text: "first answer, slowly", delayMs: 40 }, { text: "second answer" }],
  });
  const first = w.chat("one");
  await w.server.waitForRequests(1);
  const second = w.chat("two");
  assert.equal((await first).response.result, "first answer, slowly");
  assert.equal((await second).response.result, "second answer");
  const seen = messagesOf(w.server, 2).map((m) => m.content);
  assert.ok(seen.includes("first answer, slowly"), "the second turn saw the first answer");
});

Deno.test("the loop breaker ends a turn that repeats one call; max_steps ends a long one", async () => {
  const same = { toolCalls: [{ name: "list_dir", arguments: { path: "/state" } }] };
  await using w = await agentWorld({ script: [same, same, same, same, { text: "never" }] });
  const chat = await w.chat("go");
  assert.match(String(chat.response.result), /same arguments 3 times in a row/);
  assert.equal(w.server.requests.length, 3);
  assert.equal(chat.steps.filter((s) => (s.blocks as string[]).includes("toolResponse")).length, 2);

  await using w2 = await agentWorld({
    yaml: "max_steps: 2",
    script: (r) => ({ toolCalls: [{ name: "list_dir", arguments: { path: `/state/${r.n}` } }] }),
  });
  const long = await w2.chat("go");
  assert.match(String(long.response.result), /max_steps \(2 model calls\)/);
  assert.equal(w2.server.requests.length, 2);
});

Deno.test("near context_tokens, older tool results are compacted into a journaled step", async () => {
  const big = Array.from({ length: 400 }, (_, i) => `line ${i} ${"x".repeat(40)}`).join("\n");
  await using w = await agentWorld({
    yaml: "context_tokens: 8000",
    files: { "state/big.txt": big },
    script: (r) =>
      r.n <= 4
        ? { toolCalls: [{ name: "read_file", arguments: { path: "/state/big.txt", offset: r.n } }] }
        : { text: "read it all" },
  });
  const chat = await w.chat("read the big file four times");
  assert.equal(chat.response.result, "read it all");
  const compactions = (await history(w)).filter((s) => s.blocks.includes("compaction"));
  assert.ok(compactions.length >= 1, "a compaction step");
  assert.match(compactions[0].text, /Compacted \d+ older tool results/);
  const last = [...toolResults(messagesOf(w.server, w.server.requests.length)).values()];
  assert.match(last[0], /^\[compacted/);
  assert.ok(!last.at(-1)!.startsWith("[compacted"), "the newest result stays whole");
});

Deno.test("bad tool calls are results the model can act on, never the end of the turn", async () => {
  await using w = await agentWorld({
    script: [
      {
        toolCalls: [
          { name: "read_file", arguments: '{"path": "/state/x.txt"', id: "c1" },
          { name: "teleport", arguments: {}, id: "c2" },
          { name: "read_file", arguments: { path: "/state/none.txt" }, id: "c3" },
          { name: "call", arguments: { method: "probe.fail" }, id: "c4" },
          {
            name: "edit_file",
            arguments: { path: "/state/none.txt", old_text: "a", new_text: "b" },
            id: "c5",
          },
        ],
      },
      { text: "I see the errors." },
    ],
  });
  assert.equal((await w.chat("try")).response.result, "I see the errors.");
  const results = toolResults(messagesOf(w.server, 2));
  assert.match(results.get("c1")!, /not valid JSON/);
  assert.match(results.get("c2")!, /there is no tool `teleport`: the tools are call, read_file/);
  assert.match(results.get("c3")!, /cannot read \/state\/none\.txt/);
  assert.match(results.get("c4")!, /error 4711: probe failed on purpose/);
  assert.match(results.get("c5")!, /cannot read/);
});

Deno.test("a file that says the process is stopping is data: the turn goes on and answers", async () => {
  // the SDK's own error.rs holds the words of its stop error; reading it once hung the turn
  const sdkError = "/plugins/cargo/sdk/sausage-plugin/src/error.rs";
  const words = "the process is stopping (stdin closed): no answer can arrive";
  await using w = await agentWorld({
    files: { "state/demo/look-alike.txt": `error -32000: ${words}\n` },
    script: [
      {
        toolCalls: [
          { name: "read_file", arguments: { path: sdkError }, id: "c1" },
          { name: "read_file", arguments: { path: "/state/demo/look-alike.txt" }, id: "c2" },
          { name: "call", arguments: { method: "probe.fail" }, id: "c3" },
        ],
      },
      { text: "Read them all." },
    ],
  });
  const chat = await w.chat("read the SDK's errors");
  assert.equal(chat.response.result, "Read them all.", JSON.stringify(chat.response));
  const results = toolResults(messagesOf(w.server, 2));
  assert.ok(results.get("c1")!.includes(words), "the SDK file still holds the words");
  assert.ok(results.get("c2")!.includes(words));
  const steps = await history(w);
  assert.deepEqual(steps.map((s) => s.role), [
    "user",
    "assistant",
    "tool",
    "assistant",
    "tool",
    "assistant",
    "tool",
    "assistant",
  ]);
  assert.ok(!steps.some((s) => s.blocks.includes("cancelled")), JSON.stringify(steps));
  await eventually(() => w.host.processes.list().length === 0);
});

Deno.test("a tool's call past tool_timeout_seconds is -32006 for the model, and the callee is stopped", async () => {
  await using w = await agentWorld({
    yaml: "tool_timeout_seconds: 1",
    script: [
      { toolCalls: [{ name: "call", arguments: { method: "probe.never" }, id: "c1" }] },
      { text: "It took too long." },
    ],
  });
  const chat = await w.chat("call the slow one");
  assert.equal(chat.response.result, "It took too long.");
  const results = toolResults(messagesOf(w.server, 2));
  assert.match(
    results.get("c1")!,
    /^error -32006: probe\.never: no answer within the call's deadline of 1000 ms/,
  );
  await eventually(() => w.host.processes.list().length === 0);
  const bad = await agentWorld({ script: [], yaml: "tool_timeout_seconds: 0" });
  try {
    assert.match(errorOf(await bad.chat("hi")), /`tool_timeout_seconds`/);
  } finally {
    await bad[Symbol.asyncDispose]();
  }
});

Deno.test("garbage, an endless stream and a 50 MB answer: clear errors, and the session goes on", async () => {
  await using w = await agentWorld({
    script: [
      { raw: ["this is not an event stream\n", "at all\n"] },
      { endless: true },
      { bigText: 50_000_000 },
      { raw: ["data: {not json\n\n"] },
      { text: "still here" },
    ],
  });
  assert.match(errorOf(await w.chat("one")), /not an event stream/);
  assert.match(errorOf(await w.chat("two")), /passed 16 MiB/);
  assert.match(errorOf(await w.chat("three")), /passed 16 MiB/);
  assert.match(errorOf(await w.chat("four")), /not JSON/);
  assert.equal((await w.chat("five")).response.result, "still here");
  const steps = await history(w);
  assert.deepEqual(
    steps.filter((s) => s.role === "user").map((s) => s.text),
    ["one", "two", "three", "four", "five"],
  );
});

Deno.test("sessions, history, reset and bad session names", async () => {
  await using w = await agentWorld({ script: [{ text: "A" }, { text: "B" }, { text: "C" }] });
  await w.chat("first", "work");
  await w.chat("second", "play");
  const sessions = await w.call("agent.sessions") as {
    session: string;
    steps: number;
    title: string;
  }[];
  assert.deepEqual(sessions.map((s) => [s.session, s.steps, s.title]), [["play", 2, "second"], [
    "work",
    2,
    "first",
  ]]);
  assert.equal(
    (await w.call("agent.history", { session: "work", limit: 1 }) as unknown[]).length,
    1,
  );
  assert.deepEqual(await w.call("agent.reset", { session: "work" }), { session: "work" });
  await w.chat("third", "work");
  const third = messagesOf(w.server, 3).filter((m) => m.role !== "system");
  assert.deepEqual(third.map((m) => m.content), ["third"], "a reset forgets the conversation");
  const steps = await history(w, "work");
  assert.deepEqual(steps.map((s) => s.role), ["user", "assistant", "notice", "user", "assistant"]);
  const bad = await w.request("agent.chat", { text: "x", session: "../etc" });
  assert.equal(bad.error?.code, -32602);
  assert.match(bad.error!.message, /session name/);
});
