/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`,
 * server mode) against the world's Streamable HTTP endpoint (`mcp/http.ts`,
 * with its check of Host and Origin), over a world with
 * the plugin `test` whose methods are the tools the suite calls
 * (`test_simple_text`, `test_error_handling`, `test_tool_with_progress`).
 *
 * Every scenario passes except the ones that do not apply to a Sausage
 * world, each listed below with the reason.
 */
import assert from "node:assert/strict";
import { LocalHostView } from "../core/host_view.ts";
import { McpHttp } from "../mcp/http.ts";
import { testPlugin } from "./setup.ts";
import { startWorld } from "./world.ts";

const CONFIG = new URL("../deno.json", import.meta.url).pathname;
const SUITE = "npm:@modelcontextprotocol/conformance@0.1.16";

/** Scenarios that do not apply to a world, and why. */
const NOT_APPLICABLE: Record<string, string> = {
  "tools-call-image": "a plugin's result is JSON: tools give text and structuredContent, no images",
  "tools-call-audio": "a plugin's result is JSON: no audio content",
  "tools-call-embedded-resource": "a plugin's result is JSON: no embedded resources",
  "tools-call-mixed-content": "a plugin's result is JSON: one text block and structuredContent",
  "tools-call-with-logging":
    "a plugin logs to its stderr, which goes to the journal (the core_log tool reads it), not to the client",
  "tools-call-sampling": "a plugin cannot ask the client's model: its calls go to the world",
  "tools-call-elicitation": "a plugin cannot ask the client's user for input",
  "elicitation-sep1034-defaults": "no elicitation (as above)",
  "elicitation-sep1330-enums": "no elicitation (as above)",
  "resources-read-text":
    "the suite's fixture URI test://static-text: resources are sausage:///<path>",
  "resources-read-binary": "the suite's fixture URI test://static-binary",
  "resources-templates-read": "the suite's fixture template test://template/{id}/data",
  "resources-subscribe":
    "the suite's fixture URI test://watched-resource (sausage:/// paths subscribe: mcp_http_test)",
  "resources-unsubscribe": "the same fixture URI",
  "prompts-list": "a world has no prompts",
  "prompts-get-simple": "a world has no prompts",
  "prompts-get-with-args": "a world has no prompts",
  "prompts-get-embedded-resource": "a world has no prompts",
  "prompts-get-with-image": "a world has no prompts",
};

Deno.test({
  name: "the MCP conformance suite passes every scenario that applies to a world",
  // the suite's own HTTP client can leave a keep-alive socket open for a moment after it exits
  sanitizeResources: false,
  fn: async () => {
    await using w = await startWorld({
      wasm: { test: await Deno.readFile(await testPlugin("conformance")) },
    });
    // the suite sends no token: the handler alone, with its own check of Host and Origin
    // (the web server's /mcp adds the token: mcp_http_test)
    const mcp = new McpHttp(() => new LocalHostView(w.host), { loopbackOnly: true });
    const listener = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      (request) => mcp.handle(request),
    );
    const server = { origin: `http://127.0.0.1:${listener.addr.port}` };
    const cwd = await Deno.makeTempDir({ prefix: "sausage-conformance-" });
    try {
      const out = await new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", "--config", CONFIG, SUITE, "server", "--url", `${server.origin}/mcp`],
        cwd,
        env: { NO_COLOR: "1" },
        stdout: "piped",
        stderr: "piped",
      }).output();
      const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
      const summary = text.slice(text.indexOf("=== SUMMARY ==="));
      const results = new Map<string, boolean>();
      for (const m of summary.matchAll(/^([✓✗]) ([a-z0-9-]+): (\d+) passed, (\d+) failed/gmu)) {
        results.set(m[2], m[1] === "✓");
      }
      assert.ok(results.size >= 30, `the suite ran its scenarios:\n${text.slice(-3000)}`);
      const failed = [...results].filter(([, ok]) => !ok).map(([name]) => name);
      const unexpected = failed.filter((name) => !(name in NOT_APPLICABLE));
      assert.deepEqual(unexpected, [], `scenarios that should pass failed:\n${summary}`);
      const stale = Object.keys(NOT_APPLICABLE).filter((name) => results.get(name) === true);
      assert.deepEqual(stale, [], "scenarios listed as not applicable now pass: take them out");
      assert.ok(results.get("dns-rebinding-protection"), "a foreign Host is refused");
      assert.ok(results.get("tools-call-with-progress"));
    } finally {
      await mcp.close();
      await listener.shutdown();
      await Deno.remove(cwd, { recursive: true }).catch(() => {});
    }
  },
});
