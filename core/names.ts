/**
 * Names in a world: plugin names, process IDs, and method names
 * (PROTOCOL sections 2 and 3.2).
 *
 * @module
 */
import { MAX_PLUGIN_NAME } from "../protocol/limits.ts";
export { MAX_PLUGIN_NAME };

/** Plugin names use a-z, 0-9, `-` and `_`; `core` is reserved. */
const PLUGIN_NAME = /^[a-z0-9_-]+$/;

/** The reserved name of the host in method names. */
export const CORE = "core";

/** The plugin of the agent the host ships (its processes alone get `token_env`, PROTOCOL 3.8). */
export const AGENT_PLUGIN = "agent";

/** Why `name` is not a valid plugin name, or null when it is. */
export function pluginNameProblem(name: string): string | null {
  if (name === CORE) return `"core" is reserved for the host`;
  if (name.length === 0) return "a plugin name cannot be empty";
  if (name.length > MAX_PLUGIN_NAME) {
    return `a plugin name has at most ${MAX_PLUGIN_NAME} characters`;
  }
  if (!PLUGIN_NAME.test(name)) {
    return `"${name}" is not a plugin name: use only a-z, 0-9, "-" and "_"`;
  }
  return null;
}

/** Whether `name` is a valid plugin name. */
export function isPluginName(name: string): boolean {
  return pluginNameProblem(name) === null;
}

/** A method name split at its first `.`: `notes.rpc.discover` → `notes`, `rpc.discover`. */
export interface MethodTarget {
  target: string;
  method: string;
}

/** Splits a method name at the first `.`; null when there is no target. */
export function splitMethod(name: string): MethodTarget | null {
  const dot = name.indexOf(".");
  if (dot <= 0 || dot === name.length - 1) return null;
  return { target: name.slice(0, dot), method: name.slice(dot + 1) };
}

/** The plugin of a process ID `<plugin>-<uuidv7>`. */
export function pluginOfPid(pid: string): string | null {
  const m = pid.match(/^(.+)-[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  return m ? m[1] : null;
}
