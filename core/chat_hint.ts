/**
 * The hint a front end (the console, the web page) adds to an error of
 * `agent.chat`, so that both say the same thing.
 *
 * @module
 */
import { worldPaths } from "./host_view.ts";
import { ErrorCode, type ErrorObject } from "./jsonrpc.ts";

/** The agent's configuration as a process sees it: the path its errors name. */
const AGENT_CONFIG_IN_WORLD = "/config/agent.yaml";

/** The hint for a message to the agent while there is none. */
export const NO_AGENT = "the agent is not installed yet (plugins/agent/plugin.wasm)";

/**
 * The hint for an error of `agent.chat` in the world at `root`, or undefined.
 * The agent names its configuration as a process sees it; a person edits
 * the file on the host. (The agent's errors carry no code for it: its text
 * is all there is.)
 *
 * @example
 * ```ts
 * chatErrorHint({ code: -32000, message: "/config/agent.yaml: model is missing" }, "/w");
 * // "the file is /w/config/agent.yaml on this machine"
 * ```
 */
export function chatErrorHint(error: ErrorObject, root: string): string | undefined {
  if (error.code === ErrorCode.NoSuchPlugin) return NO_AGENT;
  if (error.message.includes(AGENT_CONFIG_IN_WORLD)) {
    return `the file is ${worldPaths(root).agentConfig} on this machine`;
  }
  return undefined;
}
