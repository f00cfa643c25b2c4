/**
 * What the MCP server adds to a call: `tools/call` of `probe_echo` from the
 * SDK's client against the same `probe.echo` through the host view the
 * server uses, alternated call by call so that both see the same machine.
 * Client and server speak over in-process byte streams with the server's
 * own stdio framing, so the figure counts the SDK on both sides, the
 * framing, the argument check and the tool lookup; not the OS pipe of
 * `sausage mcp`. Then the same through `sausage mcp` run as a subprocess
 * (its own host), against `probe.echo` through that host's control endpoint:
 * both cross a process boundary, so the difference is what MCP over stdio
 * adds to a front end's call. Also: `tools/list` for a world of 50 plugins.
 *
 * @module
 */
// @ts-types="@modelcontextprotocol/sdk/client/index"
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { jsonSchemaValidator } from "../../core/mcp_servers/validator.ts";
// @ts-types="@modelcontextprotocol/sdk/client/stdio"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { join } from "node:path";
import { ControlClient } from "../../core/control_client.ts";
import { LocalHostView } from "../../core/host_view.ts";
import { createMcpServer, type SausageMcpServer } from "../../mcp/server.ts";
import { bytePipe, StdioTransport } from "../../mcp/stdio.ts";
import { testPlugin } from "../../tests/setup.ts";
import type { Figure } from "../figures.ts";
import {
  benchWorld,
  CallFailed,
  createWorld,
  removeWorld,
  REPO_ROOT,
  TEST_CACHE_DIR,
} from "../fixture.ts";
import { pick, type Section } from "../section.ts";
import { median, summarize } from "../stats.ts";

/** The goal: MCP adds at most this to a call, in milliseconds. */
export const MCP_OVERHEAD_GOAL_MS = 0.5;

/** Plugins in the world of the `tools/list` figure, and methods of each. */
const PLUGINS = 50;
const METHODS = 10;

/** A server and a client on two in-process byte streams. */
async function connected(view: LocalHostView): Promise<{
  client: Client;
  server: SausageMcpServer;
  close(): Promise<void>;
}> {
  const [clientEnd, serverEnd] = bytePipe();
  const server = createMcpServer(view);
  await server.connect(new StdioTransport(serverEnd, serverEnd));
  const client = new Client({ name: "bench", version: "1.0.0" }, {
    jsonSchemaValidator: jsonSchemaValidator(),
  });
  await client.connect(new StdioTransport(clientEnd, clientEnd));
  return {
    client,
    server,
    async close() {
      await client.close();
      await server.close();
    },
  };
}

/**
 * Times `a` and `b` one after the other, `a` first in even rounds and `b`
 * first in odd ones: the end of a call's process (its journal lines, its
 * worker's bookkeeping) overlaps the next call, and must not be charged to
 * one side only.
 */
async function pair(
  round: number,
  a: () => Promise<void>,
  b: () => Promise<void>,
): Promise<[number, number]> {
  const time = async (f: () => Promise<void>) => {
    const t = performance.now();
    await f();
    return performance.now() - t;
  };
  if (round % 2 === 0) {
    const ta = await time(a);
    return [ta, await time(b)];
  }
  const tb = await time(b);
  return [await time(a), tb];
}

async function direct1(call: Promise<{ error?: { message: string } }>): Promise<void> {
  const response = await call;
  if (response.error) throw new CallFailed(`probe.echo: ${response.error.message}`);
}

async function tool1(call: Promise<Record<string, unknown>>): Promise<void> {
  const result = await call;
  if (result.isError) throw new CallFailed(`probe_echo: ${JSON.stringify(result.content)}`);
}

export const mcp: Section = {
  name: "mcp",
  group: "host",
  summary: "a tools/call through the MCP server against the same call through the host view",
  async run(ctx) {
    const rounds = pick(ctx, 300, 60);
    const warmup = pick(ctx, 30, 10);
    const figures: Figure[] = [];
    {
      // each call links its instance at its spawn: an instance linked ahead would be ready for
      // one call of a pair and not the other, depending on their order
      await using w = await benchWorld({ probe: "probe" }, { prepareAhead: false });
      await w.host.discovered;
      const view = new LocalHostView(w.host);
      const { client, close } = await connected(view);
      try {
        await client.listTools();
        const direct: number[] = [];
        const through: number[] = [];
        ctx.progress(`mcp: ${rounds} calls each way after ${warmup} of warm-up`);
        for (let i = 0; i < warmup + rounds; i++) {
          const [a, b] = await pair(
            i,
            () => direct1(view.request("probe.echo", {})),
            () => tool1(client.callTool({ name: "probe_echo", arguments: {} })),
          );
          if (i >= warmup) {
            direct.push(a);
            through.push(b);
          }
        }
        const differences = through.map((b, i) => b - direct[i]);
        figures.push(
          {
            name: "mcp.host_view",
            label: "probe.echo through the host view",
            unit: "ms",
            median: median(direct),
            p99: summarize(direct).p99,
            runs: direct.length,
            warmup,
            samples: direct,
          },
          {
            name: "mcp.tools_call",
            label: "tools/call probe_echo through the MCP server",
            unit: "ms",
            median: median(through),
            p99: summarize(through).p99,
            runs: through.length,
            warmup,
            samples: through,
          },
          {
            name: "mcp.overhead",
            label: "  added by MCP (median of pair differences)",
            unit: "ms",
            median: median(differences),
            runs: differences.length,
            warmup,
            goal: { op: "<=", value: MCP_OVERHEAD_GOAL_MS },
            method: "the two calls alternate, each first in every other pair; the median of " +
              "each pair's difference",
            samples: differences,
          },
        );
      } finally {
        await close();
        await view.close();
      }
    }
    {
      const root = await createWorld({ probe: "probe" });
      const transport = new StdioClientTransport({
        command: Deno.execPath(),
        args: [
          "run",
          "-A",
          "--unstable-worker-options",
          join(REPO_ROOT, "main.ts"),
          "mcp",
          root,
          "--cache-dir",
          TEST_CACHE_DIR,
        ],
        env: Deno.env.toObject(),
        stderr: "ignore",
      });
      const client = new Client({ name: "bench", version: "1.0.0" }, {
        jsonSchemaValidator: jsonSchemaValidator(),
      });
      let remote: ControlClient | null = null;
      try {
        await client.connect(transport);
        await client.listTools();
        // the host of `sausage mcp` listens before it serves the client
        remote = await ControlClient.connect(root);
        if (!remote) throw new Error("the host of sausage mcp has no control endpoint");
        const control: number[] = [];
        const stdio: number[] = [];
        ctx.progress(`mcp: ${rounds} calls each way through sausage mcp and its endpoint`);
        for (let i = 0; i < warmup + rounds; i++) {
          const [a, b] = await pair(
            i,
            () => direct1(remote!.request("probe.echo", {})),
            () => tool1(client.callTool({ name: "probe_echo", arguments: {} })),
          );
          if (i >= warmup) {
            control.push(a);
            stdio.push(b);
          }
        }
        const differences = stdio.map((b, i) => b - control[i]);
        figures.push(
          {
            name: "mcp.stdio_endpoint",
            label: "probe.echo through the endpoint of sausage mcp's host",
            unit: "ms",
            median: median(control),
            p99: summarize(control).p99,
            runs: control.length,
            warmup,
            samples: control,
          },
          {
            name: "mcp.stdio_tools_call",
            label: "tools/call probe_echo through sausage mcp (stdio)",
            unit: "ms",
            median: median(stdio),
            p99: summarize(stdio).p99,
            runs: stdio.length,
            warmup,
            samples: stdio,
          },
          {
            name: "mcp.stdio_overhead",
            label: "  added by MCP over stdio (median of pair differences)",
            unit: "ms",
            median: median(differences),
            runs: differences.length,
            warmup,
            method: "the two calls alternate, each first in every other pair; the median of " +
              "each pair's difference",
            samples: differences,
          },
        );
      } finally {
        await remote?.close();
        await client.close();
        await removeWorld(root);
      }
    }
    {
      // 50 copies of the probe answering a document of 10 methods: one discovery, 500 tools
      const document = {
        openrpc: "1.2.6",
        info: { title: "bench", version: "1" },
        methods: Array.from({ length: METHODS }, (_, i) => ({
          name: `m${i}`,
          summary: `method ${i}`,
          params: [{ name: "text", required: true, schema: { type: "string" } }],
          result: {
            name: "R",
            schema: { type: "object", properties: { n: { type: "integer" } } },
          },
        })),
      };
      const tag = new TextEncoder().encode("bench-mcp-tools-list-1");
      const bytes = await Deno.readFile(await testPlugin("probe"));
      const wasm = new Uint8Array([...bytes, 0, tag.length + 1, tag.length, ...tag]);
      await using w = await benchWorld({}, {
        installAgent: false,
        services: false,
      });
      await Deno.writeTextFile(
        join(w.root, "state", "probe-discover.json"),
        JSON.stringify(document),
      );
      for (let i = 0; i < PLUGINS; i++) {
        const folder = join(w.root, "plugins", `p${String(i).padStart(2, "0")}`);
        await Deno.mkdir(folder, { recursive: true });
        await Deno.writeFile(join(folder, "plugin.wasm"), wasm);
      }
      const view = new LocalHostView(w.host);
      const { client, server, close } = await connected(view);
      try {
        let t = performance.now();
        const first = await client.listTools();
        const cold = performance.now() - t;
        const expected = 6 + PLUGINS * METHODS;
        if (first.tools.length !== expected) {
          throw new CallFailed(`tools/list gave ${first.tools.length} tools, not ${expected}`);
        }
        const lists = pick(ctx, 50, 10);
        const warm: number[] = [];
        for (let i = 0; i < lists; i++) {
          t = performance.now();
          await client.listTools();
          warm.push(performance.now() - t);
        }
        // the server's share: the list built (documents kept by version) and serialized
        const built: number[] = [];
        for (let i = 0; i < lists; i++) {
          t = performance.now();
          JSON.stringify((await server.tools.list()).map((e) => e.tool));
          built.push(performance.now() - t);
        }
        figures.push(
          {
            name: "mcp.tools_list_first",
            label: `tools/list, ${PLUGINS} plugins (${expected} tools), first`,
            unit: "ms",
            median: cold,
            runs: 1,
            warmup: 0,
            method: "the first list after the plugins were copied in: discovery and documents",
            samples: [cold],
          },
          {
            name: "mcp.tools_list",
            label: `tools/list, ${PLUGINS} plugins (${expected} tools), SDK client`,
            unit: "ms",
            median: median(warm),
            p99: summarize(warm).p99,
            runs: warm.length,
            warmup: 1,
            method: "the SDK's client parses the list and compiles a validator per outputSchema",
            samples: warm,
          },
          {
            name: "mcp.tools_list_server",
            label: "  of which the server builds and serializes",
            unit: "ms",
            median: median(built),
            p99: summarize(built).p99,
            runs: built.length,
            warmup: 1,
            samples: built,
          },
        );
      } finally {
        await close();
        await view.close();
      }
    }
    return figures;
  },
};
