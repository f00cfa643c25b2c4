import assert from "node:assert/strict";
import { HttpError } from "./http.ts";
import {
  checkRequest,
  cookieValue,
  FailureLimiter,
  isLoopback,
  newToken,
  type Policy,
  sameSecret,
  SESSION_HEADER,
  tokenCookie,
} from "./security.ts";

function check(
  url: string,
  policy: Policy,
  init: RequestInit & { headers?: Record<string, string> } = {},
): string {
  const request = new Request(url, init);
  try {
    return checkRequest(request, new URL(url), policy);
  } catch (e) {
    assert.ok(e instanceof HttpError);
    return `${e.status} ${e.message}`;
  }
}

Deno.test("loopback names", () => {
  for (const name of ["127.0.0.1", "127.1.2.3", "localhost", "app.localhost", "::1", "[::1]"]) {
    assert.ok(isLoopback(name), name);
  }
  for (const name of ["0.0.0.0", "192.168.1.2", "example.com", "localhost.example.com", "::"]) {
    assert.ok(!isLoopback(name), name);
  }
});

Deno.test("tokens are fresh and the cookie keeps one, HttpOnly and SameSite=Strict", () => {
  const a = newToken();
  assert.match(a, /^[0-9a-f]{48}$/);
  assert.notEqual(a, newToken());
  assert.equal(tokenCookie("t"), "sausage_token=t; Path=/; HttpOnly; SameSite=Strict");
  assert.equal(cookieValue("a=1; sausage_token=xyz; b=2", "sausage_token"), "xyz");
  assert.equal(cookieValue(null, "sausage_token"), undefined);
  assert.equal(cookieValue("sausage_tokens=1", "sausage_token"), undefined);
});

Deno.test("on loopback: the Host, the Origin and the header decide", () => {
  const local: Policy = { loopback: true };
  assert.equal(check("http://127.0.0.1:8080/", local), "none");
  assert.equal(check("http://localhost:8080/history", local), "none");
  assert.match(check("http://evil.example:8080/", local), /^403 the Host header/);
  const post = { method: "POST", headers: { [SESSION_HEADER]: "1" } };
  assert.equal(check("http://127.0.0.1:8080/task", local, post), "none");
  assert.match(check("http://127.0.0.1:8080/task", local, { method: "POST" }), /^403 .*x-sausage/);
  assert.match(
    check("http://127.0.0.1:8080/task", local, {
      method: "POST",
      headers: { [SESSION_HEADER]: "1", origin: "http://127.0.0.1:9999" },
    }),
    /^403 a request from another origin/,
  );
  assert.equal(
    check("http://127.0.0.1:8080/task", local, {
      method: "POST",
      headers: { [SESSION_HEADER]: "1", origin: "http://127.0.0.1:8080" },
    }),
    "none",
  );
});

Deno.test("off loopback: the token, by cookie or query; the header is still needed", () => {
  const open: Policy = { loopback: false, token: "secret" };
  assert.match(check("http://10.0.0.2:80/", open), /^401 /);
  assert.match(check("http://10.0.0.2:80/?token=wrong", open), /^401 /);
  assert.equal(check("http://10.0.0.2:80/?token=secret", open), "query");
  assert.equal(
    check("http://10.0.0.2:80/", open, { headers: { cookie: "sausage_token=secret" } }),
    "cookie",
  );
  assert.match(
    check("http://10.0.0.2:80/call", open, {
      method: "POST",
      headers: { cookie: "sausage_token=secret" },
    }),
    /^403 /,
  );
});

Deno.test("a token is compared by its digest: any length, any difference, the same work", () => {
  const token = newToken();
  assert.ok(sameSecret(token, token));
  for (
    const guess of [
      "",
      "a",
      token.slice(0, -1),
      token + "0",
      token.replace(/.$/, "x"),
      "é".repeat(48),
    ]
  ) {
    assert.ok(!sameSecret(guess, token), guess);
  }
});

Deno.test("wrong tokens from one address are refused with 429 and Retry-After; others pass; the window ends", () => {
  const token = newToken();
  const policy: Policy = {
    loopback: true,
    token,
    failures: new FailureLimiter({ max: 3, windowMs: 60_000 }),
  };
  const from = (address: string, t: string, kind: "page" | "mcp" = "page") => {
    const url = `http://127.0.0.1:8080/sessions?token=${t}`;
    const request = new Request(url, { headers: { authorization: `Bearer ${t}` } });
    try {
      return checkRequest(request, new URL(url), policy, kind, address);
    } catch (e) {
      assert.ok(e instanceof HttpError);
      return e;
    }
  };
  for (let i = 0; i < 3; i++) assert.equal((from("10.0.0.1", "wrong") as HttpError).status, 401);
  const limited = from("10.0.0.1", "wrong", "mcp") as HttpError;
  assert.equal(limited.status, 429);
  assert.match(limited.message, /too many wrong tokens from 10\.0\.0\.1: try again in \d+ s/);
  const retry = Number(new Headers(limited.headers).get("retry-after"));
  assert.ok(retry > 0 && retry <= 60, String(retry));
  // while it waits, its guesses keep getting 429, but the right token passes: a shared address
  // (127.0.0.1) cannot be locked out by another user's guesses
  assert.equal((from("10.0.0.1", "wrong again") as HttpError).status, 429);
  assert.equal(from("10.0.0.1", token), "query");
  // another address is not held up, and a request without a token is no guess
  assert.equal(from("10.0.0.2", token), "query");
  const bare = new Request("http://127.0.0.1:8080/");
  for (let i = 0; i < 10; i++) {
    try {
      checkRequest(bare, new URL(bare.url), policy, "page", "10.0.0.3");
    } catch (e) {
      assert.equal((e as HttpError).status, 401);
    }
  }
  assert.equal(from("10.0.0.3", token), "query");
  // the window ends
  const limiter = new FailureLimiter({ max: 1, windowMs: 1000 });
  limiter.fail("a", 0);
  assert.equal(limiter.retryAfter("a", 500), 1);
  assert.equal(limiter.retryAfter("a", 1000), 0);
  // it remembers a bounded number of addresses, forgetting the oldest
  const few = new FailureLimiter({ max: 1, windowMs: 60_000, addresses: 2 });
  for (const a of ["x", "y", "z"]) few.fail(a, 0);
  assert.equal(few.retryAfter("x", 1), 0);
  assert.equal(few.retryAfter("z", 1), 60);
});
