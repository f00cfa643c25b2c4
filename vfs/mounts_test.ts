import assert from "node:assert/strict";
import { MemoryFileSystem, MountFileSystem, type VfsError } from "./mod.ts";

function table() {
  const root = new MemoryFileSystem();
  const run = new MemoryFileSystem();
  root.mkdir("/state");
  const fs = new MountFileSystem([{ path: "/", fs: root }, { path: "/run", fs: run }]);
  return { root, run, fs };
}

const code = (f: () => unknown) => {
  try {
    f();
  } catch (e) {
    return (e as VfsError).code;
  }
  return "ok";
};

Deno.test("paths go to the deepest mount; listings show mount points", () => {
  const { run, fs } = table();
  fs.mkdir("/run/x");
  assert.ok(run.stat("/x").kind === "directory");
  assert.deepEqual(fs.readDir("/").map((e) => e.name).sort(), ["run", "state"]);
  assert.equal(fs.stat("/run").kind, "directory");
});

Deno.test("handles report their path in the whole table", () => {
  const { fs } = table();
  fs.mkdir("/run/d");
  assert.equal(fs.open("/run/d", { directory: true }).path, "/run/d");
  assert.equal(fs.open("/run", { directory: true }).path, "/run");
  assert.equal(fs.realpath("/run/d"), "/run/d");
});

Deno.test("renames and links across mounts are EXDEV; mount points are busy", () => {
  const { fs } = table();
  fs.open("/state/a", { write: true, create: true }).close();
  assert.equal(code(() => fs.rename("/state/a", "/run/a")), "EXDEV");
  assert.equal(code(() => fs.link("/state/a", "/run/a")), "EXDEV");
  assert.equal(code(() => fs.rename("/run", "/state/r")), "EBUSY");
  assert.equal(code(() => fs.rmdir("/run")), "EBUSY");
  assert.equal(code(() => fs.mkdir("/run")), "EEXIST");
});

Deno.test("`..` that leaves a mount as written is resolved lexically", () => {
  const { fs } = table();
  fs.open("/state/x", { write: true, create: true }).close();
  assert.equal(fs.stat("/run/../state/x").kind, "file");
  assert.equal(fs.stat("/state/../run").kind, "directory");
});

Deno.test("a table needs a root layer", () => {
  assert.throws(() => new MountFileSystem([{ path: "/run", fs: new MemoryFileSystem() }]));
});

Deno.test("`..` in the root layer is physical: after a symbolic link it leaves where the link leads", () => {
  const { root, fs } = table();
  root.mkdir("/a");
  root.mkdir("/a/b");
  root.symlink("/a/b", "/state/run"); // a folder of the world that is named like an area
  fs.open("/a/x", { write: true, create: true }).close();
  assert.equal(fs.stat("/state/run/../x").kind, "file"); // /a/b/.. is /a
  assert.equal(code(() => fs.stat("/state/x")), "ENOENT");
  assert.equal(fs.stat("/state/run/../../state").kind, "directory"); // /a/.. is /
  assert.equal(code(() => fs.stat("/missing/../state")), "ENOENT");
});

Deno.test("mounts: a path over 4095 bytes (after the longest mount point) is ENAMETOOLONG before its `..` are resolved", () => {
  const root = new MemoryFileSystem();
  root.mkdir("/a");
  root.open("/x", { create: true }).close();
  const fs = new MountFileSystem([{ path: "/", fs: root }, {
    path: "/tmp",
    fs: new MemoryFileSystem(),
  }]);
  assert.equal(code(() => fs.stat("/" + "a/../".repeat(1000) + "x")), "ENAMETOOLONG");
  assert.equal(code(() => fs.open("/" + "a/../".repeat(200_000) + "x", {})), "ENAMETOOLONG");
  assert.equal(fs.stat("/" + "a/../".repeat(800) + "x").kind, "file");
  // a mounted layer's longest path (4095 bytes) still fits behind its mount point
  const longest = "/" + "n".repeat(200) + "/x".repeat(1947);
  assert.equal(code(() => fs.stat("/tmp" + longest)), "ENOENT");
  assert.equal(code(() => fs.stat("/tmp" + longest + "x")), "ENAMETOOLONG");
});
