import assert from "node:assert/strict";
import {
  Descriptor,
  type DescriptorFlags,
  DirectoryEntryStream,
  filesystemErrorCode,
  filesystemImports,
  filesystemImportsFor,
  MAX_DESCRIPTORS_PER_PROCESS,
  type NewTimestamp,
  type OpenFlags,
  releaseFilesystem,
} from "./filesystem.ts";
import { InputStream, IoError, OutputStream } from "./io.ts";
import {
  type FileHandle,
  HostFileSystem,
  MemoryFileSystem,
  type OpenOptions,
  type Stat,
  type TimeSpec,
  VfsError,
} from "../../vfs/mod.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();
const FOLLOW = { symlinkFollow: true };
const NOFOLLOW = {};
const RW: DescriptorFlags = { read: true, write: true };
const R: DescriptorFlags = { read: true };
const W: DescriptorFlags = { write: true };
const CREATE: OpenFlags = { create: true };

interface World {
  dir: string;
  imports: Record<string, Record<string, unknown>>;
  root: Descriptor;
  done: () => void;
}

function world(): World {
  const dir = Deno.makeTempDirSync({ prefix: "wasi_fs_" });
  const imports = filesystemImports([{ guestPath: "/", hostPath: dir }]);
  const root = preopens(imports)[0][0];
  return {
    dir,
    imports,
    root,
    done: () => {
      releaseFilesystem(imports);
      Deno.removeSync(dir, { recursive: true });
    },
  };
}

function preopens(imports: Record<string, Record<string, unknown>>): [Descriptor, string][] {
  return (imports["wasi:filesystem/preopens"].getDirectories as () => [Descriptor, string][])();
}

/** The error code a call throws, or "ok". */
function code(f: () => unknown): string {
  try {
    f();
    return "ok";
  } catch (e) {
    if (typeof e === "string") return e;
    throw e;
  }
}

function create(root: Descriptor, path: string, text: string): void {
  const file = root.openAt(FOLLOW, path, { create: true, truncate: true }, W);
  file.write(enc.encode(text), 0n);
  file[Symbol.dispose]();
}

function readText(root: Descriptor, path: string): string {
  const file = root.openAt(FOLLOW, path, {}, R);
  try {
    const [bytes] = file.read(1n << 20n, 0n);
    return dec.decode(bytes);
  } finally {
    file[Symbol.dispose]();
  }
}

function drain(stream: InputStream): string {
  const chunks: number[] = [];
  for (;;) {
    try {
      chunks.push(...stream.read(3n));
    } catch (e) {
      assert.deepEqual(e, { tag: "closed" });
      return dec.decode(new Uint8Array(chunks));
    }
  }
}

function openFds(): number {
  return [...Deno.readDirSync("/proc/self/fd")].length;
}

Deno.test("filesystem: the imports have the shape jco expects", () => {
  const { imports, root, done } = world();
  try {
    assert.deepEqual(Object.keys(imports).sort(), [
      "wasi:filesystem/preopens",
      "wasi:filesystem/types",
    ]);
    const types = imports["wasi:filesystem/types"];
    assert.equal(types.Descriptor, Descriptor);
    assert.equal(types.DirectoryEntryStream, DirectoryEntryStream);
    assert.equal(types.filesystemErrorCode, filesystemErrorCode);
    const dirs = preopens(imports);
    assert.equal(dirs.length, 1);
    assert.equal(dirs[0][1], "/");
    assert.ok(dirs[0][0] instanceof Descriptor);
    assert.equal(root.getType(), "directory");
    assert.deepEqual(root.getFlags(), { read: true, mutateDirectory: true });
    assert.equal(root.stat().type, "directory");
    assert.throws(() => new (Descriptor as unknown as new () => unknown)(), TypeError);
  } finally {
    done();
  }
});

Deno.test("filesystem: files through positional calls and streams", () => {
  const { root, dir, done } = world();
  try {
    const f = root.openAt(FOLLOW, "a.txt", CREATE, RW);
    assert.equal(f.getType(), "regular-file");
    assert.deepEqual(f.getFlags(), {
      read: true,
      write: true,
      fileIntegritySync: false,
      dataIntegritySync: false,
      requestedWriteSync: false,
    });
    assert.equal(f.write(enc.encode("hello"), 0n), 5n);
    assert.deepEqual(f.read(100n, 0n), [enc.encode("hello"), false]);
    assert.deepEqual(f.read(100n, 5n), [new Uint8Array(0), true]);
    assert.deepEqual(f.read(0n, 0n), [new Uint8Array(0), false]);
    assert.deepEqual(f.read(10n, 1n << 62n), [new Uint8Array(0), true]);
    // Writing past the end fills with zeros.
    f.write(enc.encode("!"), 7n);
    assert.deepEqual([...f.read(8n, 0n)[0]], [...enc.encode("hello"), 0, 0, 33]);

    const out = f.writeViaStream(0n);
    assert.ok(out instanceof OutputStream);
    assert.ok(out.checkWrite() > 0n);
    out.write(enc.encode("HE"));
    out.flush();
    out[Symbol.dispose]();
    const app = f.appendViaStream();
    app.write(enc.encode("++"));
    app[Symbol.dispose]();
    const input = f.readViaStream(0n);
    assert.ok(input instanceof InputStream);
    assert.equal(drain(input), "HEllo\0\0!++");
    input[Symbol.dispose]();
    assert.equal(drain(f.readViaStream(5n)), "\0\0!++");

    const stat = f.stat();
    assert.equal(stat.type, "regular-file");
    assert.equal(stat.size, 10n);
    assert.equal(stat.linkCount, 1n);
    assert.equal(typeof stat.dataModificationTimestamp?.seconds, "bigint");
    f.setSize(2n);
    assert.equal(f.stat().size, 2n);
    f.setSize(4n);
    assert.deepEqual([...f.read(10n, 0n)[0]], [72, 69, 0, 0]);
    f.sync();
    f.syncData();
    f.advise(0n, 10n, "sequential");
    const t: NewTimestamp = {
      tag: "timestamp",
      val: { seconds: 1_000_000n, nanoseconds: 5_000_000 },
    };
    f.setTimes(t, { tag: "no-change" });
    assert.deepEqual(f.stat().dataAccessTimestamp, { seconds: 1_000_000n, nanoseconds: 5_000_000 });
    f.setTimes({ tag: "no-change" }, t);
    assert.deepEqual(f.stat().dataAccessTimestamp, { seconds: 1_000_000n, nanoseconds: 5_000_000 });
    assert.deepEqual(f.stat().dataModificationTimestamp, {
      seconds: 1_000_000n,
      nanoseconds: 5_000_000,
    });
    f.setTimes({ tag: "now" }, { tag: "now" });
    const now = BigInt(Math.floor(Date.now() / 1000));
    assert.ok(now - f.stat().dataModificationTimestamp!.seconds < 5n);
    f[Symbol.dispose]();
    assert.equal(Deno.readTextFileSync(`${dir}/a.txt`), "HE\0\0");
  } finally {
    done();
  }
});

Deno.test("filesystem: folders, listings, links and times at paths", () => {
  const { root, dir, done } = world();
  try {
    root.createDirectoryAt("d");
    root.createDirectoryAt("d/e/");
    create(root, "d/f.txt", "x");
    root.symlinkAt("f.txt", "d/l");
    root.symlinkAt("/d/f.txt", "abs");
    const d = root.openAt(FOLLOW, "d", { directory: true }, R);
    assert.equal(d.getType(), "directory");
    const s = d.readDirectory();
    const names: string[] = [];
    for (let e = s.readDirectoryEntry(); e; e = s.readDirectoryEntry()) {
      names.push(`${e.name}:${e.type}`);
    }
    s[Symbol.dispose]();
    assert.deepEqual(names.sort(), ["e:directory", "f.txt:regular-file", "l:symbolic-link"]);
    assert.equal(d.readDirectory().readDirectoryEntry() !== undefined, true);

    assert.equal(root.statAt(NOFOLLOW, "d/l").type, "symbolic-link");
    assert.equal(root.statAt(NOFOLLOW, "d/l").size, 5n);
    assert.equal(root.statAt(FOLLOW, "d/l").type, "regular-file");
    assert.equal(d.statAt(FOLLOW, "l").type, "regular-file");
    assert.equal(root.readlinkAt("d/l"), "f.txt");
    assert.equal(readText(root, "abs"), "x");
    assert.equal(readText(d, "../abs"), "x");
    assert.equal(root.statAt(FOLLOW, "./d/./e/").type, "directory");

    root.linkAt(NOFOLLOW, "d/f.txt", d, "hard");
    assert.equal(root.statAt(NOFOLLOW, "d/f.txt").linkCount, 2n);
    root.linkAt(FOLLOW, "d/l", root, "hard2");
    assert.equal(root.statAt(NOFOLLOW, "hard2").type, "regular-file");
    assert.equal(root.statAt(NOFOLLOW, "d/f.txt").linkCount, 3n);

    const ts: NewTimestamp = { tag: "timestamp", val: { seconds: 12345n, nanoseconds: 0 } };
    root.setTimesAt(FOLLOW, "d/l", ts, ts);
    assert.equal(root.statAt(NOFOLLOW, "d/f.txt").dataModificationTimestamp?.seconds, 12345n);
    root.setTimesAt(NOFOLLOW, "d/l", { tag: "no-change" }, {
      tag: "timestamp",
      val: { seconds: 99n, nanoseconds: 0 },
    });
    assert.equal(root.statAt(NOFOLLOW, "d/l").dataModificationTimestamp?.seconds, 99n);
    d.setTimes(ts, ts);
    assert.equal(root.statAt(FOLLOW, "d").dataModificationTimestamp?.seconds, 12345n);
    d.sync();
    d.syncData();

    d.unlinkFileAt("hard");
    root.unlinkFileAt("hard2");
    d.unlinkFileAt("l");
    d.removeDirectoryAt("e");
    root.renameAt("d/f.txt", root, "g.txt");
    assert.deepEqual([...Deno.readDirSync(`${dir}/d`)], []);
    d[Symbol.dispose]();
    root.removeDirectoryAt("d/");
    assert.equal(readText(root, "g.txt"), "x");
  } finally {
    done();
  }
});

Deno.test("filesystem: errors map to the right codes", () => {
  const { root, done } = world();
  try {
    root.createDirectoryAt("d");
    create(root, "d/f", "x");
    create(root, "file", "y");
    root.symlinkAt("loop", "loop");
    root.symlinkAt("file", "link");
    const f = root.openAt(FOLLOW, "file", {}, R);
    const w = root.openAt(FOLLOW, "file", {}, W);
    const cases: [string, () => unknown][] = [
      ["no-entry", () => root.openAt(FOLLOW, "missing", {}, R)],
      ["no-entry", () => root.statAt(FOLLOW, "missing/x")],
      ["no-entry", () => root.openAt(FOLLOW, "", {}, R)],
      ["exist", () => root.openAt(FOLLOW, "file", { create: true, exclusive: true }, W)],
      ["exist", () => root.createDirectoryAt("d")],
      ["exist", () => root.symlinkAt("x", "file")],
      ["not-directory", () => root.openAt(FOLLOW, "file", { directory: true }, R)],
      ["not-directory", () => root.openAt(FOLLOW, "file/", {}, R)],
      ["not-directory", () => root.statAt(FOLLOW, "file/x")],
      ["not-directory", () => root.statAt(NOFOLLOW, "file/")],
      ["not-directory", () => f.openAt(FOLLOW, "x", {}, R)],
      ["not-directory", () => f.createDirectoryAt("x")],
      ["not-directory", () => f.readDirectory()],
      ["not-directory", () => root.removeDirectoryAt("file")],
      ["not-directory", () => root.unlinkFileAt("file/")],
      ["not-directory", () => root.renameAt("file/", root, "z")],
      ["not-directory", () => root.readlinkAt("file/")],
      ["is-directory", () => root.openAt(FOLLOW, "d", {}, W)],
      ["is-directory", () => root.openAt(FOLLOW, "new/", CREATE, W)],
      ["is-directory", () => root.unlinkFileAt("d")],
      ["is-directory", () => root.unlinkFileAt("d/")],
      ["not-empty", () => root.removeDirectoryAt("d")],
      ["loop", () => root.openAt(FOLLOW, "loop", {}, R)],
      ["loop", () => root.statAt(FOLLOW, "loop")],
      ["loop", () => root.openAt(NOFOLLOW, "link", {}, R)],
      ["not-directory", () => root.openAt(NOFOLLOW, "link", { directory: true }, R)],
      ["invalid", () => root.readlinkAt("file")],
      ["invalid", () => root.readlinkAt("d/")],
      ["invalid", () => root.openAt(FOLLOW, "d", { directory: true, create: true }, R)],
      ["invalid", () => root.openAt(FOLLOW, "a\0b", {}, R)],
      ["invalid", () => root.renameAt("d", root, "d/sub")],
      ["not-permitted", () => root.openAt(FOLLOW, "/file", {}, R)],
      ["not-permitted", () => root.linkAt(NOFOLLOW, "d", root, "d2")],
      ["name-too-long", () => root.openAt(FOLLOW, "n".repeat(256), CREATE, W)],
      ["name-too-long", () => root.createDirectoryAt("n".repeat(300))],
      // a path over 4095 bytes, however short its `..` would make it (as on Linux)
      ["name-too-long", () => root.statAt(FOLLOW, "d/../".repeat(1000) + "file")],
      ["ok", () => root.statAt(FOLLOW, "d/../".repeat(800) + "file")],
      ["name-too-long", () => root.openAt(FOLLOW, "é".repeat(2048), {}, R)],
      // without the access: not-permitted, but bad-descriptor for a stream (as Wasmtime)
      ["not-permitted", () => f.write(enc.encode("x"), 0n)],
      ["bad-descriptor", () => f.writeViaStream(0n)],
      ["bad-descriptor", () => f.appendViaStream()],
      ["not-permitted", () => f.setSize(0n)],
      ["not-permitted", () => w.read(1n, 0n)],
      ["bad-descriptor", () => w.readViaStream(0n)],
      ["bad-descriptor", () => root.read(1n, 0n)],
      ["bad-descriptor", () => root.write(enc.encode("x"), 0n)],
      ["bad-descriptor", () => root.readViaStream(0n)],
      ["bad-descriptor", () => root.setSize(0n)],
      ["bad-descriptor", () => root.advise(0n, 0n, "normal")],
      ["file-too-large", () => w.write(enc.encode("x"), 1n << 60n)],
      ["overflow", () =>
        root.setTimesAt(FOLLOW, "file", {
          tag: "timestamp",
          val: { seconds: 1n << 62n, nanoseconds: 0 },
        }, { tag: "no-change" })],
    ];
    for (const [expected, call] of cases) assert.equal(code(call), expected, call.toString());
    f[Symbol.dispose]();
    assert.equal(code(() => f.stat()), "bad-descriptor");
    assert.equal(code(() => f.read(1n, 0n)), "bad-descriptor");
    w[Symbol.dispose]();
    f[Symbol.dispose]();
  } finally {
    done();
  }
});

Deno.test("filesystem: `..` and symbolic links never leave the mounted folder", () => {
  const outer = Deno.makeTempDirSync({ prefix: "wasi_fs_outer_" });
  Deno.mkdirSync(`${outer}/world`);
  Deno.writeTextFileSync(`${outer}/secret`, "SECRET");
  Deno.symlinkSync(`${outer}/secret`, `${outer}/world/abs`);
  const imports = filesystemImports([{ guestPath: "/", hostPath: `${outer}/world` }]);
  const root = preopens(imports)[0][0];
  try {
    assert.equal(code(() => readText(root, "../secret")), "no-entry");
    assert.equal(code(() => readText(root, "../../../../secret")), "no-entry");
    assert.equal(code(() => readText(root, "abs")), "no-entry");
    root.symlinkAt("../../secret", "rel");
    assert.equal(code(() => readText(root, "rel")), "no-entry");
    create(root, "../../escaped", "inside");
    assert.equal(Deno.readTextFileSync(`${outer}/world/escaped`), "inside");
    root.symlinkAt("../../..", "up");
    assert.equal(readText(root, "up/escaped"), "inside");
    assert.equal(readText(root, "up/up/../escaped"), "inside");
    const up = root.openAt(FOLLOW, "..", {}, R);
    assert.ok(up.isSameObject(root));
    assert.deepEqual([...Deno.readDirSync(outer)].map((e) => e.name).sort(), ["secret", "world"]);
    assert.equal(Deno.readTextFileSync(`${outer}/secret`), "SECRET");
  } finally {
    releaseFilesystem(imports);
    Deno.removeSync(outer, { recursive: true });
  }
});

Deno.test("filesystem: temporary file and atomic replace by rename", () => {
  const { root, done } = world();
  try {
    create(root, "config.json", "old");
    const reader = root.openAt(FOLLOW, "config.json", {}, R);
    create(root, "config.json.tmp", "new");
    root.renameAt("config.json.tmp", root, "config.json");
    assert.equal(readText(root, "config.json"), "new");
    // An open descriptor keeps the file it opened.
    assert.equal(dec.decode(reader.read(10n, 0n)[0]), "old");
    assert.equal(code(() => root.statAt(NOFOLLOW, "config.json.tmp")), "no-entry");
    reader[Symbol.dispose]();
  } finally {
    done();
  }
});

Deno.test("filesystem: identity and metadata hashes", () => {
  const { root, done } = world();
  try {
    create(root, "a", "1");
    create(root, "b", "2");
    const a1 = root.openAt(FOLLOW, "a", {}, R);
    const a2 = root.openAt(FOLLOW, "a", {}, R);
    const b = root.openAt(FOLLOW, "b", {}, R);
    assert.ok(a1.isSameObject(a2));
    assert.ok(!a1.isSameObject(b));
    assert.ok(!a1.isSameObject(root));
    assert.deepEqual(a1.metadataHash(), a2.metadataHash());
    assert.deepEqual(a1.metadataHash(), root.metadataHashAt(NOFOLLOW, "a"));
    assert.notDeepEqual(a1.metadataHash(), b.metadataHash());
    const h = a1.metadataHash();
    assert.equal(typeof h.lower, "bigint");
    assert.ok(h.lower >= 0n && h.lower < 1n << 64n && h.upper >= 0n && h.upper < 1n << 64n);
    // The identity does not change when the content does.
    const w = root.openAt(FOLLOW, "a", {}, W);
    w.write(enc.encode("changed"), 0n);
    assert.deepEqual(a1.metadataHash(), h);
    for (const d of [a1, a2, b, w]) d[Symbol.dispose]();
  } finally {
    done();
  }
});

Deno.test("filesystem: rename and link across preopens are cross-device", () => {
  const one = Deno.makeTempDirSync();
  const two = Deno.makeTempDirSync();
  const imports = filesystemImports([
    { guestPath: "/", hostPath: one },
    { guestPath: "/data", hostPath: two },
  ]);
  try {
    const [[a, pa], [b, pb]] = preopens(imports);
    assert.deepEqual([pa, pb], ["/", "/data"]);
    create(a, "f", "x");
    assert.equal(code(() => a.renameAt("f", b, "f")), "cross-device");
    assert.equal(code(() => a.linkAt(NOFOLLOW, "f", b, "f")), "cross-device");
    assert.ok(!a.isSameObject(b));
  } finally {
    releaseFilesystem(imports);
    Deno.removeSync(one, { recursive: true });
    Deno.removeSync(two, { recursive: true });
  }
});

Deno.test("filesystem: a read-only layer refuses changes with read-only", () => {
  const dir = Deno.makeTempDirSync();
  Deno.writeTextFileSync(`${dir}/f`, "x");
  Deno.mkdirSync(`${dir}/d`);
  const imports = filesystemImportsFor([
    { guestPath: "/", fs: new HostFileSystem(dir, { readOnly: true }) },
  ]);
  try {
    const root = preopens(imports)[0][0];
    assert.deepEqual(root.getFlags(), { read: true, mutateDirectory: false });
    assert.equal(readText(root, "f"), "x");
    assert.equal(code(() => root.openAt(FOLLOW, "f", {}, W)), "read-only");
    assert.equal(code(() => root.openAt(FOLLOW, "g", CREATE, R)), "read-only");
    assert.equal(
      code(() => root.openAt(FOLLOW, "d", {}, { read: true, mutateDirectory: true })),
      "read-only",
    );
    assert.equal(code(() => root.createDirectoryAt("e")), "read-only");
    assert.equal(code(() => root.unlinkFileAt("f")), "read-only");
    assert.equal(code(() => root.removeDirectoryAt("d")), "read-only");
    assert.equal(code(() => root.renameAt("f", root, "g")), "read-only");
    assert.equal(code(() => root.symlinkAt("f", "l")), "read-only");
    assert.equal(code(() => root.linkAt(NOFOLLOW, "f", root, "h")), "read-only");
    assert.equal(
      code(() => root.setTimesAt(FOLLOW, "f", { tag: "now" }, { tag: "now" })),
      "read-only",
    );
  } finally {
    releaseFilesystem(imports);
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("filesystem: descriptors are capped per process, and dropped ones free their place", () => {
  const { root, done } = world();
  try {
    create(root, "f", "x");
    const open: Descriptor[] = [];
    for (let i = 0; i < MAX_DESCRIPTORS_PER_PROCESS; i++) {
      open.push(root.openAt(FOLLOW, i % 2 ? "f" : ".", {}, R));
    }
    assert.equal(code(() => root.openAt(FOLLOW, "f", {}, R)), "insufficient-memory");
    open.pop()![Symbol.dispose]();
    open.push(root.openAt(FOLLOW, "f", {}, R));
    for (const d of open) d[Symbol.dispose]();
  } finally {
    done();
  }
});

Deno.test("filesystem: host files close with their last user, and at release", () => {
  const { root, imports, done } = world();
  try {
    create(root, "f", "hello");
    const before = openFds();
    const f = root.openAt(FOLLOW, "f", {}, RW);
    const input = f.readViaStream(0n);
    assert.equal(openFds(), before + 1);
    f[Symbol.dispose]();
    f[Symbol.dispose]();
    // The stream still reads after its descriptor was dropped.
    assert.equal(dec.decode(input.read(5n)), "hello");
    input[Symbol.dispose]();
    assert.equal(openFds(), before);

    const g = root.openAt(FOLLOW, "f", {}, RW);
    const out = g.writeViaStream(0n);
    const again = g.readViaStream(0n);
    assert.equal(openFds(), before + 1);
    releaseFilesystem(imports);
    assert.equal(openFds(), before);
    assert.equal(code(() => g.read(1n, 0n)), "bad-descriptor");
    assert.equal(code(() => root.openAt(FOLLOW, "f", {}, R)), "bad-descriptor");
    let failure: unknown;
    try {
      out.write(enc.encode("x"));
    } catch (e) {
      failure = e;
    }
    const err = failure as { tag: string; val: IoError };
    assert.equal(err.tag, "last-operation-failed");
    assert.ok(err.val instanceof IoError);
    assert.equal(filesystemErrorCode(err.val), "bad-descriptor");
    assert.throws(
      () => again.read(1n),
      (e: { tag: string; val: IoError }) =>
        e.tag === "last-operation-failed" && filesystemErrorCode(e.val) === "bad-descriptor",
    );
    assert.equal(filesystemErrorCode(new IoError("not from a file")), undefined);
  } finally {
    done();
  }
});

Deno.test("filesystem: sync flags are honoured", () => {
  const { root, done } = world();
  try {
    const f = root.openAt(FOLLOW, "f", CREATE, { write: true, fileIntegritySync: true });
    assert.equal(f.getFlags().fileIntegritySync, true);
    f.write(enc.encode("abc"), 0n);
    const s = f.writeViaStream(3n);
    s.write(enc.encode("def"));
    s[Symbol.dispose]();
    f[Symbol.dispose]();
    const g = root.openAt(FOLLOW, "f", {}, { write: true, dataIntegritySync: true });
    g.write(enc.encode("A"), 0n);
    g[Symbol.dispose]();
    assert.equal(readText(root, "f"), "Abcdef");
  } finally {
    done();
  }
});

Deno.test("filesystem: a missing or wrong host folder is a clear error", () => {
  assert.throws(
    () => filesystemImports([{ guestPath: "/", hostPath: "/nonexistent/world" }]),
    /folder to mount at \/, \/nonexistent\/world, does not exist/,
  );
  const file = Deno.makeTempFileSync();
  try {
    assert.throws(
      () => filesystemImports([{ guestPath: "/", hostPath: file }]),
      /is not a folder/,
    );
  } finally {
    Deno.removeSync(file);
  }
});

Deno.test("filesystem: the same calls work on a memory layer", () => {
  const imports = filesystemImportsFor([{ guestPath: "/", fs: new MemoryFileSystem() }]);
  try {
    const root = preopens(imports)[0][0];
    root.createDirectoryAt("run");
    create(root, "run/endpoint.tmp", "tcp:127.0.0.1:41234");
    root.renameAt("run/endpoint.tmp", root, "run/endpoint");
    assert.equal(readText(root, "run/endpoint"), "tcp:127.0.0.1:41234");
    const f = root.openAt(FOLLOW, "run/endpoint", {}, RW);
    const out = f.appendViaStream();
    out.write(enc.encode(" x"));
    assert.equal(drain(f.readViaStream(0n)), "tcp:127.0.0.1:41234 x");
    root.unlinkFileAt("run/endpoint");
    assert.equal(f.stat().linkCount, 0n);
    assert.equal(dec.decode(f.read(3n, 0n)[0]), "tcp");
    out[Symbol.dispose]();
    f[Symbol.dispose]();
    const run = root.openAt(FOLLOW, "run", { directory: true }, R);
    assert.equal(run.readDirectory().readDirectoryEntry(), undefined);
    assert.equal(code(() => root.removeDirectoryAt(".")), "invalid");
    assert.equal(code(() => root.removeDirectoryAt("run/./")), "invalid");
    assert.equal(code(() => root.removeDirectoryAt("run/..")), "not-empty");
    assert.equal(code(() => root.openAt(FOLLOW, "nope", {}, R)), "no-entry");
    run[Symbol.dispose]();
  } finally {
    releaseFilesystem(imports);
  }
});

/** A memory layer whose files take at most `step` bytes per write, and nothing past `limit`. */
class ShortWrites extends MemoryFileSystem {
  constructor(readonly step: number, readonly limit: number) {
    super();
  }
  override open(path: string, options: OpenOptions): FileHandle {
    const inner = super.open(path, options);
    if (inner.kind !== "file") return inner;
    const { step, limit } = this;
    const room = (n: number) => Math.max(0, Math.min(n, step, limit - inner.stat().size));
    return {
      kind: inner.kind,
      path: inner.path,
      read: (b: Uint8Array, o: number) => inner.read(b, o),
      write: (d: Uint8Array, o: number) => {
        const n = Math.max(0, Math.min(d.length, step, limit - o));
        if (n === 0) throw new VfsError("ENOSPC", "write", path);
        return inner.write(d.subarray(0, n), o);
      },
      append: (d: Uint8Array) => {
        const n = room(d.length);
        if (n === 0) throw new VfsError("ENOSPC", "write", path);
        return inner.append(d.subarray(0, n));
      },
      setSize: (s: number) => inner.setSize(s),
      stat: (): Stat => inner.stat(),
      sync: () => inner.sync(),
      syncData: () => inner.syncData(),
      setTimes: (a: TimeSpec, m: TimeSpec) => inner.setTimes(a, m),
      close: () => inner.close(),
    };
  }
}

Deno.test("filesystem: a stream write honours a layer's short writes: every byte or an error", () => {
  const imports = filesystemImportsFor([{ guestPath: "/", fs: new ShortWrites(3, 20) }]);
  try {
    const root = preopens(imports)[0][0];
    const f = root.openAt(FOLLOW, "f", CREATE, RW);
    const out = f.writeViaStream(2n);
    out.write(enc.encode("abcdefgh")); // three calls of the layer
    out.write(enc.encode("ij"));
    const app = f.appendViaStream();
    app.write(enc.encode("KLMNO"));
    assert.equal(dec.decode(f.read(100n, 0n)[0]), "\0\0abcdefghijKLMNO");
    // past the layer's limit: what fits is written, and the stream says it failed
    let failed: unknown;
    try {
      app.write(enc.encode("0123456789"));
    } catch (e) {
      failed = e;
    }
    const err = failed as { tag: string; val: IoError };
    assert.equal(err?.tag, "last-operation-failed", String(failed));
    assert.equal(filesystemErrorCode(err.val), "insufficient-space");
    assert.equal(dec.decode(f.read(100n, 0n)[0]), "\0\0abcdefghijKLMNO012");
    out[Symbol.dispose]();
    app[Symbol.dispose]();
    f[Symbol.dispose]();
  } finally {
    releaseFilesystem(imports);
  }
});

Deno.test("filesystem: get-flags of an opened folder reports the flags it was opened with", () => {
  const { root, done } = world();
  try {
    root.createDirectoryAt("d");
    const plain = root.openAt(FOLLOW, "d", { directory: true }, R);
    assert.deepEqual(plain.getFlags(), { read: true, mutateDirectory: false });
    const mutable = root.openAt(FOLLOW, "d", { directory: true }, {
      read: true,
      mutateDirectory: true,
    });
    assert.deepEqual(mutable.getFlags(), { read: true, mutateDirectory: true });
    const synced = root.openAt(FOLLOW, "d", {}, { read: true, fileIntegritySync: true });
    assert.deepEqual(synced.getFlags(), {
      read: true,
      mutateDirectory: false,
      fileIntegritySync: true,
    });
    for (const d of [plain, mutable, synced]) d[Symbol.dispose]();
  } finally {
    done();
  }
});

Deno.test("filesystem: a listing gives illegal-byte-sequence for a host name that is not UTF-8, then goes on", () => {
  const { root, dir, done } = world();
  try {
    create(root, "a.txt", "a");
    const made = new Deno.Command("sh", {
      args: ["-c", `printf x > "$(printf 'bad\\377')"`],
      cwd: dir,
    }).outputSync();
    assert.ok(made.success);
    const s = root.readDirectory();
    const seen: string[] = [];
    for (;;) {
      let e;
      try {
        e = s.readDirectoryEntry();
      } catch (error) {
        seen.push(String(error));
        continue;
      }
      if (!e) break;
      seen.push(e.name);
    }
    s[Symbol.dispose]();
    assert.deepEqual(seen.sort(), ["a.txt", "illegal-byte-sequence"]);
  } finally {
    done();
  }
});
