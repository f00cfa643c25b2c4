/**
 * Differential test: random sequences of operations run on a layer (host,
 * memory) and on plain Deno calls in a temporary folder must give the same
 * results and leave the same tree.
 *
 * Symbolic link targets are relative and never use `..`, and paths never
 * climb above the root lexically, so the two sides agree by construction on
 * where a path leads (the host does not know the `chroot` rules the layer
 * applies above its root). Everything else, including links, loops and `..`
 * after links, is compared. File contents are read and written at offsets
 * (also past the end), appended to and resized.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { closeSync, constants, openSync } from "node:fs";
import { HostFileSystem } from "./host_fs.ts";
import { MemoryFileSystem } from "./memory.ts";
import { type FileSystem, VfsError } from "./types.ts";

const NAMES = ["a", "b", "c"];
const enc = new TextEncoder();
const dec = new TextDecoder();

type Op =
  | { op: "mkdir"; path: string }
  | { op: "write"; path: string; text: string }
  | { op: "read"; path: string }
  | { op: "unlink"; path: string }
  | { op: "rmdir"; path: string }
  | { op: "rename"; from: string; to: string }
  | { op: "symlink"; target: string; path: string }
  | { op: "link"; from: string; to: string }
  | { op: "stat"; path: string }
  | { op: "lstat"; path: string }
  | { op: "readdir"; path: string }
  | { op: "readlink"; path: string }
  | { op: "truncate"; path: string; size: number }
  | { op: "createNew"; path: string }
  | { op: "openNoFollow"; path: string }
  | { op: "pwrite"; path: string; offset: number; text: string }
  | { op: "pread"; path: string; offset: number; length: number }
  | { op: "append"; path: string; text: string };

/** A path of 1 to 3 components with an occasional `..` that never climbs above `/`. */
const pathArb = fc
  .array(
    fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...NAMES) }, {
      weight: 1,
      arbitrary: fc.constant(".."),
    }),
    { minLength: 1, maxLength: 3 },
  )
  .map((parts) => {
    const out: string[] = [];
    let depth = 0;
    for (const p of parts) {
      if (p === "..") {
        if (depth === 0) continue;
        depth--;
      } else depth++;
      out.push(p);
    }
    return "/" + (out.length ? out : ["a"]).join("/");
  });

const targetArb = fc.array(fc.constantFrom(...NAMES), { minLength: 1, maxLength: 2 }).map((p) =>
  p.join("/")
);

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: pathArb.map((path) => ({ op: "mkdir" as const, path })) },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant("write" as const),
      path: pathArb,
      text: fc.string({ maxLength: 8 }),
    }),
  },
  { weight: 2, arbitrary: pathArb.map((path) => ({ op: "read" as const, path })) },
  { weight: 1, arbitrary: pathArb.map((path) => ({ op: "unlink" as const, path })) },
  { weight: 1, arbitrary: pathArb.map((path) => ({ op: "rmdir" as const, path })) },
  {
    weight: 2,
    arbitrary: fc.record({ op: fc.constant("rename" as const), from: pathArb, to: pathArb }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ op: fc.constant("symlink" as const), target: targetArb, path: pathArb }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant("link" as const), from: pathArb, to: pathArb }),
  },
  { weight: 2, arbitrary: pathArb.map((path) => ({ op: "stat" as const, path })) },
  { weight: 2, arbitrary: pathArb.map((path) => ({ op: "lstat" as const, path })) },
  { weight: 2, arbitrary: pathArb.map((path) => ({ op: "readdir" as const, path })) },
  { weight: 1, arbitrary: pathArb.map((path) => ({ op: "readlink" as const, path })) },
  { weight: 1, arbitrary: pathArb.map((path) => ({ op: "createNew" as const, path })) },
  { weight: 1, arbitrary: pathArb.map((path) => ({ op: "openNoFollow" as const, path })) },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant("truncate" as const),
      path: pathArb,
      size: fc.nat(20),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant("pwrite" as const),
      path: pathArb,
      offset: fc.nat(16),
      text: fc.string({ maxLength: 8 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      op: fc.constant("pread" as const),
      path: pathArb,
      offset: fc.nat(16),
      length: fc.integer({ min: 1, max: 16 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant("append" as const),
      path: pathArb,
      text: fc.string({ maxLength: 8 }),
    }),
  },
);

type Outcome = { ok: unknown } | { err: string };

function outcome(f: () => unknown): Outcome {
  try {
    return { ok: f() };
  } catch (e) {
    const code = (e as { code?: unknown }).code;
    if (e instanceof VfsError || typeof code === "string") return { err: String(code) };
    throw e;
  }
}

function kindOf(info: Deno.FileInfo): string {
  return info.isFile ? "file" : info.isDirectory ? "directory" : info.isSymlink ? "symlink" : "?";
}

/** The operations through the layer. */
function viaLayer(fs: FileSystem, op: Op): unknown {
  switch (op.op) {
    case "mkdir":
      return fs.mkdir(op.path);
    case "write": {
      const f = fs.open(op.path, { write: true, create: true, truncate: true });
      try {
        f.write(enc.encode(op.text), 0);
      } finally {
        f.close();
      }
      return;
    }
    case "read": {
      const f = fs.open(op.path, { read: true });
      try {
        const buf = new Uint8Array(1024);
        return dec.decode(buf.subarray(0, f.read(buf, 0)));
      } finally {
        f.close();
      }
    }
    case "unlink":
      return fs.unlink(op.path);
    case "rmdir":
      return fs.rmdir(op.path);
    case "rename":
      return fs.rename(op.from, op.to);
    case "symlink":
      return fs.symlink(op.target, op.path);
    case "link":
      return fs.link(op.from, op.to);
    case "stat": {
      const s = fs.stat(op.path);
      return s.kind === "directory" ? [s.kind] : [s.kind, s.size, s.nlink];
    }
    case "lstat": {
      const s = fs.lstat(op.path);
      return s.kind === "directory" ? [s.kind] : [s.kind, s.size, s.nlink];
    }
    case "readdir":
      return fs.readDir(op.path).map((e) => `${e.name}:${e.kind}`).sort();
    case "readlink":
      return fs.readlink(op.path);
    case "createNew":
      return fs.open(op.path, { write: true, create: true, exclusive: true }).close();
    case "openNoFollow":
      return fs.open(op.path, { read: true, noFollow: true }).close();
    case "truncate": {
      const f = fs.open(op.path, { write: true });
      try {
        f.setSize(op.size);
      } finally {
        f.close();
      }
      return;
    }
    case "pwrite": {
      const f = fs.open(op.path, { write: true, create: true });
      try {
        return f.write(enc.encode(op.text), op.offset);
      } finally {
        f.close();
      }
    }
    case "pread": {
      const f = fs.open(op.path, { read: true });
      try {
        // a folder opens for reading; reading it is EISDIR, as on the host
        if (f.kind === "directory") throw new VfsError("EISDIR", "read", op.path);
        const buf = new Uint8Array(op.length);
        return [...buf.subarray(0, f.read(buf, op.offset))];
      } finally {
        f.close();
      }
    }
    case "append": {
      const f = fs.open(op.path, { write: true });
      try {
        return f.append(enc.encode(op.text));
      } finally {
        f.close();
      }
    }
  }
}

/** The same operations with plain Deno calls on host paths. */
function viaDeno(root: string, op: Op): unknown {
  switch (op.op) {
    case "mkdir":
      return Deno.mkdirSync(root + op.path);
    case "write":
      return Deno.writeFileSync(root + op.path, enc.encode(op.text));
    case "read":
      return dec.decode(Deno.readFileSync(root + op.path));
    case "unlink":
      // unlink(2): a folder is EISDIR (Deno's remove would remove an empty one).
      if (Deno.lstatSync(root + op.path).isDirectory) throw { code: "EISDIR" };
      return Deno.removeSync(root + op.path);
    case "rmdir":
      // rmdir(2): anything but a folder is ENOTDIR.
      if (!Deno.lstatSync(root + op.path).isDirectory) throw { code: "ENOTDIR" };
      return Deno.removeSync(root + op.path);
    case "rename":
      return Deno.renameSync(root + op.from, root + op.to);
    case "symlink":
      return Deno.symlinkSync(op.target, root + op.path);
    case "link":
      return Deno.linkSync(root + op.from, root + op.to);
    case "stat": {
      const s = Deno.statSync(root + op.path);
      return s.isDirectory ? [kindOf(s)] : [kindOf(s), s.size, s.nlink];
    }
    case "lstat": {
      const s = Deno.lstatSync(root + op.path);
      return s.isDirectory ? [kindOf(s)] : [kindOf(s), s.size, s.nlink];
    }
    case "readdir":
      return [...Deno.readDirSync(root + op.path)].map((e) =>
        `${e.name}:${e.isFile ? "file" : e.isDirectory ? "directory" : "symlink"}`
      ).sort();
    case "readlink":
      return Deno.readLinkSync(root + op.path);
    case "createNew":
      return Deno.openSync(root + op.path, { write: true, createNew: true }).close();
    case "openNoFollow":
      return closeSync(openSync(root + op.path, constants.O_RDONLY | constants.O_NOFOLLOW));
    case "truncate": {
      const f = Deno.openSync(root + op.path, { write: true });
      try {
        f.truncateSync(op.size);
      } finally {
        f.close();
      }
      return;
    }
    case "pwrite": {
      const f = Deno.openSync(root + op.path, { write: true, create: true });
      try {
        f.seekSync(op.offset, Deno.SeekMode.Start);
        return f.writeSync(enc.encode(op.text));
      } finally {
        f.close();
      }
    }
    case "pread": {
      const f = Deno.openSync(root + op.path, { read: true });
      try {
        f.seekSync(op.offset, Deno.SeekMode.Start);
        const buf = new Uint8Array(op.length);
        return [...buf.subarray(0, f.readSync(buf) ?? 0)];
      } finally {
        f.close();
      }
    }
    case "append": {
      const f = Deno.openSync(root + op.path, { append: true });
      try {
        return f.writeSync(enc.encode(op.text));
      } finally {
        f.close();
      }
    }
  }
}

/** The whole tree on the host, links not followed, as comparable lines. */
function snapshot(dir: string, rel = ""): string[] {
  const out: string[] = [];
  for (const e of [...Deno.readDirSync(dir)].sort((x, y) => x.name < y.name ? -1 : 1)) {
    const p = `${dir}/${e.name}`;
    if (e.isSymlink) out.push(`${rel}${e.name} -> ${Deno.readLinkSync(p)}`);
    else if (e.isDirectory) out.push(`${rel}${e.name}/`, ...snapshot(p, `${rel}${e.name}/`));
    else out.push(`${rel}${e.name} = ${Deno.readTextFileSync(p)}`);
  }
  return out;
}

/** The same through a layer. */
function layerSnapshot(fs: FileSystem, dir = "", rel = ""): string[] {
  const out: string[] = [];
  for (const e of fs.readDir(dir || "/").sort((x, y) => x.name < y.name ? -1 : 1)) {
    const p = `${dir}/${e.name}`;
    if (e.kind === "symlink") out.push(`${rel}${e.name} -> ${fs.readlink(p)}`);
    else if (e.kind === "directory") {
      out.push(`${rel}${e.name}/`, ...layerSnapshot(fs, p, `${rel}${e.name}/`));
    } else out.push(`${rel}${e.name} = ${viaLayer(fs, { op: "read", path: p })}`);
  }
  return out;
}

const LAYERS: [string, (dir: string) => FileSystem][] = [
  ["host", (dir) => new HostFileSystem(dir)],
  ["memory", () => new MemoryFileSystem()],
];

for (const [name, make] of LAYERS) {
  Deno.test(`${name}: random operations match plain Deno calls`, () => {
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 1, maxLength: 40 }), (ops) => {
        const base = Deno.makeTempDirSync({ prefix: "vfs_diff_" });
        try {
          Deno.mkdirSync(`${base}/layer`);
          Deno.mkdirSync(`${base}/plain`);
          const fs = make(`${base}/layer`);
          for (const [i, op] of ops.entries()) {
            const a = outcome(() => viaLayer(fs, op));
            const b = outcome(() => viaDeno(`${base}/plain`, op));
            assert.deepEqual(a, b, `step ${i}: ${JSON.stringify(op)}`);
          }
          assert.deepEqual(layerSnapshot(fs), snapshot(`${base}/plain`));
        } finally {
          Deno.removeSync(base, { recursive: true });
        }
      }),
      { numRuns: 300 },
    );
  });
}
