/**
 * The memory layer: a {@linkcode FileSystem} whose files live in the memory
 * of the thread that made it (scratch areas, files shared by the users of one
 * thread, tests).
 *
 * It follows Linux: the same error codes in the same order, hard links,
 * symbolic links resolved with `chroot` semantics (as in the host layer), a
 * folder's link count of 2 plus its subfolders. A file handle keeps its file
 * after an unlink or a rename. An optional byte budget makes writes beyond
 * it fail with `ENOSPC`, so that an untrusted writer cannot fill the host's memory.
 *
 * @example
 * ```ts
 * import { MemoryFileSystem } from "./memory.ts";
 * const fs = new MemoryFileSystem({ maxBytes: 1 << 20 });
 * const file = fs.open("/endpoint", { write: true, create: true });
 * file.write(new TextEncoder().encode("tcp:127.0.0.1:41234"), 0);
 * file.close();
 * fs.stat("/endpoint").size; // 19
 * ```
 *
 * @module
 */
import { checkPath, checkTarget, onlyEmpty } from "./_path.ts";
import {
  type DirEntry,
  type FileHandle,
  type FileKind,
  type FileSystem,
  MAX_SYMLINKS,
  type OpenOptions,
  type Stat,
  type TimeSpec,
  VfsError,
} from "./types.ts";
import { FolderHandle } from "./_folder_handle.ts";

/**
 * A budget of `maxBytes` allows one name per this many bytes, as a
 * filesystem has one inode per so many bytes: names are limited apart from
 * content, so that an empty file can still be made when the bytes are used up
 * (SQLite makes its journal before it writes).
 */
export const BYTES_PER_NAME = 1024;

/**
 * A byte budget that several memory layers share, on top of their own: the
 * content and link targets of all of them together. A change that would pass
 * it fails with `ENOSPC`, as a layer's own budget does.
 *
 * @example
 * ```ts
 * const budget = new SharedBudget(1 << 20);
 * const a = new MemoryFileSystem({ maxBytes: 1 << 20, shared: budget });
 * const b = new MemoryFileSystem({ maxBytes: 1 << 20, shared: budget });
 * // a and b hold at most 1 MiB together
 * ```
 */
export class SharedBudget {
  /** Most bytes of all the layers together (may change; a lower value refuses growth only). */
  maxBytes: number;
  #used = 0;
  /**
   * Told of each change refused because of this budget (not of a layer's
   * own); returns the detail of the `ENOSPC` error.
   */
  onFull?: (layer: string, syscall: string, path: string) => string | undefined;

  constructor(maxBytes = Infinity) {
    this.maxBytes = maxBytes;
  }

  /** Bytes the layers hold now. */
  get bytes(): number {
    return this.#used;
  }

  /** Takes `bytes`, or throws `ENOSPC` and takes nothing. */
  _take(bytes: number, layer: string, syscall: string, path: string): void {
    if (this.#used + bytes > this.maxBytes) {
      throw new VfsError("ENOSPC", syscall, path, this.onFull?.(layer, syscall, path));
    }
    this.#used += bytes;
  }

  /** Gives `bytes` back. */
  _give(bytes: number): void {
    this.#used -= bytes;
  }
}

/** Options of {@linkcode MemoryFileSystem}. */
export interface MemoryFileSystemOptions {
  /** Refuse every change with `EROFS`. */
  readOnly?: boolean;
  /**
   * Most bytes of file content and link targets the layer holds, and, by
   * {@linkcode BYTES_PER_NAME}, its most names; beyond them, writes and new
   * names fail with `ENOSPC`.
   */
  maxBytes?: number;
  /** A budget shared with other layers, checked after `maxBytes`. */
  shared?: SharedBudget;
  /** The layer's name in what the shared budget is told. */
  name?: string;
  /** Names at the top of the layer that nothing may create, also through a link. */
  reserved?: readonly string[];
}

interface _Times {
  atimeMs: number;
  mtimeMs: number;
  ctimeMs: number;
}

interface _File extends _Times {
  kind: "file";
  ino: number;
  nlink: number;
  /** Open handles: an unlinked file keeps its content until the last is closed. */
  opens: number;
  data: Uint8Array;
  size: number;
}

interface _Dir extends _Times {
  kind: "directory";
  ino: number;
  nlink: number;
  entries: Map<string, _Node>;
}

interface _Link extends _Times {
  kind: "symlink";
  ino: number;
  nlink: number;
  target: string;
}

type _Node = _File | _Dir | _Link;

/** Where a path led: the folder of its last component, the name, and what is there. */
interface _Found {
  /** The folders from the root to the folder of the last component. */
  folders: _Dir[];
  /** Their names, for {@linkcode MemoryFileSystem.realpath}. */
  names: string[];
  /** The last component; "" when the path names a folder by `/` or `..`. */
  name: string;
  /** What is at the path, if anything. */
  node: _Node | undefined;
}

let _devices = 0x5a00;

/** The memory layer. See the module documentation for its rules. */
export class MemoryFileSystem implements FileSystem {
  /** Whether every change is refused with `EROFS`. */
  readonly readOnly: boolean;
  readonly #dev = _devices++;
  readonly #root: _Dir;
  readonly #maxBytes: number;
  readonly #reserved: ReadonlySet<string>;
  readonly #maxNames: number;
  #shared: SharedBudget | undefined;
  readonly #name: string;
  #bytes = 0;
  #names = 0;
  #inodes = 1;

  constructor(options: MemoryFileSystemOptions = {}) {
    this.readOnly = options.readOnly ?? false;
    this.#maxBytes = options.maxBytes ?? Infinity;
    this.#maxNames = Math.max(1, Math.floor(this.#maxBytes / BYTES_PER_NAME));
    this.#reserved = new Set(options.reserved ?? []);
    this.#shared = options.shared;
    this.#name = options.name ?? "";
    this.#root = this.#dir();
    this.#root.nlink = 2;
  }

  /** Bytes held now: the size of each file and the target of each link. */
  get bytes(): number {
    return this.#bytes;
  }

  /**
   * Gives this layer's bytes back to its shared budget and leaves it (the
   * layer is going away: a process's folder at its end).
   */
  detach(): void {
    this.#shared?._give(this.#bytes);
    this.#shared = undefined;
  }

  stat(path: string): Stat {
    checkPath(path, "stat");
    return this.#stat(this.#existing(path, true, "stat"));
  }

  lstat(path: string): Stat {
    checkPath(path, "lstat");
    return this.#stat(this.#existing(path, false, "lstat"));
  }

  realpath(path: string): string {
    checkPath(path, "realpath");
    const found = this.#resolve(path, true, "realpath");
    if (!found.node) throw new VfsError("ENOENT", "realpath", path);
    const names = found.name === "" ? found.names : [...found.names, found.name];
    return "/" + names.join("/");
  }

  readDir(path: string): DirEntry[] {
    checkPath(path, "readdir");
    const node = this.#existing(path, true, "readdir");
    if (node.kind !== "directory") throw new VfsError("ENOTDIR", "readdir", path);
    node.atimeMs = Date.now();
    return [...node.entries].map(([name, child]) => ({ name, kind: child.kind }));
  }

  open(path: string, options: OpenOptions): FileHandle {
    checkPath(path, "open");
    const write = options.write === true;
    const read = options.read === true || !write;
    const create = options.create === true;
    const exclusive = create && options.exclusive === true;
    const truncate = options.truncate === true;
    if ((write || create || truncate) && this.readOnly) throw new VfsError("EROFS", "open", path);
    const found = this.#resolve(path, !exclusive && !options.noFollow, "open");
    let node = found.node;
    if (node && exclusive) throw new VfsError("EEXIST", "open", path);
    if (node?.kind === "symlink") {
      throw new VfsError(options.directory ? "ENOTDIR" : "ELOOP", "open", path);
    }
    if (!node) {
      if (!create) throw new VfsError("ENOENT", "open", path);
      this.#refuseReserved(found, "open", path);
      this.#addName("open", path);
      const file = this.#file();
      this.#link(found.folders[found.folders.length - 1], found.name, file);
      node = file;
    }
    if (node.kind === "directory") {
      if (write || create || truncate) throw new VfsError("EISDIR", "open", path);
      return new FolderHandle(this, this.#pathOf(found));
    }
    if (options.directory) throw new VfsError("ENOTDIR", "open", path);
    if (truncate && node.size > 0) this.#resize(node, 0, "open", path);
    return new _FileHandle(this, node, this.#pathOf(found), read, write);
  }

  mkdir(path: string): void {
    checkPath(path, "mkdir");
    if (this.readOnly) throw new VfsError("EROFS", "mkdir", path);
    const found = this.#resolve(path, false, "mkdir");
    if (found.node) throw new VfsError("EEXIST", "mkdir", path);
    const parent = found.folders[found.folders.length - 1];
    this.#refuseReserved(found, "mkdir", path);
    this.#addName("mkdir", path);
    this.#link(parent, found.name, this.#dir());
    parent.nlink++;
  }

  unlink(path: string): void {
    checkPath(path, "unlink");
    if (this.readOnly) throw new VfsError("EROFS", "unlink", path);
    const found = this.#resolve(path, false, "unlink");
    const node = found.node;
    if (!node) throw new VfsError("ENOENT", "unlink", path);
    if (node.kind === "directory") throw new VfsError("EISDIR", "unlink", path);
    this.#unlink(found.folders[found.folders.length - 1], found.name, node);
  }

  rmdir(path: string): void {
    checkPath(path, "rmdir");
    if (this.readOnly) throw new VfsError("EROFS", "rmdir", path);
    const found = this.#resolve(path, false, "rmdir");
    const node = found.node;
    if (!node) throw new VfsError("ENOENT", "rmdir", path);
    if (node.kind !== "directory") throw new VfsError("ENOTDIR", "rmdir", path);
    if (found.name === "") {
      throw new VfsError(path.endsWith("/..") ? "ENOTEMPTY" : "EBUSY", "rmdir", path);
    }
    if (node.entries.size > 0) throw new VfsError("ENOTEMPTY", "rmdir", path);
    const parent = found.folders[found.folders.length - 1];
    this.#unlink(parent, found.name, node);
    parent.nlink--;
  }

  rename(from: string, to: string): void {
    checkPath(from, "rename");
    checkPath(to, "rename");
    if (this.readOnly) throw new VfsError("EROFS", "rename", from);
    const src = this.#resolve(from, false, "rename");
    const dst = this.#resolve(to, false, "rename");
    if (src.name === "" || dst.name === "") throw new VfsError("EBUSY", "rename", from);
    const node = src.node;
    if (!node) throw new VfsError("ENOENT", "rename", from);
    this.#refuseReserved(dst, "rename", to);
    const srcParent = src.folders[src.folders.length - 1];
    const dstParent = dst.folders[dst.folders.length - 1];
    // A folder cannot move into itself; a folder holding the source cannot be replaced.
    if (node.kind === "directory" && dst.folders.includes(node)) {
      throw new VfsError("EINVAL", "rename", from);
    }
    const old = dst.node;
    if (old && src.folders.includes(old as _Dir)) throw new VfsError("ENOTEMPTY", "rename", to);
    if (old === node) return;
    if (old) {
      if (node.kind === "directory" && old.kind !== "directory") {
        throw new VfsError("ENOTDIR", "rename", to);
      }
      if (node.kind !== "directory" && old.kind === "directory") {
        throw new VfsError("EISDIR", "rename", to);
      }
      if (old.kind === "directory" && old.entries.size > 0) {
        throw new VfsError("ENOTEMPTY", "rename", to);
      }
      this.#unlink(dstParent, dst.name, old);
      if (old.kind === "directory") dstParent.nlink--;
    }
    srcParent.entries.delete(src.name);
    dstParent.entries.set(dst.name, node);
    const now = Date.now();
    srcParent.mtimeMs =
      srcParent.ctimeMs =
      dstParent.mtimeMs =
      dstParent.ctimeMs =
        now;
    node.ctimeMs = now;
    if (node.kind === "directory" && srcParent !== dstParent) {
      srcParent.nlink--;
      dstParent.nlink++;
    }
  }

  symlink(target: string, path: string): void {
    checkPath(path, "symlink");
    if (this.readOnly) throw new VfsError("EROFS", "symlink", path);
    checkTarget(target, path);
    const found = this.#resolve(path, false, "symlink");
    if (found.node) throw new VfsError("EEXIST", "symlink", path);
    this.#refuseReserved(found, "symlink", path);
    this.#charge(_byteLength(target), "symlink", path);
    this.#addName("symlink", path);
    const now = Date.now();
    const link: _Link = {
      kind: "symlink",
      ino: this.#inodes++,
      nlink: 0,
      target,
      atimeMs: now,
      mtimeMs: now,
      ctimeMs: now,
    };
    this.#link(found.folders[found.folders.length - 1], found.name, link);
  }

  readlink(path: string): string {
    checkPath(path, "readlink");
    const node = this.#existing(path, false, "readlink");
    if (node.kind !== "symlink") throw new VfsError("EINVAL", "readlink", path);
    node.atimeMs = Date.now();
    return node.target;
  }

  link(existing: string, newPath: string): void {
    checkPath(existing, "link");
    checkPath(newPath, "link");
    if (this.readOnly) throw new VfsError("EROFS", "link", newPath);
    const node = this.#existing(existing, false, "link");
    const found = this.#resolve(newPath, false, "link");
    if (found.node) throw new VfsError("EEXIST", "link", newPath);
    if (node.kind === "directory") throw new VfsError("EPERM", "link", existing);
    this.#refuseReserved(found, "link", newPath);
    this.#addName("link", newPath);
    this.#link(found.folders[found.folders.length - 1], found.name, node);
    node.ctimeMs = Date.now();
  }

  setTimes(path: string, atime: TimeSpec, mtime: TimeSpec, follow: boolean): void {
    checkPath(path, "utimes");
    if (this.readOnly) throw new VfsError("EROFS", "utimes", path);
    _setTimes(this.#existing(path, follow, "utimes"), atime, mtime);
  }

  /** The node at `path`, or ENOENT. */
  #existing(path: string, follow: boolean, syscall: string): _Node {
    const node = this.#resolve(path, follow, syscall).node;
    if (!node) throw new VfsError("ENOENT", syscall, path);
    return node;
  }

  /** The layer path of a resolved path. */
  #pathOf(found: _Found): string {
    const names = found.name === "" ? found.names : [...found.names, found.name];
    return "/" + names.join("/");
  }

  /**
   * Resolves `path` with `chroot` semantics. The folders must exist; the
   * last component may be missing (for a create).
   */
  #resolve(path: string, followLast: boolean, syscall: string): _Found {
    const pending = path.split("/").reverse();
    const folders: _Dir[] = [this.#root];
    const names: string[] = [];
    let links = 0;
    while (pending.length > 0) {
      const name = pending.pop()!;
      if (name === "" || name === ".") continue;
      if (name === "..") {
        if (folders.length > 1) {
          folders.pop();
          names.pop();
        }
        continue;
      }
      const folder = folders[folders.length - 1];
      const node = folder.entries.get(name);
      const last = onlyEmpty(pending);
      if (node?.kind === "symlink" && (followLast || !last)) {
        if (++links > MAX_SYMLINKS) throw new VfsError("ELOOP", syscall, path);
        if (node.target.charCodeAt(0) === 47) {
          folders.length = 1;
          names.length = 0;
        }
        const parts = node.target.split("/");
        for (let i = parts.length - 1; i >= 0; i--) pending.push(parts[i]);
        continue;
      }
      if (last) return { folders, names, name, node };
      if (!node) throw new VfsError("ENOENT", syscall, path);
      if (node.kind !== "directory") throw new VfsError("ENOTDIR", syscall, path);
      folders.push(node);
      names.push(name);
    }
    // The path ends at a folder (`/`, or after `..`): it has no entry name.
    const node = folders[folders.length - 1];
    return { folders: folders.length > 1 ? folders.slice(0, -1) : folders, names, name: "", node };
  }

  #dir(): _Dir {
    const now = Date.now();
    return {
      kind: "directory",
      ino: this.#inodes++,
      nlink: 0,
      entries: new Map(),
      atimeMs: now,
      mtimeMs: now,
      ctimeMs: now,
    };
  }

  #file(): _File {
    const now = Date.now();
    return {
      kind: "file",
      ino: this.#inodes++,
      nlink: 0,
      opens: 0,
      data: new Uint8Array(0),
      size: 0,
      atimeMs: now,
      mtimeMs: now,
      ctimeMs: now,
    };
  }

  /** Puts `node` in `folder` as `name`. */
  #link(folder: _Dir, name: string, node: _Node): void {
    folder.entries.set(name, node);
    // A folder counts its `.` and its entry in the parent.
    node.nlink += node.kind === "directory" ? 2 : 1;
    folder.mtimeMs = folder.ctimeMs = Date.now();
  }

  #unlink(folder: _Dir, name: string, node: _Node): void {
    folder.entries.delete(name);
    node.nlink -= node.kind === "directory" ? 2 : 1;
    folder.mtimeMs = folder.ctimeMs = node.ctimeMs = Date.now();
    this.#names--;
    if (node.kind === "symlink" && node.nlink === 0) this.#uncharge(_byteLength(node.target));
    // The content stays while a handle holds the file; its bytes count until then.
    if (node.kind === "file") this.#release(node);
  }

  /** Refuses a reserved name at the top of the layer, however the path got there. */
  #refuseReserved(found: { folders: _Dir[]; name: string }, syscall: string, path: string): void {
    if (found.folders.length === 1 && this.#reserved.has(found.name)) {
      throw new VfsError("EACCES", syscall, path, `the name ${found.name} is reserved`);
    }
  }

  /** Counts a new name, or fails with `ENOSPC` when the budget has no name left. */
  #addName(syscall: string, path: string): void {
    if (this.#names >= this.#maxNames) throw new VfsError("ENOSPC", syscall, path);
    this.#names++;
  }

  /** Takes `bytes` from the budget, or fails with `ENOSPC` and changes nothing. */
  #charge(bytes: number, syscall: string, path: string): void {
    if (this.#bytes + bytes > this.#maxBytes) throw new VfsError("ENOSPC", syscall, path);
    this.#shared?._take(bytes, this.#name, syscall, path);
    this.#bytes += bytes;
  }

  /** Gives `bytes` back to the budget. */
  #uncharge(bytes: number): void {
    this.#bytes -= bytes;
    this.#shared?._give(bytes);
  }

  /**
   * Sets the size of a file, charging the budget by size, as `df` counts.
   * The content grows by doubling, at most 8 MiB at a time, so that writes
   * at the end copy the file rarely; the unused room of a file is never more
   * than its size, so the memory held stays within twice the budget.
   */
  #resize(file: _File, size: number, syscall: string, path: string): void {
    if (size > file.size) {
      if (this.#bytes - file.size + size > this.#maxBytes) {
        throw new VfsError("ENOSPC", syscall, path);
      }
      this.#shared?._take(size - file.size, this.#name, syscall, path);
    } else this.#shared?._give(file.size - size);
    if (size > file.data.length) {
      const capacity = Math.max(size, Math.min(file.data.length * 2, size + (8 << 20)), 64);
      const data = new Uint8Array(capacity);
      data.set(file.data.subarray(0, file.size));
      file.data = data;
    } else if (size < file.size) {
      file.data.fill(0, size, file.size);
      if (size === 0) file.data = new Uint8Array(0);
    }
    this.#bytes += size - file.size;
    file.size = size;
    file.mtimeMs = file.ctimeMs = Date.now();
  }

  #stat(node: _Node): Stat {
    return {
      kind: node.kind,
      size: node.kind === "file"
        ? node.size
        : node.kind === "symlink"
        ? _byteLength(node.target)
        : 0,
      nlink: node.nlink,
      dev: this.#dev,
      ino: node.ino,
      mode: 0,
      atimeMs: node.atimeMs,
      mtimeMs: node.mtimeMs,
      ctimeMs: node.ctimeMs,
    };
  }

  /** Frees the content of a file that has no name and no open handle left. */
  #release(file: _File): void {
    if (file.nlink === 0 && file.opens === 0) {
      this.#uncharge(file.size);
      file.size = 0;
      file.data = new Uint8Array(0);
    }
  }

  /** What the handles need of the layer's private parts. */
  static _access = {
    resize: (fs: MemoryFileSystem, file: _File, size: number, path: string): void =>
      fs.#resize(file, size, "write", path),
    stat: (fs: MemoryFileSystem, node: _Node): Stat => fs.#stat(node),
    close: (fs: MemoryFileSystem, file: _File): void => {
      file.opens--;
      fs.#release(file);
    },
  };
}

function _byteLength(text: string): number {
  return new TextEncoder().encode(text).length;
}

function _setTimes(node: _Node, atime: TimeSpec, mtime: TimeSpec): void {
  const now = Date.now();
  const ms = (t: Exclude<TimeSpec, null>) =>
    t === "now" ? now : typeof t === "number" ? t : t.seconds * 1000 + t.nanoseconds / 1e6;
  if (atime !== null) node.atimeMs = ms(atime);
  if (mtime !== null) node.mtimeMs = ms(mtime);
  node.ctimeMs = now;
}

/** An open file of the memory layer: bound to the file, not to its path. */
class _FileHandle implements FileHandle {
  readonly kind: FileKind = "file";
  readonly path: string;
  readonly #fs: MemoryFileSystem;
  #file: _File | null;
  readonly #read: boolean;
  readonly #write: boolean;

  constructor(fs: MemoryFileSystem, file: _File, path: string, read: boolean, write: boolean) {
    this.#fs = fs;
    this.#file = file;
    this.path = path;
    this.#read = read;
    this.#write = write;
    file.opens++;
  }

  #open(syscall: string, access?: "read" | "write"): _File {
    if (this.#file === null) throw new VfsError("EBADF", syscall, this.path);
    if (access === "read" && !this.#read) {
      throw new VfsError("EBADF", syscall, this.path, "not open for reading");
    }
    if (access === "write" && !this.#write) {
      throw new VfsError("EBADF", syscall, this.path, "not open for writing");
    }
    return this.#file;
  }

  read(buffer: Uint8Array, offset: number): number {
    const file = this.#open("read", "read");
    if (offset >= file.size) return 0;
    const n = Math.min(buffer.length, file.size - offset);
    buffer.set(file.data.subarray(offset, offset + n));
    file.atimeMs = Date.now();
    return n;
  }

  write(data: Uint8Array, offset: number): number {
    const file = this.#open("write", "write");
    // as pwrite(2): writing nothing does not extend the file
    if (data.length === 0) return 0;
    const end = offset + data.length;
    if (end > file.size) MemoryFileSystem._access.resize(this.#fs, file, end, this.path);
    file.data.set(data, offset);
    file.mtimeMs = file.ctimeMs = Date.now();
    return data.length;
  }

  append(data: Uint8Array): number {
    const file = this.#open("write", "write");
    return this.write(data, file.size);
  }

  setSize(size: number): void {
    const file = this.#open("ftruncate", "write");
    MemoryFileSystem._access.resize(this.#fs, file, size, this.path);
  }

  stat(): Stat {
    return MemoryFileSystem._access.stat(this.#fs, this.#open("fstat"));
  }

  sync(): void {
    this.#open("fsync");
  }

  syncData(): void {
    this.#open("fdatasync");
  }

  setTimes(atime: TimeSpec, mtime: TimeSpec): void {
    _setTimes(this.#open("futimes"), atime, mtime);
  }

  close(): void {
    const file = this.#open("close");
    this.#file = null;
    MemoryFileSystem._access.close(this.#fs, file);
  }
}
