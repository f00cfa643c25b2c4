/**
 * `/proc/core/plugins/<name>/client.rs` comes from the SDK's own generator,
 * run by the host as a component, and is exactly the code that
 * `import!("<name>")` generates from the same document.
 *
 * The Rust side: `sdk/sausage-plugin-codegen/tests/command.rs` (the host's
 * command writes exactly `generate` of a document) and the tests of
 * `sdk/sausage-plugin-macros` (`import!` expands to exactly `generate` of
 * `imports/<name>.json`, as tokens).
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { findWasmToolchain } from "./toolchain.ts";
import { plugin } from "../../sdk/build.ts";
import { eventually, startWorld, TEST_CACHE_DIR, type TestWorld } from "../../tests/world.ts";
import { ComponentCache } from "../components/cache.ts";
import { WorkerPool } from "../pool.ts";
import { ClientCode } from "./client_code.ts";
import { installSdk, sdkForBuild } from "./sdk.ts";
import { codegenSourceHash, readCodegenManifest } from "./shipped_codegen.ts";
import { CODEGEN_DIST, SDK_DIR } from "../embedded.ts";
import { sha256Hex } from "../components/cache.ts";
import { initWorld } from "../init.ts";
import { Host } from "../host.ts";

const SDK = new URL("../../sdk/", import.meta.url).pathname;

Deno.test("client.rs shows the code import! generates from the plugin's document", async () => {
  await using w = await startWorld({ plugins: { probe: "probe", notes: "notes_v1" } });
  const read = async () =>
    ((await w.call("probe.read_file", { path: "/proc/core/plugins/notes/client.rs" })) as {
      text: string;
    }).text;
  assert.match(await read(), /being generated|fn add/);
  let text = "";
  await eventually(async () => !/being generated/.test(text = await read()), 120_000);
  assert.match(text, /fn add/, text);
  assert.match(text, /text/, "the params keep their names");
  assert.doesNotMatch(text, /could not be generated/, text);
});

/** A file of the world, read by a plugin (the files of /proc are the core's). */
async function readFile(w: TestWorld, path: string): Promise<string> {
  const answer = (await w.call("probe.read_file", { path })) as { text?: string; error?: string };
  if (answer.text === undefined) throw new Error(`${path}: ${answer.error}`);
  return answer.text;
}

/** `sausage-plugin-codegen PROVIDER < document`, built natively from `sdk/`. */
async function generateNatively(provider: string, document: string): Promise<string> {
  const toolchain = await findWasmToolchain(); // the rustc that sdk/target was built with
  const child = new Deno.Command("cargo", {
    args: ["run", "--quiet", "-p", "sausage-plugin-codegen", "--", provider],
    cwd: SDK,
    env: { ...toolchain.env, CARGO_TERM_COLOR: "never" },
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(document));
  await writer.close();
  const out = await child.output();
  const decoder = new TextDecoder();
  assert.ok(out.success, decoder.decode(out.stderr));
  return decoder.decode(out.stdout);
}

/** A consumer of notes; `use` is how it gets the module `notes`. */
function consumerMain(use: string): string {
  return `//! A consumer of notes.

use sausage_plugin::{Result, rpc, schema};

${use}

/// Adds notes through the notes plugin.
struct Consumer;

/// The params of \`add\`.
#[schema]
struct AddParams {
    /// The text of the note.
    text: String,
}

/// What \`add\` saw.
#[schema]
struct Seen {
    /// The number of notes that notes.add answered.
    count: u64,
    /// All notes after the call, from notes.list.
    notes: Vec<String>,
}

#[rpc]
impl Consumer {
    /// Add a note through notes, then list all notes.
    async fn add(&self, AddParams { text }: AddParams) -> Result<Seen> {
        let added = notes::add(notes::AddParams { text }).await?;
        Ok(Seen { count: added.count as u64, notes: notes::list().await? })
    }
}

fn main() {
    sausage_plugin::run(Consumer);
}
`;
}

Deno.test("client.rs is the generator's text of discover.json, and a plugin that includes it works as one with import!", async () => {
  await using w = await startWorld({
    plugins: { probe: "probe" },
    wasm: { notes: await Deno.readFile(await plugin("notes")) }, // the SDK's example
  });
  let client = "";
  await eventually(
    async () =>
      /^mod notes \{/m.test(client = await readFile(w, "/proc/core/plugins/notes/client.rs")),
    120_000,
  );
  const discover = await readFile(w, "/proc/core/plugins/notes/discover.json");

  // the host's file is, byte for byte, what the generator that import!
  // links makes of the document that a consumer copies to imports/
  assert.equal(await generateNatively("notes", discover), client);

  // two consumers that differ only in how they get the module
  const consumers = {
    "via-import": { use: `sausage_plugin::import!("notes"); // imports/notes.json`, files: {} },
    "via-include": {
      use: `include!("notes_client.rs"); // a copy of /proc/core/plugins/notes/client.rs`,
      files: { "src/notes_client.rs": client },
    },
  };
  const built: Record<string, { wasm: string; warnings: string[] }> = {};
  for (const [name, { use, files }] of Object.entries(consumers)) {
    const src = join(w.root, "plugins", name, "source");
    const all: Record<string, string> = {
      "Cargo.toml":
        `[package]\nname = "${name}"\nversion = "0.1.0"\nedition = "2024"\n\n[dependencies]\nsausage-plugin = "0.1"\n`,
      "imports/notes.json": discover, // step 1 of the README: the copy import! reads
      "src/main.rs": consumerMain(use),
      ...files,
    };
    for (const [path, text] of Object.entries(all)) {
      await Deno.mkdir(join(src, path, ".."), { recursive: true });
      await Deno.writeTextFile(join(src, path), text);
    }
    const response = await w.request("cargo.build", { plugin: name });
    assert.equal(response.error, undefined, JSON.stringify(response.error, null, 2));
    built[name] = response.result as { wasm: string; warnings: string[] };
    // the core checks the import against notes, as for any consumer
    const activated = await w.request("core.activate", { plugin: name, wasm: built[name].wasm });
    assert.equal(activated.error, undefined, JSON.stringify(activated.error, null, 2));
  }
  assert.deepEqual(built["via-import"].warnings, []);
  assert.deepEqual(built["via-include"].warnings, []);

  // they declare the same import, and call notes the same way
  const documents = await Promise.all(
    Object.keys(consumers).map((name) => w.call(`${name}.rpc.discover`)),
  ) as Record<string, unknown>[];
  assert.ok(documents[0]["x-sausage-imports"]);
  assert.deepEqual(documents[0]["x-sausage-imports"], documents[1]["x-sausage-imports"]);
  assert.deepEqual(documents[0].methods, documents[1].methods);
  assert.deepEqual(await w.call("via-import.add", { text: "milk" }), { count: 1, notes: ["milk"] });
  assert.deepEqual(await w.call("via-include.add", { text: "eggs" }), {
    count: 2,
    notes: ["milk", "eggs"],
  });
  const refused = await Promise.all(
    Object.keys(consumers).map((name) => w.request(`${name}.add`, { txt: "x" })),
  );
  assert.deepEqual(refused[0].error, refused[1].error);
  assert.deepEqual(await w.call("notes.list"), ["milk", "eggs"]);
});

/** A document of one method, for a provider named `demo`. */
const DEMO = {
  openrpc: "1.2.6",
  info: { title: "demo", version: "0.1.0" },
  methods: [{
    name: "ping",
    summary: "Answer pong.",
    paramStructure: "by-name",
    params: [],
    result: { name: "Pong", schema: { type: "string" } },
  }],
};

Deno.test("client.rs comes from the world's SDK, the one builds use: an edit of its generator shows, and a host start's install undoes it", async () => {
  const root = await Deno.makeTempDir({ prefix: "sausage-client-sdk-" });
  const worldSdk = join(root, "sdk");
  await installSdk(worldSdk);
  const cache = new ComponentCache(TEST_CACHE_DIR);
  const pool = new WorkerPool({
    size: 1,
    permissions: { read: [TEST_CACHE_DIR], write: [], net: false },
  });
  await pool.start();
  try {
    const code = new ClientCode({ cacheDir: TEST_CACHE_DIR, cache, pool, worldSdk });
    const make = async () => {
      await code.generate("demo", "v1", DEMO);
      return code.text("demo", "v1")!;
    };
    const shipped = await make();
    assert.match(shipped, /fn ping/, shipped);
    assert.doesNotMatch(shipped, /this world's generator/);

    // the world's sausage-plugin-codegen, as an agent may edit it
    const lib = join(worldSdk, "sausage-plugin-codegen", "src", "lib.rs");
    const text = await Deno.readTextFile(lib);
    await Deno.writeTextFile(
      lib,
      text.replace("pub fn generate(document_json", "fn generate_shipped(document_json") +
        `
/// The shipped generator's code, marked.
pub fn generate(document_json: &str, provider_name: &str) -> Result<String, Error> {
    generate_shipped(document_json, provider_name).map(|c| format!("// this world's generator\\n{c}"))
}
`,
    );
    // what was made before the edit is not given
    assert.equal(code.text("demo", "v1"), undefined);
    const edited = await make();
    assert.match(edited, /^\/\/ this world's generator\n/, edited);
    // the build's SDK is the same copy the generator was built from
    const { dir } = await sdkForBuild(worldSdk, TEST_CACHE_DIR);
    assert.ok(await Deno.stat(join(dir, "sausage-plugin-codegen.wasm")));

    await installSdk(worldSdk);
    assert.equal(await make(), shipped);
  } finally {
    pool.close();
    cache.close();
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("sdk/dist/ is fresh: codegen.json names the generator's source and sausage-plugin-codegen.wasm", async () => {
  const manifest = await readCodegenManifest();
  const fix = "run `deno task build:codegen` and commit sdk/dist/";
  assert.equal(await codegenSourceHash(SDK_DIR), manifest.source, `the generator changed: ${fix}`);
  const wasm = await Deno.readFile(join(CODEGEN_DIST, "sausage-plugin-codegen.wasm"));
  assert.equal(await sha256Hex(wasm), manifest.wasm, `the component is not the one named: ${fix}`);
});

Deno.test("on a cache that never built anything, client.rs is ready when core.activate answers", async () => {
  const root = await Deno.makeTempDir({ prefix: "sausage-client-fresh-" });
  const cacheDir = await Deno.makeTempDir({ prefix: "sausage-cache-fresh-" });
  try {
    await initWorld(root, { installAgent: false });
    const wasm = await Deno.readFile(await plugin("notes"));
    await Deno.writeFile(join(root, "state", "notes.wasm"), wasm);
    const host = await Host.start({ world: root, cacheDir, installAgent: false });
    try {
      await host.discovered;
      const activated = await host.client("console").request("core.activate", {
        plugin: "notes",
        wasm: "/state/notes.wasm",
      });
      assert.equal(activated.error, undefined, activated.error?.message);
      const text = host.clientCode.text("notes", await sha256Hex(wasm));
      assert.match(text ?? "(not made)", /fn add/);
      // the shipped generator ran: nothing was compiled for it
      await assert.rejects(Deno.stat(join(cacheDir, "cargo", "target-sdk")));
    } finally {
      await host.shutdown();
    }
  } finally {
    await Deno.remove(root, { recursive: true });
    await Deno.remove(cacheDir, { recursive: true });
  }
});
