/**
 * The HTTP side under attack (`deno task faults --only http`): the host's web
 * server, its `/mcp` and the control endpoint, each flooded, starved or fed
 * what is not HTTP. An attack returns what the host answered; after each,
 * {@linkcode httpChecks} calls through the control endpoint, the page's
 * `/call` and `/mcp` (each within 1 s) and waits for the servers' connections
 * to go back to where they were.
 *
 * @module
 */
import net from "node:net";
import { type Attack, type AttackContext, Unexpected } from "./attacks.ts";
import type { CheckResult } from "./checks.ts";
import { connectUnix } from "../core/control_client.ts";
import { eventually, type HostProcess } from "./harness.ts";
import type { ServerAddresses, ServerCounts } from "./host.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function expect(ok: boolean, what: string): void {
  if (!ok) throw new Unexpected(what);
}

function addressesOf(h: HostProcess): ServerAddresses {
  if (!h.servers) throw new Error("the host did not say where its servers listen");
  return h.servers;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What a raw connection got: its status line's code (0: none), the body, when it ended. */
interface RawResult {
  status: number;
  text: string;
  ms: number;
}

/**
 * Opens a TCP connection from `localAddress` (any 127.x.y.z is loopback), sends
 * `head`, then `drip` every `dripMs` until the server answers or closes;
 * resolves with what came back. `hold` keeps it open (and silent) that long at most.
 */
function rawRequest(
  port: number,
  head: Uint8Array | string,
  options: { localAddress?: string; drip?: string; dripMs?: number; holdMs?: number } = {},
): Promise<RawResult> {
  const started = performance.now();
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let timer: ReturnType<typeof setInterval> | undefined;
    let hold: ReturnType<typeof setTimeout> | undefined;
    const socket = net.connect({ host: "127.0.0.1", port, localAddress: options.localAddress });
    const finish = () => {
      clearInterval(timer);
      clearTimeout(hold);
      const text = Buffer.concat(chunks).toString("latin1");
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1] ?? 0);
      socket.destroy();
      resolve({ status, text, ms: performance.now() - started });
    };
    socket.on("connect", () => {
      if (head.length > 0) socket.write(head, () => {});
      if (options.drip) {
        timer = setInterval(() => socket.write(options.drip!, () => {}), options.dripMs ?? 1000);
      }
      hold = setTimeout(finish, options.holdMs ?? 60_000);
    });
    socket.on("data", (d: Buffer) => {
      chunks.push(d);
      clearInterval(timer); // answered: the drip stops
    });
    socket.on("error", () => {});
    socket.on("close", finish);
  });
}

/** How many of each status, as `408 ×200, 503 ×1800`. */
function tally(results: { status: number }[]): string {
  const by = new Map<number, number>();
  for (const r of results) by.set(r.status, (by.get(r.status) ?? 0) + 1);
  return [...by].sort((a, b) => a[0] - b[0]).map(([s, n]) => `${s || "none"} ×${n}`).join(", ");
}

/** A JSON error body of the web server, or undefined. */
function errorBody(text: string): string | undefined {
  const at = text.indexOf("\r\n\r\n");
  const body = at >= 0 ? text.slice(at + 4) : "";
  // whole, or in one chunk of a chunked body
  const json = body.slice(body.indexOf("{"), body.lastIndexOf("}") + 1);
  try {
    return (JSON.parse(json) as { error?: string }).error;
  } catch {
    return undefined;
  }
}

const fmtMs = (ms: number) => ms < 1000 ? `${ms.toFixed(0)} ms` : `${(ms / 1000).toFixed(1)} s`;

/** A call through the control endpoint: one connection, one request, its answer. */
export async function controlCall(
  socket: string,
  method: string,
  params: Record<string, unknown>,
  timeoutMs = 5000,
): Promise<{ result?: unknown; error?: { code: number; message: string }; ms: number }> {
  const started = performance.now();
  const conn = await connectUnix(socket);
  const timer = setTimeout(() => conn.close(), timeoutMs);
  try {
    const request = { jsonrpc: "2.0", id: 1, method, params };
    await conn.write(encoder.encode(JSON.stringify(request) + "\n"));
    let buffer = "";
    const chunk = new Uint8Array(64 * 1024);
    while (true) {
      const n = await conn.read(chunk);
      if (n === null) throw new Error("the control endpoint closed the connection");
      buffer += decoder.decode(chunk.subarray(0, n), { stream: true });
      let nl;
      while ((nl = buffer.indexOf("\n")) >= 0) {
        const message = JSON.parse(buffer.slice(0, nl));
        buffer = buffer.slice(nl + 1);
        // the answer, or an error for the connection (id null): the endpoint is full
        if (message.id === 1 || (message.id === null && message.error)) {
          return { result: message.result, error: message.error, ms: performance.now() - started };
        }
      }
    }
  } finally {
    clearTimeout(timer);
    try {
      conn.close();
    } catch {
      // closed by the timer
    }
  }
}

/** `POST /call` of the page, with the token and the session header, on a client of its own. */
export async function pageCall(
  s: ServerAddresses,
  method: string,
  params: Record<string, unknown>,
): Promise<{ status: number; body: unknown; ms: number }> {
  const started = performance.now();
  const client = Deno.createHttpClient({});
  try {
    const r = await fetch(`http://127.0.0.1:${s.http.port}/call?token=${s.http.token}`, {
      method: "POST",
      client,
      headers: { "content-type": "application/json", "x-sausage-session": "faults" },
      body: JSON.stringify({ method, params }),
      signal: AbortSignal.timeout(5000),
    });
    const body = await r.json();
    return { status: r.status, body, ms: performance.now() - started };
  } finally {
    client.close();
  }
}

/** The JSON-RPC message with `id` in an MCP answer (JSON, or server-sent events). */
function mcpMessage(text: string, id: number): Record<string, unknown> | undefined {
  const candidates = text.trimStart().startsWith("{")
    ? [text]
    : text.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5));
  for (const c of candidates) {
    try {
      const m = JSON.parse(c);
      if (m.id === id) return m;
    } catch {
      // not this one
    }
  }
  return undefined;
}

/** An MCP client over Streamable HTTP: initialize, then requests, then DELETE. */
export class McpSession {
  readonly #url: string;
  readonly #token: string;
  readonly #client = Deno.createHttpClient({});
  id: string | undefined;
  #next = 1;

  constructor(s: ServerAddresses) {
    this.#url = `http://127.0.0.1:${s.http.port}/mcp`;
    this.#token = s.http.token;
  }

  /** POSTs a request (or a notification, without `id`); the HTTP status and the answer. */
  async post(
    method: string,
    params: Record<string, unknown>,
    notify = false,
  ): Promise<{ status: number; message?: Record<string, unknown>; text: string }> {
    const id = this.#next++;
    const r = await fetch(this.#url, {
      method: "POST",
      client: this.#client,
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        authorization: `Bearer ${this.#token}`,
        "mcp-protocol-version": "2025-06-18",
        ...(this.id ? { "mcp-session-id": this.id } : {}),
      },
      body: JSON.stringify({ jsonrpc: "2.0", ...(notify ? {} : { id }), method, params }),
      signal: AbortSignal.timeout(10_000),
    });
    this.id ??= r.headers.get("mcp-session-id") ?? undefined;
    const text = await r.text();
    return { status: r.status, message: notify ? undefined : mcpMessage(text, id), text };
  }

  /** `initialize` and `notifications/initialized`; the status of the first. */
  async open(): Promise<number> {
    const init = await this.post("initialize", {
      protocolVersion: "2025-06-18",
      capabilities: {},
      clientInfo: { name: "faults", version: "1" },
    });
    if (init.status !== 200) return init.status;
    await this.post("notifications/initialized", {}, true);
    return 200;
  }

  /** Ends the session (DELETE) and the client. */
  async close(end = true): Promise<void> {
    if (end && this.id) {
      await fetch(this.#url, {
        method: "DELETE",
        client: this.#client,
        headers: { authorization: `Bearer ${this.#token}`, "mcp-session-id": this.id },
      }).then((r) => r.body?.cancel()).catch(() => {});
    }
    this.#client.close();
  }
}

/** A tool call through `/mcp` in a session of its own: the time of the call itself. */
export async function mcpCall(
  s: ServerAddresses,
): Promise<{ ok: boolean; ms: number; detail: string }> {
  const session = new McpSession(s);
  try {
    const status = await session.open();
    if (status !== 200) return { ok: false, ms: 0, detail: `initialize: ${status}` };
    const started = performance.now();
    const r = await session.post("tools/call", { name: "other_echo", arguments: {} });
    const ms = performance.now() - started;
    const result = r.message?.result as { isError?: boolean } | undefined;
    const ok = r.status === 200 && result !== undefined && !result.isError;
    return { ok, ms, detail: ok ? fmtMs(ms) : `${r.status} ${r.text.slice(0, 200)}` };
  } finally {
    await session.close();
  }
}

/** The servers' counts now. */
async function counts(h: HostProcess): Promise<ServerCounts> {
  return (await h.state()).servers;
}

/** Samples the servers' counts every 100 ms while `run` runs: their highest values. */
async function peakWhile<T>(
  h: HostProcess,
  run: () => Promise<T>,
): Promise<{ value: T; peak: ServerCounts }> {
  const peak: ServerCounts = {
    httpConnections: 0,
    eventStreams: 0,
    mcpSessions: 0,
    controlConnections: 0,
  };
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      const c = await counts(h).catch(() => undefined);
      if (c) {
        for (const k of Object.keys(peak) as (keyof ServerCounts)[]) {
          peak[k] = Math.max(peak[k], c[k]);
        }
      }
      await sleep(100);
    }
  })();
  try {
    return { value: await run(), peak };
  } finally {
    sampling = false;
    await sampler;
  }
}

/** The answers the servers give others while an attack runs: one of each, the slowest time. */
async function othersDuring(s: ServerAddresses): Promise<string> {
  const [control, page, mcp] = await Promise.all([
    controlCall(s.control, "other.echo", { during: true }).then(
      (r) => r.error ? `control ${r.error.message.slice(0, 80)}` : `control ${fmtMs(r.ms)}`,
      (e) => `control failed: ${(e as Error).message}`,
    ),
    pageCall(s, "other.echo", { during: true }).then(
      (r) => `page ${r.status} ${fmtMs(r.ms)}`,
      (e) => `page failed: ${(e as Error).message}`,
    ),
    mcpCall(s).then(
      (r) => r.ok ? `/mcp ${fmtMs(r.ms)}` : `/mcp ${r.detail}`,
      (e) => `/mcp failed: ${(e as Error).message}`,
    ),
  ]);
  return `${control}, ${page}, ${mcp}`;
}

const HTTP_1 = "HTTP/1.1";

/** The HTTP attacks, in the order they run. */
export const HTTP_ATTACKS: Attack[] = [
  {
    name: "http idle",
    summary: "2,000 idle connections and 200 slow-header (slowloris) clients, held",
    async run({ host, quick }: AttackContext) {
      const s = addressesOf(host);
      const idle = quick ? 500 : 2000;
      const slow = quick ? 50 : 200;
      const { value, peak } = await peakWhile(host, async () => {
        const slowOnes = Array.from(
          { length: slow },
          (_, i) =>
            rawRequest(s.http.port, `GET / ${HTTP_1}\r\nHost: 127.0.0.1\r\n`, {
              localAddress: `127.0.1.${1 + (i % 200)}`,
              drip: "X-Slow: 1\r\n",
              dripMs: 1000,
            }),
        );
        await sleep(200);
        const idleOnes: Promise<RawResult>[] = [];
        for (let i = 0; i < idle; i++) {
          idleOnes.push(rawRequest(s.http.port, "", { localAddress: "127.0.2.1" }));
          if (i % 100 === 99) await sleep(10);
        }
        await sleep(1000);
        const during = await othersDuring(s);
        const results = await Promise.all([...slowOnes, ...idleOnes]);
        return { results, during };
      });
      const { results, during } = value;
      const statuses = results.map((r) => r.status);
      expect(statuses.every((c) => c === 408 || c === 503), `answers: ${tally(results)}`);
      const last = Math.max(...results.map((r) => r.ms));
      expect(during.includes("page 200") && !during.includes("failed"), `meanwhile: ${during}`);
      return `${tally(results)}; the last closed after ${fmtMs(last)}; ` +
        `at most ${peak.httpConnections} connections open; meanwhile ${during}`;
    },
  },
  {
    name: "http big headers",
    summary: "requests with a header of 1 MiB, and with 10,000 small headers",
    async run({ host }: AttackContext) {
      const s = addressesOf(host);
      const big = `GET / ${HTTP_1}\r\nHost: 127.0.0.1\r\nX-Big: ${"a".repeat(2 ** 20)}\r\n\r\n`;
      const many = `GET / ${HTTP_1}\r\nHost: 127.0.0.1\r\n` +
        Array.from({ length: 10_000 }, (_, i) => `X-${i}: v`).join("\r\n") + "\r\n\r\n";
      const results = await Promise.all([
        ...Array.from({ length: 20 }, () => rawRequest(s.http.port, big, { holdMs: 10_000 })),
        ...Array.from({ length: 20 }, () => rawRequest(s.http.port, many, { holdMs: 10_000 })),
      ]);
      expect(results.every((r) => r.status === 431), `answers: ${tally(results)}`);
      const message = errorBody(results[0].text);
      expect(
        message !== undefined,
        `no message in ${JSON.stringify(results[0].text.slice(0, 200))}`,
      );
      return `${tally(results)} in ${fmtMs(Math.max(...results.map((r) => r.ms)))}: "${message}"`;
    },
  },
  {
    name: "http endless bodies",
    summary:
      "110 POSTs whose bodies never end (declared, chunked, at /call and /mcp), a byte a second; 50 declaring 100 MB",
    async run({ host, quick }: AttackContext) {
      const s = addressesOf(host);
      const n = quick ? 20 : 50;
      const head = (framing: string) =>
        `POST /call?token=${s.http.token} ${HTTP_1}\r\nHost: 127.0.0.1\r\n` +
        `Content-Type: application/json\r\nX-Sausage-Session: faults\r\n${framing}\r\n\r\n`;
      const { value, peak } = await peakWhile(host, async () => {
        const endless = [
          // under the body's limit of 1 MiB, so the server waits for it
          ...Array.from(
            { length: n },
            () => rawRequest(s.http.port, head("Content-Length: 1000000") + "{", { drip: " " }),
          ),
          ...Array.from(
            { length: n },
            () =>
              rawRequest(s.http.port, head("Transfer-Encoding: chunked") + "1\r\n{\r\n", {
                drip: "1\r\n \r\n",
              }),
          ),
          // and at /mcp, whose limit is 16 MiB
          ...Array.from({ length: n / 5 }, () =>
            rawRequest(
              s.http.port,
              `POST /mcp ${HTTP_1}\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${s.http.token}\r\n` +
                "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" +
                "Content-Length: 1000000\r\n\r\n{",
              { drip: " " },
            )),
        ];
        const declaredHuge = Array.from(
          { length: n },
          () => rawRequest(s.http.port, head("Content-Length: 100000000") + "{", { drip: " " }),
        );
        await sleep(2000);
        const during = await othersDuring(s);
        return {
          endless: await Promise.all(endless),
          huge: await Promise.all(declaredHuge),
          during,
        };
      });
      const { endless, huge, during } = value;
      expect(endless.every((r) => r.status === 408), `endless: ${tally(endless)}`);
      expect(huge.every((r) => r.status === 413), `100 MB declared: ${tally(huge)}`);
      expect(during.includes("page 200") && !during.includes("failed"), `meanwhile: ${during}`);
      const times = endless.map((r) => r.ms);
      return `${tally(endless)} after ${fmtMs(Math.min(...times))} to ${
        fmtMs(Math.max(...times))
      }` +
        ` ("${errorBody(endless[0].text)}"); 100 MB declared: ${tally(huge)} in ` +
        `${fmtMs(Math.max(...huge.map((r) => r.ms)))} ("${errorBody(huge[0].text)}"); ` +
        `at most ${peak.httpConnections} connections; meanwhile ${during}`;
    },
  },
  {
    name: "http token guesses",
    summary: "1,000 wrong tokens from one address, at the page and at /mcp",
    async run({ host }: AttackContext) {
      const s = addressesOf(host);
      const guess = () => crypto.randomUUID().replaceAll("-", "").padEnd(48, "0");
      const results: RawResult[] = [];
      let retryAfter = "";
      // one address (127.0.3.1), 8 at a time; the checks' own address stays free
      for (let i = 0; i < 1000; i += 8) {
        const batch = await Promise.all(Array.from({ length: Math.min(8, 1000 - i) }, (_, j) => {
          const mcp = (i + j) % 2 === 1;
          const head = mcp
            ? `POST /mcp ${HTTP_1}\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${guess()}\r\n` +
              "Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}"
            : `GET /sessions?token=${guess()} ${HTTP_1}\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`;
          return rawRequest(s.http.port, head, { localAddress: "127.0.3.1", holdMs: 5000 });
        }));
        results.push(...batch);
        retryAfter ||= /retry-after: (\d+)/i.exec(batch.map((r) => r.text).join(""))?.[1] ?? "";
      }
      const refused = results.filter((r) => r.status === 401).length;
      const limited = results.filter((r) => r.status === 429).length;
      expect(refused + limited === 1000, `answers: ${tally(results)}`);
      expect(limited > 900 && retryAfter !== "", `not limited: ${tally(results)}`);
      // the right token is still let in, from another address and from the guessing one
      const page = await pageCall(s, "other.echo", { after: "guesses" });
      expect(page.status === 200, `the right token after the guesses: ${page.status}`);
      const owner = await rawRequest(
        s.http.port,
        `GET /processes?token=${s.http.token} ${HTTP_1}\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`,
        { localAddress: "127.0.3.1", holdMs: 5000 },
      );
      expect(
        owner.status === 200,
        `the right token from the guessing address: ${owner.status} ${
          JSON.stringify(owner.text.slice(0, 400))
        }`,
      );
      return `${tally(results)} (Retry-After ${retryAfter} s); the right token answered ` +
        `${owner.status} from the guessing address, and from another in ${fmtMs(page.ms)}`;
    },
  },
  {
    name: "http event streams",
    summary: "200 event streams opened at once and held (64 allowed)",
    async run({ host }: AttackContext) {
      const s = addressesOf(host);
      const head = `GET /events?token=${s.http.token} ${HTTP_1}\r\nHost: 127.0.0.1\r\n\r\n`;
      const { value, peak } = await peakWhile(host, async () => {
        const all = Array.from(
          { length: 200 },
          () => rawRequest(s.http.port, head, { holdMs: 3000 }),
        );
        await sleep(1500);
        const during = await othersDuring(s);
        return { results: await Promise.all(all), during };
      });
      const { results, during } = value;
      const open = results.filter((r) => r.status === 200).length;
      const refused = results.filter((r) => r.status === 503);
      expect(open === 64 && refused.length === 136, `answers: ${tally(results)}`);
      expect(/retry-after/i.test(refused[0].text), "503 without Retry-After");
      expect(during.includes("page 200") && !during.includes("failed"), `meanwhile: ${during}`);
      return `${tally(results)} ("${errorBody(refused[0].text)}"); at most ${peak.eventStreams} ` +
        `streams; meanwhile ${during}`;
    },
  },
  {
    name: "http malformed",
    summary: "what is not HTTP/1.1: garbage, bad versions, smuggling, NULs, TLS, HTTP/2, 20 each",
    async run({ host }: AttackContext) {
      const s = addressesOf(host);
      const cases: Record<string, string | Uint8Array> = {
        "garbage": "GARBAGE\r\n\r\n",
        "HTTP/9.9": "GET / HTTP/9.9\r\nHost: 127.0.0.1\r\n\r\n",
        "no Host": "GET / HTTP/1.1\r\n\r\n",
        "CL and TE": `POST /call ${HTTP_1}\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\n` +
          "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        "two CL": `POST /call ${HTTP_1}\r\nHost: 127.0.0.1\r\nContent-Length: 1\r\n` +
          "Content-Length: 2\r\n\r\n{}",
        "header without colon": `GET / ${HTTP_1}\r\nHost: 127.0.0.1\r\nBad Header\r\n\r\n`,
        "NUL bytes": new Uint8Array([0, 1, 2, 255, 13, 10, 13, 10]),
        "bad chunk":
          `POST /call ${HTTP_1}\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n`,
        "absolute target": "GET http://evil.example/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
        "HTTP/2 preface": "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
        "TLS hello": new Uint8Array([22, 3, 1, 2, 0, 1, 0, 1, 252, 3, 3, ...new Array(64).fill(7)]),
        "bare LF": "GET / HTTP/1.1\nHost: 127.0.0.1\n\n",
        "long URL": `GET /${"a".repeat(64 * 1024)} ${HTTP_1}\r\nHost: 127.0.0.1\r\n\r\n`,
      };
      const lines: string[] = [];
      for (const [name, bytes] of Object.entries(cases)) {
        const head = typeof bytes === "string" ? encoder.encode(bytes) : bytes;
        const results = await Promise.all(
          Array.from({ length: 20 }, () => rawRequest(s.http.port, head, { holdMs: 5000 })),
        );
        // every one answered with a refusal, never a hang or a 2xx
        expect(
          results.every((r) => r.status >= 400 && r.status < 500),
          `${name}: ${tally(results)}`,
        );
        lines.push(`${name} ${tally(results).replace(/ ×20$/, "")}`);
      }
      return lines.join(", ");
    },
  },
  {
    name: "mcp sessions",
    summary: "300 MCP sessions opened and never closed (100 kept)",
    async run({ host, quick }: AttackContext) {
      const s = addressesOf(host);
      const n = quick ? 150 : 300;
      const { value, peak } = await peakWhile(host, async () => {
        const sessions: McpSession[] = [];
        const statuses: number[] = [];
        for (let i = 0; i < n; i += 10) {
          const batch = Array.from({ length: Math.min(10, n - i) }, () => new McpSession(s));
          statuses.push(...await Promise.all(batch.map((m) => m.open())));
          sessions.push(...batch);
        }
        // the first sessions made room for the last: their client hears 404 and starts again
        const first = await sessions[0].post("tools/list", {});
        const lastOne = await sessions[n - 1].post("tools/list", {});
        await Promise.all(sessions.map((m) => m.close(false)));
        return { statuses, first: first.status, last: lastOne.status };
      });
      const left = (await counts(host)).mcpSessions;
      expect(
        value.statuses.every((c) => c === 200),
        `initialize: ${tally(value.statuses.map((status) => ({ status })))}`,
      );
      expect(peak.mcpSessions <= 100 && left <= 100, `${peak.mcpSessions} sessions at once`);
      expect(
        value.first === 404 && value.last === 200,
        `the first ${value.first}, the last ${value.last}`,
      );
      return `${n} initialized; at most ${peak.mcpSessions} sessions at once, the idlest ended ` +
        `for room (the first session now ${value.first}, the last ${value.last}); ${left} left ` +
        "open until their idle expiry";
    },
  },
  {
    name: "control flood",
    summary: "10,000 connections to the control socket, held silent",
    async run({ host, quick }: AttackContext) {
      const s = addressesOf(host);
      const n = quick ? 2000 : 10_000;
      const { value, peak } = await peakWhile(host, async () => {
        const conns: Deno.UnixConn[] = [];
        let connectFailed = 0;
        const firstLines: Promise<string>[] = [];
        for (let i = 0; i < n; i++) {
          try {
            // as patient as a front end: a full queue of the socket is waited out
            const c = await connectUnix(s.control);
            conns.push(c);
            firstLines.push((async () => {
              const b = new Uint8Array(4096);
              try {
                const got = await c.read(b);
                return got === null ? "closed" : decoder.decode(b.subarray(0, got));
              } catch {
                return "reset";
              }
            })());
          } catch {
            connectFailed++;
          }
        }
        const during = await othersDuring(s);
        await sleep(500);
        for (const c of conns) {
          try {
            c.close();
          } catch {
            // closed by the host
          }
        }
        const lines = await Promise.all(firstLines);
        return { lines, connectFailed, during };
      });
      const refused = value.lines.filter((l) => l.includes("control_connections")).length;
      const kept = value.lines.length - refused;
      expect(
        value.during.startsWith("control ") && !value.during.includes("failed") &&
          !value.during.includes("the most"),
        `meanwhile: ${value.during}`,
      );
      expect(peak.controlConnections <= 256 + 1, `${peak.controlConnections} connections at once`);
      return `${value.lines.length} connected (${value.connectFailed} could not), ${refused} ` +
        `closed with "${
          value.lines.find((l) => l.includes("control_connections"))?.match(/"message":"([^"]*)"/)
            ?.[1]
        }", ${kept} held to the end; at most ${peak.controlConnections} open; meanwhile ${value.during}`;
    },
  },
];

/** The servers' counts before an attack. */
export async function httpBaseline(h: HostProcess): Promise<ServerCounts> {
  return await counts(h);
}

/**
 * After an HTTP attack: a call answered within 1 s through the control
 * endpoint, the page's `/call` and `/mcp`; the servers' connections, event
 * streams and control connections back to where they were (MCP sessions at
 * most 100: they stay until their idle expiry).
 */
export async function httpChecks(h: HostProcess, base: ServerCounts): Promise<CheckResult[]> {
  if (!h.alive || !h.servers) {
    return ["control call", "page call", "/mcp call", "connections"].map((name) => ({
      name,
      ok: false,
      detail: "host down",
    }));
  }
  const s = h.servers;
  const out: CheckResult[] = [];
  const control = await controlCall(s.control, "other.echo", { still: "here" }).catch((e) => ({
    error: { code: 0, message: (e as Error).message },
    ms: 0,
    result: undefined,
  }));
  out.push({
    name: "control call",
    ok: !control.error && control.ms < 1000,
    detail: control.error ? control.error.message : fmtMs(control.ms),
  });
  const page = await pageCall(s, "other.echo", { still: "here" }).catch((e) => ({
    status: 0,
    body: (e as Error).message,
    ms: 0,
  }));
  out.push({
    name: "page call",
    ok: page.status === 200 && page.ms < 1000,
    detail: page.status === 200 ? fmtMs(page.ms) : `${page.status} ${JSON.stringify(page.body)}`,
  });
  const mcp = await mcpCall(s).catch((e) => ({ ok: false, ms: 0, detail: (e as Error).message }));
  out.push({ name: "/mcp call", ok: mcp.ok && mcp.ms < 1000, detail: mcp.detail });
  let now: ServerCounts | undefined;
  const back = await eventually(async () => {
    now = await counts(h);
    return now.httpConnections <= base.httpConnections && now.eventStreams <= base.eventStreams &&
      now.controlConnections <= base.controlConnections && now.mcpSessions <= 100;
  }, 15_000);
  out.push({
    name: "connections",
    ok: back,
    detail: `${JSON.stringify(now)} (before ${JSON.stringify(base)})`,
  });
  return out;
}
