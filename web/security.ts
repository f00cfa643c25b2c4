/**
 * Who may use the web server: the token (any user of the machine can reach
 * a port of loopback), the `Host` on loopback (against DNS rebinding), the
 * `Origin` of every request, and the
 * `x-sausage-session` header on each request that changes state. The rules
 * are in DECISIONS.md ("The web page").
 *
 * @module
 */
import { createHash, timingSafeEqual } from "node:crypto";
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

/**
 * Compares in a time that depends on neither where the two differ nor how
 * long the guess is: their SHA-256 digests, of equal length, compared by
 * `timingSafeEqual`.
 */
export function sameSecret(given: string, expected: string): boolean {
  const digest = (text: string) => createHash("sha256").update(text).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

/** How many wrong tokens an address may send before it is refused for a while. */
export interface FailureLimits {
  /** Wrong tokens in a window; the next is refused with 429. */
  max: number;
  /** The window, in ms, from the address's first wrong token. */
  windowMs: number;
  /** Addresses remembered at once; past that the oldest is forgotten. */
  addresses: number;
}

/** The web server's default: 20 wrong tokens a minute per address. */
export const TOKEN_FAILURES: Readonly<FailureLimits> = {
  max: 20,
  windowMs: 60_000,
  addresses: 10_000,
};

/** The wrong tokens of each address in its current window. */
export class FailureLimiter {
  readonly #limits: FailureLimits;
  /** Address → the window's start and count; a Map keeps the order of insertion, oldest first. */
  readonly #windows = new Map<string, { start: number; count: number }>();

  constructor(limits: Partial<FailureLimits> = {}) {
    this.#limits = { ...TOKEN_FAILURES, ...limits };
  }

  /** The limits in force. */
  get limits(): Readonly<FailureLimits> {
    return this.#limits;
  }

  /** Seconds until `address` may try again, or 0 when it may now. */
  retryAfter(address: string, now: number = Date.now()): number {
    const w = this.#windows.get(address);
    if (!w) return 0;
    const left = w.start + this.#limits.windowMs - now;
    if (left <= 0) {
      this.#windows.delete(address);
      return 0;
    }
    return w.count >= this.#limits.max ? Math.ceil(left / 1000) : 0;
  }

  /** Counts a wrong token of `address`. */
  fail(address: string, now: number = Date.now()): void {
    let w = this.#windows.get(address);
    if (!w || now - w.start >= this.#limits.windowMs) {
      this.#windows.delete(address);
      w = { start: now, count: 0 };
      this.#windows.set(address, w);
      while (this.#windows.size > this.#limits.addresses) {
        this.#windows.delete(this.#windows.keys().next().value!);
      }
    }
    w.count++;
  }
}

/** What the server checks; `token` undefined means none is needed. */
export interface Policy {
  token?: string;
  /** The cookie's name (default {@linkcode TOKEN_COOKIE}). */
  cookie?: string;
  /** The server listens on loopback only: the `Host` must name loopback too. */
  loopback: boolean;
  /** Wrong tokens counted per address (none: not limited). */
  failures?: FailureLimiter;
}

/** How a request passed: by the cookie, by `?token=` in its URL, or with no token needed. */
export type Pass = "cookie" | "query" | "none";

/**
 * Checks a request against the policy; throws an {@linkcode HttpError}
 * (401 without the token, 429 with `Retry-After` for a wrong token from an
 * `address` that sent too many wrong ones (the right token always passes), 403 for a foreign `Host` or
 * `Origin`, or a request that changes state without
 * {@linkcode SESSION_HEADER}).
 */
export function checkRequest(
  request: Request,
  url: URL,
  policy: Policy,
  kind: "page" | "mcp" = "page",
  address = "",
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
    const given = kind === "page" ? fromCookie ?? fromQuery ?? undefined : bearer;
    if (fromCookie !== undefined && sameSecret(fromCookie, policy.token)) pass = "cookie";
    else if (fromQuery !== null && sameSecret(fromQuery, policy.token)) pass = "query";
    else if (kind === "mcp" && bearer !== undefined && sameSecret(bearer, policy.token)) {
      pass = "none";
    } else {
      // a wrong token is a guess; a request without one is not. Past the limit a guess gets 429
      // and waits; the right token always passes, so that guesses from a shared address
      // (127.0.0.1 is every local user's) cannot lock the page's owner out
      const wait = given === undefined ? 0 : policy.failures?.retryAfter(address) ?? 0;
      if (wait > 0) {
        throw new HttpError(
          429,
          `too many wrong tokens from ${address}: try again in ${wait} s`,
          { "retry-after": String(wait) },
        );
      }
      if (given !== undefined) policy.failures?.fail(address);
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
