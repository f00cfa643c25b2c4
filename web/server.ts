/**
 * The host's HTTP server: the page at `/` (`web/assets/`) and its API, on a
 * {@linkcode HostView}. `sausage --headless WORLD --http [ADDR:]PORT` and
 * `sausage web` start it.
 *
 * ```text
 * GET  /                  the page (?token=… sets the cookie and leads to /)
 * GET  /assets/<file>     its scripts and styles (marked.js: the `marked` package's module)
 * GET  /history?session=  {"steps": [...]} of the agent's session
 * GET  /sessions          {"sessions": [...]}
 * POST /task              {"task", "session"?}: the turn as NDJSON (delta, step, done, failed)
 * GET  /events            server-sent events: processes, entry, graph
 * GET  /graph             {"svg", "plugins"}: graph.dot drawn, and graph.json's plugins
 * GET  /plugin?name=      the plugin's rpc.discover document
 * GET  /log?plugin=&pid=&grep=&limit=   core.log
 * GET  /processes         the processes that have not ended
 * POST /call              {"method", "params"?}: {"ok", "result"|"error"}
 * POST /stop              {"pid"}: core.stop
 * ```
 *
 * @module
 */
import { markedModule, WEB_ASSETS } from "../core/embedded.ts";
import type { HostView } from "../core/host_view.ts";
import { EventHub } from "./events.ts";
import { GraphDrawer } from "./graph.ts";
import { baseHeaders, errorResponse, HttpError, json, readJsonObject } from "./http.ts";
import { type BoundedServer, type HttpLimits, serveBounded, type ServeInfo } from "./listen.ts";
import {
  checkRequest,
  FailureLimiter,
  type FailureLimits,
  isLoopback,
  newToken,
  type Policy,
  TOKEN_COOKIE,
  tokenCookie,
} from "./security.ts";
import { TURN_LIMITS, type TurnLimits, turnStream } from "./turn.ts";

/** Where to listen. */
export interface HttpAddress {
  hostname: string;
  port: number;
}

/** A bad `--http` value. */
export class AddressError extends Error {
  override name = "AddressError";
}

/**
 * Parses `[ADDR:]PORT` (`8080`, `0.0.0.0:8080`, `[::1]:8080`); the address
 * defaults to 127.0.0.1. Throws an {@linkcode AddressError}.
 *
 * @example
 * ```ts
 * parseHttpAddress("8080"); // { hostname: "127.0.0.1", port: 8080 }
 * parseHttpAddress("0.0.0.0:80"); // { hostname: "0.0.0.0", port: 80 }
 * ```
 */
export function parseHttpAddress(text: string): HttpAddress {
  const match = /^(?:(\[[0-9a-fA-F:.]+\]|[^:\[\]]+):)?(\d+)$/.exec(text.trim());
  const port = Number(match?.[2]);
  if (!match || !Number.isInteger(port) || port > 65535) {
    throw new AddressError(
      `--http takes [ADDR:]PORT (for example 8080 or 0.0.0.0:8080), not "${text}"`,
    );
  }
  return { hostname: (match[1] ?? "127.0.0.1").replace(/^\[|\]$/g, ""), port };
}

/** Options of {@linkcode startWebServer}. */
export interface WebOptions extends HttpAddress {
  /** The token (default: a fresh one), on loopback too. */
  token?: string;
  /** Limits of a turn (tests shorten them). */
  turnLimits?: TurnLimits;
  /** The most event streams open at once. */
  maxEventStreams?: number;
  /** The listener's bounds (default `HTTP_LIMITS` of `listen.ts`; tests shorten them). */
  httpLimits?: Partial<HttpLimits>;
  /** Failed token attempts per address (default `TOKEN_FAILURES` of `security.ts`; tests lower them). */
  tokenFailures?: Partial<FailureLimits>;
  /** MCP over Streamable HTTP at `/mcp` (`mcp/http.ts`), with the same Host, Origin and token rules. */
  mcp?: { handle(request: Request): Promise<Response> };
}

/** A running server. */
export interface WebServer {
  /** The page's address with `?token=`: print it for the person. */
  readonly url: string;
  /** `http://host:port`, without the token. */
  readonly origin: string;
  readonly port: number;
  /** The token: `?token=` of the page's URL, `Authorization: Bearer` of an MCP client. */
  readonly token: string;
  /** The event streams open now. */
  readonly eventStreams: number;
  /** The HTTP connections open now. */
  readonly connections: number;
  /** Ends the streams and turns in flight (a turn gets `core.stop`), then stops listening. */
  close(): Promise<void>;
}

const TYPES: Record<string, string> = {
  html: "text/html; charset=utf-8",
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
  svg: "image/svg+xml",
};

/** The page allows only itself: no inline script, no other origin. */
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
  "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/** A session name as the agent takes it. */
const SESSION_NAME = /^[a-z0-9_-]{1,64}$/;

/** Starts the server; rejects with an {@linkcode AddressError} when it cannot listen. */
export async function startWebServer(view: HostView, options: WebOptions): Promise<WebServer> {
  const loopback = isLoopback(options.hostname);
  // a token on loopback too: any user of the machine can reach a port there
  const policy: Policy = {
    loopback,
    token: options.token ?? newToken(),
    failures: new FailureLimiter(options.tokenFailures),
  };
  const hub = new EventHub(view, { max: options.maxEventStreams });
  const graph = new GraphDrawer();
  const limits = options.turnLimits ?? TURN_LIMITS;
  const turns = new Set<AbortController>();
  const assets = new Map<string, Uint8Array>();

  const asset = async (name: string): Promise<Response> => {
    const ext = name.split(".").pop() ?? "";
    if (!/^[a-z0-9_-]+\.(html|js|css|svg)$/.test(name)) {
      return errorResponse(404, `no asset ${name}`);
    }
    let bytes = assets.get(name);
    if (!bytes) {
      try {
        // marked comes from its package, the very module the console uses
        bytes = await Deno.readFile(
          name === "marked.js" ? markedModule() : new URL(name, WEB_ASSETS),
        );
      } catch {
        return errorResponse(404, `no asset ${name}`);
      }
      assets.set(name, bytes);
    }
    const headers = baseHeaders({ "content-type": TYPES[ext], "cache-control": "no-cache" });
    if (ext === "html") headers.set("content-security-policy", CSP);
    return new Response(bytes as Uint8Array<ArrayBuffer>, { headers });
  };

  const call = async (
    method: string,
    params: Record<string, unknown>,
  ): Promise<Response> => {
    const response = await view.request(method, params);
    if (response.error) return json({ ok: false, error: response.error });
    return json({ ok: true, result: response.result ?? null });
  };

  const task = async (request: Request): Promise<Response> => {
    const body = await readJsonObject(request);
    if (typeof body.task !== "string" || body.task.trim() === "") {
      throw new HttpError(400, 'the body needs "task", the person\'s message: {"task": "hello"}');
    }
    const session = body.session;
    if (session !== undefined && (typeof session !== "string" || !SESSION_NAME.test(session))) {
      throw new HttpError(400, '"session" is a name of a-z, 0-9, - and _ (at most 64)');
    }
    const stop = new AbortController();
    turns.add(stop);
    const lines = turnStream(view, body.task, session as string | undefined, limits);
    // a dropped connection cancels the response body, and so the turn; so does close()
    const reader = lines.getReader();
    const cancel = () => reader.cancel().catch(() => {});
    stop.signal.addEventListener("abort", cancel);
    const stream = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { value, done } = await reader.read();
        if (done) {
          turns.delete(stop);
          controller.close();
        } else controller.enqueue(value);
      },
      cancel() {
        turns.delete(stop);
        cancel();
      },
    });
    return new Response(stream, {
      headers: baseHeaders({ "content-type": "application/x-ndjson; charset=utf-8" }),
    });
  };

  const query = (url: URL, names: string[]): Record<string, unknown> => {
    const out: Record<string, unknown> = {};
    for (const name of names) {
      const value = url.searchParams.get(name);
      if (value !== null && value !== "") out[name] = value;
    }
    return out;
  };

  const result = async (method: string, params: Record<string, unknown>): Promise<unknown> => {
    const response = await view.request(method, params);
    if (response.error) {
      const status = response.error.code === -32601 ? 404 : 400;
      throw new HttpError(status, `${method}: ${response.error.message}`);
    }
    return response.result;
  };

  const route = async (request: Request, url: URL): Promise<Response> => {
    const { pathname } = url;
    const method = request.method;
    const only = (allowed: string) => {
      if (method !== allowed && !(allowed === "GET" && method === "HEAD")) {
        throw new HttpError(405, `${pathname} takes ${allowed}, not ${method}`, {
          allow: allowed,
        });
      }
    };
    if (pathname === "/" || pathname === "/index.html") {
      only("GET");
      return await asset("index.html");
    }
    if (pathname.startsWith("/assets/")) {
      only("GET");
      return await asset(pathname.slice("/assets/".length));
    }
    switch (pathname) {
      case "/history": {
        only("GET");
        const params = query(url, ["session"]);
        const steps = await result("agent.history", params);
        return json({ steps });
      }
      case "/sessions":
        only("GET");
        return json({ sessions: await result("agent.sessions", {}) });
      case "/task":
        only("POST");
        return await task(request);
      case "/events":
        only("GET");
        return hub.open();
      case "/graph":
        only("GET");
        return json(await graph.answer(view));
      case "/plugin": {
        only("GET");
        const name = url.searchParams.get("name") ?? "";
        if (!(await view.plugins()).includes(name)) {
          throw new HttpError(404, `no plugin "${name}" in the world`);
        }
        const path = `/proc/core/plugins/${name}/discover.json`;
        const read = () => view.read(path, 16 * 1024 * 1024);
        const file = await read().catch(async () => {
          await view.discover(name).catch(() => {});
          return await read().catch(() => null);
        });
        if (!file) throw new HttpError(404, `${name} has no rpc.discover document yet`);
        return json(JSON.parse(new TextDecoder().decode(file.bytes)));
      }
      case "/log": {
        only("GET");
        const params = query(url, ["plugin", "pid", "grep", "since"]);
        const limit = url.searchParams.get("limit");
        if (limit !== null) params.limit = Number(limit);
        return json(await result("core.log", params));
      }
      case "/processes":
        only("GET");
        return json({ processes: await view.processes() });
      case "/info":
        only("GET");
        return json(view.info);
      case "/call": {
        only("POST");
        const body = await readJsonObject(request);
        if (typeof body.method !== "string" || body.method === "") {
          throw new HttpError(
            400,
            'the body needs "method": {"method": "notes.list", "params": {}}',
          );
        }
        const params = body.params ?? {};
        if (typeof params !== "object" || params === null || Array.isArray(params)) {
          throw new HttpError(400, '"params" must be a JSON object');
        }
        return await call(body.method, params as Record<string, unknown>);
      }
      case "/stop": {
        only("POST");
        const body = await readJsonObject(request);
        if (typeof body.pid !== "string" || body.pid === "") {
          throw new HttpError(400, 'the body needs "pid", the process to stop: {"pid": "…"}');
        }
        return await call("core.stop", { pid: body.pid });
      }
    }
    throw new HttpError(
      404,
      `no ${pathname} here: the page is at /, the API at /task, /history, /events, /graph, /log, /call, /stop`,
    );
  };

  const handler = async (request: Request, info: ServeInfo): Promise<Response> => {
    const url = new URL(request.url);
    try {
      if (url.pathname === "/mcp") {
        checkRequest(request, url, policy, "mcp", info.remoteAddr);
        if (!options.mcp) throw new HttpError(404, "this server has no MCP endpoint");
        return await options.mcp.handle(request);
      }
      const pass = checkRequest(request, url, policy, "page", info.remoteAddr);
      if (pass === "query" && request.method === "GET" && url.pathname === "/") {
        // the token moves from the URL to the cookie, and out of the address bar
        return new Response(null, {
          status: 303,
          headers: baseHeaders({
            location: "/",
            "set-cookie": tokenCookie(policy.token!, policy.cookie),
          }),
        });
      }
      return await route(request, url);
    } catch (e) {
      if (e instanceof HttpError) return errorResponse(e.status, e.message, e.headers);
      return errorResponse(500, `the server failed: ${(e as Error).message}`);
    }
  };

  let server: BoundedServer;
  try {
    server = await serveBounded(
      { hostname: options.hostname, port: options.port, limits: options.httpLimits },
      handler,
    );
  } catch (e) {
    const why = (e as { code?: string }).code === "EADDRINUSE"
      ? "the address is in use: choose another port with --http [ADDR:]PORT"
      : (e as Error).message;
    throw new AddressError(`cannot listen on ${options.hostname}:${options.port}: ${why}`);
  }
  const port = server.port;
  policy.cookie = `${TOKEN_COOKIE}_${port}`;
  // on every address, the URL names this machine, as Jupyter's does
  const everywhere = options.hostname === "0.0.0.0" || options.hostname === "::";
  const name = everywhere ? Deno.hostname() : options.hostname;
  const shown = name.includes(":") ? `[${name}]` : name;
  const origin = `http://${shown}:${port}`;
  return {
    url: `${origin}/?token=${policy.token}`,
    origin,
    port,
    token: policy.token!,
    get eventStreams() {
      return hub.size;
    },
    get connections() {
      return server.connections;
    },
    async close() {
      hub.close();
      for (const t of turns) t.abort();
      turns.clear();
      await server.close();
    },
  };
}
