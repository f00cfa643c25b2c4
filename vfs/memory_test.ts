import assert from "node:assert/strict";
import { BYTES_PER_NAME, MemoryFileSystem } from "./memory.ts";
import { type FileSystem, MAX_SYMLINKS, VfsError, type VfsErrorCode } from "./types.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

function code(f: () => unknown): VfsErrorCode | "ok" {
  try {
    f();
    return "ok";
  } catch (e) {
    if (e instanceof VfsError) return e.code;
    throw e;
  }
}

function write(fs: FileSystem, path: string, text: string): void {
  const f = fs.open(path, { write: true, create: true, truncate: true });
  f.write(enc.encode(text), 0);
  f.close();
}

function read(fs: FileSystem, path: string): string {
  const f = fs.open(path, { read: true });
  const buf = new Uint8Array(fs.stat(path).size);
  f.read(buf, 0);
  f.close();
  return dec.decode(buf);
}

Deno.test("memory: files, folders, links, times", () => {
  const fs = new MemoryFileSystem();
  fs.mkdir("/a");
  fs.mkdir("/a/b");
  assert.equal(fs.stat("/").nlink, 3);
  assert.equal(fs.stat("/a").nlink, 3);
  write(fs, "/a/f", "hello");
  assert.equal(read(fs, "/a/f"), "hello");
  assert.deepEqual(
    fs.readDir("/a").sort((x, y) => x.name < y.name ? -1 : 1),
    [{ name: "b", kind: "directory" }, { name: "f", kind: "file" }],
  );
  fs.symlink("a/f", "/l");
  assert.equal(fs.lstat("/l").kind, "symlink");
  assert.equal(fs.lstat("/l").size, 3);
  assert.equal(fs.readlink("/l"), "a/f");
  assert.equal(fs.realpath("/l"), "/a/f");
  assert.equal(fs.realpath("/a/b/.."), "/a");
  fs.link("/a/f", "/h");
  assert.equal(fs.stat("/h").nlink, 2);
  assert.equal(fs.stat("/h").ino, fs.stat("/a/f").ino);
  fs.setTimes("/a/f", 1000, 2000, true);
  assert.equal(fs.stat("/h").mtimeMs, 2000);
  assert.equal(fs.stat("/h").atimeMs, 1000);
  fs.setTimes("/l", null, 5000, false);
  assert.equal(fs.lstat("/l").mtimeMs, 5000);
  assert.equal(fs.stat("/l").mtimeMs, 2000);

  const f = fs.open("/a/f", { read: true, write: true });
  f.write(enc.encode("!"), 8);
  assert.equal(f.stat().size, 9);
  const buf = new Uint8Array(9);
  f.read(buf, 0);
  assert.deepEqual([...buf.subarray(5)], [0, 0, 0, 33]);
  assert.equal(f.append(enc.encode("?")), 1);
  assert.equal(f.stat().size, 10);
  f.setSize(2);
  f.setSize(4);
  assert.deepEqual([...buf.subarray(0, f.read(buf, 0))], [104, 101, 0, 0]);
  f.close();
  assert.equal(code(() => f.stat()), "EBADF");

  const d = fs.open("/a", { read: true });
  assert.equal(d.kind, "directory");
  assert.equal(d.path, "/a");
  assert.equal(code(() => d.read(buf, 0)), "EISDIR");
  d.close();
  assert.equal(fs.open("/l", { read: true }).path, "/a/f");
});

Deno.test("memory: errors as on Linux", () => {
  const fs = new MemoryFileSystem();
  fs.mkdir("/d");
  write(fs, "/d/f", "x");
  write(fs, "/f", "y");
  fs.symlink("f", "/l");
  const cases: [VfsErrorCode, () => unknown][] = [
    ["ENOENT", () => fs.stat("/missing")],
    ["ENOENT", () => fs.stat("/missing/x")],
    ["ENOTDIR", () => fs.stat("/f/x")],
    ["EEXIST", () => fs.mkdir("/d")],
    ["EEXIST", () => fs.mkdir("/")],
    ["EEXIST", () => fs.open("/f", { write: true, create: true, exclusive: true })],
    ["EEXIST", () => fs.open("/l", { write: true, create: true, exclusive: true })],
    ["EISDIR", () => fs.unlink("/d")],
    ["EISDIR", () => fs.open("/d", { write: true })],
    ["ENOTEMPTY", () => fs.rmdir("/d")],
    ["ENOTEMPTY", () => fs.rmdir("/d/..")],
    ["EBUSY", () => fs.rmdir("/")],
    ["EBUSY", () => fs.rename("/d/..", "/x")],
    ["ENOTDIR", () => fs.rmdir("/f")],
    ["ENOTDIR", () => fs.open("/f", { read: true, directory: true })],
    ["ELOOP", () => fs.open("/l", { read: true, noFollow: true })],
    ["ENOTDIR", () => fs.open("/l", { read: true, noFollow: true, directory: true })],
    ["EINVAL", () => fs.readlink("/f")],
    ["EINVAL", () => fs.rename("/d", "/d/sub")],
    ["ENOTEMPTY", () => fs.rename("/d/f", "/d")],
    ["EISDIR", () => fs.rename("/f", "/d")],
    ["ENOTDIR", () => fs.rename("/d", "/f")],
    ["EPERM", () => fs.link("/d", "/d2")],
    ["ENOENT", () => fs.symlink("", "/e")],
    ["EINVAL", () => fs.stat("/a\0b")],
    ["EINVAL", () => fs.stat("relative")],
    ["ENAMETOOLONG", () => fs.mkdir(`/${"n".repeat(256)}`)],
    ["ENOENT", () => fs.open("/missing", { read: true })],
  ];
  for (const [expected, f] of cases) assert.equal(code(f), expected, f.toString());
});

Deno.test("memory: links resolve inside the layer, loops are ELOOP", () => {
  const fs = new MemoryFileSystem();
  fs.mkdir("/x");
  write(fs, "/x/t", "T");
  fs.symlink("/x/t", "/abs");
  fs.symlink("../../../../x/t", "/x/up");
  fs.symlink("/", "/root");
  fs.symlink("self", "/self");
  assert.equal(read(fs, "/abs"), "T");
  assert.equal(read(fs, "/x/up"), "T");
  assert.equal(read(fs, "/root/root/x/t"), "T");
  assert.equal(fs.realpath("/root/x/.."), "/");
  assert.equal(code(() => fs.stat("/self")), "ELOOP");
  write(fs, "/end", "E");
  fs.symlink("end", "/c0");
  for (let i = 1; i <= MAX_SYMLINKS; i++) fs.symlink(`c${i - 1}`, `/c${i}`);
  assert.equal(read(fs, `/c${MAX_SYMLINKS - 1}`), "E");
  assert.equal(code(() => read(fs, `/c${MAX_SYMLINKS}`)), "ELOOP");
  // A write through a dangling link makes its target.
  fs.symlink("/x/new", "/dangling");
  write(fs, "/dangling", "N");
  assert.equal(read(fs, "/x/new"), "N");
});

Deno.test("memory: an open file survives unlink and rename; its bytes leave with its last handle", () => {
  const fs = new MemoryFileSystem();
  write(fs, "/f", "12345678");
  const before = fs.bytes;
  assert.ok(before >= 8);
  const h = fs.open("/f", { read: true, write: true });
  fs.rename("/f", "/g");
  assert.equal(h.stat().size, 8);
  fs.unlink("/g");
  assert.equal(h.stat().nlink, 0);
  const buf = new Uint8Array(8);
  assert.equal(h.read(buf, 0), 8);
  assert.equal(fs.bytes, before); // the name is gone, the content stays
  h.close();
  assert.equal(fs.bytes, 0);
});

Deno.test("memory: the byte budget gives ENOSPC", () => {
  const fs = new MemoryFileSystem({ maxBytes: 2 * BYTES_PER_NAME });
  const f = fs.open("/big", { write: true, create: true });
  f.write(new Uint8Array(1500), 0);
  assert.equal(code(() => f.write(new Uint8Array(600), 1500)), "ENOSPC");
  assert.equal(f.stat().size, 1500, "a write that fails changes nothing");
  f.write(new Uint8Array(548), 1500);
  assert.equal(code(() => f.write(new Uint8Array(1), 2048)), "ENOSPC");
  // no byte left, but names are counted apart: an empty file can still be made
  fs.open("/empty", { write: true, create: true }).close();
  assert.equal(code(() => write(fs, "/empty", "x")), "ENOSPC");
  f.setSize(0);
  write(fs, "/empty", "x");
  f.close();
});

Deno.test("memory: names and link targets count in the budget, and come back when removed", () => {
  const fs = new MemoryFileSystem({ maxBytes: 10 * BYTES_PER_NAME });
  // targets count as bytes
  const target = "t".repeat(3000);
  let made = 0;
  while (code(() => fs.symlink(target, `/link${made}`)) !== "ENOSPC") made++;
  assert.equal(made, Math.floor(10 * BYTES_PER_NAME / 3000));
  assert.equal(fs.bytes, made * 3000);
  for (let i = 0; i < made; i++) fs.unlink(`/link${i}`);
  assert.equal(fs.bytes, 0);
  // names are limited to one per BYTES_PER_NAME
  for (let i = 0; i < 10; i++) fs.mkdir(`/d${i}`);
  assert.equal(code(() => fs.open("/f", { write: true, create: true })), "ENOSPC");
  assert.equal(code(() => fs.symlink("x", "/l")), "ENOSPC");
  fs.rmdir("/d9");
  fs.open("/f", { write: true, create: true }).close();
  assert.equal(code(() => fs.link("/f", "/g")), "ENOSPC");
  fs.rename("/f", "/d8/f"); // a move makes no new name
});

Deno.test("memory: a read-only layer refuses changes with EROFS", () => {
  const fs = new MemoryFileSystem({ readOnly: true });
  assert.deepEqual(fs.readDir("/"), []);
  for (
    const f of [
      () => fs.mkdir("/d"),
      () => fs.open("/f", { create: true }),
      () => fs.symlink("x", "/l"),
      () => fs.setTimes("/", 0, 0, true),
      () => fs.rename("/a", "/b"),
    ]
  ) assert.equal(code(f), "EROFS");
});

Deno.test("memory: reserved names at the top cannot be made, also through a link", () => {
  const fs = new MemoryFileSystem({ reserved: ["log"] });
  fs.symlink("/", "/top");
  fs.mkdir("/d");
  write(fs, "/f", "x");
  for (const p of ["/log", "/top/log", "/d/../log"]) {
    assert.equal(code(() => fs.mkdir(p)), "EACCES", p);
    assert.equal(code(() => write(fs, p, "y")), "EACCES", p);
    assert.equal(code(() => fs.symlink("f", p)), "EACCES", p);
    assert.equal(code(() => fs.link("/f", p)), "EACCES", p);
    assert.equal(code(() => fs.rename("/f", p)), "EACCES", p);
  }
  fs.mkdir("/d/log"); // only at the top
  assert.deepEqual(fs.readDir("/").map((e) => e.name).sort(), ["d", "f", "top"]);
});
