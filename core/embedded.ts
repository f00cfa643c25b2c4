/**
 * Every file the host needs beside its code, named in one place: PROTOCOL.md
 * and the documents it links, the SDK, the agent's component and source, the example plugins, the web
 * page's assets and the workers' entry points. Each is found from this
 * module's own place, so the same way from a checkout and from the
 * `deno compile`d executable, whose `--include`s (deno.json's `compile`
 * task) put them in the same places beside the embedded code.
 * `tests/embedded_test.ts` keeps {@linkcode EMBEDDED} and the task in
 * agreement. No other module computes a path from `import.meta`.
 *
 * @module
 */
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

/** The folder that holds main.ts: the checkout, or the executable's embedded root. */
const ROOT_URL = new URL("../", import.meta.url);

/** A path below the root, as a file path (a folder's keeps its trailing `/`). */
function at(relative: string): string {
  return fileURLToPath(new URL(relative, ROOT_URL));
}

/** The folder that holds main.ts (with a trailing `/`); in a checkout, where `.git` is. */
export const ROOT: string = at("./");

/** main.ts, which `deno run` starts when a host from source starts another `sausage`. */
export const MAIN: string = at("main.ts");

/** deno.json, read for the versions of the npm packages (`sausage --version`). */
export const DENO_JSON: string = at("deno.json");

/** PROTOCOL.md, served as `/proc/core/PROTOCOL.md`. */
export const PROTOCOL_MD: string = at("PROTOCOL.md");

/** The documents PROTOCOL.md links (`docs/*.md`), served as `/proc/core/docs/`. */
export const DOCS_DIR: string = at("docs/");

/** The SDK's folder `sdk/` (with a trailing `/`). */
export const SDK_DIR: string = at("sdk/");

/** The crates of the SDK, as folders of {@linkcode SDK_DIR}. */
export const SDK_CRATES: readonly string[] = [
  "sausage-plugin",
  "sausage-plugin-macros",
  "sausage-plugin-codegen",
];

/**
 * The import generator the host ships, built from `sdk/sausage-plugin-codegen`
 * by `deno task build:codegen`, with `codegen.json` saying from what.
 */
export const CODEGEN_DIST: string = at("sdk/dist/");

/** The agent's crate `plugins/agent/` (with a trailing `/`). */
export const AGENT_CRATE: string = at("plugins/agent/");

/** The agent's component, which `deno task build:agent` writes. */
export const AGENT_WASM: string = at("plugins/agent/dist/agent.wasm");

/** The example plugins the host ships (`plugins/<name>/`), in the order `init` installs them. */
export const EXAMPLE_PLUGINS: readonly string[] = ["notes", "www", "secrets"];

/**
 * The crate of an example plugin (with a trailing `/`).
 *
 * @example
 * ```ts
 * exampleCrate("notes").endsWith("/plugins/notes/"); // true
 * ```
 */
export function exampleCrate(name: string): string {
  return at(`plugins/${name}/`);
}

/** The web page's files `web/assets/`, as a folder URL to resolve a file name against. */
export const WEB_ASSETS: URL = new URL("web/assets/", ROOT_URL);

/**
 * The path of `marked`'s ES module, which the page loads as `/assets/marked.js`
 * so that it draws Markdown with the console's library: in Deno's npm cache,
 * or in the executable (which holds the npm packages the host imports).
 */
export function markedModule(): string {
  return createRequire(import.meta.url).resolve("marked");
}

/** The entry point of a plugin worker. */
export const PLUGIN_WORKER: URL = new URL("runtime/worker.ts", ROOT_URL);

/** The entry point of the transpiler's worker. */
export const TRANSPILE_WORKER: URL = new URL("core/components/transpile_worker.ts", ROOT_URL);

/** The entry point of a `cargo.build` worker. */
export const CARGO_WORKER: URL = new URL("core/cargo/build_worker.ts", ROOT_URL);

/** A crate's source as the host ships it: no `target/`, no `dist/`. */
const crateSource = (dir: string) => [`${dir}/Cargo.toml`, `${dir}/Cargo.lock`, `${dir}/src`];

/**
 * Every file and folder above that the executable must embed, relative to
 * {@linkcode ROOT}, as the `compile` task names them with `--include`
 * (main.ts is the task's entry point, so it is not among them).
 */
export const EMBEDDED: readonly string[] = [
  "runtime/worker.ts",
  "core/components/transpile_worker.ts",
  "core/cargo/build_worker.ts",
  "deno.json",
  "PROTOCOL.md",
  "docs",
  "sdk/Cargo.toml",
  "sdk/README.md",
  ...SDK_CRATES.map((crate) => `sdk/${crate}`),
  "sdk/dist",
  "plugins/agent/dist/agent.wasm",
  ...crateSource("plugins/agent"),
  ...EXAMPLE_PLUGINS.flatMap((name) => crateSource(`plugins/${name}`)),
  "web/assets",
];
