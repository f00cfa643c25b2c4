/**
 * The SDK in a world: `installSdk` mirrors the shipped SDK at
 * `/plugins/cargo/sdk/`, and `sdkForBuild` reports how the world's copy
 * differs and why it cannot be used.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import {
  installSdk,
  pruneSdkCopies,
  SDK_COPY_KEPT_MS,
  sdkFiles,
  sdkForBuild,
  SdkUnusable,
} from "./sdk.ts";

async function tempSdk(): Promise<{ dir: string; cache: string } & AsyncDisposable> {
  const root = await Deno.makeTempDir({ prefix: "sausage-sdk-" });
  const dir = join(root, "sdk");
  await installSdk(dir);
  return {
    dir,
    cache: join(root, "cache"),
    [Symbol.asyncDispose]: () => Deno.remove(root, { recursive: true }),
  };
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
}

Deno.test("installSdk removes added files and restores edited ones, but keeps target/ and dot folders", async () => {
  await using sdk = await tempSdk();
  const lib = join(sdk.dir, "sausage-plugin", "src", "lib.rs");
  const shipped = await Deno.readTextFile(lib);
  await Deno.writeTextFile(lib, "// edited\n", { append: true });
  await Deno.writeTextFile(join(sdk.dir, "sausage-plugin", "src", "added.rs"), "// added\n");
  await Deno.mkdir(join(sdk.dir, "extra", "deep"), { recursive: true });
  await Deno.writeTextFile(join(sdk.dir, "extra", "deep", "x.txt"), "x");
  await Deno.mkdir(join(sdk.dir, "target", "release"), { recursive: true });
  await Deno.writeTextFile(join(sdk.dir, "target", "release", "out"), "built");
  await Deno.mkdir(join(sdk.dir, ".git"));
  await Deno.writeTextFile(join(sdk.dir, ".git", "HEAD"), "ref");
  // a link in place of a shipped file is replaced, and what it points to is left as it was
  const outside = join(sdk.dir, "..", "outside.toml");
  await Deno.writeTextFile(outside, "mine");
  const manifest = join(sdk.dir, "sausage-plugin-macros", "Cargo.toml");
  await Deno.remove(manifest);
  await Deno.symlink(outside, manifest);

  assert.equal(await installSdk(sdk.dir), 5); // the link is removed, then written as a file
  assert.equal(await Deno.readTextFile(lib), shipped);
  assert.equal(await exists(join(sdk.dir, "sausage-plugin", "src", "added.rs")), false);
  assert.equal(await exists(join(sdk.dir, "extra")), false);
  assert.equal(await Deno.readTextFile(join(sdk.dir, "target", "release", "out")), "built");
  assert.equal(await Deno.readTextFile(join(sdk.dir, ".git", "HEAD")), "ref");
  assert.ok((await Deno.lstat(manifest)).isFile);
  assert.equal(await Deno.readTextFile(outside), "mine");
  // a second install has nothing to do
  assert.equal(await installSdk(sdk.dir), 0);
  // and the build sees the shipped SDK
  assert.deepEqual((await sdkForBuild(sdk.dir, sdk.cache)).changed, []);
});

Deno.test("installSdk replaces a file where the SDK's folder belongs", async () => {
  await using sdk = await tempSdk();
  await Deno.remove(sdk.dir, { recursive: true });
  await Deno.writeTextFile(sdk.dir, "not a folder");
  await installSdk(sdk.dir);
  assert.equal((await sdkForBuild(sdk.dir, sdk.cache)).changed.length, 0);
  assert.equal((await Array.fromAsync(Deno.readDir(sdk.dir))).length > 0, true);
});

Deno.test("sdkForBuild names edited, added and deleted files of the world's SDK", async () => {
  await using sdk = await tempSdk();
  await Deno.writeTextFile(join(sdk.dir, "sausage-plugin", "src", "lib.rs"), "// x\n", {
    append: true,
  });
  await Deno.writeTextFile(join(sdk.dir, "sausage-plugin", "src", "added.rs"), "// added\n");
  await Deno.remove(join(sdk.dir, "README.md"));
  const { changed } = await sdkForBuild(sdk.dir, sdk.cache);
  assert.deepEqual(changed, [
    "README.md (missing)",
    join("sausage-plugin", "src", "added.rs"),
    join("sausage-plugin", "src", "lib.rs"),
  ]);
  // build output and dot folders are not part of the SDK
  await installSdk(sdk.dir);
  await Deno.mkdir(join(sdk.dir, "target"));
  await Deno.writeTextFile(join(sdk.dir, "target", "x"), "x");
  await Deno.mkdir(join(sdk.dir, ".cache"));
  await Deno.writeTextFile(join(sdk.dir, ".cache", "x"), "x");
  assert.deepEqual((await sdkForBuild(sdk.dir, sdk.cache)).changed, []);
});

Deno.test("sdkForBuild: a file in place of the SDK, or an SDK over the size cap, is SdkUnusable with the fix", async () => {
  await using sdk = await tempSdk();
  const big = join(sdk.dir, "sausage-plugin", "big.bin");
  using file = await Deno.open(big, { write: true, create: true });
  await file.truncate(65 * 1024 * 1024);
  await assert.rejects(
    sdkForBuild(sdk.dir, sdk.cache),
    (e) => e instanceof SdkUnusable && /more than 64 MiB.*remove what was added/.test(e.message),
  );
  await Deno.remove(sdk.dir, { recursive: true });
  await Deno.writeTextFile(sdk.dir, "not a folder");
  await assert.rejects(
    sdkForBuild(sdk.dir, sdk.cache),
    (e) => e instanceof SdkUnusable && /not a folder.*sausage init/.test(e.message),
  );
});

Deno.test("the shipped SDK's files are the three crates, the README and the workspace manifest", async () => {
  const files = [...(await sdkFiles()).keys()];
  assert.ok(files.includes("Cargo.toml"));
  assert.ok(files.includes("README.md"));
  assert.ok(
    files.every((f) => /^(Cargo\.toml|README\.md|sausage-plugin(-macros|-codegen)?\/)/.test(f)),
  );
});

Deno.test("copies of edited SDKs in the cache are removed once unused for 30 days; the one in use stays", async () => {
  await using sdk = await tempSdk();
  const first = (await sdkForBuild(sdk.dir, sdk.cache)).dir;
  await Deno.writeTextFile(join(sdk.dir, "sausage-plugin", "src", "lib.rs"), "// x\n", {
    append: true,
  });
  const second = (await sdkForBuild(sdk.dir, sdk.cache)).dir;
  assert.notEqual(first, second);
  const sdkDir = join(sdk.cache, "sdk");
  const unfinished = join(sdkDir, "unfinished");
  await Deno.mkdir(unfinished);

  // a month minus a day later: both copies stay; the unfinished one goes
  await pruneSdkCopies(sdkDir, second, Date.now() + SDK_COPY_KEPT_MS - 86_400_000);
  assert.ok(await exists(first));
  assert.ok(!(await exists(unfinished)));

  // a use touches the copy: pruning counts from there
  const old = new Date(Date.now() - SDK_COPY_KEPT_MS - 86_400_000);
  await Deno.utime(join(first, ".complete"), old, old);
  await Deno.utime(join(second, ".complete"), old, old);
  await installSdk(sdk.dir);
  assert.equal((await sdkForBuild(sdk.dir, sdk.cache)).dir, first);
  await pruneSdkCopies(sdkDir, "none");
  assert.ok(await exists(first));
  assert.ok(!(await exists(second)));
});
