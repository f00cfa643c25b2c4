/**
 * A world as an MCP server, built on the official TypeScript SDK and on a
 * {@linkcode HostView} alone: the same server runs on the host's own view
 * (`sausage mcp` that started the host) and on a `ControlClient` (a host
 * that a console or a headless run started).
 *
 * - tools: the core's (`core_activate`, `core_revert`, `core_log`,
 *   `core_stop`, `core_kill`, `cargo_build`), then each method of each
 *   exposed plugin (`tools.ts`);
 * - resources: `/proc/core`'s documents and each plugin's `discover.json`
 *   and `client.rs`, and any world file by template (`resources.ts`);
 * - a world that changes: `notifications/tools/list_changed` (and
 *   `resources/list_changed`) after an activation, a revert, a copy by hand
 *   or a removal, seen through {@linkcode watchPlugins};
 * - a call's `core.notify` as `notifications/progress` of that call, and a
 *   client's `notifications/cancelled` as a stop of the call's process.
 *
 * @module
 */
// @ts-types="@modelcontextprotocol/sdk/server/mcp"
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
// @ts-types="@modelcontextprotocol/sdk/server/index"
import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
// @ts-types="@modelcontextprotocol/sdk/shared/protocol"
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
// @ts-types="@modelcontextprotocol/sdk/shared/transport"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import {
  type CallToolRequest,
  CallToolRequestSchema,
  CompleteRequestSchema,
  ErrorCode,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  type ReadResourceRequest,
  ReadResourceRequestSchema,
  type ServerNotification,
  type ServerRequest,
  SetLevelRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { type HostView, type PluginWatch, ViewError, watchPlugins } from "../core/host_view.ts";
import { readResource, RESOURCE_TEMPLATES, ResourceError, resourceList } from "./resources.ts";
import { completePath, Subscriptions } from "./subscriptions.ts";
import { CARGO, ToolCatalog, UnknownToolError } from "./tools.ts";

/** MCP's levels of a log message, least severe first. */
const LOG_LEVELS = [
  "debug",
  "info",
  "notice",
  "warning",
  "error",
  "critical",
  "alert",
  "emergency",
] as const;

/** The error code MCP gives a resource that does not exist. */
const RESOURCE_NOT_FOUND = -32002;

/** Options of {@linkcode createMcpServer}. */
export interface McpServerOptions {
  /** The plugins whose methods are tools, in this order; all when absent. */
  plugins?: readonly string[];
  /** Notes for the person: stderr, never stdout (stdout is the protocol). */
  log?: (text: string) => void;
  /** How often the world's plugins are compared (default 500 ms). */
  watchIntervalMs?: number;
}

/** A server for one client. */
export interface SausageMcpServer {
  /** The SDK's protocol object. */
  readonly server: Server;
  /** The tools, for tests and the benchmark. */
  readonly tools: ToolCatalog;
  /** Serves the client on `transport`. */
  connect(transport: Transport): Promise<void>;
  /** Resolves when the client went away (stdin ended) or {@linkcode close} ran. */
  readonly closed: Promise<void>;
  /** Closes the connection and stops watching the world (the view stays open). */
  close(): Promise<void>;
}

/**
 * An MCP server on `view`.
 *
 * @example
 * ```ts
 * import type { HostView } from "../core/host_view.ts";
 * import { StdioTransport } from "./stdio.ts";
 * declare const view: HostView; // a LocalHostView, or a ControlClient
 * const mcp = createMcpServer(view, { plugins: ["notes"], log: console.error });
 * await mcp.connect(new StdioTransport());
 * await mcp.closed;
 * await view.close();
 * ```
 */
export function createMcpServer(
  view: HostView,
  options: McpServerOptions = {},
): SausageMcpServer {
  const log = options.log ?? (() => {});
  const mcp = new McpServer(
    { name: "sausage", title: "Sausage", version: "0.1.0" },
    {
      capabilities: {
        tools: { listChanged: true },
        resources: { listChanged: true, subscribe: true },
        logging: {},
        completions: {},
      },
      instructions: instructions(view),
    },
  );
  const server = mcp.server;
  const tools = new ToolCatalog(view, { plugins: options.plugins, log });
  const closed = Promise.withResolvers<void>();
  let initialized = false;
  /** What the client was last told, to send list_changed only for a real change. */
  let lastTools: string | undefined;
  let lastPlugins: string | undefined;

  const resourcePlugins = async () => [CARGO, ...await tools.plugins()];

  server.setRequestHandler(ListToolsRequestSchema, async () => {
    const list = (await tools.list()).map((t) => t.tool);
    lastTools = JSON.stringify(list);
    return { tools: list };
  });

  server.setRequestHandler(CallToolRequestSchema, async (
    request: CallToolRequest,
    extra: RequestHandlerExtra<ServerRequest, ServerNotification>,
  ) => {
    const token = extra._meta?.progressToken;
    let progress = 0;
    let sent: Promise<void> = Promise.resolve();
    const onNotify = token === undefined ? undefined : (name: string, params: unknown) => {
      // a notify that counts itself ({"progress", "total"?}) keeps its figures; others are counted
      const own = params as { progress?: unknown; total?: unknown } | undefined;
      const counted = typeof own?.progress === "number" && own.progress > progress;
      progress = counted ? own!.progress as number : progress + 1;
      const message = `${name} ${JSON.stringify(params) ?? ""}`.trimEnd();
      const notification = extra.sendNotification({
        method: "notifications/progress",
        params: {
          progressToken: token,
          progress,
          ...(counted && typeof own?.total === "number" ? { total: own.total } : {}),
          message: message.length > 1000 ? `${message.slice(0, 999)}…` : message,
        },
      }).catch(() => {});
      sent = sent.then(() => notification);
    };
    try {
      const result = await tools.call(request.params.name, request.params.arguments, {
        signal: extra.signal,
        onNotify,
      });
      if (progress > 0) {
        // The SDK's client handles a notification a microtask later than a response that
        // arrives in the same read, and drops the progress it no longer waits for: write the
        // progress first, then give the client a turn before the answer.
        await sent;
        // a loaded machine may read both in one go when the gap is 1 ms; a call that sent progress is long anyway
        await new Promise((r) => setTimeout(r, 10));
      }
      const { method } = (await tools.find(request.params.name)) ?? {};
      // the client's own activation: look at once rather than at the next poll
      if (method === "core.activate" || method === "core.revert") watch?.check();
      return result;
    } catch (e) {
      if (e instanceof UnknownToolError) throw rpcError(ErrorCode.InvalidParams, e.message);
      throw e;
    }
  });

  server.setRequestHandler(ListResourcesRequestSchema, async () => {
    const plugins = await resourcePlugins();
    lastPlugins = JSON.stringify(plugins);
    return { resources: resourceList(plugins) };
  });

  server.setRequestHandler(ListResourceTemplatesRequestSchema, () => ({
    resourceTemplates: RESOURCE_TEMPLATES,
  }));

  server.setRequestHandler(ReadResourceRequestSchema, async (request: ReadResourceRequest) => {
    try {
      return await readResource(view, request.params.uri);
    } catch (e) {
      if (e instanceof ResourceError || e instanceof ViewError) {
        throw rpcError(RESOURCE_NOT_FOUND, e.message, { uri: request.params.uri });
      }
      throw e;
    }
  });

  // the level the client asked for (logging/setLevel); world changes go out as `info`
  let logLevel: (typeof LOG_LEVELS)[number] = "info";
  const tell = (level: (typeof LOG_LEVELS)[number], data: string) => {
    if (!initialized || LOG_LEVELS.indexOf(level) < LOG_LEVELS.indexOf(logLevel)) return;
    server.sendLoggingMessage({ level, logger: "sausage", data }).catch(() => {});
  };
  server.setRequestHandler(SetLevelRequestSchema, (request) => {
    logLevel = request.params.level;
    return {};
  });

  const subscriptions = new Subscriptions(view, (uri) => {
    server.sendResourceUpdated({ uri }).catch(() => {});
  }, options.watchIntervalMs);
  server.setRequestHandler(SubscribeRequestSchema, async (request) => {
    try {
      await subscriptions.add(request.params.uri);
    } catch (e) {
      throw rpcError(ErrorCode.InvalidParams, (e as Error).message, { uri: request.params.uri });
    }
    return {};
  });
  server.setRequestHandler(UnsubscribeRequestSchema, (request) => {
    subscriptions.remove(request.params.uri);
    return {};
  });

  // the template's path completes from the world's folders; there are no prompts
  server.setRequestHandler(CompleteRequestSchema, async (request) => {
    const { ref, argument } = request.params;
    const values = ref.type === "ref/resource" && ref.uri === RESOURCE_TEMPLATES[0].uriTemplate &&
        argument.name === "path"
      ? await completePath(view, argument.value).catch(() => [])
      : [];
    return { completion: { values, total: values.length, hasMore: false } };
  });

  /** After a change in the world: tell the client what changed for it. */
  const changed = async () => {
    tools.invalidate();
    if (!initialized) return;
    try {
      // a list the client never asked for cannot be stale on its side
      if (lastTools !== undefined) {
        const list = JSON.stringify((await tools.list()).map((t) => t.tool));
        if (list !== lastTools) {
          lastTools = list;
          await server.sendToolListChanged();
          tell("info", "the world's plugins changed: tools/list has their new tools");
        }
      }
      if (lastPlugins !== undefined) {
        const plugins = JSON.stringify(await resourcePlugins());
        if (plugins !== lastPlugins) {
          lastPlugins = plugins;
          await server.sendResourceListChanged();
        }
      }
    } catch (e) {
      log(`cannot tell the client that the world changed: ${(e as Error).message}`);
    }
  };
  let changes: Promise<void> = Promise.resolve();
  let watch: PluginWatch | undefined;

  server.oninitialized = () => {
    initialized = true;
    const client = server.getClientVersion();
    log(`MCP client ${client?.name ?? "?"} ${client?.version ?? ""}`.trimEnd());
  };
  server.onclose = () => {
    watch?.close();
    subscriptions.close();
    closed.resolve();
  };

  return {
    server,
    tools,
    async connect(transport) {
      watch = watchPlugins(view, () => {
        changes = changes.then(changed);
      }, { intervalMs: options.watchIntervalMs });
      await mcp.connect(transport);
    },
    closed: closed.promise,
    async close() {
      watch?.close();
      subscriptions.close();
      await mcp.close();
      closed.resolve();
    },
  };
}

/**
 * An error the SDK answers as it is: its code, message and data (an
 * `McpError` would put "MCP error <code>:" before the message, and the
 * client's own `McpError` puts it there again).
 */
function rpcError(code: number, message: string, data?: unknown): Error {
  return Object.assign(new Error(message), { code, ...(data === undefined ? {} : { data }) });
}

/** What the client is told about the server at the start. */
function instructions(view: HostView): string {
  return [
    `The Sausage world at ${view.info.world}: a world of WebAssembly plugins that speak JSON-RPC.`,
    "Each tool <plugin>_<method> calls that method of that plugin (its title is <plugin>.<method>);",
    "the core_* tools and cargo_build grow and inspect the world: write a plugin's Rust source in",
    "/plugins/<name>/source/ (the world is that folder on this machine), build it with",
    "cargo_build, make it current with core_activate, and its methods appear as new tools.",
    "The resources are the world's files (sausage:///<path>);",
    "sausage:///proc/core/PROTOCOL.md is the contract of plugins.",
  ].join(" ");
}
