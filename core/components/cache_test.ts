/**
 * The component cache: where it is, and reuse by the sha256 of the bytes,
 * with the real probe test plugin and a real transpile.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { testPlugin } from "../../tests/setup.ts";
import { ComponentCache, resolveCacheDir, sha256Hex } from "./cache.ts";
import { TRANSPILER_FINGERPRINT } from "./format.ts";

/** Runs `fn` with environment variables set (undefined: removed), then puts them back. */
function withEnv(vars: Record<string, string | undefined>, fn: () => void): void {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, Deno.env.get(k)]));
  const set = (values: Record<string, string | undefined>) => {
    for (const [k, v] of Object.entries(values)) {
      if (v === undefined) Deno.env.delete(k);
      else Deno.env.set(k, v);
    }
  };
  set(vars);
  try {
    fn();
  } finally {
    set(saved);
  }
}

Deno.test("the cache folder: --cache-dir, else $XDG_CACHE_HOME/sausage, else ~/.cache/sausage", () => {
  withEnv({ XDG_CACHE_HOME: "/x/cache", HOME: "/home/u", USERPROFILE: undefined }, () => {
    assert.equal(resolveCacheDir("/given"), "/given");
    assert.equal(resolveCacheDir("rel/cache"), join(Deno.cwd(), "rel", "cache"), "made absolute");
    assert.equal(resolveCacheDir(), "/x/cache/sausage");
  });
  withEnv({ XDG_CACHE_HOME: undefined, HOME: "/home/u", USERPROFILE: undefined }, () => {
    assert.equal(resolveCacheDir(), "/home/u/.cache/sausage");
    assert.equal(resolveCacheDir(""), "/home/u/.cache/sausage", "an empty override is none");
  });
  withEnv({ XDG_CACHE_HOME: "", HOME: "/home/u", USERPROFILE: undefined }, () => {
    assert.equal(resolveCacheDir(), "/home/u/.cache/sausage", "an empty XDG_CACHE_HOME is unset");
  });
  withEnv({ XDG_CACHE_HOME: undefined, HOME: undefined, USERPROFILE: "C:/Users/u" }, () => {
    assert.equal(resolveCacheDir(), join("C:/Users/u", ".cache", "sausage"));
  });
  withEnv({ XDG_CACHE_HOME: undefined, HOME: undefined, USERPROFILE: undefined }, () => {
    assert.throws(() => resolveCacheDir(), /set HOME or XDG_CACHE_HOME, or pass --cache-dir/);
    assert.equal(resolveCacheDir("/given"), "/given");
  });
});

/** A cache on `dir` that counts its transpiles. */
function countingCache(dir: string): { cache: ComponentCache; transpiled: string[] } {
  const cache = new ComponentCache(dir);
  const transpiled: string[] = [];
  cache.onTranspile = (name) => transpiled.push(name);
  cache.onWarning = (m) => assert.fail(`unexpected warning: ${m}`);
  return { cache, transpiled };
}

Deno.test("components are kept by sha256: the same bytes are not transpiled again, a changed byte is", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sausage-cache-" });
  const bytes = await Deno.readFile(await testPlugin("probe"));
  const hash = await sha256Hex(bytes);
  try {
    const first = countingCache(dir);
    try {
      const loaded = await first.cache.load(bytes, "probe");
      assert.equal(loaded.hash, hash);
      assert.deepEqual(first.transpiled, ["probe"]);
      const entry = join(dir, "components", hash);
      const meta = JSON.parse(await Deno.readTextFile(join(entry, "meta.json")));
      assert.equal(meta.fingerprint, TRANSPILER_FINGERPRINT);
      assert.ok(meta.imports.some((i: string) => i.startsWith("wasi:cli/stdout")));
      assert.equal(loaded.jsUrl, new URL(`file://${join(entry, "plugin.js")}`).href);
      // the same instance: the very same loaded component
      assert.equal(await first.cache.load(bytes.slice(), "probe again"), loaded);
      assert.deepEqual(first.transpiled, ["probe"]);
    } finally {
      first.cache.close();
    }

    // a new cache on the same folder (a new host): read from the folder, no transpile
    const second = countingCache(dir);
    try {
      const again = await second.cache.load(bytes, "probe");
      assert.equal(again.hash, hash);
      assert.deepEqual(second.transpiled, []);
      assert.ok(Object.keys(again.modules).length > 0);

      // one more byte (a custom section at the end): another hash, another transpile
      const changed = new Uint8Array([...bytes, 0, 5, 4, 0x6d, 0x6f, 0x72, 0x65]);
      const other = await second.cache.load(changed, "probe changed");
      assert.notEqual(other.hash, hash);
      assert.equal(other.hash, await sha256Hex(changed));
      assert.deepEqual(second.transpiled, ["probe changed"]);
      const entries = [];
      for await (const e of Deno.readDir(join(dir, "components"))) entries.push(e.name);
      assert.deepEqual(entries.sort(), [hash, other.hash].sort(), "no temporary folder left");
    } finally {
      second.cache.close();
    }

    // a damaged entry, or one from another transpiler, is transpiled again and repaired
    await Deno.remove(join(dir, "components", hash, "plugin.js"));
    const third = countingCache(dir);
    try {
      await third.cache.load(bytes, "probe damaged");
      assert.deepEqual(third.transpiled, ["probe damaged"]);
      assert.ok((await Deno.stat(join(dir, "components", hash, "plugin.js"))).isFile);
    } finally {
      third.cache.close();
    }
    const metaPath = join(dir, "components", hash, "meta.json");
    const meta = JSON.parse(await Deno.readTextFile(metaPath));
    await Deno.writeTextFile(metaPath, JSON.stringify({ ...meta, fingerprint: "older" }));
    const fourth = countingCache(dir);
    try {
      await fourth.cache.load(bytes, "probe older");
      assert.deepEqual(fourth.transpiled, ["probe older"]);
      const fresh = JSON.parse(await Deno.readTextFile(metaPath));
      assert.equal(fresh.fingerprint, TRANSPILER_FINGERPRINT);
    } finally {
      fourth.cache.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
