/**
 * `sausage init --examples`: the example plugins' sources in a new world,
 * built by the real `cargo.build`, activated and called (README, "A plugin,
 * from source to a call").
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { Host } from "../core/host.ts";
import { EXAMPLE_PLUGINS, initWorld } from "../core/init.ts";
import { TEST_CACHE_DIR } from "./world.ts";

const MAIN = new URL("../main.ts", import.meta.url).pathname;

async function sausage(...args: string[]) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "--unstable-worker-options", MAIN, ...args],
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

Deno.test("sausage init --examples writes each example's source with the SDK as a world resolves it, and keeps a source that exists", async () => {
  const root = await Deno.makeTempDir({ prefix: "sausage-examples-" });
  try {
    const first = await sausage("init", "--examples", root, "--cache-dir", TEST_CACHE_DIR);
    assert.equal(first.code, 0, first.stderr);
    for (const name of EXAMPLE_PLUGINS) {
      const source = join(root, "plugins", name, "source");
      assert.match(first.stdout, new RegExp(`created .*plugins/${name}/source/ \\(the example`));
      const manifest = await Deno.readTextFile(join(source, "Cargo.toml"));
      assert.match(manifest, /^sausage-plugin = "0\.1"$/m);
      assert.doesNotMatch(manifest, /path\s*=/, "no path of the repository is left");
      await Deno.stat(join(source, "Cargo.lock"));
      await Deno.stat(join(source, "src", "main.rs"));
    }
    // no plugin.wasm: the examples are sources, built when the person asks
    await assert.rejects(Deno.stat(join(root, "plugins", "notes", "plugin.wasm")));

    const main = join(root, "plugins", "notes", "source", "src", "main.rs");
    await Deno.writeTextFile(main, "// my own notes\n", { append: true });
    const again = await sausage("init", "--examples", root, "--cache-dir", TEST_CACHE_DIR);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /kept +.*plugins\/notes\/source\//);
    assert.match(again.stdout, /the example notes was not installed: .* exists/);
    assert.match(await Deno.readTextFile(main), /my own notes\n$/);
    assert.deepEqual(
      [...Deno.readDirSync(join(root, "plugins", "notes"))].map((e) => e.name),
      ["source"],
      "no staging folder is left",
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("an example from init --examples builds with cargo.build, activates and answers notes.add; www's build cannot become notes by mistake", async () => {
  const root = await Deno.makeTempDir({ prefix: "sausage-examples-" });
  const host = await Host.start({
    world: (await initWorld(root, { examples: true })).root,
    cacheDir: TEST_CACHE_DIR,
    installAgent: false,
  });
  try {
    const client = host.client("console");
    const built = await client.request("cargo.build", { plugin: "notes" });
    assert.equal(built.error, undefined, JSON.stringify(built.error, null, 2));
    const { wasm, tests } = built.result as { wasm: string; tests: { failed: number } };
    assert.equal(wasm, "/state/cargo/builds/1/notes.wasm");
    assert.equal(tests.failed, 0);
    const activated = await client.request("core.activate", { plugin: "notes", wasm });
    assert.equal(activated.error, undefined, activated.error?.message);
    const added = await client.request("notes.add", { text: "milk" });
    assert.equal(added.error, undefined, added.error?.message);
    assert.deepEqual(added.result, { count: 1 });

    // the SDK's check of params refuses, and the journal has it
    const bad = await client.request("notes.add", { txt: "milk" });
    assert.equal(bad.error?.code, -32602);
    host.journal.flush();
    const [refused] = host.journal.query({ plugin: "notes", grep: "^answered notes\\.add" });
    assert.match(refused.line, /^answered notes\.add from console with error -32602: /);

    // www's component under the name notes: nobody imports notes, yet it is refused
    const www = await client.request("cargo.build", { plugin: "www" });
    assert.equal(www.error, undefined, JSON.stringify(www.error, null, 2));
    const mistake = await client.request("core.activate", {
      plugin: "notes",
      wasm: (www.result as { wasm: string }).wasm,
    });
    assert.equal(mistake.error?.code, -32003);
    assert.match(
      mistake.error!.message,
      /none of the methods of the current one \(notes\.add, notes\.list\)/,
    );
    assert.deepEqual((await client.request("notes.list")).result, ["milk"]);

    const secrets = await client.request("cargo.build", { plugin: "secrets" });
    assert.equal(secrets.error, undefined, JSON.stringify(secrets.error, null, 2));
  } finally {
    await host.shutdown();
    await Deno.remove(root, { recursive: true });
  }
});
