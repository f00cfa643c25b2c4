import assert from "node:assert/strict";
import { DEFAULT_TIMEOUT_SECONDS, parseServers } from "./config.ts";

Deno.test("mcp_servers: command and url entries, with their defaults", () => {
  const { servers, problems } = parseServers(`
api: openai-chat-completions
mcp_servers:
  files:
    command: npx
    args: [-y, "@modelcontextprotocol/server-filesystem", 7]
    env: {LOG: debug, LEVEL: 2}
    cwd: /srv
  search:
    url: https://search.example/mcp
    headers: {authorization: Bearer x}
    timeout_seconds: 20
`);
  assert.deepEqual(problems, []);
  assert.deepEqual(servers.get("files"), {
    kind: "command",
    command: "npx",
    args: ["-y", "@modelcontextprotocol/server-filesystem", "7"],
    env: { LOG: "debug", LEVEL: "2" },
    cwd: "/srv",
    timeoutSeconds: DEFAULT_TIMEOUT_SECONDS,
  });
  assert.deepEqual(servers.get("search"), {
    kind: "url",
    url: "https://search.example/mcp",
    headers: { authorization: "Bearer x" },
    timeoutSeconds: 20,
  });
});

Deno.test("mcp_servers: no section, an empty one, and a file that is not YAML", () => {
  assert.equal(parseServers("api: x\n").servers.size, 0);
  assert.deepEqual(parseServers("mcp_servers:\n").problems, []);
  assert.match(parseServers("mcp_servers: [a, b]\n").problems[0], /must map names to servers/);
  assert.match(parseServers("a: [\n").problems[0], /not valid YAML/);
});

Deno.test("mcp_servers: each wrong entry is one problem that names it; the others stand", () => {
  const { servers, problems } = parseServers(`
mcp_servers:
  ok: {command: x}
  both: {command: x, url: "http://a"}
  neither: {args: [a]}
  Upper: {command: x}
  typo: {command: x, arg: [a]}
  ftp: {url: "ftp://a"}
  slow: {command: x, timeout_seconds: 0}
  argv: {command: x, args: "a b"}
  blank: {command: "  "}
`);
  assert.deepEqual([...servers.keys()], ["ok"]);
  const expected = [
    /mcp_servers\.both .*exactly one of `command`/,
    /mcp_servers\.neither .*exactly one of/,
    /mcp_servers\.Upper .*lowercase letters/,
    /mcp_servers\.typo .*unknown field `arg`: a command server has command, args, env/,
    /mcp_servers\.ftp .*http:\/\/ or https:\/\/, not ftp:/,
    /mcp_servers\.slow .*timeout_seconds must be a whole number/,
    /mcp_servers\.argv .*args must be a list of strings/,
    /mcp_servers\.blank .*command must be a non-empty string/,
  ];
  assert.equal(problems.length, expected.length, problems.join("\n"));
  expected.forEach((re, i) => assert.match(problems[i], re));
});
