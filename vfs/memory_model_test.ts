/**
 * Model test: random operations on the memory layer and on a model of it,
 * a map from paths to folders and file contents, must give the same results
 * and leave the same tree. Paths have no links and no `..`, so the model
 * needs no resolution beyond "is each folder on the way a folder".
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { MemoryFileSystem } from "./memory.ts";
import { VfsError } from "./types.ts";

const enc = new TextEncoder();
const dec = new TextDecoder();

type Op =
  | { op: "mkdir"; path: string }
  | { op: "write"; path: string; text: string }
  | { op: "pwrite"; path: string; offset: number; text: string }
  | { op: "append"; path: string; text: string }
  | { op: "read"; path: string; offset: number; length: number }
  | { op: "setSize"; path: string; size: number }
  | { op: "unlink"; path: string }
  | { op: "rmdir"; path: string }
  | { op: "rename"; from: string; to: string }
  | { op: "readdir"; path: string }
  | { op: "stat"; path: string };

const pathArb = fc.array(fc.constantFrom("a", "b", "c"), { minLength: 1, maxLength: 3 })
  .map((parts) => "/" + parts.join("/"));
const textArb = fc.string({ maxLength: 6 });

const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ op: fc.constant("mkdir" as const), path: pathArb }) },
  {
    weight: 3,
    arbitrary: fc.record({ op: fc.constant("write" as const), path: pathArb, text: textArb }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant("pwrite" as const),
      path: pathArb,
      offset: fc.nat(12),
      text: textArb,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ op: fc.constant("append" as const), path: pathArb, text: textArb }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      op: fc.constant("read" as const),
      path: pathArb,
      offset: fc.nat(12),
      length: fc.nat(12),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ op: fc.constant("setSize" as const), path: pathArb, size: fc.nat(16) }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("unlink" as const), path: pathArb }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("rmdir" as const), path: pathArb }) },
  {
    weight: 2,
    arbitrary: fc.record({ op: fc.constant("rename" as const), from: pathArb, to: pathArb }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("readdir" as const), path: pathArb }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant("stat" as const), path: pathArb }) },
);

type Entry = { kind: "directory" } | { kind: "file"; data: Uint8Array };

/** Thrown by the model, like a {@linkcode VfsError}. */
class ModelError {
  constructor(readonly code: string) {}
}

/** The memory layer as a map of paths; `/` is always a folder. */
class Model {
  readonly entries = new Map<string, Entry>([["/", { kind: "directory" }]]);

  /** Checks that every folder on the way to `path` is a folder. */
  #parent(path: string): void {
    const parts = path.split("/").slice(1, -1);
    let at = "";
    for (const part of parts) {
      at += "/" + part;
      const entry = this.entries.get(at);
      if (!entry) throw new ModelError("ENOENT");
      if (entry.kind !== "directory") throw new ModelError("ENOTDIR");
    }
  }

  #get(path: string): Entry {
    this.#parent(path);
    const entry = this.entries.get(path);
    if (!entry) throw new ModelError("ENOENT");
    return entry;
  }

  #file(path: string, create: boolean): { kind: "file"; data: Uint8Array } {
    this.#parent(path);
    let entry = this.entries.get(path);
    if (!entry) {
      if (!create) throw new ModelError("ENOENT");
      entry = { kind: "file", data: new Uint8Array(0) };
      this.entries.set(path, entry);
    }
    if (entry.kind !== "file") throw new ModelError("EISDIR");
    return entry;
  }

  #children(path: string): string[] {
    return [...this.entries.keys()].filter((p) =>
      p.startsWith(path + "/") && !p.slice(path.length + 1).includes("/")
    );
  }

  run(op: Op): unknown {
    switch (op.op) {
      case "mkdir":
        this.#parent(op.path);
        if (this.entries.has(op.path)) throw new ModelError("EEXIST");
        this.entries.set(op.path, { kind: "directory" });
        return;
      case "write": {
        const file = this.#file(op.path, true);
        file.data = enc.encode(op.text);
        return;
      }
      case "pwrite":
        return this.#writeAt(this.#file(op.path, true), op.offset, enc.encode(op.text));
      case "append": {
        const file = this.#file(op.path, false);
        return this.#writeAt(file, file.data.length, enc.encode(op.text));
      }
      case "read": {
        const file = this.#file(op.path, false);
        return dec.decode(file.data.slice(op.offset, op.offset + op.length));
      }
      case "setSize": {
        const file = this.#file(op.path, false);
        const data = new Uint8Array(op.size);
        data.set(file.data.subarray(0, op.size));
        file.data = data;
        return;
      }
      case "unlink":
        if (this.#get(op.path).kind === "directory") throw new ModelError("EISDIR");
        this.entries.delete(op.path);
        return;
      case "rmdir":
        if (this.#get(op.path).kind !== "directory") throw new ModelError("ENOTDIR");
        if (this.#children(op.path).length > 0) throw new ModelError("ENOTEMPTY");
        this.entries.delete(op.path);
        return;
      case "rename":
        return this.#rename(op.from, op.to);
      case "readdir":
        if (this.#get(op.path).kind !== "directory") throw new ModelError("ENOTDIR");
        return this.#children(op.path).map((p) =>
          `${p.slice(op.path.length + 1)}:${this.entries.get(p)!.kind}`
        ).sort();
      case "stat": {
        const entry = this.#get(op.path);
        return entry.kind === "file" ? [entry.kind, entry.data.length] : [entry.kind];
      }
    }
  }

  #writeAt(file: { data: Uint8Array }, offset: number, bytes: Uint8Array): number {
    if (bytes.length === 0) return 0;
    const end = offset + bytes.length;
    if (end > file.data.length) {
      const data = new Uint8Array(end);
      data.set(file.data);
      file.data = data;
    }
    file.data.set(bytes, offset);
    return bytes.length;
  }

  /** The error codes of a rename are not compared (their order is Linux's), only the outcome. */
  #rename(from: string, to: string): void {
    const source = this.#get(from);
    this.#parent(to);
    if (from === to) return;
    if (to.startsWith(from + "/")) throw new ModelError("EINVAL");
    const target = this.entries.get(to);
    if (target) {
      if (source.kind === "directory" && target.kind !== "directory") {
        throw new ModelError("ENOTDIR");
      }
      if (source.kind !== "directory" && target.kind === "directory") {
        throw new ModelError("EISDIR");
      }
      if (target.kind === "directory" && this.#children(to).length > 0) {
        throw new ModelError("ENOTEMPTY");
      }
    }
    const moved = [...this.entries].filter(([p]) => p === from || p.startsWith(from + "/"));
    for (const [p] of moved) this.entries.delete(p);
    for (const [p, e] of moved) this.entries.set(to + p.slice(from.length), e);
  }

  snapshot(): string[] {
    return [...this.entries].filter(([p]) => p !== "/").map(([p, e]) =>
      e.kind === "file" ? `${p} = ${dec.decode(e.data)}` : `${p}/`
    ).sort();
  }
}

function viaLayer(fs: MemoryFileSystem, op: Op): unknown {
  const withFile = <T>(
    path: string,
    write: boolean,
    create: boolean,
    f: (h: ReturnType<MemoryFileSystem["open"]>) => T,
  ): T => {
    const h = fs.open(path, { read: !write, write, create });
    try {
      if (h.kind === "directory") throw new VfsError("EISDIR", "open", path);
      return f(h);
    } finally {
      h.close();
    }
  };
  switch (op.op) {
    case "mkdir":
      return fs.mkdir(op.path);
    case "write": {
      const h = fs.open(op.path, { write: true, create: true, truncate: true });
      try {
        h.write(enc.encode(op.text), 0);
      } finally {
        h.close();
      }
      return;
    }
    case "pwrite":
      return withFile(op.path, true, true, (h) => h.write(enc.encode(op.text), op.offset));
    case "append":
      return withFile(op.path, true, false, (h) => h.append(enc.encode(op.text)));
    case "read":
      return withFile(op.path, false, false, (h) => {
        const buffer = new Uint8Array(op.length);
        return dec.decode(buffer.subarray(0, h.read(buffer, op.offset)));
      });
    case "setSize":
      return withFile(op.path, true, false, (h) => h.setSize(op.size));
    case "unlink":
      return fs.unlink(op.path);
    case "rmdir":
      return fs.rmdir(op.path);
    case "rename":
      return fs.rename(op.from, op.to);
    case "readdir":
      return fs.readDir(op.path).map((e) => `${e.name}:${e.kind}`).sort();
    case "stat": {
      const s = fs.stat(op.path);
      return s.kind === "file" ? [s.kind, s.size] : [s.kind];
    }
  }
}

function layerSnapshot(fs: MemoryFileSystem, dir = ""): string[] {
  const out: string[] = [];
  for (const e of fs.readDir(dir || "/")) {
    const p = `${dir}/${e.name}`;
    if (e.kind === "directory") out.push(`${p}/`, ...layerSnapshot(fs, p));
    else out.push(`${p} = ${viaLayer(fs, { op: "read", path: p, offset: 0, length: 1 << 10 })}`);
  }
  return out.sort();
}

type Outcome = { ok: unknown } | { err: string };

function outcome(f: () => unknown): Outcome {
  try {
    return { ok: f() };
  } catch (e) {
    if (e instanceof VfsError || e instanceof ModelError) return { err: e.code };
    throw e;
  }
}

Deno.test("memory: random operations match a model of paths and contents", () => {
  fc.assert(
    fc.property(fc.array(opArb, { minLength: 1, maxLength: 50 }), (ops) => {
      const fs = new MemoryFileSystem();
      const model = new Model();
      for (const [i, op] of ops.entries()) {
        let a = outcome(() => viaLayer(fs, op));
        let b = outcome(() => model.run(op));
        if (op.op === "rename") {
          a = "err" in a ? { err: "error" } : a;
          b = "err" in b ? { err: "error" } : b;
        }
        assert.deepEqual(a, b, `step ${i}: ${JSON.stringify(op)}`);
      }
      assert.deepEqual(layerSnapshot(fs), model.snapshot());
    }),
    { numRuns: 500 },
  );
});
