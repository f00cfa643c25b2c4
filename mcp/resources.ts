/**
 * The world's files as MCP resources: `sausage:///<path>` is the file at
 * `<path>` as the console sees it (PROTOCOL section 4, without `/self`).
 * The list names the core's documents in `/proc/core` and each exposed
 * plugin's `discover.json` and `client.rs`; a template reaches any other
 * file, and a folder reads as its listing.
 *
 * @module
 */
// @ts-types="@modelcontextprotocol/sdk/types"
import type {
  ReadResourceResult,
  Resource,
  ResourceTemplate,
} from "@modelcontextprotocol/sdk/types.js";
import type { HostView } from "../core/host_view.ts";

/** The scheme of world files. */
export const SCHEME = "sausage:";

/** The most a read returns of one file (the control endpoint's limit of `host/cat`). */
export const MAX_RESOURCE_BYTES = 8 * 1024 * 1024;

/** A resource URI that names no file; the message says why. */
export class ResourceError extends Error {
  override name = "ResourceError";
}

/** The URI of a world path: `/state/notes/notes.json` → `sausage:///state/notes/notes.json`. */
export function uriOf(path: string): string {
  return `${SCHEME}//${path.split("/").map(encodeURIComponent).join("/")}`;
}

/**
 * The world path of a URI; throws a {@linkcode ResourceError} for another
 * scheme or a host part.
 *
 * @example
 * ```ts
 * import { pathOf } from "./resources.ts";
 * pathOf("sausage:///state/notes/notes.json"); // "/state/notes/notes.json"
 * ```
 */
export function pathOf(uri: string): string {
  const prefix = `${SCHEME}//`;
  if (!uri.startsWith(prefix)) {
    throw new ResourceError(
      `${uri} is not a world file: resources are sausage:///<path>, e.g. ` +
        "sausage:///proc/core/PROTOCOL.md",
    );
  }
  const rest = uri.slice(prefix.length);
  if (!rest.startsWith("/")) {
    throw new ResourceError(
      `${uri} has a host part: write sausage:///<path> (three slashes), e.g. sausage:///${rest}`,
    );
  }
  try {
    return decodeURIComponent(rest.split(/[?#]/)[0]);
  } catch {
    throw new ResourceError(`${uri}: its path is not valid percent-encoding`);
  }
}

const TYPES: Record<string, string> = {
  md: "text/markdown",
  json: "application/json",
  jsonl: "application/jsonl",
  dot: "text/vnd.graphviz",
  rs: "text/x-rust",
  toml: "application/toml",
  yaml: "application/yaml",
  yml: "application/yaml",
  txt: "text/plain",
  log: "text/plain",
  html: "text/html",
  wasm: "application/wasm",
};

function mimeOf(path: string, text: boolean): string {
  const dot = path.lastIndexOf(".");
  const ext = dot > path.lastIndexOf("/") ? path.slice(dot + 1).toLowerCase() : "";
  return TYPES[ext] ?? (text ? "text/plain" : "application/octet-stream");
}

/** The resources listed: the core's documents, then each plugin's. */
export function resourceList(plugins: readonly string[]): Resource[] {
  const core: Resource[] = [
    {
      uri: uriOf("/proc/core/PROTOCOL.md"),
      name: "PROTOCOL.md",
      title: "The Sausage protocol",
      description: "the contract of plugins: calls, processes, files, the core API, interfaces",
      mimeType: "text/markdown",
    },
    {
      uri: uriOf("/proc/core/graph.json"),
      name: "graph.json",
      title: "The plugin graph",
      description: "each plugin's version, its imports and the result of each compatibility check",
      mimeType: "application/json",
    },
    {
      uri: uriOf("/proc/core/graph.dot"),
      name: "graph.dot",
      title: "The plugin graph for Graphviz",
      mimeType: "text/vnd.graphviz",
    },
  ];
  const own = plugins.flatMap((p): Resource[] => [
    {
      uri: uriOf(`/proc/core/plugins/${p}/discover.json`),
      name: `${p}/discover.json`,
      title: `${p}: rpc.discover`,
      description: `the OpenRPC document of ${p}'s current version`,
      mimeType: "application/json",
    },
    {
      uri: uriOf(`/proc/core/plugins/${p}/client.rs`),
      name: `${p}/client.rs`,
      title: `${p}: client.rs`,
      description: `the Rust code that import!("${p}") generates, for a plugin that calls ${p}`,
      mimeType: "text/x-rust",
    },
  ]);
  return [...core, ...own];
}

/** The template of every other world file. */
export const RESOURCE_TEMPLATES: ResourceTemplate[] = [{
  uriTemplate: `${SCHEME}///{+path}`,
  name: "world file",
  title: "A file or folder of the world",
  description: "any path a process sees (without /self): /state/…, /plugins/…, /proc/<pid>/…, " +
    "/run/…; a folder reads as its listing (JSON)",
}];

/**
 * Reads a resource through the view: a file as text when it is UTF-8, else
 * as base64; a folder as its listing. A file past 8 MiB is cut, and its
 * `_meta` says how large it is. Throws a {@linkcode ResourceError}, or the
 * view's error for a path it cannot read.
 */
export async function readResource(view: HostView, uri: string): Promise<ReadResourceResult> {
  const path = pathOf(uri);
  const listing = await view.list(path);
  if (listing.folder) {
    const entries = listing.entries.map((e) => ({
      name: e.folder ? `${e.name}/` : e.name,
      uri: uriOf(`${listing.path === "/" ? "" : listing.path}/${e.name}`),
      size: e.size,
      ...(e.target === undefined ? {} : { target: e.target }),
    }));
    return {
      contents: [{
        uri,
        mimeType: "application/json",
        text: JSON.stringify({ path: listing.path, entries }, null, 2),
      }],
    };
  }
  const file = await view.read(path, MAX_RESOURCE_BYTES);
  const cut = file.size > file.bytes.length;
  const meta = cut ? { _meta: { "sausage/size": file.size, "sausage/cut": true } } : {};
  let text: string | undefined;
  try {
    // a cut file may end inside a character: streaming leaves that part out
    text = new TextDecoder("utf-8", { fatal: true }).decode(file.bytes, { stream: cut });
  } catch {
    // not UTF-8: bytes
  }
  if (text !== undefined) {
    return { contents: [{ uri, mimeType: mimeOf(path, true), text, ...meta }] };
  }
  return {
    contents: [{ uri, mimeType: mimeOf(path, false), blob: base64(file.bytes), ...meta }],
  };
}

function base64(bytes: Uint8Array): string {
  let s = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(s);
}
