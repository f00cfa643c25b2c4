import assert from "node:assert/strict";
import { DEFAULT_LINK_PREFIX as LINK_PREFIX, HostFileSystem } from "./host_fs.ts";
import { type FileSystem, MAX_SYMLINKS, VfsError, type VfsErrorCode } from "./types.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

/** A temporary folder with a `root/` for the layer and a secret file beside it. */
function setup(): { outer: string; root: string; fs: HostFileSystem; done: () => void } {
  const outer = Deno.makeTempDirSync({ prefix: "vfs_host_" });
  const root = `${outer}/root`;
  Deno.mkdirSync(root);
  Deno.writeFileSync(`${outer}/secret.txt`, enc.encode("SECRET"));
  Deno.mkdirSync(`${outer}/outside`);
  return {
    outer,
    root,
    fs: new HostFileSystem(root),
    done: () => Deno.removeSync(outer, { recursive: true }),
  };
}

function code(f: () => unknown): VfsErrorCode | "ok" {
  try {
    f();
    return "ok";
  } catch (e) {
    if (e instanceof VfsError) return e.code;
    throw e;
  }
}

function readAll(fs: FileSystem, path: string): string {
  const file = fs.open(path, { read: true });
  try {
    const chunks: Uint8Array[] = [];
    let offset = 0;
    for (;;) {
      const buf = new Uint8Array(4096);
      const n = file.read(buf, offset);
      if (n === 0) break;
      chunks.push(buf.subarray(0, n));
      offset += n;
    }
    return dec.decode(concat(chunks));
  } finally {
    file.close();
  }
}

function writeAll(fs: FileSystem, path: string, text: string): void {
  const file = fs.open(path, { write: true, create: true, truncate: true });
  try {
    file.write(enc.encode(text), 0);
  } finally {
    file.close();
  }
}

function concat(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/** Every name under `dir` on the host, to prove nothing changed outside. */
function tree(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string, rel: string) => {
    for (const e of Deno.readDirSync(d)) {
      out.push(`${rel}${e.name}${e.isDirectory ? "/" : e.isSymlink ? "@" : ""}`);
      if (e.isDirectory) walk(`${d}/${e.name}`, `${rel}${e.name}/`);
    }
  };
  walk(dir, "");
  return out.sort();
}

Deno.test("host: files, folders, links and times work as on POSIX", () => {
  const { fs, root, done } = setup();
  try {
    fs.mkdir("/a");
    writeAll(fs, "/a/f.txt", "hello");
    assert.equal(readAll(fs, "/a/f.txt"), "hello");
    assert.equal(fs.stat("/a/f.txt").kind, "file");
    assert.equal(fs.stat("/a/f.txt").size, 5);
    assert.equal(fs.stat("/a").kind, "directory");
    assert.deepEqual(fs.readDir("/a"), [{ name: "f.txt", kind: "file" }]);

    fs.symlink("a/f.txt", "/l");
    assert.equal(fs.lstat("/l").kind, "symlink");
    assert.equal(fs.stat("/l").kind, "file");
    assert.equal(fs.readlink("/l"), "a/f.txt");
    assert.equal(fs.realpath("/l"), "/a/f.txt");
    assert.equal(readAll(fs, "/l"), "hello");

    fs.link("/a/f.txt", "/hard");
    assert.equal(fs.stat("/hard").nlink, 2);
    fs.rename("/hard", "/a/g.txt");
    assert.equal(readAll(fs, "/a/g.txt"), "hello");
    fs.unlink("/a/g.txt");
    assert.equal(code(() => fs.stat("/a/g.txt")), "ENOENT");

    const file = fs.open("/a/f.txt", { read: true, write: true });
    assert.equal(file.kind, "file");
    assert.equal(file.path, "/a/f.txt");
    file.write(enc.encode("XY"), 10);
    assert.equal(file.stat().size, 12);
    const buf = new Uint8Array(12);
    assert.equal(file.read(buf, 0), 12);
    assert.deepEqual([...buf.subarray(5, 10)], [0, 0, 0, 0, 0]);
    assert.equal(file.append(enc.encode("!")), 1);
    assert.equal(file.stat().size, 13);
    file.setSize(2);
    assert.equal(file.stat().size, 2);
    file.sync();
    file.syncData();
    file.setTimes(1_000_000, 2_000_000);
    assert.equal(file.stat().mtimeMs, 2_000_000);
    assert.equal(file.stat().atimeMs, 1_000_000);
    file.setTimes(null, 3_000_000);
    assert.equal(file.stat().atimeMs, 1_000_000);
    file.close();
    assert.equal(code(() => file.read(buf, 0)), "EBADF");
    assert.equal(code(() => file.close()), "EBADF");

    fs.setTimes("/a", 5_000_000, 6_000_000, true);
    assert.equal(fs.stat("/a").mtimeMs, 6_000_000);
    fs.setTimes("/l", 7_000_000, 8_000_000, false);
    assert.equal(fs.lstat("/l").mtimeMs, 8_000_000);
    assert.notEqual(fs.stat("/l").mtimeMs, 8_000_000);

    const dir = fs.open("/a", { read: true });
    assert.equal(dir.kind, "directory");
    assert.equal(dir.stat().kind, "directory");
    assert.equal(code(() => dir.read(buf, 0)), "EISDIR");
    dir.sync();
    dir.close();

    assert.equal(code(() => fs.open("/a/f.txt", { read: true, directory: true })), "ENOTDIR");
    assert.equal(code(() => fs.open("/a", { write: true })), "EISDIR");
    assert.equal(code(() => fs.open("/a/f.txt", { create: true, exclusive: true })), "EEXIST");
    assert.equal(code(() => fs.open("/l", { read: true, noFollow: true })), "ELOOP");
    assert.equal(
      code(() => fs.open("/l", { read: true, directory: true, noFollow: true })),
      "ENOTDIR",
    );
    const ro = fs.open("/a/f.txt", { read: true });
    assert.equal(code(() => ro.write(enc.encode("x"), 0)), "EBADF");
    ro.close();

    assert.equal(code(() => fs.mkdir("/a")), "EEXIST");
    assert.equal(code(() => fs.rmdir("/a")), "ENOTEMPTY");
    assert.equal(code(() => fs.rmdir("/a/f.txt")), "ENOTDIR");
    assert.equal(code(() => fs.rmdir("/l")), "ENOTDIR");
    assert.equal(code(() => fs.unlink("/a")), "EISDIR");
    assert.equal(code(() => fs.readlink("/a")), "EINVAL");
    assert.equal(code(() => fs.readDir("/a/f.txt")), "ENOTDIR");
    assert.equal(code(() => fs.stat("/a/f.txt/x")), "ENOTDIR");
    assert.equal(code(() => fs.stat("/missing/x")), "ENOENT");
    assert.equal(code(() => fs.rename("/a", "/a/b")), "EINVAL");
    assert.equal(code(() => fs.link("/a", "/a2")), "EPERM");
    assert.equal(code(() => fs.rmdir("/")), "EBUSY");
    assert.equal(code(() => fs.unlink("/")), "EISDIR");
    assert.equal(code(() => fs.mkdir("/")), "EEXIST");
    assert.equal(code(() => fs.rename("/", "/x")), "EBUSY");
    assert.equal(code(() => fs.symlink("", "/empty")), "ENOENT");
    assert.equal(code(() => fs.stat("relative")), "EINVAL");

    fs.unlink("/l");
    fs.unlink("/a/f.txt");
    fs.rmdir("/a");
    assert.deepEqual(fs.readDir("/"), []);
    assert.deepEqual(tree(root), []);
  } finally {
    done();
  }
});

Deno.test("host: a layer given a real root looks at the disk only when used, with the same rules", () => {
  const { outer, root, fs, done } = setup();
  try {
    Deno.writeFileSync(`${root}/f.txt`, enc.encode("hello"));
    Deno.symlinkSync(`${outer}/secret.txt`, `${root}/out`);
    const again = new HostFileSystem(fs.root, { realRoot: true });
    assert.equal(again.root, fs.root);
    const top = again.open("/", { read: true, directory: true });
    assert.equal(top.kind, "directory");
    assert.equal(top.stat().kind, "directory");
    assert.equal(readAll(again, "/f.txt"), "hello");
    // a link out of the root is still not followed out of it
    assert.equal(code(() => readAll(again, "/out")), "ENOENT");
    assert.equal(code(() => again.open("/", { write: true })), "EISDIR");
    // the root is not looked at when it is opened: what goes wrong shows at its first use
    Deno.removeSync(root, { recursive: true });
    const gone = again.open("/", { read: true, directory: true });
    assert.equal(code(() => gone.stat()), "ENOENT");
    assert.equal(code(() => new HostFileSystem(root)), "ENOENT");
  } finally {
    done();
  }
});

Deno.test("host: `..` chains stay inside the root", () => {
  const { fs, outer, done } = setup();
  try {
    const before = tree(outer);
    for (
      const p of ["/..", "/../..", "/a/../..", "/../secret.txt", "/../../../../../../secret.txt"]
    ) {
      const c = code(() => readAll(fs, p));
      assert.notEqual(c, "ok", p);
    }
    assert.equal(fs.realpath("/.."), "/");
    assert.equal(fs.realpath("/../../.."), "/");
    assert.deepEqual(fs.readDir("/../.."), []);
    writeAll(fs, "/../../x.txt", "inside");
    assert.equal(Deno.readTextFileSync(`${outer}/root/x.txt`), "inside");
    fs.mkdir("/../newdir");
    fs.rename("/../x.txt", "/../../newdir/y.txt");
    assert.equal(readAll(fs, "/newdir/../../newdir/y.txt"), "inside");
    assert.equal(code(() => fs.rmdir("/..")), "ENOTEMPTY");
    assert.equal(code(() => fs.unlink("/..")), "EISDIR");
    assert.equal(code(() => fs.mkdir("/newdir/..")), "EEXIST");
    assert.equal(code(() => fs.rename("/newdir/..", "/z")), "EBUSY");
    assert.equal(code(() => fs.symlink("t", "/..")), "EEXIST");
    assert.equal(fs.lstat("/..").kind, "directory");
    assert.equal(code(() => fs.readlink("/..")), "EINVAL");
    const after = tree(outer).filter((n) => !n.startsWith("root/"));
    assert.deepEqual(after, before.filter((n) => !n.startsWith("root/")));
  } finally {
    done();
  }
});

/** Symlinks pointing out, made on the host before the layer starts and made through it. */
for (const how of ["host", "vfs"] as const) {
  Deno.test(`host: symbolic links made through the ${how} cannot lead out`, () => {
    const { fs, outer, root, done } = setup();
    const link = (target: string, path: string) =>
      how === "host" ? Deno.symlinkSync(target, root + path) : fs.symlink(target, path);
    try {
      const outsideBefore = tree(outer).filter((n) => !n.startsWith("root/"));
      link(`${outer}/secret.txt`, "/abs");
      link("../secret.txt", "/rel");
      link("../../../../../../../..", "/up");
      link(outer, "/absdir");
      link("..", "/parent");
      link("/", "/slash");
      link(`${outer}/outside/victim.txt`, "/dangling-abs");
      link("../victim2.txt", "/dangling-rel");
      Deno.mkdirSync(`${root}/sub`);
      link("../../secret.txt", "/sub/rel2");

      // Reads: never the secret.
      for (
        const p of ["/abs", "/rel", "/up/secret.txt", "/absdir/secret.txt", "/parent/secret.txt"]
      ) {
        assert.equal(code(() => readAll(fs, p)), "ENOENT", p);
        assert.equal(code(() => fs.stat(p)), "ENOENT", p);
      }
      assert.equal(code(() => readAll(fs, "/sub/rel2")), "ENOENT");
      assert.equal(code(() => fs.readDir("/absdir")), "ENOENT");

      // `..` and `/` in targets stay at the root.
      const rootList = fs.readDir("/").map((e) => e.name).sort();
      assert.deepEqual(fs.readDir("/up").map((e) => e.name).sort(), rootList);
      assert.deepEqual(fs.readDir("/parent").map((e) => e.name).sort(), rootList);
      assert.deepEqual(fs.readDir("/slash").map((e) => e.name).sort(), rootList);
      assert.equal(fs.realpath("/up"), "/");
      assert.equal(fs.realpath("/slash/sub"), "/sub");

      // An absolute target is a layer path: once the file exists inside, it is read.
      Deno.writeFileSync(`${root}/secret.txt`, enc.encode("INSIDE"));
      assert.equal(readAll(fs, "/rel"), "INSIDE");
      assert.equal(readAll(fs, "/sub/rel2"), "INSIDE");
      assert.equal(readAll(fs, "/up/secret.txt"), "INSIDE");
      assert.equal(code(() => readAll(fs, "/abs")), "ENOENT");

      // Writes through dangling links land inside the root.
      assert.equal(code(() => writeAll(fs, "/dangling-abs", "x")), "ENOENT");
      writeAll(fs, "/dangling-rel", "created");
      assert.equal(Deno.readTextFileSync(`${root}/victim2.txt`), "created");
      fs.mkdir("/parent/made");
      assert.ok(Deno.statSync(`${root}/made`).isDirectory);
      writeAll(fs, "/slash/made/f", "y");
      fs.rename("/slash/made/f", "/up/made/g");
      assert.equal(readAll(fs, "/made/g"), "y");
      fs.link("/parent/made/g", "/up/h");
      fs.symlink("/made/g", "/up/made/l");
      assert.equal(readAll(fs, "/made/l"), "y");
      fs.setTimes("/abs", 1000, 1000, false);
      assert.equal(code(() => fs.setTimes("/abs", 1000, 1000, true)), "ENOENT");
      fs.unlink("/parent/h");

      // The links themselves can be read and removed.
      assert.equal(fs.readlink("/abs"), `${outer}/secret.txt`);
      assert.equal(fs.lstat("/abs").kind, "symlink");
      fs.unlink("/abs");

      assert.deepEqual(tree(outer).filter((n) => !n.startsWith("root/")), outsideBefore);
      assert.equal(Deno.readTextFileSync(`${outer}/secret.txt`), "SECRET");
    } finally {
      done();
    }
  });
}

Deno.test("host: a link made through the layer is one the host cannot follow", () => {
  const { fs, outer, root, done } = setup();
  try {
    fs.mkdir("/d");
    fs.symlink(outer, "/out"); // what a racing process would swap in for /d
    fs.symlink("d", "/in");
    assert.equal(Deno.readLinkSync(`${root}/out`), LINK_PREFIX + outer);
    assert.equal(fs.readlink("/out"), outer);
    assert.equal(fs.readlink("/in"), "d");
    // the host's own resolution of the link, which a swap between a check
    // and an open would reach, finds nothing
    assert.throws(() => Deno.statSync(`${root}/out/secret.txt`), Deno.errors.NotFound);
    assert.throws(
      () => Deno.writeTextFileSync(`${root}/out/new.txt`, "x"),
      Deno.errors.NotFound,
    );
    // the layer follows it, inside the root
    writeAll(fs, "/in/f", "through");
    assert.equal(readAll(fs, "/d/f"), "through");
    fs.rename("/in", "/moved");
    assert.equal(readAll(fs, "/moved/f"), "through");
  } finally {
    done();
  }
});

Deno.test("host: reserved names at the top cannot be made, also through a link to the root", () => {
  const { outer, root, done } = setup();
  const fs = new HostFileSystem(root, { reserved: ["run", "self"] });
  try {
    fs.symlink("/", "/top");
    writeAll(fs, "/f", "x");
    for (const p of ["/run", "/top/run", "/top/../self"]) {
      assert.equal(code(() => fs.mkdir(p)), "EACCES", p);
      assert.equal(code(() => writeAll(fs, p, "y")), "EACCES", p);
      assert.equal(code(() => fs.symlink("f", p)), "EACCES", p);
      assert.equal(code(() => fs.link("/f", p)), "EACCES", p);
      assert.equal(code(() => fs.rename("/f", p)), "EACCES", p);
    }
    fs.mkdir("/top/running"); // only the exact names
    fs.mkdir("/top/running/run"); // and only at the top
    assert.deepEqual(Deno.readDirSync(root).map((e) => e.name).toArray().sort(), [
      "f",
      "running",
      "top",
    ]);
    assert.ok(tree(outer).every((n) => !/(^|\/)(run|self)$/.test(n) || n.includes("running")));
  } finally {
    done();
  }
});

Deno.test("host: symbolic link loops give ELOOP", () => {
  const { fs, done } = setup();
  try {
    fs.symlink("self", "/self");
    fs.symlink("b", "/a");
    fs.symlink("a", "/b");
    fs.symlink("/deep/x", "/deep");
    fs.symlink("loop/x", "/loop");
    for (const p of ["/self", "/a", "/b", "/deep", "/loop", "/a/x"]) {
      assert.equal(code(() => fs.stat(p)), "ELOOP", p);
      assert.equal(code(() => fs.open(p, { read: true })), "ELOOP", p);
    }
    assert.equal(code(() => fs.mkdir("/a/x")), "ELOOP");
    assert.equal(code(() => writeAll(fs, "/a", "x")), "ELOOP");
    assert.equal(fs.lstat("/a").kind, "symlink");
    // A chain of MAX_SYMLINKS links resolves; one more is a loop.
    writeAll(fs, "/end", "end");
    fs.symlink("end", "/c0");
    for (let i = 1; i < MAX_SYMLINKS; i++) fs.symlink(`c${i - 1}`, `/c${i}`);
    assert.equal(readAll(fs, `/c${MAX_SYMLINKS - 1}`), "end");
    fs.symlink(`c${MAX_SYMLINKS - 1}`, `/c${MAX_SYMLINKS}`);
    assert.equal(code(() => readAll(fs, `/c${MAX_SYMLINKS}`)), "ELOOP");
  } finally {
    done();
  }
});

Deno.test("host: long paths, NUL and odd names", () => {
  const { fs, root, done } = setup();
  try {
    const name255 = "n".repeat(255);
    writeAll(fs, `/${name255}`, "ok");
    assert.equal(readAll(fs, `/${name255}`), "ok");
    assert.equal(code(() => fs.stat(`/${"n".repeat(256)}`)), "ENAMETOOLONG");
    assert.equal(code(() => fs.stat(`/${"é".repeat(128)}`)), "ENAMETOOLONG");
    assert.equal(code(() => fs.mkdir(`/${"n".repeat(256)}`)), "ENAMETOOLONG");
    const deep = "/" + Array(1400).fill("ab").join("/");
    assert.equal(code(() => fs.stat(deep)), "ENAMETOOLONG");
    assert.equal(code(() => fs.symlink("x".repeat(5000), "/long")), "ENAMETOOLONG");
    assert.equal(code(() => fs.stat("/a\0b")), "EINVAL");
    assert.equal(code(() => fs.mkdir("/a\0b")), "EINVAL");
    assert.equal(code(() => fs.symlink("a\0b", "/x")), "EINVAL");

    const odd = [
      "...",
      " ",
      "a b",
      "ü",
      "新しい",
      "line\nbreak",
      "back\\slash",
      "-rf",
      ".hidden",
      "a:b",
      "*",
      "emoji😀",
    ];
    for (const n of odd) {
      writeAll(fs, `/${n}`, n);
      assert.equal(readAll(fs, `/${n}`), n, n);
      assert.equal(Deno.readTextFileSync(`${root}/${n}`), n);
    }
    assert.deepEqual(
      fs.readDir("/").map((e) => e.name).filter((n) => n !== name255).sort(),
      [...odd].sort(),
    );
    assert.equal(code(() => fs.stat("/.../..")), "ENOTDIR");
    fs.mkdir("/....");
    assert.equal(fs.realpath("/..../.."), "/");
    fs.rmdir("/....");
    for (const n of odd) fs.unlink(`/${n}`);
  } finally {
    done();
  }
});

Deno.test("host: `..` after a symbolic link is physical, as on POSIX", () => {
  const { fs, done } = setup();
  try {
    fs.mkdir("/a");
    fs.mkdir("/a/b");
    writeAll(fs, "/a/in-a", "A");
    fs.symlink("a/b", "/l");
    assert.equal(readAll(fs, "/l/../in-a"), "A");
    assert.equal(fs.realpath("/l/.."), "/a");
    assert.equal(fs.realpath("/a/b/../../l"), "/a/b");
  } finally {
    done();
  }
});

Deno.test("host: a root reached through a symbolic link works", () => {
  const { fs: _unused, outer, root, done } = setup();
  try {
    Deno.symlinkSync(root, `${outer}/alias`);
    const fs = new HostFileSystem(`${outer}/alias`);
    assert.equal(fs.root, Deno.realPathSync(root));
    writeAll(fs, "/f", "x");
    fs.symlink("/f", "/l");
    assert.equal(readAll(fs, "/l"), "x");
    assert.equal(code(() => new HostFileSystem(`${outer}/secret.txt`)), "ENOTDIR");
    assert.equal(code(() => new HostFileSystem(`${outer}/missing`)), "ENOENT");
  } finally {
    done();
  }
});

Deno.test("host: a read-only layer refuses every change with EROFS", () => {
  const { root, done } = setup();
  try {
    Deno.mkdirSync(`${root}/d`);
    Deno.writeTextFileSync(`${root}/f`, "x");
    const fs = new HostFileSystem(root, { readOnly: true });
    assert.equal(fs.readOnly, true);
    assert.equal(readAll(fs, "/f"), "x");
    assert.equal(fs.readDir("/").length, 2);
    const changes: [string, () => unknown][] = [
      ["open write", () => fs.open("/f", { write: true })],
      ["open create", () => fs.open("/g", { create: true })],
      ["open truncate", () => fs.open("/f", { truncate: true })],
      ["mkdir", () => fs.mkdir("/e")],
      ["unlink", () => fs.unlink("/f")],
      ["rmdir", () => fs.rmdir("/d")],
      ["rename", () => fs.rename("/f", "/g")],
      ["symlink", () => fs.symlink("f", "/l")],
      ["link", () => fs.link("/f", "/h")],
      ["setTimes", () => fs.setTimes("/f", 0, 0, true)],
    ];
    for (const [name, f] of changes) assert.equal(code(f), "EROFS", name);
    assert.equal(Deno.readTextFileSync(`${root}/f`), "x");
  } finally {
    done();
  }
});

Deno.test("host: in a worker with scoped permissions, links out are missing, not crashes", async () => {
  const { outer, root, done } = setup();
  try {
    Deno.writeTextFileSync(`${root}/f`, "x");
    Deno.symlinkSync(`${outer}/secret.txt`, `${root}/out`);
    Deno.symlinkSync(`${outer}/outside`, `${root}/outdir`);
    const worker = new Worker(new URL("./testdata/scoped_worker.ts", import.meta.url), {
      type: "module",
      deno: {
        permissions: {
          read: [root],
          write: [root],
          net: false,
          env: false,
          run: false,
          ffi: false,
          sys: false,
          import: true,
        },
      },
    });
    const results = await new Promise<Record<string, string>>((resolve, reject) => {
      worker.onmessage = (e) => resolve(e.data);
      worker.onerror = (e) => reject(e.message);
      worker.postMessage(root);
    });
    worker.terminate();
    assert.deepEqual(results, {
      statOut: "ENOENT",
      statOutDir: "ENOENT",
      lstatOut: 'ok "symlink"',
      openOut: "ENOENT",
      // The target is a path in the layer, whose folders do not exist.
      createThroughOut: "ENOENT",
      readDirOutDir: "ENOENT",
      realpathOutDir: "ENOENT",
      readlinkOut: `ok ${JSON.stringify(`${outer}/secret.txt`)}`,
      // Deno makes links only with unscoped permissions: as on a filesystem without links.
      symlink: "EPERM",
      statInside: "ok 1",
    });
  } finally {
    done();
  }
});

Deno.test("host: links made on the host are rewritten so that the host cannot follow them, with the same meaning", () => {
  const { fs, outer, root, done } = setup();
  try {
    Deno.mkdirSync(`${root}/d/sub`, { recursive: true });
    Deno.writeTextFileSync(`${root}/d/sub/f`, "inside");
    Deno.mkdirSync(`${root}/${outer}`, { recursive: true });
    Deno.writeTextFileSync(`${root}/${outer}/secret.txt`, "DECOY");
    Deno.symlinkSync(outer, `${root}/out`); // absolute: the root's own copy of the path
    Deno.symlinkSync("sub", `${root}/d/rel`);
    Deno.symlinkSync("../..", `${root}/d/up`);
    Deno.symlinkSync(`${LINK_PREFIX}sub`, `${root}/d/made`); // already behind the prefix
    Deno.symlinkSync("/.old-link/sub/f", `${root}/d/old`); // behind a former prefix
    assert.equal(fs.sealLinks(["/.old-link/"]).length, 4);
    assert.equal(Deno.readLinkSync(`${root}/out`), LINK_PREFIX + outer);
    assert.equal(Deno.readLinkSync(`${root}/d/rel`), `${LINK_PREFIX}sub`);
    assert.equal(Deno.readLinkSync(`${root}/d/up`), `${LINK_PREFIX}../..`);
    assert.equal(Deno.readLinkSync(`${root}/d/made`), `${LINK_PREFIX}sub`);
    assert.equal(Deno.readLinkSync(`${root}/d/old`), `${LINK_PREFIX}sub/f`);
    assert.deepEqual(fs.sealLinks(), []);
    // the layer shows and follows them as before
    assert.equal(fs.readlink("/out"), outer);
    assert.equal(fs.readlink("/d/up"), "../..");
    assert.equal(fs.lstat("/d/rel").size, 3);
    assert.equal(readAll(fs, "/out/secret.txt"), "DECOY");
    assert.equal(readAll(fs, "/d/rel/f"), "inside");
    assert.equal(readAll(fs, "/d/up/d/sub/f"), "inside");
    assert.equal(readAll(fs, "/d/old"), "inside");
    // the host finds nothing behind them
    assert.throws(() => Deno.statSync(`${root}/out/secret.txt`), Deno.errors.NotFound);
    assert.throws(() => Deno.statSync(`${root}/d/rel/f`), Deno.errors.NotFound);
    // no temporary names are left
    assert.deepEqual(Deno.readDirSync(`${root}/d`).map((e) => e.name).toArray().sort(), [
      "made",
      "old",
      "rel",
      "sub",
      "up",
    ]);
  } finally {
    done();
  }
});

Deno.test("host: a link made on the host while the layer runs is rewritten when the layer meets it", () => {
  const { fs, outer, root, done } = setup();
  const onHost = (p: string) => Deno.readLinkSync(`${root}${p}`);
  try {
    fs.mkdir("/d");
    for (const name of ["walked", "listed", "renamed", "linked", "read"]) {
      Deno.symlinkSync(`${outer}/outside`, `${root}/d/${name}`);
    }
    // a path through it
    assert.equal(code(() => fs.stat("/d/walked/x")), "ENOENT");
    assert.equal(onHost("/d/walked"), `${LINK_PREFIX}${outer}/outside`);
    // a rename of it, which a racing process would use to put it over a checked folder
    fs.rename("/d/renamed", "/d/moved");
    assert.equal(onHost("/d/moved"), `${LINK_PREFIX}${outer}/outside`);
    fs.link("/d/linked", "/d/hard");
    assert.equal(onHost("/d/hard"), `${LINK_PREFIX}${outer}/outside`);
    assert.equal(fs.readlink("/d/read"), `${outer}/outside`);
    assert.equal(onHost("/d/read"), `${LINK_PREFIX}${outer}/outside`);
    // a listing rewrites every link it shows
    fs.readDir("/d");
    assert.equal(onHost("/d/listed"), `${LINK_PREFIX}${outer}/outside`);
    // unless asked to keep them, or read-only
    Deno.symlinkSync(`${outer}/outside`, `${root}/kept`);
    new HostFileSystem(root, { keepHostLinks: true }).readDir("/");
    new HostFileSystem(root, { readOnly: true }).readDir("/");
    assert.equal(onHost("/kept"), `${outer}/outside`);
  } finally {
    done();
  }
});

Deno.test("host: where links cannot be made, a link made on the host cannot be renamed", () => {
  const { outer, root, done } = setup();
  try {
    const fs = new HostFileSystem(root, {
      symlink: () => {
        throw new Deno.errors.NotCapable("no unscoped permissions");
      },
    });
    Deno.symlinkSync(`${outer}/outside`, `${root}/out`);
    Deno.mkdirSync(`${root}/d`);
    assert.equal(code(() => fs.rename("/out", "/d")), "EPERM");
    assert.equal(code(() => fs.link("/out", "/hard")), "EPERM");
    assert.equal(fs.readlink("/out"), `${outer}/outside`);
    assert.ok(Deno.statSync(`${root}/d`).isDirectory);
  } finally {
    done();
  }
});

Deno.test("host: the link prefix is an option", () => {
  const { root, done } = setup();
  try {
    const fs = new HostFileSystem(root, { linkPrefix: "/.other-links/" });
    assert.equal(fs.linkPrefix, "/.other-links/");
    fs.symlink("/a", "/l");
    assert.equal(Deno.readLinkSync(`${root}/l`), "/.other-links//a");
    assert.equal(fs.readlink("/l"), "/a");
    assert.throws(() => new HostFileSystem(root, { linkPrefix: "relative/" }), TypeError);
  } finally {
    done();
  }
});

Deno.test("host: a write that fails part way returns the count written (a short write)", async () => {
  const { fs, root, done } = setup();
  try {
    const fifo = `${root}/pipe`;
    new Deno.Command("mkfifo", { args: [fifo] }).outputSync();
    // a reader that takes 100 000 bytes and goes: the rest of the write meets EPIPE
    const reader = new Deno.Command("head", { args: ["-c", "100000", fifo], stdout: "null" })
      .spawn();
    const file = fs.open("/pipe", { write: true });
    const data = new Uint8Array(1 << 20);
    let written = 0;
    let error = "none";
    try {
      while (written < data.length) written += file.write(data.subarray(written), written);
    } catch (e) {
      error = e instanceof VfsError ? e.code : String(e);
    }
    file.close();
    await reader.status;
    assert.ok(written >= 100000 && written < data.length, `${written}`);
    assert.equal(error, "EPIPE");
  } finally {
    done();
  }
});

Deno.test("host: a name on the host that is not UTF-8 is listed as undecodable; the others as they are", () => {
  const root = Deno.makeTempDirSync({ prefix: "vfs_undecodable_" });
  try {
    // a file named with the byte 0xff, made by the host's own tools (Deno cannot write such a name)
    const made = new Deno.Command("sh", {
      args: ["-c", `printf x > "$(printf 'bad\\377')"; printf y > 'ok\u{fffd}'`],
      cwd: root,
    }).outputSync();
    assert.ok(made.success);
    const fs = new HostFileSystem(root);
    const entries = fs.readDir("/").sort((a, b) => a.name.localeCompare(b.name));
    assert.deepEqual(entries, [
      { name: "bad\u{fffd}", kind: "file", undecodable: true },
      // a real U+FFFD in a UTF-8 name is a name like any other
      { name: "ok\u{fffd}", kind: "file" },
    ]);
    assert.equal(fs.stat("/ok\u{fffd}").size, 1);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("host: a folder renamed through the layer carries no link the host could follow", () => {
  const root = Deno.makeTempDirSync({ prefix: "vfs_rename_sealed_" });
  const outside = Deno.makeTempDirSync({ prefix: "vfs_outside_" });
  try {
    const fs = new HostFileSystem(root);
    fs.mkdir("/d.alt");
    fs.mkdir("/d.alt/deeper");
    // links made on the host while the layer runs: not yet rewritten
    Deno.symlinkSync(outside, `${root}/d.alt/sub`);
    Deno.symlinkSync(outside, `${root}/d.alt/deeper/sub`);
    fs.rename("/d.alt", "/d");
    for (const link of ["d/sub", "d/deeper/sub"]) {
      assert.ok(Deno.readLinkSync(`${root}/${link}`).startsWith(LINK_PREFIX), link);
      // the layer still shows the target as it was written
      assert.equal(fs.readlink(`/${link}`), outside);
    }
  } finally {
    Deno.removeSync(root, { recursive: true });
    Deno.removeSync(outside, { recursive: true });
  }
});

Deno.test("host: a folder known to be real that is then replaced is seen as it is now", () => {
  const { outer, root, fs, done } = setup();
  try {
    fs.mkdir("/a");
    fs.mkdir("/a/b");
    fs.mkdir("/elsewhere");
    writeAll(fs, "/a/b/x.txt", "in b");
    writeAll(fs, "/elsewhere/x.txt", "elsewhere");
    assert.equal(readAll(fs, "/a/b/x.txt"), "in b"); // /a/b is now known to be real
    // renamed away, and a link through the layer in its place: followed inside the layer
    fs.rename("/a/b", "/a/old");
    fs.symlink("/elsewhere", "/a/b");
    assert.equal(readAll(fs, "/a/b/x.txt"), "elsewhere");
    assert.equal(fs.realpath("/a/b/x.txt"), "/elsewhere/x.txt");
    // a new folder in its place: its own files
    fs.unlink("/a/b");
    fs.mkdir("/a/b");
    assert.equal(code(() => fs.stat("/a/b/x.txt")), "ENOENT");
    writeAll(fs, "/a/b/y.txt", "new b");
    assert.equal(readAll(fs, "/a/b/y.txt"), "new b");
    // a link made on the host in its place, to the host's own folder outside: never followed
    // there; resolved inside the layer (where /<outer>/outside does not exist)
    Deno.writeTextFileSync(`${outer}/outside/y.txt`, "OUTSIDE");
    Deno.renameSync(`${root}/a/b`, `${root}/a/newer`);
    Deno.symlinkSync(`${outer}/outside`, `${root}/a/b`);
    assert.equal(code(() => fs.stat("/a/b/y.txt")), "ENOENT");
    assert.equal(code(() => fs.open("/a/b/z.txt", { write: true, create: true })), "ENOENT");
    assert.equal(_lexists(`${outer}/outside/z.txt`), false);
    assert.ok(Deno.readLinkSync(`${root}/a/b`).startsWith(LINK_PREFIX), "rewritten when met");
    // and the parent's parent replaced while the child is known
    fs.mkdir("/p");
    fs.mkdir("/p/q");
    writeAll(fs, "/p/q/f", "q");
    assert.equal(readAll(fs, "/p/q/f"), "q");
    fs.rename("/p", "/p-old");
    fs.mkdir("/p");
    assert.equal(code(() => fs.stat("/p/q/f")), "ENOENT");
    assert.equal(code(() => fs.rmdir("/p/q")), "ENOENT");
  } finally {
    done();
  }
});

Deno.test("host: folders 1,000 deep are made, written, reached through `..` and removed, each call a few host calls", () => {
  const { root, fs, done } = setup();
  try {
    let path = "";
    for (let i = 0; i < 1000; i++) {
      path += "/d";
      fs.mkdir(path);
    }
    writeAll(fs, `${path}/bottom.txt`, "bottom");
    assert.equal(readAll(fs, `${path}/bottom.txt`), "bottom");
    assert.equal(fs.stat(path).kind, "directory");
    assert.deepEqual(fs.readDir(path).map((e) => e.name), ["bottom.txt"]);
    // up 300 levels and down again, and through a link at the top
    assert.equal(
      readAll(fs, `${path}${"/..".repeat(300)}${"/d".repeat(300)}/bottom.txt`),
      "bottom",
    );
    fs.symlink("d", "/link");
    assert.equal(readAll(fs, `/link${"/d".repeat(999)}/bottom.txt`), "bottom");
    assert.equal(fs.realpath(`/link${"/d".repeat(999)}`), path);
    fs.unlink("/link");
    fs.unlink(`${path}/bottom.txt`);
    for (let i = 0; i < 1000; i++) {
      fs.rmdir(path);
      path = path.slice(0, -2);
    }
    assert.deepEqual([...Deno.readDirSync(root)], []);
  } finally {
    done();
  }
});

function _lexists(host: string): boolean {
  try {
    Deno.lstatSync(host);
    return true;
  } catch {
    return false;
  }
}
