/**
 * The external MCP servers of a world: `mcp_servers:` in
 * `/config/agent.yaml` (PROTOCOL section 13.2). Each is a command the host
 * starts (stdio) or a URL it connects to (Streamable HTTP).
 *
 * @module
 */
import { parse } from "yaml";

/** Where the servers are configured, as a process sees it. */
export const MCP_SERVERS_CONFIG = "/config/agent.yaml";

/** A server the host starts, speaking MCP on its stdin and stdout. */
export interface CommandServer {
  kind: "command";
  command: string;
  args: string[];
  /** Added to the few variables a server gets by default (`PATH`, `HOME`, …). */
  env: Record<string, string>;
  /** Its working folder, on the host (default: the host's). */
  cwd?: string;
  /** How long one request may take, in seconds, reset by each progress notification. */
  timeoutSeconds: number;
}

/** A server reached over Streamable HTTP. */
export interface UrlServer {
  kind: "url";
  url: string;
  headers: Record<string, string>;
  timeoutSeconds: number;
}

/** One configured server. */
export type ServerConfig = CommandServer | UrlServer;

/** The servers by name, and what is wrong with the entries that were left out. */
export interface ServersConfig {
  servers: Map<string, ServerConfig>;
  problems: string[];
}

/** What a server's name may be: it is part of a tool's name for the model. */
const SERVER_NAME = /^[a-z][a-z0-9_-]{0,31}$/;
/** A request's default time: tools that work long send progress, which resets it. */
export const DEFAULT_TIMEOUT_SECONDS = 300;
const FIELDS = {
  command: ["command", "args", "env", "cwd", "timeout_seconds"],
  url: ["url", "headers", "timeout_seconds"],
};

/**
 * Reads `mcp_servers:` from the text of `agent.yaml`. An entry that is
 * wrong is left out, with a problem that names it and its field; the other
 * entries stand. A file that is not YAML is one problem.
 *
 * @example
 * ```ts
 * const { servers } = parseServers(
 *   "mcp_servers:\n  files:\n    command: npx\n    args: [-y, some-mcp-server]\n",
 * );
 * servers.get("files"); // { kind: "command", command: "npx", args: ["-y", "some-mcp-server"], … }
 * ```
 */
export function parseServers(text: string): ServersConfig {
  const servers = new Map<string, ServerConfig>();
  const problems: string[] = [];
  let value: unknown;
  try {
    value = parse(text);
  } catch (e) {
    return { servers, problems: [`${MCP_SERVERS_CONFIG} is not valid YAML: ${firstLine(e)}`] };
  }
  const section = isMap(value) ? value.mcp_servers : undefined;
  if (section === undefined || section === null) return { servers, problems };
  if (!isMap(section)) {
    problems.push(
      `mcp_servers in ${MCP_SERVERS_CONFIG} must map names to servers ` +
        "(files: {command: npx, args: [...]}, or search: {url: https://...})",
    );
    return { servers, problems };
  }
  for (const [name, entry] of Object.entries(section)) {
    const where = `mcp_servers.${name} in ${MCP_SERVERS_CONFIG}`;
    try {
      if (!SERVER_NAME.test(name)) {
        throw `${where}: a server's name is lowercase letters, digits, _ and -, from a letter, ` +
          "at most 32 characters";
      }
      servers.set(name, parseServer(entry, where));
    } catch (problem) {
      problems.push(String(problem));
    }
  }
  return { servers, problems };
}

function parseServer(entry: unknown, where: string): ServerConfig {
  if (!isMap(entry)) throw `${where} must be a mapping with \`command\` or \`url\``;
  const has = (k: string) => entry[k] !== undefined && entry[k] !== null;
  if (has("command") === has("url")) {
    throw `${where} needs exactly one of \`command\` (a program to start) and \`url\` ` +
      "(a Streamable HTTP endpoint)";
  }
  const kind = has("command") ? "command" : "url";
  for (const key of Object.keys(entry)) {
    if (!FIELDS[kind].includes(key)) {
      throw `${where} has an unknown field \`${key}\`: a ${kind} server has ${
        FIELDS[kind].join(", ")
      }`;
    }
  }
  const timeout = entry.timeout_seconds ?? DEFAULT_TIMEOUT_SECONDS;
  if (!Number.isInteger(timeout) || (timeout as number) < 1 || (timeout as number) > 86_400) {
    throw `${where}: timeout_seconds must be a whole number from 1 to 86400`;
  }
  const timeoutSeconds = timeout as number;
  if (kind === "url") {
    const url = text(entry.url, `${where}: url`);
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw `${where}: url \`${url}\` is not a URL`;
    }
    if (parsed.protocol !== "http:" && parsed.protocol !== "https:") {
      throw `${where}: url must be http:// or https://, not ${parsed.protocol}`;
    }
    return { kind, url, headers: strings(entry.headers, `${where}: headers`), timeoutSeconds };
  }
  const args = entry.args ?? [];
  if (!Array.isArray(args) || !args.every((a) => typeof a === "string" || typeof a === "number")) {
    throw `${where}: args must be a list of strings`;
  }
  const server: CommandServer = {
    kind,
    command: text(entry.command, `${where}: command`),
    args: args.map(String),
    env: strings(entry.env, `${where}: env`),
    timeoutSeconds,
  };
  if (has("cwd")) server.cwd = text(entry.cwd, `${where}: cwd`);
  return server;
}

function text(value: unknown, what: string): string {
  if (typeof value !== "string" || value.trim() === "") throw `${what} must be a non-empty string`;
  return value;
}

function strings(value: unknown, what: string): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (!isMap(value)) throw `${what} must map names to strings`;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(value)) {
    if (typeof v !== "string" && typeof v !== "number" && typeof v !== "boolean") {
      throw `${what}: ${k} must be a string`;
    }
    out[k] = String(v);
  }
  return out;
}

function isMap(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function firstLine(e: unknown): string {
  return String((e as Error).message ?? e).split("\n")[0];
}
