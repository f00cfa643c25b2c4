/**
 * The web server's listener: a fetch-style handler (`Request` in, `Response`
 * out) served by `node:http`, whose parser keeps the bounds that `Deno.serve`
 * lacks. Measured with Deno 2.9: `Deno.serve` kept 2,000 idle connections,
 * a slow-header client and a body that never ends open for as long as they
 * lasted (no header, request or idle timeout), while `node:http` answers them
 * 408 after its timeouts and refuses large headers with 431 (DECISIONS.md,
 * "The web server's bounds").
 *
 * The bounds, each answered with a status and a JSON body:
 *
 * - at most {@linkcode HttpLimits.maxConnections} connections; one more
 *   closes the oldest connection that is between requests (idle, or still
 *   sending its headers) with 503, or is refused with 503 when every one is
 *   in a request, so idle connections never keep a request out;
 * - the headers within {@linkcode HttpLimits.headersTimeoutMs} of the
 *   connection or of the previous answer (408), at most
 *   {@linkcode HttpLimits.maxHeaderBytes} (431);
 * - the whole request, body included, within
 *   {@linkcode HttpLimits.requestTimeoutMs} (408);
 * - a connection idle between requests for
 *   {@linkcode HttpLimits.keepAliveTimeoutMs} is closed;
 * - what is not HTTP/1.1 gets 400.
 *
 * @module
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { Buffer } from "node:buffer";
import { Readable } from "node:stream";

/** The bounds of a listener. */
export interface HttpLimits {
  /** Connections open at once. */
  maxConnections: number;
  /** From a connection (or its previous answer) to the end of a request's headers, in ms. */
  headersTimeoutMs: number;
  /** From a connection (or its previous answer) to the end of a request's body, in ms. */
  requestTimeoutMs: number;
  /** How long a connection may wait between requests, in ms. */
  keepAliveTimeoutMs: number;
  /** The request line and headers, in bytes. */
  maxHeaderBytes: number;
}

/** The bounds of the host's web server (PROTOCOL 13.3). */
export const HTTP_LIMITS: Readonly<HttpLimits> = {
  maxConnections: 1024,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  maxHeaderBytes: 32 * 1024,
};

/** What a handler learns of the connection beside the request. */
export interface ServeInfo {
  /** The client's address (an IPv4 or IPv6 address, without the port). */
  remoteAddr: string;
}

/** A fetch-style handler. */
export type FetchHandler = (request: Request, info: ServeInfo) => Promise<Response>;

/** A listening server. */
export interface BoundedServer {
  readonly hostname: string;
  readonly port: number;
  /** Connections open now. */
  readonly connections: number;
  /** Connections closed or refused since the start because the server was full. */
  readonly shed: number;
  /** Stops listening and closes every connection. */
  close(): Promise<void>;
}

interface Tracked {
  socket: Socket;
  /** Requests of the connection whose answer has not ended. */
  busy: number;
  /** When the connection last became idle (or opened). */
  idleSince: number;
}

/** A raw answer for a socket that no request owns: a status and a JSON body, then the end. */
function rawAnswer(status: number, reason: string, message: string): string {
  const body = JSON.stringify({ error: message, status }) + "\n";
  return `HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json; charset=utf-8\r\n` +
    `content-length: ${new TextEncoder().encode(body).length}\r\nconnection: close\r\n` +
    (status === 503 ? "retry-after: 1\r\n" : "") + `\r\n${body}`;
}

/** The status, reason and message of a request the parser refused. */
function clientErrorAnswer(code: string | undefined, limits: HttpLimits): string {
  switch (code) {
    case "HPE_HEADER_OVERFLOW":
      return rawAnswer(
        431,
        "Request Header Fields Too Large",
        `the request's headers are over ${limits.maxHeaderBytes} bytes`,
      );
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return rawAnswer(
        408,
        "Request Timeout",
        `the request did not arrive whole within ${limits.requestTimeoutMs} ms ` +
          `(its headers within ${limits.headersTimeoutMs} ms)`,
      );
    default:
      return rawAnswer(400, "Bad Request", `not an HTTP/1.1 request (${code ?? "unreadable"})`);
  }
}

/**
 * Serves `handler` on `hostname:port` (0: any free port) within `limits`;
 * rejects when it cannot listen (the error's `code`: `EADDRINUSE`…).
 *
 * @example
 * ```ts
 * const server = await serveBounded(
 *   { hostname: "127.0.0.1", port: 0 },
 *   () => Promise.resolve(new Response("hello\n")),
 * );
 * console.log(await (await fetch(`http://127.0.0.1:${server.port}/`)).text());
 * await server.close();
 * ```
 */
export function serveBounded(
  options: { hostname: string; port: number; limits?: Partial<HttpLimits> },
  handler: FetchHandler,
): Promise<BoundedServer> {
  const limits: HttpLimits = { ...HTTP_LIMITS, ...options.limits };
  const tracked = new Map<Socket, Tracked>();
  let shed = 0;
  const server = createServer({
    // node wants the headers' time within the request's
    headersTimeout: Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs),
    requestTimeout: limits.requestTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
    maxHeaderSize: limits.maxHeaderBytes,
    // how often the timeouts are looked at (node's default: 30 s)
    connectionsCheckingInterval: Math.min(1000, limits.headersTimeoutMs),
  });

  const full = (socket: Socket) => {
    shed++;
    socket.end(rawAnswer(
      503,
      "Service Unavailable",
      `the server has ${limits.maxConnections} connections open, the most it keeps: try again`,
    ));
    socket.destroySoon?.();
  };

  server.on("connection", (socket: Socket) => {
    if (tracked.size >= limits.maxConnections) {
      // the oldest connection between requests makes room; one in a request is never cut
      let oldest: Tracked | undefined;
      for (const t of tracked.values()) {
        if (t.busy === 0 && (!oldest || t.idleSince < oldest.idleSince)) oldest = t;
      }
      if (!oldest) {
        full(socket);
        return;
      }
      tracked.delete(oldest.socket);
      full(oldest.socket);
    }
    tracked.set(socket, { socket, busy: 0, idleSince: performance.now() });
    socket.on("close", () => tracked.delete(socket));
  });

  server.on("clientError", (e: Error & { code?: string }, socket: Socket) => {
    if (socket.writable && e.code !== "ECONNRESET") {
      socket.end(clientErrorAnswer(e.code, limits));
    }
    socket.destroySoon?.();
  });

  server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    const t = tracked.get(req.socket as Socket);
    if (t) t.busy++;
    let done = false;
    const end = () => {
      if (done) return;
      done = true;
      if (t) {
        t.busy--;
        t.idleSince = performance.now();
      }
    };
    res.on("close", end);
    res.on("finish", end);
    answer(req, res, handler, options).catch(() => res.destroy());
  });

  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port, options.hostname, () => {
      server.off("error", reject);
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : options.port;
      resolve({
        hostname: options.hostname,
        port,
        get connections() {
          return tracked.size;
        },
        get shed() {
          return shed;
        },
        close() {
          return new Promise<void>((done) => {
            server.close(() => done());
            for (const t of tracked.values()) t.socket.destroy();
            tracked.clear();
          });
        },
      });
    });
  });
}

/** Turns the node request into a `Request`, calls the handler, and writes its `Response`. */
async function answer(
  req: IncomingMessage,
  res: ServerResponse,
  handler: FetchHandler,
  options: { hostname: string; port: number },
): Promise<void> {
  let request: Request;
  const aborted = new AbortController();
  res.on("close", () => {
    if (!res.writableFinished) aborted.abort();
  });
  try {
    const target = req.url ?? "/";
    if (!target.startsWith("/")) throw new Error(`the request target ${target} is not a path`);
    const headers = new Headers();
    for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
      headers.append(req.rawHeaders[i], req.rawHeaders[i + 1]);
    }
    const host = headers.get("host") ?? `${options.hostname}:${options.port}`;
    const url = new URL(target, `http://${host}`);
    const method = req.method ?? "GET";
    const body = method === "GET" || method === "HEAD"
      ? null
      : Readable.toWeb(req) as unknown as ReadableStream<Uint8Array>;
    request = new Request(url, {
      method,
      headers,
      body,
      signal: aborted.signal,
      ...(body ? { duplex: "half" } : {}),
    } as RequestInit);
  } catch (e) {
    const text = JSON.stringify({
      error: `a request that cannot be read: ${(e as Error).message}`,
      status: 400,
    }) + "\n";
    res.writeHead(400, {
      "content-type": "application/json; charset=utf-8",
      "content-length": String(Buffer.byteLength(text)),
      connection: "close",
    });
    res.end(text);
    return;
  }
  const response = await handler(request, { remoteAddr: req.socket.remoteAddress ?? "" });
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of response.headers) {
    if (name !== "set-cookie") out[name] = value;
  }
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) out["set-cookie"] = cookies;
  // answered before the body came whole (413, 401…): the rest is not waited for
  if (!req.complete) out["connection"] = "close";
  res.writeHead(response.status, response.statusText || undefined, out);
  if (response.body === null || req.method === "HEAD") {
    await response.body?.cancel().catch(() => {});
    res.end();
    return;
  }
  // the head goes now: a stream's first bytes may be long in coming (an event stream, a turn)
  res.flushHeaders();
  const reader = response.body.getReader();
  // the client went away: the body's source hears it (a turn, an event stream stops)
  res.on("close", () => {
    if (!res.writableFinished) reader.cancel().catch(() => {});
  });
  try {
    while (true) {
      const { value, done } = await reader.read();
      if (done) break;
      if (res.destroyed) return;
      if (!res.write(value)) {
        await new Promise<void>((resume) => {
          res.once("drain", resume);
          res.once("close", resume);
        });
      }
    }
    res.end();
  } catch {
    res.destroy();
  }
}
