import assert from "node:assert/strict";
import { HttpError } from "./http.ts";
import {
  checkRequest,
  cookieValue,
  isLoopback,
  newToken,
  type Policy,
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
