/**
 * Which plugins an MCP client sees: `--plugins a,b`, else the `plugins:`
 * list of the world's `config/mcp.yaml`, else all. Some clients take only
 * the first tools of a long list, so a world with many plugins names the
 * few that matter; the core's tools are always there.
 *
 * @module
 */
import { parse } from "yaml";
import { type HostView, ViewError } from "../core/host_view.ts";
import { CORE, pluginNameProblem } from "../core/names.ts";

/** The world file with the MCP settings. */
export const MCP_CONFIG = "/config/mcp.yaml";

/** A list of plugins that cannot be used; the message names the problem and the fix. */
export class McpConfigError extends Error {
  override name = "McpConfigError";
}

/**
 * The names of a `--plugins` value (`a,b`); throws a {@linkcode McpConfigError}
 * for a name that is no plugin name.
 *
 * @example
 * ```ts
 * import { parsePluginList } from "./config.ts";
 * parsePluginList("notes, www"); // ["notes", "www"]
 * ```
 */
export function parsePluginList(text: string, where = "--plugins"): string[] {
  return checkNames(text.split(",").map((s) => s.trim()).filter((s) => s !== ""), where);
}

function checkNames(names: string[], where: string): string[] {
  const out: string[] = [];
  for (const name of names) {
    // the core's tools are always listed: naming it is not an error
    if (name === CORE) continue;
    const problem = pluginNameProblem(name);
    if (problem) throw new McpConfigError(`${where}: ${problem}`);
    if (!out.includes(name)) out.push(name);
  }
  return out;
}

/**
 * The plugins to expose: `option` (the `--plugins` value) when given, else
 * `plugins:` of `/config/mcp.yaml`, else undefined (all of them).
 */
export async function exposedPlugins(
  view: HostView,
  option: string | undefined,
): Promise<string[] | undefined> {
  if (option !== undefined) return parsePluginList(option);
  let text: string;
  try {
    const file = await view.read(MCP_CONFIG, 1024 * 1024);
    text = new TextDecoder().decode(file.bytes);
  } catch (e) {
    // no file: every plugin; any other failure (a folder, no permission) is the person's to fix
    if (e instanceof ViewError && e.code === "ENOENT") return undefined;
    if (e instanceof ViewError) throw new McpConfigError(`cannot read ${MCP_CONFIG}: ${e.message}`);
    throw e;
  }
  const where = `${view.info.world}${MCP_CONFIG}`;
  let config: unknown;
  try {
    config = parse(text);
  } catch (e) {
    throw new McpConfigError(`${where} is not YAML: ${(e as Error).message}`);
  }
  if (config === null || config === undefined) return undefined;
  const list = (config as { plugins?: unknown }).plugins;
  if (list === undefined || list === null) return undefined;
  if (!Array.isArray(list) || !list.every((n) => typeof n === "string")) {
    throw new McpConfigError(
      `${where}: plugins must be a list of plugin names, e.g. "plugins: [notes, www]"`,
    );
  }
  return checkNames(list, `${where}: plugins`);
}
