/**
 * What the executable embeds: `core/embedded.ts` names every file the host
 * needs beside its code, deno.json's `compile` task includes each, and the
 * host runs from a copy that holds only what the executable would (the
 * module graphs of main.ts and of the included entry points, the included
 * files, deno.json and deno.lock), with the checkout unreadable. So a
 * missing `--include` fails here, where `denort` cannot be had, not first
 * on a user's machine.
 */
import assert from "node:assert/strict";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import * as embedded from "../core/embedded.ts";
import { SAUSAGE_FLAGS } from "../core/host.ts";
import { installPlugin } from "./world.ts";

/** The checkout, without the trailing `/` (`--deny-read` takes it so). */
const CHECKOUT = embedded.ROOT.replace(/\/$/, "");

const dec = new TextDecoder();

/** The `compile` task's arguments, split at spaces (it quotes none). */
async function compileTask(): Promise<{ includes: string[]; entry: string }> {
  const config = JSON.parse(await Deno.readTextFile(join(CHECKOUT, "deno.json")));
  const args = (config.tasks.compile as string).split(/\s+/);
  const includes = args.flatMap((a, i) => (args[i - 1] === "--include" ? [a] : []));
  return { includes, entry: args[args.length - 1] };
}

/** Whether `path` (relative) is `include` or inside it. */
const within = (path: string, include: string) =>
  path === include || path.startsWith(`${include.replace(/\/$/, "")}/`);

/** A path the module names, relative to the root (a folder's without its trailing `/`). */
function relativePath(value: string | URL): string {
  const path = value instanceof URL ? fileURLToPath(value) : value;
  return relative(CHECKOUT, path);
}

Deno.test("core/embedded.ts names what the compile task includes, and each exists", async () => {
  const { includes, entry } = await compileTask();
  assert.equal(relativePath(embedded.MAIN), entry, "main.ts is the compiled entry point");
  for (const path of embedded.EMBEDDED) {
    assert.ok(
      includes.some((include) => within(path, include)),
      `${path} is not included by deno.json's compile task: add \`--include ${path}\``,
    );
    await Deno.stat(join(CHECKOUT, path)).catch(() => {
      throw new Error(`${path}, which core/embedded.ts names, does not exist in the checkout`);
    });
  }
  // each file or folder the module exports lies inside one it lists as embedded
  const named: (string | URL)[] = embedded.EXAMPLE_PLUGINS.flatMap((name) =>
    ["Cargo.toml", "Cargo.lock", "src"].map((f) => join(embedded.exampleCrate(name), f))
  );
  named.push(...embedded.SDK_CRATES.map((crate) => join(embedded.SDK_DIR, crate)));
  for (const [name, value] of Object.entries(embedded)) {
    if (name === "ROOT" || name === "MAIN" || name === "EMBEDDED") continue;
    if (name === "SDK_DIR" || name === "AGENT_CRATE") continue; // folders whose parts are listed
    if (typeof value === "string" || value instanceof URL) named.push(value);
  }
  assert.ok(named.length > 10, `only ${named.length} paths checked`);
  for (const path of named) {
    const rel = relativePath(path);
    assert.ok(
      embedded.EMBEDDED.some((e) => within(rel, e)),
      `${rel} is named by core/embedded.ts but not in its EMBEDDED list`,
    );
  }
});

Deno.test("the sausage task downloads before the console starts, and runs it quietly", async () => {
  // from source, Deno draws download progress on stderr when a worker first loads its npm
  // packages, and clears that line when done, which erases the console's prompt: so the task
  // caches the module graphs of main.ts and of every worker first, then runs with --quiet
  const config = JSON.parse(await Deno.readTextFile(join(CHECKOUT, "deno.json")));
  const [cache, run] = (config.tasks.sausage as string).split(" && ");
  const cacheArgs = cache.split(/\s+/);
  assert.deepEqual(cacheArgs.slice(0, 2), ["deno", "cache"]);
  const entries = [
    embedded.MAIN,
    embedded.PLUGIN_WORKER,
    embedded.TRANSPILE_WORKER,
    embedded.CARGO_WORKER,
  ];
  for (const entry of entries) {
    const path = relativePath(entry);
    assert.ok(cacheArgs.includes(path), `the sausage task does not cache ${path}: add it`);
  }
  const runArgs = run?.split(/\s+/) ?? [];
  assert.deepEqual(runArgs.slice(0, 3), ["deno", "run", "--quiet"], `then it runs: ${run}`);
  assert.equal(runArgs.at(-1), relativePath(embedded.MAIN));
});

/** One module of `deno info --json`. */
interface InfoModule {
  specifier: string;
  local?: string;
  dependencies?: { code?: { specifier: string } }[];
}

/**
 * The local modules that `entry` loads (`deno info --json`), relative to the
 * checkout: its code dependencies, not the type-only ones, which the
 * compiled executable leaves out too.
 */
async function localModules(entry: string): Promise<string[]> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", join(CHECKOUT, entry)],
    cwd: CHECKOUT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.equal(out.code, 0, `deno info ${entry}: ${dec.decode(out.stderr)}`);
  const graph = JSON.parse(dec.decode(out.stdout)) as {
    roots: string[];
    modules: InfoModule[];
    redirects: Record<string, string>;
  };
  const modules = new Map(graph.modules.map((m) => [m.specifier, m]));
  const found = new Set<string>();
  const visit = (specifier: string) => {
    const m = modules.get(graph.redirects[specifier] ?? specifier);
    if (!m?.local?.startsWith(`${CHECKOUT}/`) || found.has(m.local)) return;
    found.add(m.local);
    for (const d of m.dependencies ?? []) if (d.code) visit(d.code.specifier);
  };
  graph.roots.forEach(visit);
  return [...found].map((path) => relative(CHECKOUT, path));
}

/** Copies a file or a folder (recursively) of the checkout to the same place under `to`. */
async function copyIn(path: string, to: string): Promise<void> {
  const from = join(CHECKOUT, path);
  const info = await Deno.stat(from);
  if (info.isDirectory) {
    for await (const e of Deno.readDir(from)) await copyIn(join(path, e.name), to);
  } else {
    await Deno.mkdir(dirname(join(to, path)), { recursive: true });
    await Deno.copyFile(from, join(to, path));
  }
}

/** Builds the copy: what the compiled executable holds, plus deno.json and deno.lock. */
async function copyOfExecutable(): Promise<{ dir: string; files: number }> {
  const { includes, entry } = await compileTask();
  const dir = await Deno.makeTempDir({ prefix: "sausage-embedded-" });
  // --include of a module brings its graph, as the entry point does
  const entries = [entry, ...includes.filter((i) => /\.[jt]s$/.test(i))];
  const files = new Set<string>(["deno.json", "deno.lock"]);
  for (const graph of await Promise.all(entries.map(localModules))) {
    for (const m of graph) files.add(m);
  }
  for (const f of files) await copyIn(f, dir);
  for (const include of includes) await copyIn(include, dir);
  return { dir, files: files.size };
}

/** `deno run` of the copy's main.ts, in the copy, the checkout unreadable. */
function sausage(copy: string, args: string[], piped = true): Deno.Command {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", `--deny-read=${CHECKOUT}`, ...SAUSAGE_FLAGS, join(copy, "main.ts"), ...args],
    cwd: copy,
    stdin: "null",
    stdout: piped ? "piped" : "null",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  });
}

async function run(copy: string, args: string[]) {
  const out = await sausage(copy, args).output();
  const result = { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
  assert.equal(result.code, 0, `sausage ${args.join(" ")}: exit ${result.code}\n${result.stderr}`);
  return result;
}

/** `--headless WORLD --http 127.0.0.1:0`: the page and its script, then SIGTERM. */
async function checkWebPage(copy: string, world: string, cache: string): Promise<void> {
  const child = sausage(copy, [
    "--headless",
    world,
    "--http",
    "127.0.0.1:0",
    "--cache-dir",
    cache,
  ], false).spawn();
  const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  try {
    while (!/the web page is at (\S+)/.test(seen)) {
      const { value, done } = await reader.read();
      if (done) break;
      seen += value;
    }
    const url = /the web page is at (\S+)/.exec(seen)?.[1];
    assert.ok(url, `no URL printed by --headless --http:\n${seen}`);
    const withToken = await fetch(url, { redirect: "manual" });
    await withToken.body?.cancel();
    const cookie = withToken.headers.get("set-cookie")?.split(";")[0];
    assert.ok(cookie, `the page's URL set no cookie (status ${withToken.status})`);
    const index = await fetch(new URL("/", url), { headers: { cookie } });
    assert.equal(index.status, 200);
    assert.match(await index.text(), /app\.js/);
    const script = await fetch(new URL("/assets/app.js", url), { headers: { cookie } });
    assert.equal(script.status, 200, "the web page's assets are embedded");
    assert.equal(
      await script.text(),
      await Deno.readTextFile(join(CHECKOUT, "web", "assets", "app.js")),
    );
  } finally {
    child.kill("SIGTERM");
    await reader.cancel().catch(() => {});
  }
  assert.equal((await child.status).code, 0);
}

Deno.test("the host runs from only what the executable embeds, the checkout out of reach", async () => {
  const started = performance.now();
  const { dir: copy, files } = await copyOfExecutable();
  const world = await Deno.makeTempDir({ prefix: "sausage-embedded-world-" });
  const cache = await Deno.makeTempDir({ prefix: "sausage-embedded-cache-" });
  try {
    assert.ok(files > 50, `only ${files} modules copied`);
    await Deno.stat(join(copy, "main.ts"));
    await assert.rejects(Deno.stat(join(copy, "README.md")), Deno.errors.NotFound);

    // init --examples: the SDK, the agent (component and source) and the examples
    await run(copy, ["init", "--examples", world]);
    for (
      const path of [
        "plugins/cargo/sdk/Cargo.toml",
        "plugins/cargo/sdk/sausage-plugin/Cargo.toml",
        "plugins/agent/plugin.wasm",
        "plugins/agent/source/src/main.rs",
        ...embedded.EXAMPLE_PLUGINS.map((name) => `plugins/${name}/source/Cargo.toml`),
      ]
    ) {
      await Deno.stat(join(world, path)).catch(() => {
        throw new Error(`init --examples did not install ${path}`);
      });
    }

    // a call: a plugin worker and the transpiler (the cache is new) run the agent's component
    const sessions = await run(copy, ["call", world, "agent.sessions", "--cache-dir", cache]);
    assert.ok(Array.isArray(JSON.parse(sessions.stdout)), sessions.stdout);

    // PROTOCOL.md as the core serves it
    await installPlugin(world, "probe", "probe");
    const read = await run(copy, [
      "call",
      world,
      "probe.read_file",
      '{"path": "/proc/core/PROTOCOL.md"}',
      "--cache-dir",
      cache,
    ]);
    assert.equal(
      JSON.parse(read.stdout).text,
      await Deno.readTextFile(join(CHECKOUT, "PROTOCOL.md")),
    );

    // cargo.build: its worker starts and runs cargo, which stops at once on a broken manifest
    const broken = join(world, "plugins", "broken", "source");
    await Deno.mkdir(join(broken, "src"), { recursive: true });
    await Deno.writeTextFile(join(broken, "Cargo.toml"), '[package\nname = "broken"\n');
    await Deno.writeTextFile(join(broken, "src", "main.rs"), "fn main() {}\n");
    const build = await sausage(copy, [
      "call",
      world,
      "cargo.build",
      '{"plugin": "broken"}',
      "--cache-dir",
      cache,
    ]).output();
    const failed = JSON.parse(dec.decode(build.stdout));
    assert.equal(failed.code, -32004, dec.decode(build.stdout) + dec.decode(build.stderr));
    assert.match(failed.data.output, /unclosed table/, "cargo ran in the build worker");

    // --version: deno.json and the SDK are found
    const version = (await run(copy, ["--version"])).stdout;
    const config = JSON.parse(await Deno.readTextFile(join(CHECKOUT, "deno.json")));
    const jco = (config.imports["@bytecodealliance/jco"] as string).split("@").pop();
    assert.match(version, new RegExp(`^jco ${jco?.replaceAll(".", "\\.")},`, "m"), version);
    assert.match(version, /^sdk sausage-plugin \d+\.\d+\.\d+ \(files [0-9a-f]+\)/m, version);

    await checkWebPage(copy, world, cache);
  } finally {
    for (const d of [copy, world, cache]) await Deno.remove(d, { recursive: true });
  }
  const seconds = (performance.now() - started) / 1000;
  assert.ok(seconds < 120, `took ${seconds.toFixed(1)} s`);
});
