/**
 * The bounded cache: `sausage cache` by kind, `sausage cache gc` on old and
 * new entries (mtimes set with `Deno.utime`), the size limit with its
 * least-recently-used order, and the last-use mark a real load leaves.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  afterBuild,
  CACHE_LIMIT_ENV,
  cacheLimit,
  CacheLimitError,
  cacheUsage,
  collectUnused,
  DEFAULT_CACHE_LIMIT_BYTES,
  enforceLimit,
  parseSize,
  TARGET_USED_MARKER,
} from "../core/components/cache_gc.ts";
import { ComponentCache, USED_MARKER } from "../core/components/cache.ts";
import { testPlugin } from "./setup.ts";

const DAY = 24 * 3600 * 1000;
const MAIN = new URL("../main.ts", import.meta.url).pathname;

async function file(path: string, bytes: number, ageDays?: number): Promise<void> {
  await Deno.mkdir(join(path, ".."), { recursive: true });
  await Deno.writeFile(path, new Uint8Array(bytes));
  if (ageDays !== undefined) await age(path, ageDays);
}

async function age(path: string, days: number): Promise<void> {
  const t = new Date(Date.now() - days * DAY);
  await Deno.utime(path, t, t);
}

/**
 * A cache with one entry of each kind, old (40 days) and new (1 hour):
 * 1000-byte transpiles, 100-byte documents, 2000-byte SDK copies, and a
 * 5000-byte cargo target folder.
 */
async function makeCache(): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "sausage-cache-gc-" });
  for (const [name, days] of [["old", 40], ["new", 0.04]] as const) {
    const hash = name.padEnd(64, "0");
    await file(join(dir, "components", hash, "plugin.js"), 600);
    await file(join(dir, "components", hash, "meta.json"), 400, days);
    // a document counts as used with its transpile: make its own time old
    await file(join(dir, "discover", `${hash}.json`), 100, 40);
    await file(join(dir, "sdk", name, "Cargo.toml"), 2000);
    await file(join(dir, "sdk", name, ".complete"), 0, days);
  }
  await file(join(dir, "cargo", "target", "release", "libx.rlib"), 5000);
  await file(join(dir, "cargo", "target", TARGET_USED_MARKER), 0, 50);
  return dir;
}

async function exists(path: string): Promise<boolean> {
  return await Deno.stat(path).then(() => true, () => false);
}

async function sausage(args: string[], env: Record<string, string> = {}) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--unstable-worker-options", MAIN, ...args],
    env: { NO_COLOR: "1", ...env },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
}

Deno.test("cache: what it holds, by kind, with each entry's last use", async () => {
  const dir = await makeCache();
  try {
    const usage = await cacheUsage(dir);
    assert.deepEqual(usage.bytes, {
      transpiles: 2000,
      documents: 200,
      sdk: 4000,
      cargo: 5000,
      other: 0,
    });
    assert.equal(usage.total, 11200);
    const doc = usage.entries.find((e) =>
      e.path === join("discover", "new".padEnd(64, "0") + ".json")
    );
    assert.ok(doc && Date.now() - doc.lastUse < DAY, "a document is as recent as its transpile");
    const { code, stdout } = await sausage(["cache", "--cache-dir", dir]);
    assert.equal(code, 0);
    assert.match(stdout, /transpiled plugins \(components\/\), 2 entries/);
    assert.match(stdout, /4\.9 KiB\s+cargo's compiled crates \(cargo\/\), 1 entry/);
    assert.match(stdout, /limit 10 GiB \(SAUSAGE_CACHE_LIMIT\)/);
    const json = JSON.parse((await sausage(["cache", "--cache-dir", dir, "--json"])).stdout);
    assert.equal(json.total, 11200);
    assert.equal(json.counts.sdk, 2);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("cache gc: removes what no world used for 30 days, keeps the rest", async () => {
  const dir = await makeCache();
  try {
    const done = await collectUnused(dir);
    const removed = done.removed.map((e) => e.path).sort();
    const old = "old".padEnd(64, "0");
    assert.deepEqual(removed, [
      join("cargo", "target"),
      join("components", old),
      join("discover", `${old}.json`),
      join("sdk", "old"),
    ]);
    assert.equal(done.freed, 1000 + 100 + 2000 + 5000);
    assert.ok(await exists(join(dir, "components", "new".padEnd(64, "0"), "plugin.js")));
    assert.ok(await exists(join(dir, "discover", `${"new".padEnd(64, "0")}.json`)));
    assert.ok(await exists(join(dir, "sdk", "new", "Cargo.toml")));
    assert.equal((await cacheUsage(dir)).total, 1000 + 100 + 2000);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("sausage cache gc: the command removes the old entries and says what it freed", async () => {
  const dir = await makeCache();
  try {
    const { code, stdout } = await sausage(["cache", "gc", "--cache-dir", dir]);
    assert.equal(code, 0, stdout);
    assert.match(stdout, /removed components\/old0+ \(1000 B, last used /);
    assert.match(stdout, /freed 7\.9 KiB; the cache .* holds 3\.0 KiB \(limit 10 GiB\)/);
    assert.equal(await exists(join(dir, "sdk", "old")), false);
    const bad = await sausage(["cache", "gc", "--cache-dir", dir, "--days", "soon"]);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--days takes a number of days/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the limit: least recently used first, never what is in use or used today", async () => {
  const dir = await makeCache();
  try {
    // over by 1: the target folder (50 days) goes first, and is enough
    let done = await enforceLimit(dir, 11199);
    assert.deepEqual(done.removed.map((e) => e.path), [join("cargo", "target")]);
    assert.equal(done.left, 6200);
    // down to 1000 bytes: the old ones go, oldest first; the new ones were used within a day
    done = await enforceLimit(dir, 1000);
    assert.deepEqual(done.removed.map((e) => e.kind).sort(), ["documents", "sdk", "transpiles"]);
    assert.equal(done.left, 3100, "what was used today stays, over the limit");
    // what the running host used since it started stays, however old the limit would want
    const now = Date.now() + 10 * DAY;
    done = await enforceLimit(dir, 1000, { now, inUseSince: Date.now() - 2 * 3600 * 1000 });
    assert.deepEqual(done.removed, []);
    done = await enforceLimit(dir, 1000, { now });
    assert.equal(done.left, 0);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the limit after a build: SAUSAGE_CACHE_LIMIT, the target folder marked as used", async () => {
  const dir = await makeCache();
  const saved = Deno.env.get(CACHE_LIMIT_ENV);
  try {
    Deno.env.set(CACHE_LIMIT_ENV, "9KiB");
    const target = join(dir, "cargo", "target");
    const warning = await afterBuild(dir, target);
    assert.equal(warning, null);
    // the build just used the target folder: it stays; the old entries went
    assert.ok(await exists(join(target, "release", "libx.rlib")));
    const used = (await Deno.stat(join(target, TARGET_USED_MARKER))).mtime!.getTime();
    assert.ok(Date.now() - used < 60_000);
    assert.equal(await exists(join(dir, "sdk", "old")), false);
    assert.equal(await exists(join(dir, "sdk", "new")), true, "used today");
    Deno.env.set(CACHE_LIMIT_ENV, "1KiB");
    assert.match(
      (await afterBuild(dir, target)) ?? "",
      /over its limit of 1\.0 KiB, with what is in use: raise SAUSAGE_CACHE_LIMIT/,
    );
    Deno.env.set(CACHE_LIMIT_ENV, "lots");
    assert.match((await afterBuild(dir, target)) ?? "", /SAUSAGE_CACHE_LIMIT=lots is not a size/);
  } finally {
    if (saved === undefined) Deno.env.delete(CACHE_LIMIT_ENV);
    else Deno.env.set(CACHE_LIMIT_ENV, saved);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the limit's forms: a default of 10 GiB, units, 0 for none, a clear error", async () => {
  assert.equal(cacheLimit(undefined), DEFAULT_CACHE_LIMIT_BYTES);
  assert.equal(cacheLimit(""), DEFAULT_CACHE_LIMIT_BYTES);
  assert.equal(cacheLimit("0"), 0);
  assert.equal(parseSize("500MiB"), 500 * 1024 ** 2);
  assert.equal(parseSize("2 GB"), 2e9);
  assert.equal(parseSize("123"), 123);
  assert.throws(() => cacheLimit("ten gigs"), CacheLimitError);
  assert.throws(() => cacheLimit("-1"), /SAUSAGE_CACHE_LIMIT=-1 is not a size: .* 10GiB/);
  const { code, stderr } = await sausage(["cache", "--cache-dir", "/nonexistent-sausage-cache"], {
    [CACHE_LIMIT_ENV]: "huge",
  });
  assert.equal(code, 2);
  assert.match(stderr, /SAUSAGE_CACHE_LIMIT=huge is not a size/);
});

Deno.test("a load marks its entry as used: gc keeps what a host loaded", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sausage-cache-use-" });
  try {
    const bytes = await Deno.readFile(await testPlugin("probe"));
    const first = new ComponentCache(dir);
    const loaded = await first.load(bytes, "probe.wasm").finally(() => first.close());
    const meta = join(dir, "components", loaded.hash, "meta.json");
    await age(meta, 45);
    const made = (await Deno.stat(meta)).mtime;
    assert.equal((await collectUnused(dir, { maxAgeMs: 50 * DAY })).removed.length, 0);
    // a new host loads it from the cache, and that is a use; the entry itself is not written
    const second = new ComponentCache(dir);
    await second.load(bytes, "probe.wasm").finally(() => second.close());
    const marker = join(dir, "components", loaded.hash, USED_MARKER);
    assert.ok(Date.now() - (await Deno.stat(marker)).mtime!.getTime() < 60_000);
    assert.deepEqual((await Deno.stat(meta)).mtime, made);
    assert.deepEqual((await collectUnused(dir)).removed, []);
    await age(marker, 31);
    const gone = (await collectUnused(dir)).removed.map((e) => e.path);
    assert.deepEqual(gone, [join("components", loaded.hash)], "unused for 31 days: it goes");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
