/**
 * A read-only layer whose files are made by functions at each open.
 *
 * A read returns the snapshot taken when the file was opened, and ends: a
 * log that grows does not make a reader wait. Folders list their entries
 * when asked, so the tree follows the state it shows. A folder can also lay
 * another layer under its own entries (shown read-only), to mix generated
 * files with stored ones.
 *
 * @example
 * ```ts
 * import { GeneratedFileSystem } from "./generated.ts";
 * let hits = 0;
 * const fs = new GeneratedFileSystem({
 *   kind: "dir",
 *   entries: () => ({ "hits.txt": { kind: "file", content: () => `${++hits}\n` } }),
 * });
 * fs.stat("/hits.txt").kind; // "file"
 * ```
 *
 * @module
 */
import {
  type DirEntry,
  type FileHandle,
  type FileKind,
  type FileSystem,
  type OpenOptions,
  type Stat,
  type TimeSpec,
  VfsError,
} from "./types.ts";

/** A file: its content is made at each open (and each stat). */
export interface GeneratedFile {
  kind: "file";
  content: () => string | Uint8Array;
}

/** A folder: generated entries, and optionally a layer under them. */
export interface GeneratedDir {
  kind: "dir";
  /** The generated entries, computed at each access. */
  entries?: () => Record<string, GeneratedNode>;
  /** A layer whose root shows in this folder, under the generated entries. */
  under?: () => FileSystem | undefined;
}

/** A node of the tree. */
export type GeneratedNode = GeneratedFile | GeneratedDir;

const encoder = new TextEncoder();

function bytesOf(content: string | Uint8Array): Uint8Array {
  return typeof content === "string" ? encoder.encode(content) : content;
}

/** A cheap stable number for a path, as its inode. */
function inodeOf(path: string): number {
  let h = 2166136261;
  for (let i = 0; i < path.length; i++) h = Math.imul(h ^ path.charCodeAt(i), 16777619);
  return h >>> 0;
}

type Resolved =
  | { node: GeneratedNode; path: string }
  | { under: FileSystem; rest: string; path: string };

/** The generated layer. Every change throws `EROFS`. */
export class GeneratedFileSystem implements FileSystem {
  readonly readOnly = true;
  readonly #root: GeneratedDir;
  readonly #dev: number;

  constructor(root: GeneratedDir, options: { dev?: number } = {}) {
    this.#root = root;
    this.#dev = options.dev ?? 0x5a5a;
  }

  #resolve(path: string, syscall: string): Resolved {
    const parts: string[] = [];
    for (const part of path.split("/")) {
      if (part === "" || part === ".") continue;
      if (part === "..") parts.pop();
      else parts.push(part);
    }
    let node: GeneratedNode = this.#root;
    for (let i = 0; i < parts.length; i++) {
      if (node.kind !== "dir") throw new VfsError("ENOTDIR", syscall, path);
      const next: GeneratedNode | undefined = node.entries?.()[parts[i]];
      if (next) {
        node = next;
        continue;
      }
      const under = node.under?.();
      if (under) {
        return { under, rest: "/" + parts.slice(i).join("/"), path: "/" + parts.join("/") };
      }
      throw new VfsError("ENOENT", syscall, path);
    }
    return { node, path: "/" + parts.join("/") };
  }

  #stat(node: GeneratedNode, path: string): Stat {
    const now = Date.now();
    return {
      kind: node.kind === "file" ? "file" : "directory",
      size: node.kind === "file" ? bytesOf(node.content()).length : 0,
      nlink: 1,
      dev: this.#dev,
      ino: inodeOf(path),
      mode: node.kind === "file" ? 0o100444 : 0o40555,
      atimeMs: now,
      mtimeMs: now,
      ctimeMs: now,
    };
  }

  stat(path: string): Stat {
    const r = this.#resolve(path, "stat");
    return "under" in r ? r.under.stat(r.rest) : this.#stat(r.node, r.path);
  }

  lstat(path: string): Stat {
    const r = this.#resolve(path, "lstat");
    return "under" in r ? r.under.lstat(r.rest) : this.#stat(r.node, r.path);
  }

  realpath(path: string): string {
    return this.#resolve(path, "realpath").path;
  }

  readDir(path: string): DirEntry[] {
    const r = this.#resolve(path, "readdir");
    if ("under" in r) return r.under.readDir(r.rest);
    if (r.node.kind !== "dir") throw new VfsError("ENOTDIR", "readdir", path);
    const generated = r.node.entries?.() ?? {};
    const out: DirEntry[] = Object.entries(generated).map(([name, n]) => ({
      name,
      kind: (n.kind === "file" ? "file" : "directory") as FileKind,
    }));
    const under = r.node.under?.();
    if (under) {
      for (const e of under.readDir("/")) if (!(e.name in generated)) out.push(e);
    }
    return out;
  }

  open(path: string, options: OpenOptions): FileHandle {
    if (options.write || options.create || options.truncate) {
      throw new VfsError("EROFS", "open", path);
    }
    const r = this.#resolve(path, "open");
    if ("under" in r) return r.under.open(r.rest, { ...options, write: false });
    if (options.directory && r.node.kind !== "dir") throw new VfsError("ENOTDIR", "open", path);
    if (r.node.kind === "dir") {
      return new _Snapshot("directory", r.path, new Uint8Array(), () => this.#stat(r.node, r.path));
    }
    const bytes = bytesOf(r.node.content());
    const stat = {
      ...this.#stat({ kind: "dir" }, r.path),
      kind: "file" as FileKind,
      size: bytes.length,
      mode: 0o100444,
    };
    return new _Snapshot("file", r.path, bytes, () => stat);
  }

  mkdir(path: string): void {
    throw new VfsError("EROFS", "mkdir", path);
  }
  unlink(path: string): void {
    throw new VfsError("EROFS", "unlink", path);
  }
  rmdir(path: string): void {
    throw new VfsError("EROFS", "rmdir", path);
  }
  rename(from: string, _to: string): void {
    throw new VfsError("EROFS", "rename", from);
  }
  symlink(_target: string, path: string): void {
    throw new VfsError("EROFS", "symlink", path);
  }
  readlink(path: string): string {
    const r = this.#resolve(path, "readlink");
    if ("under" in r) return r.under.readlink(r.rest);
    throw new VfsError("EINVAL", "readlink", path);
  }
  link(_existing: string, newPath: string): void {
    throw new VfsError("EROFS", "link", newPath);
  }
  setTimes(path: string, _a: TimeSpec, _m: TimeSpec, _follow: boolean): void {
    throw new VfsError("EROFS", "utimes", path);
  }
}

/** An open generated file: the bytes of the moment it was opened. */
class _Snapshot implements FileHandle {
  readonly kind: FileKind;
  readonly path: string;
  readonly #bytes: Uint8Array;
  readonly #stat: () => Stat;
  #closed = false;

  constructor(kind: FileKind, path: string, bytes: Uint8Array, stat: () => Stat) {
    this.kind = kind;
    this.path = path;
    this.#bytes = bytes;
    this.#stat = stat;
  }

  #check(op: string): void {
    if (this.#closed) throw new VfsError("EBADF", op, this.path);
  }

  read(buffer: Uint8Array, offset: number): number {
    this.#check("read");
    if (this.kind === "directory") throw new VfsError("EISDIR", "read", this.path);
    const chunk = this.#bytes.subarray(offset, offset + buffer.length);
    buffer.set(chunk);
    return chunk.length;
  }
  write(): number {
    throw new VfsError("EBADF", "write", this.path);
  }
  append(): number {
    throw new VfsError("EBADF", "write", this.path);
  }
  setSize(): void {
    throw new VfsError("EROFS", "ftruncate", this.path);
  }
  stat(): Stat {
    this.#check("fstat");
    return this.#stat();
  }
  sync(): void {}
  syncData(): void {}
  setTimes(): void {
    throw new VfsError("EROFS", "futimens", this.path);
  }
  close(): void {
    this.#closed = true;
  }
}
