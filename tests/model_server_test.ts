/**
 * The scripted model server against the official SDKs: if `openai` and
 * `@anthropic-ai/sdk` put its streams back together, its wire formats are
 * the real ones.
 *
 * @module
 */
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import assert from "node:assert/strict";
import { type ModelServer, type Reply, startModelServer } from "./model_server.ts";

const USER = [{ role: "user" as const, content: "Hi" }];

function openai(server: ModelServer, options: { apiKey?: string; maxRetries?: number } = {}) {
  return new OpenAI({
    baseURL: server.url,
    apiKey: options.apiKey ?? "sk-test",
    maxRetries: options.maxRetries ?? 0,
  });
}

function anthropic(server: ModelServer, options: { apiKey?: string; maxRetries?: number } = {}) {
  return new Anthropic({
    baseURL: server.url,
    apiKey: options.apiKey ?? "sk-ant-test",
    maxRetries: options.maxRetries ?? 0,
  });
}

/** The error `fn` rejects with, checked to be a `type`. */
async function rejects<T>(
  fn: () => Promise<unknown>,
  type: abstract new (...args: never[]) => T,
): Promise<T> {
  try {
    await fn();
  } catch (error) {
    assert.ok(error instanceof type, `expected a ${type.name}, got ${error}`);
    return error;
  }
  throw new assert.AssertionError({ message: `expected a ${type.name}, nothing was thrown` });
}

/** The data of each SSE event of a raw streamed request (comments left out). */
async function rawEvents(
  server: ModelServer,
  body: Record<string, unknown>,
): Promise<{ event?: string; data: string }[]> {
  const openaiApi = server.url.endsWith("/v1");
  const response = await fetch(
    `${server.url}${openaiApi ? "/chat/completions" : "/v1/messages"}`,
    {
      method: "POST",
      headers: { "content-type": "application/json", "anthropic-version": "2023-06-01" },
      body: JSON.stringify({ stream: true, max_tokens: 100, messages: USER, ...body }),
    },
  );
  const text = await response.text();
  return text.split("\n\n").filter((block) => block.trim() !== "").flatMap((block) => {
    const lines = block.split("\n").filter((line) => !line.startsWith(":"));
    if (lines.length === 0) return [];
    const event = lines.find((line) => line.startsWith("event: "))?.slice(7);
    const data = lines.filter((line) => line.startsWith("data: ")).map((line) => line.slice(6))
      .join("\n");
    return [{ event, data }];
  });
}

// --- OpenAI chat completions ------------------------------------------------------------

Deno.test("openai: a streamed text answer and its usage, reassembled by the SDK", async () => {
  const text = "Hello there! This answer comes in several small pieces.";
  await using server = await startModelServer({
    api: "openai-chat-completions",
    script: [{ text, usage: { input: 11, output: 22 } }, { text }],
  });
  const client = openai(server);
  const stream = client.chat.completions.stream({
    model: "gpt-4o",
    messages: USER,
    stream_options: { include_usage: true },
  });
  const deltas: string[] = [];
  stream.on("content", (delta) => deltas.push(delta));
  const completion = await stream.finalChatCompletion();
  assert.deepEqual(completion.choices[0].message.content, text);
  assert.deepEqual(completion.choices[0].finish_reason, "stop");
  assert.deepEqual(completion.object, "chat.completion");
  assert.match(completion.id, /^chatcmpl-/);
  assert.deepEqual(completion.usage?.prompt_tokens, 11);
  assert.deepEqual(completion.usage?.completion_tokens, 22);
  assert.deepEqual(completion.usage?.total_tokens, 33);
  assert.ok(deltas.length >= 5, `${deltas.length} deltas`);

  const seen = server.requests[0];
  assert.deepEqual(seen.path, "/v1/chat/completions");
  assert.deepEqual(seen.method, "POST");
  assert.deepEqual(seen.body.model, "gpt-4o");
  assert.deepEqual(seen.headers["authorization"], "Bearer sk-test");
  assert.deepEqual(seen.n, 1);

  // Without include_usage: no usage chunk, as the API does.
  const events = await rawEvents(server, { model: "gpt-4o" });
  assert.deepEqual(events.at(-1)?.data, "[DONE]");
  const chunks = events.slice(0, -1).map((e) => JSON.parse(e.data));
  assert.ok(chunks.every((c) => c.object === "chat.completion.chunk" && c.choices.length === 1));
  assert.deepEqual(chunks[0].choices[0].delta.role, "assistant");
  assert.match(chunks[0].system_fingerprint, /^fp_/);
});

Deno.test("openai: two tool calls in one turn, reassembled by the SDK's stream helper", async () => {
  await using server = await startModelServer({
    api: "openai-chat-completions",
    script: [{
      text: "Let me look.",
      toolCalls: [
        { name: "read_file", arguments: { path: "/notes/today.txt", lines: [1, 20] } },
        { name: "clock", arguments: {}, id: "call_fixed" },
      ],
    }],
  });
  const client = openai(server);
  const stream = client.chat.completions.stream({
    model: "gpt-4o",
    messages: USER,
    tools: [
      { type: "function", function: { name: "read_file", parameters: { type: "object" } } },
      { type: "function", function: { name: "clock", parameters: { type: "object" } } },
    ],
  });
  const argumentDeltas: string[] = [];
  stream.on("tool_calls.function.arguments.delta", (e) => argumentDeltas.push(e.arguments_delta));
  const completion = await stream.finalChatCompletion();
  const message = completion.choices[0].message;
  assert.deepEqual(completion.choices[0].finish_reason, "tool_calls");
  assert.deepEqual(message.content, "Let me look.");
  const calls = message.tool_calls!.map((call) => {
    assert.ok(call.type === "function");
    return { id: call.id, name: call.function.name, args: JSON.parse(call.function.arguments) };
  });
  assert.match(calls[0].id, /^call_[A-Za-z0-9]{24}$/);
  assert.deepEqual(calls[0].name, "read_file");
  assert.deepEqual(calls[0].args, { path: "/notes/today.txt", lines: [1, 20] });
  assert.deepEqual(calls[1], { id: "call_fixed", name: "clock", args: {} });
  assert.ok(argumentDeltas.length >= 4, `${argumentDeltas.length} argument fragments`);
});

Deno.test("openai: reasoning_content deltas and a non-streamed answer", async () => {
  await using server = await startModelServer({
    api: "openai-chat-completions",
    script: [
      { reasoning: "The user says hi; I answer.", text: "Hi!" },
      { text: "Plain.", toolCalls: [{ name: "clock", arguments: "{}" }] },
    ],
  });
  const events = await rawEvents(server, { model: "deepseek-reasoner" });
  const deltas = events.slice(0, -1).map((e) => JSON.parse(e.data).choices[0]?.delta ?? {});
  assert.deepEqual(
    deltas.map((d) => d.reasoning_content ?? "").join(""),
    "The user says hi; I answer.",
  );
  assert.deepEqual(deltas.map((d) => d.content ?? "").join(""), "Hi!");

  const completion = await openai(server).chat.completions.create({
    model: "gpt-4o",
    messages: USER,
  });
  assert.deepEqual(completion.choices[0].message.content, "Plain.");
  assert.deepEqual(completion.choices[0].finish_reason, "tool_calls");
  const call = completion.choices[0].message.tool_calls![0];
  assert.ok(call.type === "function");
  assert.deepEqual(call.function, { name: "clock", arguments: "{}" });
});

Deno.test("openai: a 429 with retry-after is retried by the SDK", async () => {
  await using server = await startModelServer({
    api: "openai-chat-completions",
    script: [{ status: 429, headers: { "retry-after": "0" } }, { text: "second time lucky" }],
  });
  const completion = await openai(server, { maxRetries: 1 }).chat.completions.stream({
    model: "gpt-4o",
    messages: USER,
  }).finalChatCompletion();
  assert.deepEqual(completion.choices[0].message.content, "second time lucky");
  assert.deepEqual(server.requests.length, 2);

  // Past the retries the SDK raises the provider's error.
  await using limited = await startModelServer({
    api: "openai-chat-completions",
    script: [{ status: 429 }],
  });
  const error = await rejects(
    () => openai(limited).chat.completions.create({ model: "gpt-4o", messages: USER }),
    OpenAI.RateLimitError,
  );
  assert.deepEqual(error.code, "rate_limit_exceeded");
});

Deno.test("openai: a wrong key gets 401, an unknown model 404, without using the script", async () => {
  await using server = await startModelServer({
    api: "openai-chat-completions",
    script: [{ text: "only for the right key" }],
    token: "sk-right-key-123456",
    models: ["gpt-4o"],
  });
  const unauthorized = await rejects(
    () =>
      openai(server, { apiKey: "sk-wrong-key-654321" }).chat.completions.create({
        model: "gpt-4o",
        messages: USER,
      }),
    OpenAI.AuthenticationError,
  );
  assert.deepEqual(unauthorized.status, 401);
  assert.deepEqual(unauthorized.code, "invalid_api_key");

  const client = openai(server, { apiKey: "sk-right-key-123456" });
  const missing = await rejects(
    () => client.chat.completions.create({ model: "gpt-9", messages: USER }),
    OpenAI.NotFoundError,
  );
  assert.deepEqual(missing.code, "model_not_found");
  assert.match(missing.message, /The model `gpt-9` does not exist/);

  const completion = await client.chat.completions.create({ model: "gpt-4o", messages: USER });
  assert.deepEqual(completion.choices[0].message.content, "only for the right key");
  assert.deepEqual(server.requests.length, 3);
});

Deno.test("openai: a tool call without its tool message is refused with 400", async () => {
  await using server = await startModelServer({
    api: "openai-chat-completions",
    script: [{ text: "fine" }],
  });
  const client = openai(server);
  const call = {
    id: "call_abc",
    type: "function" as const,
    function: { name: "clock", arguments: "{}" },
  };
  const error = await rejects(() =>
    client.chat.completions.create({
      model: "gpt-4o",
      messages: [...USER, { role: "assistant", tool_calls: [call] }, {
        role: "user",
        content: "and?",
      }],
    }), OpenAI.BadRequestError);
  assert.match(error.message, /did not have response messages: call_abc/);
  assert.deepEqual(error.param, "messages.[1].role");

  const stray = await rejects(() =>
    client.chat.completions.create({
      model: "gpt-4o",
      messages: [...USER, { role: "tool", tool_call_id: "call_zzz", content: "12:00" }],
    }), OpenAI.BadRequestError);
  assert.match(stray.message, /must be a response to a preceeding message with 'tool_calls'/);

  const answered = await client.chat.completions.create({
    model: "gpt-4o",
    messages: [...USER, { role: "assistant", tool_calls: [call] }, {
      role: "tool",
      tool_call_id: "call_abc",
      content: "12:00",
    }],
  });
  assert.deepEqual(answered.choices[0].message.content, "fine");
});

Deno.test("openai: comments and one-byte writes split inside UTF-8 still reassemble", async () => {
  const text = "Grüße, 世界! 🎉 ok";
  await using server = await startModelServer({
    api: "openai-chat-completions",
    script: [{
      text,
      toolCalls: [{ name: "echo", arguments: { s: "é" } }],
      quirks: { comments: true, splitBytes: 1 },
    }],
  });
  const completion = await openai(server).chat.completions.stream({
    model: "gpt-4o",
    messages: USER,
  })
    .finalChatCompletion();
  assert.deepEqual(completion.choices[0].message.content, text);
  const call = completion.choices[0].message.tool_calls![0];
  assert.ok(call.type === "function");
  assert.deepEqual(JSON.parse(call.function.arguments), { s: "é" });
});

Deno.test("openai: an error inside a 200 stream surfaces as an SDK error", async () => {
  await using server = await startModelServer({
    api: "openai-chat-completions",
    script: [
      {
        text: "partial answer here",
        quirks: { errorInStream: { message: "upstream died", code: 502, afterDeltas: 2 } },
      },
      { text: "partial answer here", quirks: { errorInStream: { message: "upstream died" } } },
    ],
  });
  const received: string[] = [];
  const error = await rejects(async () => {
    const stream = await openai(server).chat.completions.create({
      model: "gpt-4o",
      messages: USER,
      stream: true,
    });
    for await (const chunk of stream) received.push(chunk.choices[0]?.delta.content ?? "");
  }, OpenAI.APIError);
  assert.match(error.message, /upstream died/);
  assert.deepEqual(received.join(""), "partial answer h");

  const events = await rawEvents(server, { model: "gpt-4o" });
  const last = JSON.parse(events.at(-1)!.data);
  assert.deepEqual(last.error, { code: "server_error", message: "upstream died" });
  assert.deepEqual(last.choices[0].finish_reason, "error");
});

Deno.test("openai: tool call quirks of other servers", async () => {
  const toolCalls = [{ name: "a", arguments: { x: 1 } }, { name: "b", arguments: { y: 2 } }];
  await using server = await startModelServer({
    api: "openai-chat-completions",
    script: [
      { toolCalls, quirks: { omitIndex: true } },
      { toolCalls, quirks: { repeatIndex: true } },
      { text: "no end", quirks: { noFinishReason: true, noDone: true } },
      { text: "no usage", quirks: { usageChunk: false } },
    ],
  });
  const toolDeltas = async () =>
    (await rawEvents(server, { model: "m" })).filter((e) => e.data !== "[DONE]")
      .flatMap((e) => JSON.parse(e.data).choices[0]?.delta.tool_calls ?? []);

  const omitted = await toolDeltas();
  assert.ok(omitted.every((d) => !("index" in d)));
  assert.deepEqual(omitted.filter((d) => d.id).map((d) => d.function.name), ["a", "b"]);
  assert.ok(omitted.filter((d) => !d.id).every((d) => d.function.name === undefined));

  const repeated = await toolDeltas();
  assert.deepEqual(repeated.map((d) => [d.index, d.function.name, d.function.arguments]), [
    [0, "a", '{"x":1}'],
    [0, "b", '{"y":2}'],
  ]);
  assert.ok(repeated[0].id !== repeated[1].id);

  const unfinished = await rawEvents(server, {
    model: "m",
    stream_options: { include_usage: true },
  });
  assert.ok(unfinished.every((e) => e.data !== "[DONE]"));
  assert.ok(unfinished.every((e) => JSON.parse(e.data).choices[0]?.finish_reason == null));
  assert.ok(JSON.parse(unfinished.at(-1)!.data).usage);

  const noUsage = await rawEvents(server, { model: "m", stream_options: { include_usage: true } });
  assert.ok(noUsage.slice(0, -1).every((e) => JSON.parse(e.data).choices.length === 1));
});

Deno.test("openai: a half answer that hangs ends with the client's abort", async () => {
  await using server = await startModelServer({
    api: "openai-chat-completions",
    script: [{ partial: { text: "0123456789abcdefghijklmnopqrstuvwxyz" }, thenHang: true }],
  });
  const controller = new AbortController();
  const stream = await openai(server).chat.completions.create(
    { model: "gpt-4o", messages: USER, stream: true },
    { signal: controller.signal },
  );
  await server.streaming(1);
  let text = "";
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta.content ?? "";
    // The half is three deltas of eight characters; then nothing more comes.
    if (text.length >= 24) controller.abort();
  }
  assert.deepEqual(text, "0123456789abcdefghijklmn");
  await server.finished(1);
  assert.deepEqual(server.disconnects, 1);
});

Deno.test("openai: an endless answer stops when the client goes away", async () => {
  await using server = await startModelServer({
    api: "openai-chat-completions",
    script: [{ endless: true }],
  });
  const stream = await openai(server).chat.completions.create({
    model: "gpt-4o",
    messages: USER,
    stream: true,
  });
  let size = 0;
  for await (const chunk of stream) {
    size += chunk.choices[0]?.delta.content?.length ?? 0;
    if (size > 1024 * 1024) break;
  }
  await server.finished(1);
  assert.deepEqual(server.disconnects, 1);
});

Deno.test("openai: a 5 MB answer", async () => {
  const size = 5_000_000;
  await using server = await startModelServer({
    api: "openai-chat-completions",
    script: [{ bigText: size }],
  });
  const completion = await openai(server).chat.completions.stream({
    model: "gpt-4o",
    messages: USER,
  })
    .finalChatCompletion();
  const content = completion.choices[0].message.content!;
  assert.deepEqual(content.length, size);
  assert.ok(content.startsWith("The quick brown fox jumps over the lazy dog. 0123456789abcdef.\n"));
  assert.deepEqual(completion.choices[0].finish_reason, "stop");
  assert.deepEqual(server.disconnects, 0);
});

Deno.test("openai: past the end of the script, a 500 that says so", async () => {
  await using server = await startModelServer({ api: "openai-chat-completions", script: [] });
  const error = await rejects(
    () => openai(server).chat.completions.create({ model: "m", messages: USER }),
    OpenAI.InternalServerError,
  );
  assert.match(error.message, /the script has no more replies \(request 1\)/);
});

// --- Anthropic messages -----------------------------------------------------------------

Deno.test("anthropic: a streamed text answer and its usage, reassembled by the SDK", async () => {
  const text = "Hello from a scripted Claude, in several deltas.";
  await using server = await startModelServer({
    api: "anthropic-messages",
    script: [{ text, usage: { input: 31, output: 12 } }],
  });
  const stream = anthropic(server).messages.stream({
    model: "claude-test",
    max_tokens: 1024,
    messages: USER,
  });
  const deltas: string[] = [];
  stream.on("text", (delta) => deltas.push(delta));
  const message = await stream.finalMessage();
  assert.deepEqual(message.content, [{ type: "text", text }]);
  assert.deepEqual(message.stop_reason, "end_turn");
  assert.deepEqual(message.role, "assistant");
  assert.match(message.id, /^msg_01/);
  assert.deepEqual(message.usage.input_tokens, 31);
  assert.deepEqual(message.usage.output_tokens, 12);
  assert.ok(deltas.length >= 5, `${deltas.length} deltas`);
  const seen = server.requests[0];
  assert.deepEqual(seen.path, "/v1/messages");
  // The current SDK sends the key as a bearer token.
  assert.deepEqual(seen.headers["authorization"], "Bearer sk-ant-test");
  assert.ok(seen.headers["anthropic-version"]);
});

Deno.test("anthropic: thinking with its signature and two tool calls, then the next turn", async () => {
  await using server = await startModelServer({
    api: "anthropic-messages",
    script: [
      {
        reasoning: "I need the file and the time.",
        signature: "c2lnbmVkLXRoaW5raW5n",
        toolCalls: [
          { name: "read_file", arguments: { path: "/notes/today.txt", lines: [1, 20] } },
          { name: "clock", arguments: {} },
        ],
      },
      { text: "It is noon." },
    ],
  });
  const client = anthropic(server);
  const message = await client.messages.stream({
    model: "claude-test",
    max_tokens: 2048,
    messages: USER,
  })
    .finalMessage();
  assert.deepEqual(message.stop_reason, "tool_use");
  const [thinking, read, clock] = message.content;
  assert.ok(thinking.type === "thinking" && read.type === "tool_use" && clock.type === "tool_use");
  assert.deepEqual(thinking.thinking, "I need the file and the time.");
  assert.deepEqual(thinking.signature, "c2lnbmVkLXRoaW5raW5n");
  assert.match(read.id, /^toolu_01/);
  assert.deepEqual(read.name, "read_file");
  assert.deepEqual(read.input, { path: "/notes/today.txt", lines: [1, 20] });
  assert.deepEqual(clock.input, {});

  const results = [read, clock].map((use) => ({
    type: "tool_result" as const,
    tool_use_id: use.id,
    content: "ok",
  }));
  // A changed thinking block is refused, as the API does.
  const changed = { ...thinking, thinking: "Something else." };
  const error = await rejects(() =>
    client.messages.create({
      model: "claude-test",
      max_tokens: 100,
      messages: [...USER, { role: "assistant", content: [changed, read, clock] }, {
        role: "user",
        content: results,
      }],
    }), Anthropic.BadRequestError);
  assert.match(error.message, /messages\.1\.content\.0: Invalid `signature` in `thinking` block/);

  const next = await client.messages.create({
    model: "claude-test",
    max_tokens: 100,
    messages: [...USER, { role: "assistant", content: message.content }, {
      role: "user",
      content: results,
    }],
  });
  assert.deepEqual(next.content, [{ type: "text", text: "It is noon." }]);
});

Deno.test("anthropic: an empty tool input is one empty input_json_delta", async () => {
  await using server = await startModelServer({
    api: "anthropic-messages",
    script: [{ toolCalls: [{ name: "clock", arguments: {}, id: "toolu_fixed" }] }],
  });
  const events = await rawEvents(server, { model: "claude" });
  assert.deepEqual(events.map((e) => e.event), [
    "message_start",
    "ping",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "message_delta",
    "message_stop",
  ]);
  const start = JSON.parse(events[2].data);
  assert.deepEqual(start.content_block, {
    type: "tool_use",
    id: "toolu_fixed",
    name: "clock",
    input: {},
  });
  assert.deepEqual(JSON.parse(events[3].data).delta, {
    type: "input_json_delta",
    partial_json: "",
  });
  assert.deepEqual(JSON.parse(events[5].data).delta.stop_reason, "tool_use");
});

Deno.test("anthropic: 529 and 429 are retried by the SDK", async () => {
  await using server = await startModelServer({
    api: "anthropic-messages",
    script: [
      { status: 529, headers: { "retry-after": "0.01" } },
      { text: "after overload" },
      { status: 429, headers: { "retry-after": "0.01" } },
      { text: "after rate limit" },
      { status: 529 },
    ],
  });
  const client = anthropic(server, { maxRetries: 1 });
  const params = { model: "claude-test", max_tokens: 100, messages: USER };
  assert.deepEqual((await client.messages.stream(params).finalMessage()).content, [{
    type: "text",
    text: "after overload",
  }]);
  assert.deepEqual(server.requests.length, 2);
  assert.deepEqual((await client.messages.stream(params).finalMessage()).content, [{
    type: "text",
    text: "after rate limit",
  }]);
  assert.deepEqual(server.requests.length, 4);

  const error = await rejects(() => anthropic(server).messages.create(params), Anthropic.APIError);
  assert.deepEqual(error.status, 529);
  assert.deepEqual(error.type, "overloaded_error");
});

Deno.test("anthropic: a wrong key gets 401, an unknown model 404, a missing version 400", async () => {
  await using server = await startModelServer({
    api: "anthropic-messages",
    script: [{ text: "right key" }],
    token: "sk-ant-right",
    models: ["claude-test"],
  });
  const params = { model: "claude-test", max_tokens: 100, messages: USER };
  const unauthorized = await rejects(
    () => anthropic(server, { apiKey: "sk-ant-wrong" }).messages.create(params),
    Anthropic.AuthenticationError,
  );
  assert.deepEqual(unauthorized.type, "authentication_error");

  const client = anthropic(server, { apiKey: "sk-ant-right" });
  const missing = await rejects(
    () => client.messages.create({ ...params, model: "claude-9" }),
    Anthropic.NotFoundError,
  );
  assert.deepEqual(missing.type, "not_found_error");
  assert.match(missing.message, /model: claude-9/);

  const response = await fetch(`${server.url}/v1/messages`, {
    method: "POST",
    headers: { "x-api-key": "sk-ant-right", "content-type": "application/json" },
    body: JSON.stringify(params),
  });
  assert.deepEqual(response.status, 400);
  const body = await response.json();
  assert.deepEqual(body.type, "error");
  assert.deepEqual(body.error, {
    type: "invalid_request_error",
    message: "anthropic-version: header is required",
  });

  assert.deepEqual((await client.messages.create(params)).content, [{
    type: "text",
    text: "right key",
  }]);
});

Deno.test("anthropic: requests the API refuses are refused with its words", async () => {
  await using server = await startModelServer({
    api: "anthropic-messages",
    script: [{ text: "never" }],
  });
  const client = anthropic(server);
  const refused = async (params: Record<string, unknown>) => {
    const error = await rejects(
      () =>
        client.messages.create(
          { model: "claude", max_tokens: 100, messages: USER, ...params } as never,
        ),
      Anthropic.BadRequestError,
    );
    assert.deepEqual(error.type, "invalid_request_error");
    return (error.error as { error: { message: string } }).error.message;
  };
  const use = { type: "tool_use", id: "toolu_1", name: "clock", input: {} };
  assert.match(
    await refused({
      messages: [...USER, { role: "assistant", content: [use] }, { role: "user", content: "?" }],
    }),
    /messages\.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_1\./,
  );
  assert.match(
    await refused({
      messages: [{
        role: "user",
        content: [{ type: "tool_result", tool_use_id: "toolu_2", content: "x" }],
      }],
    }),
    /messages\.0\.content\.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_2\./,
  );
  assert.match(await refused({ max_tokens: undefined }), /max_tokens: Field required/);
  assert.match(
    await refused({ messages: [{ role: "assistant", content: "x" }] }),
    /first message must use the "user" role/,
  );
  assert.match(
    await refused({ messages: [{ role: "user", content: "" }] }),
    /messages\.0: all messages must have non-empty content/,
  );
  assert.deepEqual(server.requests.length, 5);
});

Deno.test("anthropic: comments, pings and one-byte writes still reassemble", async () => {
  const text = "Grüße, 世界! 🎉 ok";
  await using server = await startModelServer({
    api: "anthropic-messages",
    script: [{ text, reasoning: "hmm… ✓", quirks: { comments: true, splitBytes: 1 } }],
  });
  const message = await anthropic(server).messages.stream({
    model: "claude",
    max_tokens: 100,
    messages: USER,
  })
    .finalMessage();
  assert.deepEqual(message.content.map((block) => block.type), ["thinking", "text"]);
  assert.deepEqual(message.content[1], { type: "text", text });
  const thinking = message.content[0];
  assert.ok(thinking.type === "thinking");
  assert.deepEqual(thinking.thinking, "hmm… ✓");
  assert.ok(thinking.signature.length > 20);
});

Deno.test("anthropic: an overloaded error event raises an SDK error", async () => {
  await using server = await startModelServer({
    api: "anthropic-messages",
    script: [{
      text: "this will break off",
      quirks: { errorInStream: { message: "Overloaded", afterDeltas: 1 } },
    }],
  });
  const stream = anthropic(server).messages.stream({
    model: "claude",
    max_tokens: 100,
    messages: USER,
  });
  const deltas: string[] = [];
  stream.on("text", (delta) => deltas.push(delta));
  const error = await rejects(() => stream.finalMessage(), Anthropic.APIError);
  assert.deepEqual(error.type, "overloaded_error");
  assert.match(error.message, /Overloaded/);
  assert.deepEqual(deltas, ["this wil"]);
});

Deno.test("anthropic: a half answer that hangs ends with the client's abort", async () => {
  await using server = await startModelServer({
    api: "anthropic-messages",
    script: [{ partial: { text: "0123456789abcdefghijklmnopqrstuvwxyz" }, thenHang: true }],
  });
  const stream = anthropic(server).messages.stream({
    model: "claude",
    max_tokens: 100,
    messages: USER,
  });
  let text = "";
  stream.on("text", (delta) => {
    text += delta;
    if (text.length >= 24) stream.abort();
  });
  await rejects(() => stream.finalMessage(), Anthropic.APIUserAbortError);
  assert.deepEqual(text, "0123456789abcdefghijklmn");
  await server.finished(1);
  assert.deepEqual(server.disconnects, 1);
});

Deno.test("anthropic: an endless answer stops when the client goes away", async () => {
  await using server = await startModelServer({
    api: "anthropic-messages",
    script: [{ endless: true }],
  });
  const stream = anthropic(server).messages.stream({
    model: "claude",
    max_tokens: 100,
    messages: USER,
  });
  let size = 0;
  stream.on("text", (delta) => {
    size += delta.length;
    if (size > 1024 * 1024) stream.abort();
  });
  await rejects(() => stream.finalMessage(), Anthropic.APIUserAbortError);
  await server.finished(1);
  assert.deepEqual(server.disconnects, 1);
});

Deno.test("anthropic: a 5 MB answer, and a non-streamed one", async () => {
  const size = 5_000_000;
  await using server = await startModelServer({
    api: "anthropic-messages",
    script: [{ bigText: size }, {
      text: "short",
      toolCalls: [{ name: "clock", arguments: { tz: "UTC" } }],
    }],
  });
  const client = anthropic(server);
  const message = await client.messages.stream({ model: "claude", max_tokens: 100, messages: USER })
    .finalMessage();
  const block = message.content[0];
  assert.ok(block.type === "text");
  assert.deepEqual(block.text.length, size);
  assert.deepEqual(message.stop_reason, "end_turn");

  const plain = await client.messages.create({ model: "claude", max_tokens: 100, messages: USER });
  assert.deepEqual(plain.content.map((b) => b.type), ["text", "tool_use"]);
  assert.deepEqual(plain.stop_reason, "tool_use");
});

// --- the server itself ------------------------------------------------------------------

Deno.test("server: close() ends a reply that never started", async () => {
  const server = await startModelServer({
    api: "openai-chat-completions",
    script: [{ hang: true }],
  });
  const response = fetch(`${server.url}/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ model: "m", messages: USER, stream: true }),
  }).then((r) => r.text());
  await server.waitForRequests(1);
  await server.close();
  await assert.rejects(response);
  assert.deepEqual(server.disconnects, 0);
});

Deno.test("server: close() drops a stream that is still being written", async () => {
  const server = await startModelServer({ api: "anthropic-messages", script: [{ endless: true }] });
  const response = await fetch(`${server.url}/v1/messages`, {
    method: "POST",
    headers: { "anthropic-version": "2023-06-01" },
    body: JSON.stringify({ model: "m", max_tokens: 10, messages: USER, stream: true }),
  });
  const reader = response.body!.getReader();
  await reader.read();
  await server.streaming(1);
  await server.close();
  await assert.rejects(async () => {
    while (!(await reader.read()).done) {
      // Drain what was already sent.
    }
  });
  assert.deepEqual(server.disconnects, 0);
});

Deno.test("server: splitBytes writes arrive in separate reads", async () => {
  await using server = await startModelServer({
    api: "openai-chat-completions",
    script: [{ text: "é".repeat(40), quirks: { splitBytes: 3 } }],
  });
  const response = await fetch(`${server.url}/chat/completions`, {
    method: "POST",
    body: JSON.stringify({ model: "m", messages: USER, stream: true }),
  });
  let reads = 0;
  let bytes = 0;
  for await (const chunk of response.body!) {
    reads++;
    bytes += chunk.length;
  }
  // Some writes may still travel together; most must not.
  assert.ok(reads > bytes / 3 / 2, `${reads} reads of ${bytes} bytes`);
});

Deno.test("server: raw writes, scripts as functions, and waiting", async () => {
  const script = (request: { n: number }): Reply =>
    request.n === 1
      ? { raw: ["data: {not json\n\n", "data: [DONE]\n\n"] }
      : { status: 418, body: "teapot" };
  await using server = await startModelServer({ api: "openai-chat-completions", script });
  const post = () =>
    fetch(`${server.url}/chat/completions`, {
      method: "POST",
      body: JSON.stringify({ model: "m", messages: USER, stream: true }),
    });
  const raw = await post();
  assert.deepEqual(raw.headers.get("content-type"), "text/event-stream; charset=utf-8");
  assert.deepEqual(await raw.text(), "data: {not json\n\ndata: [DONE]\n\n");
  const plain = await post();
  assert.deepEqual([plain.status, await plain.text()], [418, "teapot"]);
  await server.streaming(2);
  await server.waitForRequests(2);
  await assert.rejects(server.waitForRequests(3, 50), {
    message: "expected 3 requests within 50 ms, saw 2",
  });
});
