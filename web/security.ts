/**
 * Who may use the web server: the token (any user of the machine can reach
 * a port of loopback), the `Host` on loopback (against DNS rebinding), the
 * `Origin` of every request, and the
 * `x-sausage-session` header on each request that changes state. The rules
 * are in DECISIONS.md ("The web page").
 *
 * @module
 */
import { HttpError } from "./http.ts";

/** The header without which a request that changes state is refused (403). */
export const SESSION_HEADER = "x-sausage-session";

/**
 * The cookie that keeps the token after the first visit; a server names it
 * `sausage_token_<port>`, since browsers share cookies across the ports of
 * a host.
 */
export const TOKEN_COOKIE = "sausage_token";

/** Whether an address (or a `Host` header's name) is this machine's loopback. */
export function isLoopback(hostname: string): boolean {
  const name = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  return name === "localhost" || name.endsWith(".localhost") || name === "::1" ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name);
}

/** A fresh token: 24 random bytes as hex. */
export function newToken(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(24));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The `Set-Cookie` value that keeps `token`: HttpOnly, SameSite=Strict, the whole site. */
export function tokenCookie(token: string, name: string = TOKEN_COOKIE): string {
  return `${name}=${token}; Path=/; HttpOnly; SameSite=Strict`;
}

/** The value of a cookie in a `Cookie` header, or undefined. */
export function cookieValue(header: string | null, name: string): string | undefined {
  for (const part of (header ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

/** Compares in time that does not depend on where the two differ. */
function sameText(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/** What the server checks; `token` undefined means none is needed. */
export interface Policy {
  token?: string;
  /** The cookie's name (default {@linkcode TOKEN_COOKIE}). */
  cookie?: string;
  /** The server listens on loopback only: the `Host` must name loopback too. */
  loopback: boolean;
}

/** How a request passed: by the cookie, by `?token=` in its URL, or with no token needed. */
export type Pass = "cookie" | "query" | "none";

/**
 * Checks a request against the policy; throws an {@linkcode HttpError}
 * (401 without the token, 403 for a foreign `Host` or `Origin`, or a request
 * that changes state without {@linkcode SESSION_HEADER}).
 */
export function checkRequest(
  request: Request,
  url: URL,
  policy: Policy,
  kind: "page" | "mcp" = "page",
): Pass {
  const host = request.headers.get("host") ?? url.host;
  if (policy.loopback && !isLoopback(host.replace(/:\d+$/, ""))) {
    throw new HttpError(
      403,
      `the Host header (${host}) is not this machine's loopback: open the page at the address sausage printed (http://127.0.0.1:…/)`,
    );
  }
  const origin = request.headers.get("origin");
  if (origin !== null && origin !== `${url.protocol}//${host}`) {
    throw new HttpError(
      403,
      `a request from another origin (${origin}) is refused: use the page the host serves`,
    );
  }
  let pass: Pass = "none";
  if (policy.token !== undefined) {
    // an MCP client is no browser: only a bearer, never a token in a URL that lands in logs
    const fromCookie = kind === "page"
      ? cookieValue(request.headers.get("cookie"), policy.cookie ?? TOKEN_COOKIE)
      : undefined;
    const fromQuery = kind === "page" ? url.searchParams.get("token") : null;
    const bearer = request.headers.get("authorization")?.match(/^Bearer\s+(\S+)$/i)?.[1];
    if (fromCookie !== undefined && sameText(fromCookie, policy.token)) pass = "cookie";
    else if (fromQuery !== null && sameText(fromQuery, policy.token)) pass = "query";
    else if (kind === "mcp" && bearer !== undefined && sameText(bearer, policy.token)) {
      pass = "none";
    } else {
      throw new HttpError(
        401,
        kind === "mcp"
          ? "this server needs its token: send it as Authorization: Bearer <token> (sausage printed it at start)"
          : "this server needs its token: open the URL that sausage printed at start (…/?token=…)",
      );
    }
  }
  // MCP's POSTs are JSON, which a browser cannot send cross-origin without a preflight
  const changesState = request.method !== "GET" && request.method !== "HEAD" && kind === "page";
  if (changesState && !request.headers.has(SESSION_HEADER)) {
    throw new HttpError(
      403,
      `a ${request.method} needs the header ${SESSION_HEADER} (the page sends it; a cross-origin form cannot)`,
    );
  }
  return pass;
}
