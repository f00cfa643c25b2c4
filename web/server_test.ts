import assert from "node:assert/strict";
import { AddressError, parseHttpAddress } from "./server.ts";

Deno.test("--http takes [ADDR:]PORT; the address defaults to loopback", () => {
  assert.deepEqual(parseHttpAddress("8080"), { hostname: "127.0.0.1", port: 8080 });
  assert.deepEqual(parseHttpAddress("0.0.0.0:80"), { hostname: "0.0.0.0", port: 80 });
  assert.deepEqual(parseHttpAddress("[::1]:9000"), { hostname: "::1", port: 9000 });
  assert.deepEqual(parseHttpAddress("localhost:0"), { hostname: "localhost", port: 0 });
  for (const bad of ["", "http", "70000", "a:b:c", "host:", ":x", "::1:80"]) {
    assert.throws(() => parseHttpAddress(bad), AddressError, bad);
  }
});
