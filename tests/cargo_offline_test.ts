/**
 * `cargo.build` without a network (PROTOCOL section 11, "Dependencies and
 * Cargo.lock"): once a plugin's crates were fetched, its builds need no
 * network; a crate that is not in the local cache fails with -32004 naming
 * it. The host without network is a `sausage call` in a network namespace of
 * its own (`unshare -n`, as root); where that is not allowed, the tests are
 * ignored with the reason.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { sausageCommand } from "../core/host.ts";
import { startWorld, TEST_CACHE_DIR } from "./world.ts";

const NOTES = new URL("../plugins/notes/src/main.rs", import.meta.url).pathname;

/** Whether this machine lets a command run with no network (`unshare -n` needs root). */
function canUnshare(): boolean {
  try {
    return new Deno.Command("unshare", { args: ["-n", "true"], stderr: "null" }).outputSync()
      .success;
  } catch {
    return false;
  }
}
const OFFLINE = canUnshare();
if (!OFFLINE) {
  console.log("cargo_offline_test.ts: ignored: `unshare -n` needs root (run the tests as root)");
}

async function writeSource(root: string, plugin: string, dependencies = ""): Promise<string> {
  const src = join(root, "plugins", plugin, "source");
  await Deno.mkdir(join(src, "src"), { recursive: true });
  await Deno.writeTextFile(join(src, "src", "main.rs"), await Deno.readTextFile(NOTES));
  await Deno.writeTextFile(
    join(src, "Cargo.toml"),
    `[package]\nname = "${plugin}"\nversion = "0.1.0"\nedition = "2024"\n\n` +
      `[dependencies]\nsausage-plugin = "0.1"\n${dependencies}`,
  );
  return src;
}

/** `sausage call WORLD cargo.build` in a network namespace with no network. */
async function buildOffline(root: string, plugin: string) {
  const [cmd, ...args] = sausageCommand([
    "call",
    root,
    "cargo.build",
    JSON.stringify({ plugin }),
    "--cache-dir",
    TEST_CACHE_DIR,
    "--no-services",
  ]);
  const out = await new Deno.Command("unshare", {
    args: ["-n", cmd, ...args],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  return { code: out.code, answer: JSON.parse(text), stderr: new TextDecoder().decode(out.stderr) };
}

Deno.test({
  name: "a build keeps Cargo.lock in the source folder, and builds again with no network",
  ignore: !OFFLINE,
  async fn() {
    await using w = await startWorld();
    const root = w.root;
    {
      const src = await writeSource(root, "offnotes");
      // with the network: the crates are fetched if this machine never had them
      const r = await w.request("cargo.build", { plugin: "offnotes" });
      assert.equal(r.error, undefined, JSON.stringify(r.error));
      await w.host.shutdown(); // the host without network is another
      const lock = await Deno.readTextFile(join(src, "Cargo.lock"));
      assert.match(lock, /name = "serde_json"/);
      assert.match(lock, /name = "offnotes"/);

      const offline = await buildOffline(root, "offnotes");
      assert.equal(offline.code, 0, `${JSON.stringify(offline.answer)}\n${offline.stderr}`);
      assert.match(offline.answer.wasm, /^\/state\/cargo\/builds\/\d+\/offnotes\.wasm$/);
      assert.equal(offline.answer.tests.passed, 2);
      // the same versions: the lock file did not change
      assert.equal(await Deno.readTextFile(join(src, "Cargo.lock")), lock);
    }
  },
});

Deno.test({
  name: "with no network, a crate that is not in the local cache is -32004 naming it",
  ignore: !OFFLINE,
  async fn() {
    const root = await Deno.makeTempDir({ prefix: "sausage-offline-" });
    try {
      await writeSource(root, "needsnet", `sausage-test-no-such-crate = "1"\n`);
      const r = await buildOffline(root, "needsnet");
      assert.equal(r.code, 1, r.stderr);
      assert.equal(r.answer.code, -32004, JSON.stringify(r.answer));
      assert.equal(r.answer.data.step, "fetching the dependencies");
      assert.match(r.answer.message, /`sausage-test-no-such-crate`/);
      assert.match(r.answer.message, /needs the network once/);
      assert.match(r.answer.message, /\/plugins\/needsnet\/source\/Cargo\.toml/);
      // no path of the host's cache in what the caller reads
      assert.doesNotMatch(r.answer.message, new RegExp(TEST_CACHE_DIR));
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  },
});
