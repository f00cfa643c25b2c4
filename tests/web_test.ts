/**
 * The web page and its API on a real host with the shipped agent and the
 * scripted model server: the NDJSON turn stream, history, the event stream,
 * each bad input, the security rules, the token off loopback, the CLI's
 * `--http`, and the page itself in headless Chromium.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { LocalHostView } from "../core/host_view.ts";
import { main } from "../cli/cli.ts";
import { startWebServer, type WebOptions, type WebServer } from "../web/server.ts";
import { type AgentWorld, agentWorld, type AgentWorldOptions, history } from "./agent_world.ts";
import type { Reply } from "./model_server.ts";
import { testPlugin } from "./setup.ts";
import { needs, toolPath } from "./tools.ts";
import { eventually, TEST_CACHE_DIR } from "./world.ts";

const ARTIFACTS = new URL("./artifacts/", import.meta.url).pathname;
const POST = { "content-type": "application/json", "x-sausage-session": "1" };

interface WebWorld extends AgentWorld {
  web: WebServer;
  view: LocalHostView;
  /** A path of the server. */
  at(path: string): string;
}

async function webWorld(
  script: Reply[],
  options: Partial<WebOptions> = {},
  world: Partial<AgentWorldOptions> = {},
): Promise<WebWorld> {
  const w = await agentWorld({ script, ...world });
  // as serveWeb makes it: the page's calls have the parent `web`
  const view = new LocalHostView(w.host, undefined, "web");
  const server = await startWebServer(view, { hostname: "127.0.0.1", port: 0, ...options });
  return {
    ...w,
    web: server,
    view,
    // the token as the page's first visit has it; the cookie test below checks the cookie
    at: (path) => `${server.origin}${path}${path.includes("?") ? "&" : "?"}token=${server.token}`,
    async [Symbol.asyncDispose]() {
      await server.close();
      await view.close();
      await w[Symbol.asyncDispose]();
    },
  };
}

/**
 * The page of `w` in a new tab `height` px high, once it is ready and live;
 * `problems` gathers the console's errors and warnings and the page's errors.
 */
async function openPage(
  browser: Browser,
  w: WebWorld,
  height: number,
): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1280, height } });
  const problems: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error" || m.type() === "warning") problems.push(`${m.type()}: ${m.text()}`);
  });
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  await page.goto(w.web.url);
  await page.waitForSelector("body[data-ready=true]", { timeout: 10_000 });
  await page.waitForSelector("#live:not(.off)");
  return { page, problems };
}

/** Every NDJSON line of a response, parsed. */
async function lines(response: Response): Promise<Record<string, unknown>[]> {
  const text = await response.text();
  return text.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l));
}

/** A JSON error answer: its status, its body's `error`, and no CORS header. */
async function refusal(response: Response): Promise<{ status: number; error: string }> {
  const body = await response.json();
  assert.equal(response.headers.get("content-type"), "application/json; charset=utf-8");
  for (const name of response.headers.keys()) assert.ok(!name.startsWith("access-control-"), name);
  assert.equal(typeof body.error, "string");
  assert.equal(body.status, response.status);
  return { status: response.status, error: body.error };
}

/** A GET with a `Host` header of our own, which `fetch` does not let us set. */
async function rawGet(port: number, path: string, host: string): Promise<Response> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  await conn.write(
    new TextEncoder().encode(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`),
  );
  const text = await new Response(conn.readable).text();
  const [head, body] = text.split("\r\n\r\n");
  const [status, ...fields] = head.split("\r\n");
  const headers = new Headers(fields.map((f) => f.split(/:\s*/, 2) as [string, string]));
  const decoded = headers.get("transfer-encoding") === "chunked"
    ? body.split("\r\n").filter((_, i) => i % 2 === 1).join("")
    : body;
  return new Response(decoded, { status: Number(status.split(" ")[1]), headers });
}

/** Reads server-sent events until `until` is true of one; returns them all. */
async function readEvents(
  response: Response,
  until: (event: { event: string; data: unknown }) => boolean,
  ms = 10_000,
): Promise<{ event: string; data: unknown }[]> {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  const seen: { event: string; data: unknown }[] = [];
  const timer = setTimeout(() => reader.cancel(), ms);
  let rest = "";
  try {
    while (true) {
      const { value, done } = await reader.read();
      if (done) {
        throw new Error(`the event stream ended before the event came: ${JSON.stringify(seen)}`);
      }
      rest += value;
      let end;
      while ((end = rest.indexOf("\n\n")) >= 0) {
        const block = rest.slice(0, end);
        rest = rest.slice(end + 2);
        const event = /^event: (.*)$/m.exec(block)?.[1];
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (event === undefined || data === undefined) continue;
        const e = { event, data: JSON.parse(data) };
        seen.push(e);
        if (until(e)) return seen;
      }
    }
  } finally {
    clearTimeout(timer);
    await reader.cancel().catch(() => {});
  }
}

Deno.test("POST /task streams delta, step and done; GET /history has the turn", async () => {
  await using w = await webWorld([
    {
      toolCalls: [{ name: "list_dir", arguments: { path: "/config" } }],
      usage: { input: 10, output: 2 },
    },
    { text: "The config folder has agent.yaml.", usage: { input: 40, output: 8 } },
  ]);
  const response = await fetch(w.at("/task"), {
    method: "POST",
    headers: POST,
    body: JSON.stringify({ task: "what is in /config?" }),
  });
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("content-type"), "application/x-ndjson; charset=utf-8");
  const got = await lines(response);
  const types = got.map((l) => l.type);
  assert.ok(types.includes("delta"), `deltas: ${types}`);
  assert.equal(types.at(-1), "done");
  const deltas = got.filter((l) => l.type === "delta").map((l) => l.text).join("");
  assert.equal(deltas, "The config folder has agent.yaml.");
  const steps = got.filter((l) => l.type === "step");
  const call = steps.find((s) => (s.blocks as string[]).includes("toolRequest"));
  const answer = steps.find((s) => (s.blocks as string[]).includes("toolResponse"));
  assert.deepEqual(call?.tools, ["list_dir"]);
  assert.equal(call?.role, "assistant");
  assert.equal(answer?.role, "tool");
  assert.equal(answer?.ok, true);
  assert.ok(!steps.some((s) => s.role === "user"), "the person's message is not streamed back");
  assert.ok(!got.some((l) => "session" in l));
  const done = got.at(-1)!;
  assert.equal(done.answer, "The config folder has agent.yaml.");
  assert.equal(done.input_tokens, 50); // the turn's two model calls
  assert.equal(done.output_tokens, 10);
  assert.deepEqual(done.model, {
    alias: "default",
    provider: "openai-chat-completions",
    resolved: "scripted",
  });
  const page = await (await fetch(w.at("/history"))).json();
  assert.deepEqual(
    page.steps.map((s: { role: string }) => s.role),
    ["user", "assistant", "tool", "assistant"],
  );
  assert.equal(page.steps[0].text, "what is in /config?");
  const sessions = await (await fetch(w.at("/sessions"))).json();
  assert.deepEqual(sessions.sessions.map((s: { session: string }) => s.session), ["default"]);
});

Deno.test("a turn that fails after the 200 ends with a failed line", async () => {
  await using w = await webWorld([{ status: 401 }]);
  const response = await fetch(w.at("/task"), {
    method: "POST",
    headers: POST,
    body: JSON.stringify({ task: "hi", session: "other" }),
  });
  assert.equal(response.status, 200);
  const got = await lines(response);
  assert.equal(got.at(-1)?.type, "failed");
  assert.match(String(got.at(-1)?.error), /401/);
  assert.equal((await history(w, "other")).at(-1)?.role, "error");
});

Deno.test("a connection dropped mid-stream stops the turn, journaled as cancelled", async () => {
  await using w = await webWorld([{
    partial: { text: "a long answer that never ends" },
    thenHang: true,
  }]);
  const abort = new AbortController();
  const response = await fetch(w.at("/task"), {
    method: "POST",
    headers: POST,
    body: JSON.stringify({ task: "go on forever" }),
    signal: abort.signal,
  });
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let first = "";
  while (!first.includes("\n")) first += (await reader.read()).value ?? "";
  assert.equal(JSON.parse(first.split("\n")[0]).type, "delta");
  abort.abort(); // the page's Stop
  await reader.cancel().catch(() => {});
  await eventually(async () => {
    const steps = await history(w);
    return steps.some((s) => s.blocks.includes("cancelled"));
  }, 10_000);
  await eventually(async () => (await w.view.processes()).length === 0, 10_000);
  const steps = await history(w);
  assert.equal(steps.at(-1)?.role, "error");
  assert.match(steps.at(-1)!.text, /cancelled/);
  assert.ok(steps.some((s) => s.role === "assistant" && s.text.startsWith("a long")));
  // the host is unharmed
  assert.deepEqual(await w.call("probe.echo", { x: 1 }), { x: 1 });
});

Deno.test("the limits of a turn: its wall clock and its bytes end it with failed", async () => {
  {
    await using w = await webWorld([{ hang: true }], {
      turnLimits: { turnMs: 400, lineBytes: 8_000_000, turnBytes: 64_000_000 },
    });
    const got = await lines(
      await fetch(w.at("/task"), { method: "POST", headers: POST, body: '{"task": "wait"}' }),
    );
    assert.equal(got.at(-1)?.type, "failed");
    assert.match(String(got.at(-1)?.error), /ran past 0 s \(the limit of one turn\)/);
    await eventually(async () => (await w.view.processes()).length === 0, 10_000);
  }
  {
    await using w = await webWorld([{ text: "x".repeat(4000) }], {
      turnLimits: { turnMs: 60_000, lineBytes: 8_000_000, turnBytes: 1000 },
    });
    const got = await lines(
      await fetch(w.at("/task"), { method: "POST", headers: POST, body: '{"task": "talk"}' }),
    );
    assert.equal(got.at(-1)?.type, "failed");
    assert.match(String(got.at(-1)?.error), /more than 1000 bytes/);
    const size = got.reduce((n, l) => n + JSON.stringify(l).length + 1, 0);
    assert.ok(size < 1200, `the stream stayed near its limit: ${size}`);
  }
});

Deno.test("bad input: each a clear status and JSON error, the host unharmed", async () => {
  await using w = await webWorld([]);
  const post = (path: string, body: BodyInit, headers: HeadersInit = POST) =>
    fetch(w.at(path), { method: "POST", headers, body });
  const cases: [string, Promise<Response>, number, RegExp][] = [
    [
      "a POST without the header",
      post("/task", '{"task": "hi"}', { "content-type": "application/json" }),
      403,
      /x-sausage-session/,
    ],
    [
      "a body over the limit",
      post("/task", "x".repeat(2 * 1024 * 1024)),
      413,
      /over 1048576 bytes/,
    ],
    ["a malformed body", post("/task", '{"task": '), 400, /not JSON/],
    ["a body that is not an object", post("/call", "[1, 2]"), 400, /a JSON object/],
    ["a task without text", post("/task", '{"task": ""}'), 400, /"task"/],
    ["a bad session", post("/task", '{"task": "a", "session": "../x"}'), 400, /session/],
    ["a call without a method", post("/call", "{}"), 400, /"method"/],
    ["a stop without a pid", post("/stop", "{}"), 400, /"pid"/],
    [
      "a form post",
      post("/task", "task=hi", { "x-sausage-session": "1", "content-type": "text/plain" }),
      415,
      /must be JSON/,
    ],
    ["a path outside the API", fetch(w.at("/etc/passwd")), 404, /no \/etc\/passwd here/],
    ["an asset that is not there", fetch(w.at("/assets/../../deno.json")), 404, /no /],
    ["a GET of /task", fetch(w.at("/task")), 405, /takes POST/],
    [
      "a cross-origin POST",
      post("/task", '{"task": "hi"}', { ...POST, origin: "http://evil.example" }),
      403,
      /another origin/,
    ],
    [
      "a preflight",
      fetch(w.at("/task"), {
        method: "OPTIONS",
        headers: { origin: "http://evil.example", "access-control-request-method": "POST" },
      }),
      403,
      /another origin/,
    ],
    [
      "a foreign Host (DNS rebinding)",
      rawGet(w.web.port, "/history", "evil.example"),
      403,
      /not this machine's loopback/,
    ],
    ["a plugin that is not there", fetch(w.at("/plugin?name=nope")), 404, /no plugin "nope"/],
    ["a bad grep", fetch(w.at("/log?grep=(")), 400, /core\.log/],
  ];
  for (const [what, answer, status, message] of cases) {
    const response = await answer;
    const got = await refusal(response).catch((e) => {
      throw new Error(`${what}: ${e.message}`);
    });
    assert.equal(got.status, status, `${what}: ${got.error}`);
    assert.match(got.error, message, what);
  }
  // nothing ran, and the host still answers
  assert.equal(w.web.eventStreams, 0);
  assert.deepEqual((await history(w)).length, 0);
  assert.deepEqual(await w.call("probe.echo", { ok: true }), { ok: true });
  const call = await fetch(w.at("/call"), {
    method: "POST",
    headers: POST,
    body: JSON.stringify({ method: "probe.echo", params: { n: 1 } }),
  });
  assert.deepEqual(await call.json(), { ok: true, result: { n: 1 } });
  const failed = await fetch(w.at("/call"), {
    method: "POST",
    headers: POST,
    body: JSON.stringify({ method: "probe.fail" }),
  });
  const body = await failed.json();
  assert.equal(body.ok, false);
  assert.equal(body.error.code, 4711);
});

Deno.test("100 event streams: 64 open, the others get 503, and closing frees them", async () => {
  await using w = await webWorld([]);
  const aborts = Array.from({ length: 100 }, () => new AbortController());
  const answers = await Promise.all(
    aborts.map((a) => fetch(w.at("/events"), { signal: a.signal })),
  );
  const statuses = answers.map((r) => r.status);
  assert.equal(statuses.filter((s) => s === 200).length, 64);
  assert.equal(statuses.filter((s) => s === 503).length, 36);
  const refused = answers.find((r) => r.status === 503)!;
  assert.match((await refusal(refused)).error, /64 event streams are open/);
  assert.equal(refused.headers.get("retry-after"), "5");
  for (const r of answers.filter((r) => r.status === 503 && !r.bodyUsed)) await r.body?.cancel();
  // the host answers while they are open
  const t = performance.now();
  assert.deepEqual(await w.call("probe.echo", {}), {});
  assert.ok(performance.now() - t < 2000);
  for (const r of answers.filter((r) => r.status === 200)) await r.body?.cancel();
  for (const a of aborts) a.abort();
  await eventually(() => w.web.eventStreams === 0, 5000);
  const again = await fetch(w.at("/events"));
  assert.equal(again.status, 200);
  await again.body?.cancel();
});

Deno.test("the server's bounds: wrong tokens from one address get 429, big headers 431, idle connections make room", async () => {
  await using w = await webWorld([], {
    tokenFailures: { max: 3 },
    httpLimits: { maxConnections: 8, headersTimeoutMs: 2000 },
  });
  const big = await fetch(w.at("/sessions"), { headers: { "x-big": "a".repeat(64 * 1024) } });
  assert.equal(big.status, 431);
  assert.match((await big.json()).error, /headers are over 32768 bytes/);

  // eight idle connections fill the server; a request still gets in, and they go
  const idle = await Promise.all(
    Array.from({ length: 8 }, () => Deno.connect({ hostname: "127.0.0.1", port: w.web.port })),
  );
  await eventually(() => w.web.connections >= 8, 2000);
  const client = Deno.createHttpClient({});
  const page = await fetch(w.at("/processes"), { client });
  assert.equal(page.status, 200);
  await page.body?.cancel();
  client.close();
  for (const c of idle) c.close();
  await eventually(() => w.web.connections === 0, 5000);
  // the token's guesses last: past the limit they wait; the right token still passes
  const wrong = `${w.web.origin}/sessions?token=${"0".repeat(48)}`;
  const statuses = [];
  for (let i = 0; i < 5; i++) {
    const r = await fetch(wrong);
    statuses.push(r.status);
    if (r.status === 429) {
      assert.match((await refusal(r)).error, /too many wrong tokens from 127\.0\.0\.1/);
      assert.ok(Number(r.headers.get("retry-after")) > 0);
    } else await r.body?.cancel();
  }
  assert.deepEqual(statuses, [401, 401, 401, 429, 429]);
  const right = await fetch(`${w.web.origin}/sessions?token=${w.web.token!}`);
  assert.equal(right.status, 200);
  await right.body?.cancel();
  // the bearer at /mcp is the same guess, the same count
  const mcp = await fetch(`${w.web.origin}/mcp`, {
    method: "POST",
    headers: { authorization: `Bearer ${"1".repeat(48)}`, "content-type": "application/json" },
    body: "{}",
  });
  assert.equal(mcp.status, 429);
  await mcp.body?.cancel();
});

Deno.test("the event stream brings the processes and each journal entry", async () => {
  await using w = await webWorld([]);
  const response = await fetch(w.at("/events"));
  assert.equal(response.headers.get("content-type"), "text/event-stream; charset=utf-8");
  const sleeping = w.call("probe.sleep", { ms: 600 });
  const log = w.call("probe.log", { text: "web-marker" });
  let sawSleep = false;
  let sawMarker = false;
  const events = await readEvents(response, (e) => {
    if (e.event === "processes") {
      sawSleep ||= (e.data as { method: string }[]).some((p) => p.method === "sleep");
    }
    sawMarker ||= e.event === "entry" && (e.data as { line: string }).line === "web-marker 0";
    return sawSleep && sawMarker;
  });
  await Promise.all([sleeping, log]);
  const entry = events.find((e) =>
    e.event === "entry" && (e.data as { line: string }).line === "web-marker 0"
  );
  assert.equal((entry?.data as { plugin: string }).plugin, "probe");
  assert.equal(events[0].event, "processes", "a new stream gets the list at once");
  await eventually(() => w.web.eventStreams === 0, 5000);
});

Deno.test("on loopback and off it a token is needed, then kept in an HttpOnly SameSite=Strict cookie", async () => {
  await using local = await webWorld([]);
  const bare = await refusal(await fetch(`${local.web.origin}/history`));
  assert.equal(bare.status, 401, "any user of the machine can reach loopback");
  await using w = await webWorld([], { hostname: "0.0.0.0" });
  const token = w.web.token!;
  assert.match(token, /^[0-9a-f]{48}$/);
  assert.ok(w.web.url.endsWith(`/?token=${token}`), w.web.url);
  const base = `http://127.0.0.1:${w.web.port}`;
  const without = await refusal(await fetch(`${base}/`));
  assert.equal(without.status, 401);
  assert.match(without.error, /token/);
  assert.equal((await refusal(await fetch(`${base}/?token=wrong`))).status, 401);
  assert.equal((await refusal(await fetch(`${base}/history`))).status, 401);
  const first = await fetch(`${base}/?token=${token}`, { redirect: "manual" });
  assert.equal(first.status, 303);
  assert.equal(first.headers.get("location"), "/");
  const cookie = first.headers.get("set-cookie")!;
  // named by the port: browsers share a host's cookies across its ports
  assert.match(cookie, new RegExp(`^sausage_token_${w.web.port}=`));
  assert.match(cookie, /HttpOnly/);
  assert.match(cookie, /SameSite=Strict/);
  await first.body?.cancel();
  const jar = { cookie: cookie.split(";")[0] };
  const page = await fetch(`${base}/`, { headers: jar });
  assert.equal(page.status, 200);
  assert.match(await page.text(), /<title>Sausage<\/title>/);
  const history = await fetch(`${base}/history`, { headers: jar });
  assert.deepEqual(await history.json(), { steps: [] });
  // the token does not replace the header
  const post = await fetch(`${base}/call`, {
    method: "POST",
    headers: { ...jar, "content-type": "application/json" },
    body: '{"method": "probe.echo"}',
  });
  assert.equal((await refusal(post)).status, 403);
});

Deno.test("sausage --headless WORLD --http serves the page; a bad --http is exit 2", async () => {
  assert.equal(await main(["--headless", "/nonexistent-world", "--http", "localhost:99999"]), 2);
  assert.equal(await main(["web", "/nonexistent-world", "--http", "a:b:c"]), 2);
  await using w = await agentWorld({ script: [] });
  await w.host.shutdown(); // the subprocess runs the world
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--unstable-worker-options",
      new URL("../main.ts", import.meta.url).pathname,
      "--headless",
      w.root,
      "--http",
      "127.0.0.1:0",
      "--cache-dir",
      TEST_CACHE_DIR,
    ],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).spawn();
  const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  while (!/the web page is at (\S+)/.test(seen)) {
    const { value, done } = await reader.read();
    if (done) break;
    seen += value;
  }
  try {
    const url = /the web page is at (\S+)/.exec(seen)?.[1];
    assert.ok(url, seen);
    assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]{48}$/);
    const page = await fetch(url); // the redirect sets the cookie; the page itself needs it
    assert.equal(page.redirected, true);
    await page.body?.cancel();
    const withToken = await fetch(url, { redirect: "manual" });
    const jar = { cookie: withToken.headers.get("set-cookie")!.split(";")[0] };
    await withToken.body?.cancel();
    const index = await fetch(new URL("/", url), { headers: jar });
    assert.equal(index.status, 200);
    assert.match(await index.text(), /app\.js/);
  } finally {
    child.kill("SIGTERM");
    await reader.cancel().catch(() => {});
    assert.equal((await child.status).code, 0);
  }
});

Deno.test("sausage web WORLD: the console and the page together", async () => {
  await using w = await agentWorld({ script: [] });
  await w.host.shutdown(); // the subprocess runs the world
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--unstable-worker-options",
      new URL("../main.ts", import.meta.url).pathname,
      "web",
      w.root,
      "--http",
      "127.0.0.1:0",
      "--cache-dir",
      TEST_CACHE_DIR,
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).spawn();
  const stdout = new Response(child.stdout).text();
  const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  while (!/the web page is at (\S+)/.test(seen)) {
    const { value, done } = await reader.read();
    if (done) break;
    seen += value;
  }
  const url = /the web page is at (\S+)/.exec(seen)?.[1];
  assert.ok(url, seen);
  const call = new URL(url!);
  call.pathname = "/call";
  const answer = await fetch(call, {
    method: "POST",
    headers: POST,
    body: JSON.stringify({ method: "probe.echo", params: { from: "page" } }),
  });
  assert.deepEqual(await answer.json(), { ok: true, result: { from: "page" } });
  // the console reads its script from stdin meanwhile, and its end ends both
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode('probe.echo {"from": "console"}\n'));
  await writer.close();
  assert.equal((await child.status).code, 0);
  await reader.cancel().catch(() => {});
  assert.match(await stdout, /"from": "console"/);
  await assert.rejects(fetch(url!), TypeError); // the page went with the console
});

Deno.test({
  ...needs(
    ["chromium"],
    "the page in Chromium: chat streams, the graph, a process comes and goes, the journal grows",
  ),
  // playwright keeps its pipes to the browser open past close()
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await using w = await webWorld([
      { toolCalls: [{ name: "list_dir", arguments: { path: "/config" } }] },
      { text: "Here is **the answer**, with `code`.", delayMs: 5 },
      { partial: { text: "A slow answer that the person stops" }, thenHang: true },
    ]);
    const browser = await chromium.launch({
      executablePath: toolPath("chromium"),
      args: ["--no-sandbox"],
    });
    try {
      const { page, problems } = await openPage(browser, w, 860);
      const nodes = await page.locator("#graph g.node").evaluateAll((all) =>
        all.map((n) => n.getAttribute("data-plugin"))
      );
      for (const name of ["agent", "cargo", "probe"]) assert.ok(nodes.includes(name), `${nodes}`);
      const rowsBefore = await page.locator("#log .entry").count();

      // a message streams into the chat, its tool step folded under the call
      await page.fill("#text", "what is in /config?");
      await page.click("#send");
      await page.waitForSelector(".msg.reply strong", { timeout: 15_000 });
      assert.equal(await page.locator(".msg.reply strong").textContent(), "the answer");
      assert.match(await page.locator("details.tool summary").textContent() ?? "", /list_dir/);
      assert.equal(await page.locator("details.tool .result").count(), 1);
      assert.equal(await page.locator(".msg.user").textContent(), "what is in /config?");

      // a plugin activated meanwhile shows in the graph
      await Deno.mkdir(join(w.root, "state", "builds"), { recursive: true });
      await Deno.copyFile(await testPlugin("probe"), join(w.root, "state", "builds", "extra.wasm"));
      const activated = await w.request("core.activate", {
        plugin: "extra",
        wasm: "/state/builds/extra.wasm",
        force: true, // the probe's document calls itself probe
      });
      assert.equal(activated.error, undefined, JSON.stringify(activated.error));
      await page.waitForSelector('#graph g.node.fresh[data-plugin="extra"]', { timeout: 5000 });

      // a process appears and goes
      const sleeping = w.call("probe.sleep", { ms: 800 });
      await page.waitForSelector("#tree .proc:has-text('probe.sleep')", { timeout: 5000 });
      await sleeping;
      await page.waitForSelector("#tree .proc:has-text('probe.sleep')", {
        state: "detached",
        timeout: 5000,
      });

      // the journal's tail grows
      await w.call("probe.log", { text: "from-the-test" });
      await page.waitForSelector("#log .entry:has-text('from-the-test 0')", { timeout: 5000 });
      assert.ok((await page.locator("#log .entry").count()) > rowsBefore);

      // a plugin's methods from rpc.discover, and a call from its panel
      await page.click('#graph g.node[data-plugin="probe"]');
      await page.waitForSelector("#plugin .method code:has-text('probe.echo')", { timeout: 5000 });
      const echo = page.locator("#plugin .method", { hasText: "probe.echo" });
      await echo.locator("input").fill('{"from": "the panel"}');
      await echo.locator("button").click();
      await page.waitForSelector("#plugin .method pre:has-text('the panel')", { timeout: 5000 });

      // Stop of a process in the tree
      const never = w.request("probe.never", {});
      const row = page.locator("#tree .proc", { hasText: "probe.never" });
      await row.waitFor({ timeout: 5000 });
      await row.locator("button").click();
      await row.waitFor({ state: "detached", timeout: 10_000 });
      await never;

      // Stop of a turn: the page drops the connection, the agent journals the turn as cancelled
      await page.fill("#text", "tell me a long story");
      await page.click("#send");
      await page.waitForSelector(".msg.pending", { timeout: 10_000 });
      await page.click("#stop");
      await page.waitForSelector(".msg.error:has-text('Stopped')", { timeout: 5000 });
      await eventually(
        async () => (await history(w)).some((s) => s.blocks.includes("cancelled")),
        10_000,
      );

      // from another origin (localhost is not 127.0.0.1) the browser cannot send the header
      // (its preflight is refused) and a simple POST is refused by the Origin check
      const other = await browser.newPage();
      await other.goto(`http://localhost:${w.web.port}/info`);
      const cross = await other.evaluate(async (target) => {
        const body = '{"task": "from elsewhere"}';
        const simple = await fetch(`${target}task`, { method: "POST", mode: "no-cors", body });
        let preflighted = "sent";
        try {
          await fetch(`${target}task`, {
            method: "POST",
            headers: { "x-sausage-session": "1", "content-type": "application/json" },
            body,
          });
        } catch (e) {
          preflighted = (e as Error).name;
        }
        return { simple: simple.type, preflighted };
      }, `${w.web.origin}/`);
      assert.deepEqual(cross, { simple: "opaque", preflighted: "TypeError" });
      await other.close();

      await Deno.mkdir(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: join(ARTIFACTS, "web.png") });
      assert.deepEqual(problems, []);
      // only the page's own message reached the agent
      const steps = await history(w);
      assert.deepEqual(steps.filter((s) => s.role === "user").map((s) => s.text), [
        "what is in /config?",
        "tell me a long story",
      ]);
    } finally {
      await browser.close();
    }
  },
});

/** A long Markdown document for the plugin `docs` (the probe, which answers rpc.discover with it). */
const LONG_DOC = JSON.stringify({
  openrpc: "1.2.6",
  info: { title: "docs", version: "0.2.0", description: "Keeps **documents**; see `docs.echo`." },
  methods: [{
    name: "echo",
    summary: "Answers its params, as `probe.echo` does.",
    description: [
      "Every field comes back **unchanged**:",
      "",
      ...Array.from({ length: 40 }, (_, i) => `- \`field_${i}\`: the ${i}th field, kept as sent`),
      "",
      "```json",
      '{"a": 1}',
      "```",
    ].join("\n"),
    params: [{ name: "text", description: "a `string` to echo", schema: { type: "string" } }],
    result: { name: "params", schema: {} },
  }],
});

/**
 * The component at `path` with a custom section that names `text`: another
 * hash, so that its discovery document is not the one cached for the probe.
 */
async function withCustomSection(path: string, text: string): Promise<Uint8Array> {
  const leb = (n: number) => {
    const out: number[] = [];
    do {
      out.push((n & 0x7f) | (n >= 0x80 ? 0x80 : 0));
      n >>>= 7;
    } while (n > 0);
    return out;
  };
  const name = new TextEncoder().encode("sausage-test");
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text)),
  );
  const body = [...leb(name.length), ...name, ...digest];
  return new Uint8Array([...await Deno.readFile(path), 0, ...leb(body.length), ...body]);
}

Deno.test({
  ...needs(
    ["chromium"],
    "the page in Chromium: ages tick, a long doc in Markdown with its Call in view, the page's " +
      "calls journaled under web, the agent's error with the console's hint",
  ),
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await using w = await webWorld([], {}, {
      wasm: { docs: await withCustomSection(await testPlugin("probe"), LONG_DOC) },
      files: { "state/probe-discover.json": LONG_DOC },
    });
    const browser = await chromium.launch({
      executablePath: toolPath("chromium"),
      args: ["--no-sandbox"],
    });
    try {
      const { page, problems } = await openPage(browser, w, 800);

      // a process's age ticks while it runs, with no event from the host
      const sleeping = w.call("probe.sleep", { ms: 4000 });
      const age = page.locator("#tree .proc", { hasText: "probe.sleep" }).locator(".age");
      await age.waitFor({ timeout: 5000 });
      await eventually(async () => /^[2-9] s$/.test(await age.textContent() ?? ""), 5000);
      await sleeping;

      // a long doc: drawn from Markdown, and its Call in view without scrolling the page
      await page.click('#graph g.node[data-plugin="docs"]');
      await page.waitForSelector("#plugin .method code:has-text('docs.echo')", { timeout: 5000 });
      const method = page.locator("#plugin .method", { hasText: "docs.echo" });
      assert.equal(await method.locator(".doc li").count(), 41); // 40 fields and the param
      assert.ok(await method.locator(".doc li code:has-text('field_0')").count() === 1);
      assert.equal(await page.locator("#plugin .doc strong").first().textContent(), "documents");
      const docText = await page.locator("#plugin").textContent() ?? "";
      assert.ok(!docText.includes("`"), `raw Markdown in the panel: ${docText.slice(0, 200)}`);
      const view = {
        height: page.viewportSize()!.height,
        scroll: await page.locator("html").evaluate((e) => e.scrollHeight),
      };
      assert.ok(view.scroll <= view.height, `the page scrolls: ${JSON.stringify(view)}`);
      const call = method.locator("button", { hasText: "Call" });
      const box = (await call.boundingBox())!;
      assert.ok(box.y >= 0 && box.y + box.height <= view.height, `Call is out of view: ${box.y}`);
      const panel = (await page.locator("#plugin").boundingBox())!;
      assert.ok(panel.height >= 300, `the plugin's panel is ${panel.height} px high`);
      assert.ok(box.y + box.height <= panel.y + panel.height, "Call is below the panel's fold");
      await method.locator("input").fill('{"text": "from the page"}');
      await call.click();
      await page.waitForSelector("#plugin .method pre:has-text('from the page')", {
        timeout: 5000,
      });
      // the page's call is journaled with its own parent
      const started = w.host.journal.query({ grep: "^start echo .*from the page" });
      assert.equal(started.length, 1);
      assert.match(started[0].line, / \(parent web\)$/);
      const listed = await w.view.request("core.log", { grep: "^start sleep" });
      assert.match(JSON.stringify(listed.result), /\(parent console\)/);

      // the agent's error has the hint the console gives: the file on this machine
      await Deno.writeTextFile(
        join(w.root, "config", "agent.yaml"),
        "api: openai-chat-completions\n",
      );
      await page.fill("#text", "hello");
      await page.click("#send");
      const error = page.locator(".msg.error").last();
      await error.locator(".hint").waitFor({ timeout: 15_000 });
      assert.equal(
        await error.locator(".hint").textContent(),
        `hint: the file is ${join(w.root, "config", "agent.yaml")} on this machine`,
      );

      await Deno.mkdir(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: join(ARTIFACTS, "web-plugin.png") });
      assert.deepEqual(problems, []);
    } finally {
      await browser.close();
    }
  },
});
