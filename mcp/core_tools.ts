/**
 * The methods of the core API (PROTOCOL section 9) that an MCP client gets
 * as tools: the ones that let an outside agent grow and inspect the world.
 * `cargo.build` comes from the `cargo` plugin's own `rpc.discover` document.
 *
 * @module
 */
import type { JsonObject } from "./schema.ts";

/** One core method as a tool. */
export interface CoreTool {
  /** The method the tool calls, e.g. `core.activate`. */
  method: string;
  description: string;
  inputSchema: JsonObject & { type: "object" };
  /** MCP's hints for a client that asks before a tool runs. */
  annotations?: { readOnlyHint?: boolean; destructiveHint?: boolean; openWorldHint?: boolean };
}

const pid = {
  type: "string",
  description: "the process ID, `<plugin>-<uuidv7>` (see /proc or core.log)",
};
const force = {
  type: "boolean",
  description: "skip the compatibility checks (PROTOCOL 10.3, steps 4 and 5)",
};
const time = {
  type: ["string", "integer"],
  description: "an ISO 8601 time, milliseconds since 1970, or an entry ID",
};

/** The core tools, in the order they are listed (before the plugins' tools). */
export const CORE_TOOLS: readonly CoreTool[] = [
  {
    method: "core.activate",
    description:
      "Make a built component the current version of a plugin (PROTOCOL 10.3): the core " +
      "discovers it, checks its imports and its consumers, then switches; new calls get it at " +
      "once. Build one with cargo.build first. Answers with the new rpc.discover documents; a " +
      "rejected activation is an error (-32003) that lists each problem.",
    inputSchema: {
      type: "object",
      properties: {
        plugin: { type: "string", description: "the plugin's name (a-z, 0-9, - and _)" },
        wasm: {
          type: "string",
          description: "the component's path in the world, e.g. /state/cargo/builds/7/notes.wasm",
        },
        plugins: {
          type: "array",
          description: "several plugins activated together, in place of plugin and wasm",
          items: {
            type: "object",
            properties: { plugin: { type: "string" }, wasm: { type: "string" } },
            required: ["plugin", "wasm"],
          },
        },
        force,
      },
    },
  },
  {
    method: "core.revert",
    description:
      "Make a plugin's previous version (plugin.prev.wasm) current again, with the checks of an " +
      "activation; the current one becomes the previous.",
    inputSchema: {
      type: "object",
      properties: { plugin: { type: "string", description: "the plugin's name" }, force },
      required: ["plugin"],
    },
  },
  {
    method: "core.log",
    description:
      "Query the world's journal (PROTOCOL 7): each process's start, stderr lines, end, and the " +
      'core\'s events, oldest first, as {"entries": [{id, time, pid, plugin, stream, line}]}.',
    inputSchema: {
      type: "object",
      properties: {
        plugin: { type: "string", description: "only this plugin's entries" },
        pid: { type: "string", description: "only this process's entries" },
        since: { ...time, description: `from here on (included): ${time.description}` },
        until: { ...time, description: `before this (excluded): ${time.description}` },
        grep: {
          type: "string",
          description: "a regular expression (RE2: no backreferences, no lookahead)",
        },
        limit: {
          type: "integer",
          minimum: 1,
          maximum: 10000,
          description: "the most recent entries (default 100)",
        },
      },
    },
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
  {
    method: "core.stop",
    description:
      "Stop a process: its stdin closes (its stop hook runs), and it is killed after 5 s. " +
      "Answers {} when it has ended.",
    inputSchema: { type: "object", properties: { pid }, required: ["pid"] },
    annotations: { destructiveHint: true, openWorldHint: false },
  },
  {
    method: "core.kill",
    description: "Kill a process at once, also one that computes. Answers {} when it has ended.",
    inputSchema: { type: "object", properties: { pid }, required: ["pid"] },
    annotations: { destructiveHint: true, openWorldHint: false },
  },
];
