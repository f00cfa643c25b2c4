/**
 * The native plugin `mcp`: the world's external MCP servers as ordinary
 * calls (`mcp.servers`, `mcp.tools`, `mcp.call`), so the agent and any
 * plugin reach them the way they reach `cargo.build` (PROTOCOL section
 * 13.2). The host keeps one connection per server, made at its first use
 * with the official SDK's client, and closes it after 10 idle minutes, when
 * its entry in `agent.yaml` changes, and at the host's stop.
 *
 * @module
 */
// @ts-types="@modelcontextprotocol/sdk/client"
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import { ErrorCode, RpcError } from "../jsonrpc.ts";
import type { NativeContext, NativePlugin } from "../native.ts";
import {
  MCP_SERVERS_CONFIG,
  parseServers,
  type ServerConfig,
  type ServersConfig,
} from "./config.ts";

/** The error of a server that cannot be reached, or whose tool failed (PROTOCOL 3.9). */
export const MCP_SERVER_ERROR: number = ErrorCode.McpServerFailed;
/** How long a server has to start and answer `initialize`. */
export const START_TIMEOUT_MS = 30_000;
/** A connection nobody used for this long is closed (a command server then ends). */
export const IDLE_MS = 10 * 60_000;
/** The most tools read from one server (pages of `tools/list`). */
export const MAX_TOOLS = 10_000;
/** Lines of a command server's stderr kept for the error of a failed start. */
const STDERR_LINES = 20;
/** A server that did not start is not tried again for this long (the agent lists tools at each message). */
export const FAILED_START_MS = 60_000;

/** What the plugin needs from the host. */
export interface McpServersOptions {
  /** `agent.yaml` on this machine; read at each call, so an edit takes effect at once. */
  configPath: string;
  /** A line for the journal, about the plugin `mcp` (a server's start, its stderr, its end). */
  log(line: string): void;
  /** Calls from the client to a server say this name. */
  clientName?: string;
  /** How long a connection may be idle (default {@linkcode IDLE_MS}; tests shorten it). */
  idleMs?: number;
}

interface Connection {
  /** The configuration it was made with: a changed entry makes a new connection. */
  key: string;
  client: Client;
  stderr: string[];
  closed: boolean;
  lastUsed: number;
  /** Requests in flight: a connection is never idle while one runs. */
  inFlight: number;
  /** The server's tools, while it promises `list_changed` (a notification clears them). */
  tools?: ServerTool[];
}

/** One tool of one server, as `mcp.tools` lists it. */
export interface ServerTool {
  server: string;
  name: string;
  title?: string;
  description?: string;
  inputSchema: Tool["inputSchema"];
  outputSchema?: Tool["outputSchema"];
}

/**
 * The connections to a world's MCP servers, and the native plugin on them.
 *
 * @example
 * ```ts
 * const servers = new McpServers({
 *   configPath: "/srv/world/config/agent.yaml",
 *   log: (line) => console.error(line),
 * });
 * const natives = { mcp: servers.plugin() }; // for the process table
 * await servers.close(); // at the host's stop
 * ```
 */
export class McpServers {
  readonly #options: McpServersOptions;
  readonly #connections = new Map<string, Connection>();
  /** Starts in progress, so two calls at once share one server. */
  readonly #starting = new Map<string, Promise<Connection>>();
  /** Aborts every start in progress at the host's stop (a start is not one caller's). */
  readonly #stopStarts = new AbortController();
  /** Starts that failed lately, by server: the same entry is not started again at once. */
  readonly #failed = new Map<string, { key: string; error: RpcError; until: number }>();
  readonly #idle: ReturnType<typeof setInterval>;
  readonly #idleMs: number;
  #closed = false;

  constructor(options: McpServersOptions) {
    this.#options = options;
    this.#idleMs = options.idleMs ?? IDLE_MS;
    this.#idle = setInterval(() => this.#closeIdle(), Math.min(60_000, this.#idleMs));
    // the SDK brings Node's types, where a timer is an object; Deno's is a number
    Deno.unrefTimer(this.#idle as unknown as number);
  }

  /** The plugin `mcp` for the process table. */
  plugin(): NativePlugin {
    return {
      document: DISCOVER,
      methods: {
        "rpc.discover": () => Promise.resolve(DISCOVER),
        servers: () => this.#servers(),
        tools: (ctx, params) => this.#tools(ctx, params),
        call: (ctx, params) => this.#call(ctx, params),
      },
    };
  }

  /** Closes every connection (command servers get the end of their stdin, then SIGTERM). */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#idle);
    this.#stopStarts.abort();
    await Promise.allSettled([...this.#starting.values()]);
    await Promise.all([...this.#connections.keys()].map((name) => this.#drop(name, "host stop")));
  }

  async #config(): Promise<ServersConfig> {
    let text: string;
    try {
      text = await Deno.readTextFile(this.#options.configPath);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return { servers: new Map(), problems: [] };
      throw new RpcError(ErrorCode.ServerError, `mcp: cannot read ${MCP_SERVERS_CONFIG}: ${e}`);
    }
    return parseServers(text);
  }

  /** The entry of `name`, or an error that says what is configured instead. */
  async #entry(name: unknown): Promise<ServerConfig & { name: string }> {
    const { servers, problems } = await this.#config();
    if (typeof name !== "string" || name === "") {
      throw new RpcError(ErrorCode.InvalidParams, `mcp needs "server", the name of a server`);
    }
    const entry = servers.get(name);
    if (entry) return { ...entry, name };
    const problem = problems.find((p) => p.startsWith(`mcp_servers.${name} `));
    throw new RpcError(
      ErrorCode.InvalidParams,
      problem ?? `mcp: no server "${name}" in mcp_servers of ${MCP_SERVERS_CONFIG} (` +
          (servers.size > 0 ? `it has ${[...servers.keys()].join(", ")}` : "it has none") + ")",
    );
  }

  async #servers(): Promise<unknown> {
    const { servers, problems } = await this.#config();
    return {
      servers: [...servers].map(([name, config]) => {
        const c = this.#connections.get(name);
        return {
          name,
          ...(config.kind === "command"
            ? { command: config.command, args: config.args }
            : { url: config.url }),
          connected: c !== undefined && !c.closed && c.key === JSON.stringify(config),
        };
      }),
      problems,
    };
  }

  async #tools(ctx: NativeContext, params: Record<string, unknown>): Promise<unknown> {
    if (params.server !== undefined) {
      const entry = await this.#entry(params.server);
      return { tools: await this.#listTools(entry, ctx), problems: [] };
    }
    const { servers, problems } = await this.#config();
    // all at once: one slow server costs its own time, not the sum of all of them
    const listed = await Promise.allSettled(
      [...servers].map(([name, config]) => this.#listTools({ ...config, name }, ctx)),
    );
    const tools: ServerTool[] = [];
    for (const outcome of listed) {
      if (outcome.status === "fulfilled") tools.push(...outcome.value);
      else problems.push((outcome.reason as Error).message); // one broken server hides no other
    }
    return { tools, problems };
  }

  async #listTools(entry: ServerConfig & { name: string }, ctx: NativeContext) {
    const connection = await this.#connect(entry, ctx);
    if (connection.tools) return connection.tools;
    const tools: ServerTool[] = [];
    let cursor: string | undefined;
    do {
      const page = await this.#guard(
        entry,
        connection,
        ctx,
        () =>
          connection.client.listTools(cursor ? { cursor } : {}, {
            signal: ctx.signal,
            timeout: requestTimeout(entry, ctx),
          }),
      );
      for (const t of page.tools) {
        tools.push({
          server: entry.name,
          name: t.name,
          ...(t.title ? { title: t.title } : {}),
          ...(t.description ? { description: t.description } : {}),
          inputSchema: t.inputSchema,
          ...(t.outputSchema ? { outputSchema: t.outputSchema } : {}),
        });
      }
      cursor = page.nextCursor;
    } while (cursor && tools.length < MAX_TOOLS);
    if (connection.client.getServerCapabilities()?.tools?.listChanged) connection.tools = tools;
    return tools;
  }

  async #call(ctx: NativeContext, params: Record<string, unknown>): Promise<unknown> {
    const entry = await this.#entry(params.server);
    const tool = params.tool;
    if (typeof tool !== "string" || tool === "") {
      throw new RpcError(ErrorCode.InvalidParams, `mcp.call needs "tool", the name of a tool`);
    }
    const args = params.arguments ?? {};
    if (typeof args !== "object" || args === null || Array.isArray(args)) {
      throw new RpcError(ErrorCode.InvalidParams, `mcp.call: "arguments" must be an object`);
    }
    const connection = await this.#connect(entry, ctx);
    const result = await this.#guard(entry, connection, ctx, () =>
      connection.client.callTool(
        { name: tool, arguments: args as Record<string, unknown> },
        undefined,
        {
          signal: ctx.signal,
          timeout: requestTimeout(entry, ctx),
          resetTimeoutOnProgress: true,
          // progress resets the server's own timeout, never the caller's deadline
          ...(ctx.deadline === undefined ? {} : { maxTotalTimeout: requestTimeout(entry, ctx) }),
          onprogress: (p) => ctx.notify("progress", { server: entry.name, tool, ...p }),
        },
      )) as CallToolResult;
    if (result.isError) {
      const text = (result.content ?? [])
        .map((c) => c.type === "text" ? c.text : `[${c.type}]`).join("\n").slice(0, 2000);
      throw new RpcError(
        MCP_SERVER_ERROR,
        `${entry.name}.${tool} failed: ${text || "the server gave no reason"}`,
        result,
      );
    }
    return result;
  }

  /** Runs a request; a server's failure becomes an error that names the server. */
  async #guard<T>(
    entry: { name: string },
    connection: Connection,
    ctx: NativeContext,
    request: () => Promise<T>,
  ): Promise<T> {
    connection.lastUsed = Date.now();
    connection.inFlight++;
    try {
      return await request();
    } catch (e) {
      if (e instanceof RpcError) throw e;
      const err = e as Error & { code?: number; data?: unknown };
      const gone = connection.closed ? ` (it ended${stderrOf(connection)})` : "";
      const message = `the MCP server "${entry.name}": ${err.message}${gone}`;
      const code = typeof err.code === "number" ? err.code : undefined;
      // a server's error (an unknown tool, bad arguments, its own codes) keeps its code
      if (code !== undefined && (code < -32099 || code > -32000)) {
        throw new RpcError(code, message, err.data);
      }
      // -32000 to -32099 mean Sausage's own errors here (-32001: no such plugin), so a server's
      // code in that range, and the SDK's own timeout (-32001) and closed connection (-32000),
      // go in `data`, never as the code
      const late = ctx.deadline !== undefined && Date.now() >= ctx.deadline;
      throw new RpcError(late ? ErrorCode.Deadline : MCP_SERVER_ERROR, message, {
        ...(code === undefined ? {} : { mcp_code: code }),
        ...(err.data === undefined ? {} : { mcp_data: err.data }),
      });
    } finally {
      connection.inFlight--;
      connection.lastUsed = Date.now();
    }
  }

  /** The open connection to a server, made (or made again) when needed. */
  #connect(entry: ServerConfig & { name: string }, ctx: NativeContext): Promise<Connection> {
    if (this.#closed) {
      return Promise.reject(new RpcError(ErrorCode.ServerError, "mcp: the host is stopping"));
    }
    const { name, ...config } = entry;
    const key = JSON.stringify(config);
    const open = this.#connections.get(name);
    if (open && !open.closed && open.key === key) return Promise.resolve(open);
    const starting = this.#starting.get(name);
    if (starting) return starting;
    const failed = this.#failed.get(name);
    if (failed && failed.key === key && failed.until > Date.now()) {
      return Promise.reject(failed.error);
    }
    const start = (async () => {
      if (open) await this.#drop(name, open.closed ? "it had ended" : "its entry changed");
      try {
        const connection = await this.#start(name, entry, key, ctx);
        this.#failed.delete(name);
        return connection;
      } catch (e) {
        // a command is costly to start again; a URL that refuses at once is not
        if (e instanceof RpcError && !this.#closed && entry.kind === "command") {
          const until = Date.now() + FAILED_START_MS;
          const again = new Date(until).toISOString();
          const error = new RpcError(
            e.code,
            `${e.message} (not tried again before ${again}, ` +
              "or until its entry changes)",
            e.data,
          );
          this.#failed.set(name, { key, error, until });
          throw error;
        }
        throw e;
      }
    })().finally(() => this.#starting.delete(name));
    this.#starting.set(name, start);
    return start;
  }

  async #start(
    name: string,
    config: ServerConfig,
    key: string,
    ctx: NativeContext,
  ): Promise<Connection> {
    const sdk = await import("./sdk.ts");
    const client = new sdk.Client({
      name: this.#options.clientName ?? "sausage",
      version: "0.1.0",
    }, { jsonSchemaValidator: sdk.jsonSchemaValidator() });
    const connection: Connection = {
      key,
      client,
      stderr: [],
      closed: false,
      lastUsed: Date.now(),
      inFlight: 0,
    };
    client.setNotificationHandler(sdk.ToolListChangedNotificationSchema, () => {
      connection.tools = undefined;
    });
    let transport;
    if (config.kind === "command") {
      this.#options.log(`${name}: starting ${[config.command, ...config.args].join(" ")}`);
      transport = new sdk.StdioClientTransport({
        command: config.command,
        args: config.args,
        env: { ...defaultEnvironment(), ...config.env },
        cwd: config.cwd,
        stderr: "pipe",
      });
      transport.stderr?.on("data", (chunk: Uint8Array) => {
        for (const line of new TextDecoder().decode(chunk).split("\n")) {
          if (line.trim() === "") continue;
          connection.stderr.push(line);
          if (connection.stderr.length > STDERR_LINES) connection.stderr.shift();
          this.#options.log(`${name}: ${line}`);
        }
      });
    } else {
      this.#options.log(`${name}: connecting to ${config.url}`);
      transport = new sdk.StreamableHTTPClientTransport(new URL(config.url), {
        requestInit: { headers: config.headers },
      });
    }
    client.onclose = () => {
      connection.closed = true;
      this.#options.log(`${name}: the connection ended`);
    };
    ctx.notify("progress", { server: name, text: `starting the MCP server ${name}` });
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      await Promise.race([
        // the start is shared by every caller waiting for it: only the host's stop aborts it
        client.connect(transport, { signal: this.#stopStarts.signal, timeout: START_TIMEOUT_MS }),
        new Promise((_, reject) => {
          timer = setTimeout(
            () =>
              reject(new Error(`it did not answer initialize within ${START_TIMEOUT_MS / 1000} s`)),
            START_TIMEOUT_MS,
          );
        }),
      ]);
    } catch (e) {
      await client.close().catch(() => {});
      const what = config.kind === "command"
        ? `\`${[config.command, ...config.args].join(" ")}\``
        : config.url;
      throw new RpcError(
        MCP_SERVER_ERROR,
        `the MCP server "${name}" (${what}) did not start: ${(e as Error).message}` +
          stderrOf(connection) + `; check mcp_servers.${name} in ${MCP_SERVERS_CONFIG}`,
      );
    } finally {
      clearTimeout(timer);
    }
    const server = client.getServerVersion();
    this.#options.log(
      `${name}: connected (${server?.name ?? "?"} ${server?.version ?? ""}, protocol ` +
        `${config.kind === "command" ? "stdio" : "http"})`,
    );
    this.#connections.set(name, connection);
    return connection;
  }

  async #drop(name: string, why: string): Promise<void> {
    const connection = this.#connections.get(name);
    if (!connection) return;
    this.#connections.delete(name);
    if (!connection.closed) this.#options.log(`${name}: closing the connection (${why})`);
    await connection.client.close().catch(() => {});
  }

  #closeIdle(): void {
    const now = Date.now();
    for (const [name, c] of this.#connections) {
      if (c.inFlight === 0 && now - c.lastUsed > this.#idleMs) {
        this.#drop(name, `idle for ${Math.round(this.#idleMs / 1000)} s`);
      }
    }
  }
}

/** The last lines a server wrote on stderr, for an error. */
function stderrOf(connection: Connection): string {
  return connection.stderr.length > 0
    ? `; its stderr ended with: ${connection.stderr.slice(-5).join(" | ")}`
    : "";
}

/** What a server gets of the host's environment: the SDK's choice (no keys, no tokens). */
function defaultEnvironment(): Record<string, string> {
  const names = Deno.build.os === "windows"
    ? [
      "APPDATA",
      "HOMEDRIVE",
      "HOMEPATH",
      "LOCALAPPDATA",
      "PATH",
      "SYSTEMROOT",
      "TEMP",
      "USERPROFILE",
    ]
    : ["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];
  const env: Record<string, string> = {};
  for (const name of names) {
    const value = Deno.env.get(name);
    if (value !== undefined) env[name] = value;
  }
  return env;
}

const SERVER_PARAM = {
  name: "server",
  required: true,
  schema: { type: "string" },
  description: "A server's name in mcp_servers of /config/agent.yaml.",
};

const DISCOVER = {
  openrpc: "1.2.6",
  info: {
    title: "mcp",
    version: "0.1.0",
    description: "The world's external MCP servers (mcp_servers: in /config/agent.yaml), " +
      "as calls: list their tools and call them.",
  },
  methods: [
    {
      name: "servers",
      summary: "The configured MCP servers, and what is wrong with the entries that are not.",
      paramStructure: "by-name",
      params: [],
      result: { name: "servers", schema: { type: "object" } },
    },
    {
      name: "tools",
      summary: "The tools of one server, or of all of them (starting them as needed).",
      description: "Each tool with its server, name, description and inputSchema. Without " +
        "`server`, a server that fails is a line of `problems` and the others are listed.",
      paramStructure: "by-name",
      params: [{ ...SERVER_PARAM, required: false }],
      result: { name: "tools", schema: { type: "object" } },
    },
    {
      name: "call",
      summary: "Call a tool of a server; the result is MCP's (content, structuredContent).",
      description: `A tool that reports an error (isError) is the error ${MCP_SERVER_ERROR} with ` +
        "its text as the message and the whole result as data. Progress comes as core.notify " +
        "`progress`; core.stop of this process cancels the request.",
      paramStructure: "by-name",
      params: [
        SERVER_PARAM,
        { name: "tool", required: true, schema: { type: "string" }, description: "The tool." },
        {
          name: "arguments",
          required: false,
          schema: { type: "object" },
          description: "The tool's arguments, by its inputSchema (default {}).",
        },
      ],
      result: { name: "result", schema: { type: "object" } },
    },
  ],
};

/**
 * An MCP request's timeout: the server's `timeout_seconds`, or what is left
 * of the caller's deadline (`timeout_ms` of `core.call`) when that is sooner.
 */
function requestTimeout(entry: ServerConfig, ctx: NativeContext): number {
  const own = entry.timeoutSeconds * 1000;
  return ctx.deadline === undefined ? own : Math.max(1, Math.min(own, ctx.deadline - Date.now()));
}
