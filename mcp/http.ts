/**
 * MCP over Streamable HTTP (PROTOCOL section 13.1): the server of
 * `server.ts` for clients that reach the host's HTTP server at `/mcp`
 * instead of starting `sausage mcp`. Each MCP session (`Mcp-Session-Id`) is
 * one front end with its own {@linkcode HostView}: what it called stops when
 * it ends (a DELETE, 30 idle minutes, or the host's stop).
 *
 * The token and `Origin` rules are the HTTP server's; this module sees only
 * requests that passed them.
 *
 * @module
 */
// @ts-types="@modelcontextprotocol/sdk/server/webStandardStreamableHttp"
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import type { HostView } from "../core/host_view.ts";
import { createMcpServer, type SausageMcpServer } from "./server.ts";

/**
 * Sessions at once; one more ends the session idle longest, or is refused
 * with 503 when every session has an answer in flight.
 */
export const MAX_SESSIONS = 100;
/** A session that sends nothing for this long is closed. */
export const SESSION_IDLE_MS = 30 * 60_000;
/** The largest request body (a JSON-RPC message, as on every other wire: PROTOCOL 3.1). */
export const MAX_BODY_BYTES = 16 * 1024 * 1024;

/** Options of {@linkcode McpHttp}. */
export interface McpHttpOptions {
  /** Which plugins' methods are tools (default: `/config/mcp.yaml`, else all). */
  plugins?: string[];
  /** Lines for the person running the host. */
  log?: (text: string) => void;
  /** How often the server looks for changed plugins (ms; tests shorten it). */
  watchIntervalMs?: number;
  /**
   * Refuse (403) a `Host` that is not loopback, and an `Origin` that is not
   * the server's own: against DNS rebinding, when nothing in front of this
   * handler checks them (the web server does).
   */
  loopbackOnly?: boolean;
  /** How long a session with nothing in flight may stay (default 30 minutes; tests shorten it). */
  idleMs?: number;
  /** Sessions at once (default {@linkcode MAX_SESSIONS}; tests lower it). */
  maxSessions?: number;
}

/** Whether a `Host` header's name is this machine's loopback. */
function loopbackHost(host: string): boolean {
  const name = host.replace(/:\d+$/, "").replace(/^\[|\]$/g, "").toLowerCase();
  return name === "localhost" || name === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name);
}

interface Session {
  transport: WebStandardStreamableHTTPServerTransport;
  server: SausageMcpServer;
  view: HostView;
  lastSeen: number;
  /** Answers still streaming (the GET event stream, a long POST): the session is not idle. */
  open: number;
}

/**
 * The `/mcp` endpoint: a handler of requests for the host's HTTP server.
 *
 * @example
 * ```ts
 * import type { Host } from "../core/host.ts";
 * import { LocalHostView } from "../core/host_view.ts";
 * declare const host: Host;
 * const mcp = new McpHttp(() => new LocalHostView(host));
 * Deno.serve({ port: 8080 }, (req) => mcp.handle(req));
 * // … at the end
 * await mcp.close();
 * ```
 */
export class McpHttp {
  readonly #openView: () => HostView;
  readonly #options: McpHttpOptions;
  readonly #sessions = new Map<string, Session>();
  readonly #sweep: ReturnType<typeof setInterval>;
  readonly #idleMs: number;
  readonly #max: number;
  #closed = false;
  #starting = 0;
  /** Sessions ended to make room for a new one, since the start. */
  evicted = 0;

  /** `openView` gives each new session its own view of the host. */
  constructor(openView: () => HostView, options: McpHttpOptions = {}) {
    this.#openView = openView;
    this.#options = options;
    this.#idleMs = options.idleMs ?? SESSION_IDLE_MS;
    this.#max = options.maxSessions ?? MAX_SESSIONS;
    this.#sweep = setInterval(() => this.#closeIdle(), Math.min(60_000, this.#idleMs));
    // the SDK brings Node's types, where a timer is an object; Deno's is a number
    Deno.unrefTimer(this.#sweep as unknown as number);
  }

  /** How many sessions are open. */
  get sessions(): number {
    return this.#sessions.size;
  }

  /** Answers one request to `/mcp` (POST, GET for the event stream, DELETE to end a session). */
  async handle(request: Request): Promise<Response> {
    if (this.#closed) return problem(503, "the host is stopping");
    if (this.#options.loopbackOnly) {
      const host = request.headers.get("host") ?? new URL(request.url).host;
      const origin = request.headers.get("origin");
      if (!loopbackHost(host) || (origin !== null && origin !== `http://${host}`)) {
        return problem(403, `a request for ${host} from ${origin ?? "no origin"} is refused`);
      }
    }
    const id = request.headers.get("mcp-session-id");
    if (id !== null) {
      const session = this.#sessions.get(id);
      // the specification: an unknown or ended session is 404, and the client starts a new one
      if (!session) return problem(404, "no such MCP session: initialize a new one", -32001);
      session.lastSeen = Date.now();
      return watched(session, await session.transport.handleRequest(request));
    }
    if (request.method !== "POST") {
      return problem(400, "no Mcp-Session-Id: a session starts with a POST of initialize");
    }
    // sessions being initialized count too: a burst of initializes cannot pass the bound
    this.#starting++;
    try {
      if (this.#sessions.size + this.#starting > this.#max) {
        // the session idle longest makes room (its client gets 404 and starts another);
        // a session with an answer in flight is never cut
        let oldest: [string, Session] | undefined;
        for (const entry of this.#sessions) {
          if (entry[1].open === 0 && (!oldest || entry[1].lastSeen < oldest[1].lastSeen)) {
            oldest = entry;
          }
        }
        if (!oldest) {
          return problem(
            503,
            `${this.#max} MCP sessions are open, each with an answer in flight: end one (DELETE) first`,
          );
        }
        this.evicted++;
        await this.#end(
          oldest[0],
          `${this.#max} MCP sessions were open: this one was idle longest`,
        );
      }
      return await this.#start(request);
    } finally {
      this.#starting--;
    }
  }

  async #start(request: Request): Promise<Response> {
    const view = this.#openView();
    const server = createMcpServer(view, {
      plugins: this.#options.plugins,
      log: this.#options.log,
      watchIntervalMs: this.#options.watchIntervalMs,
    });
    let session: Session | undefined;
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => crypto.randomUUID(),
      maxRequestBodySize: MAX_BODY_BYTES, // declared or streamed: 413 before anything is parsed
      onsessioninitialized: (id) => {
        session = { transport, server, view, lastSeen: Date.now(), open: 0 };
        this.#sessions.set(id, session);
      },
      onsessionclosed: (id) => {
        this.#end(id, "the MCP client ended its session");
      },
    });
    await server.connect(transport);
    let response = await transport.handleRequest(request);
    if (session) response = watched(session, response);
    if (!session) {
      // not an initialize (or a refused one): nothing stays open
      await server.close();
      await view.close("the MCP request did not start a session");
    }
    return response;
  }

  async #end(id: string, why: string): Promise<void> {
    const session = this.#sessions.get(id);
    if (!session) return;
    this.#sessions.delete(id);
    await session.server.close().catch(() => {});
    await session.view.close(why);
  }

  #closeIdle(): void {
    const now = Date.now();
    for (const [id, s] of this.#sessions) {
      if (s.open === 0 && now - s.lastSeen > this.#idleMs) {
        this.#end(id, `the MCP session was idle ${Math.round(this.#idleMs / 60_000)} minutes`);
      }
    }
  }

  /** Ends every session (stopping what each called). */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#sweep);
    await Promise.all([...this.#sessions.keys()].map((id) => this.#end(id, "the host stops")));
  }
}

/** The response, counted as open in its session until its body ends or the client drops it. */
function watched(session: Session, response: Response): Response {
  if (response.body === null) return response;
  session.open++;
  let done = false;
  const end = () => {
    if (done) return;
    done = true;
    session.open--;
    session.lastSeen = Date.now();
  };
  const reader = response.body.getReader();
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { value, done: finished } = await reader.read();
        if (finished) {
          end();
          controller.close();
        } else controller.enqueue(value);
      } catch (e) {
        end();
        controller.error(e);
      }
    },
    cancel(reason) {
      end();
      return reader.cancel(reason);
    },
  });
  return new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}

/** A JSON-RPC error in an HTTP answer, as the SDK's transport gives its own. */
function problem(status: number, message: string, code = -32000): Response {
  return Response.json({ jsonrpc: "2.0", id: null, error: { code, message } }, { status });
}
