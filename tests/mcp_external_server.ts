/**
 * A scripted external MCP server for the tests of the native plugin `mcp`,
 * made with the official SDK's `McpServer`: on stdin and stdout, or with
 * `--http PORT` over Streamable HTTP (stateless, one transport a request).
 *
 * Tools: `echo {text}` (text and structuredContent), `fail` (isError),
 * `slow {steps}` (a progress notification a step, every 50 ms; writes the
 * file `$CANCELLED_FILE` when the client cancels it), `hang` (answers only a
 * cancel, without progress), and `many_<n>` for
 * `--tools N`. `--crash` writes to stderr and exits before initialize.
 */
// @ts-types="@modelcontextprotocol/sdk/server/mcp"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
// @ts-types="@modelcontextprotocol/sdk/server/stdio"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
// @ts-types="@modelcontextprotocol/sdk/server/webStandardStreamableHttp"
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { parseArgs } from "node:util";
import { z } from "zod";

const { values } = parseArgs({
  args: Deno.args,
  options: { http: { type: "string" }, tools: { type: "string" }, crash: { type: "boolean" } },
});
if (values.crash) {
  console.error("scripted server: cannot open its database (on purpose)");
  Deno.exit(3);
}

function server(): McpServer {
  const s = new McpServer({ name: "scripted", version: "1.2.3" });
  s.registerTool("echo", {
    description: "Gives the text back",
    inputSchema: { text: z.string() },
    outputSchema: { echoed: z.string() },
  }, ({ text }) => ({
    content: [{ type: "text", text }],
    structuredContent: { echoed: text },
  }));
  s.registerTool("fail", { description: "Always fails" }, () => ({
    content: [{ type: "text", text: "the disk is on fire" }],
    isError: true,
  }));
  s.registerTool(
    "slow",
    { description: "Takes steps of 50 ms", inputSchema: { steps: z.number() } },
    async ({ steps }, extra) => {
      for (let i = 0; i < steps; i++) {
        if (extra.signal.aborted) {
          const file = Deno.env.get("CANCELLED_FILE");
          if (file) await Deno.writeTextFile(file, `cancelled at step ${i}`);
          return { content: [{ type: "text", text: "cancelled" }] };
        }
        const token = extra._meta?.progressToken;
        if (token !== undefined) {
          await extra.sendNotification({
            method: "notifications/progress",
            params: { progressToken: token, progress: i + 1, total: steps },
          });
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      return { content: [{ type: "text", text: `took ${steps} steps` }] };
    },
  );
  s.registerTool(
    "hang",
    { description: "Never answers, and sends no progress" },
    (extra) =>
      new Promise((resolve) => {
        extra.signal.addEventListener("abort", () => {
          const file = Deno.env.get("CANCELLED_FILE");
          if (file) Deno.writeTextFileSync(file, "hang cancelled");
          resolve({ content: [{ type: "text", text: "cancelled" }] });
        });
      }),
  );
  for (let i = 0; i < Number(values.tools ?? 0); i++) {
    s.registerTool(`many_${i}`, { description: `tool ${i}` }, () => ({
      content: [{ type: "text", text: String(i) }],
    }));
  }
  return s;
}

if (values.http) {
  Deno.serve(
    { port: Number(values.http), hostname: "127.0.0.1", onListen: () => {} },
    async (req) => {
      const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
      });
      await server().connect(transport);
      return transport.handleRequest(req);
    },
  );
} else {
  await server().connect(new StdioServerTransport());
}
