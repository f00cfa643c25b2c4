/**
 * A mount table: one {@linkcode FileSystem} made of several, each at a path.
 *
 * Tables are cheap: each client may get its own, sharing most layers. A path goes to
 * the deepest mount it is under; a folder listing shows the mount points in
 * their parent; a rename or link across two mounts fails with `EXDEV`; a
 * mount point cannot be removed or renamed (`EBUSY`).
 *
 * `..` is resolved by the layer that owns the path, except where it leaves a
 * mount: a path that enters a mount point as written, such as
 * `/tmp/../data`, is first resolved lexically, so it reaches `/data` of
 * the root layer. Symbolic links stay inside their own layer.
 *
 * @example
 * ```ts
 * import { MemoryFileSystem, MountFileSystem } from "./mod.ts";
 * const fs = new MountFileSystem([
 *   { path: "/", fs: new MemoryFileSystem() },
 *   { path: "/tmp", fs: new MemoryFileSystem() },
 * ]);
 * fs.readDir("/").map((e) => e.name); // ["tmp"]
 * ```
 *
 * @module
 */
import { utf8Length } from "./_path.ts";
import {
  type DirEntry,
  type FileHandle,
  type FileSystem,
  type OpenOptions,
  PATH_MAX,
  type Stat,
  type TimeSpec,
  VfsError,
} from "./types.ts";

/** One entry of the table. */
export interface Mount {
  /** Where the layer shows, e.g. `/tmp`; the root layer at `/`. */
  path: string;
  fs: FileSystem;
}

interface _Mount {
  parts: string[];
  prefix: string;
  fs: FileSystem;
}

interface _Route {
  mount: _Mount;
  /** The path inside the mount's layer. */
  sub: string;
}

/** A table of mounts; it must have one at `/`. */
export class MountFileSystem implements FileSystem {
  readonly readOnly = false;
  readonly #mounts: _Mount[];
  readonly #root: _Mount;
  /** First components of mount points: a path that starts with one may enter a mount. */
  readonly #heads: Set<string>;
  /** The longest path a call may give: a layer's longest, behind the longest mount point. */
  readonly #longest: number;

  constructor(mounts: Mount[]) {
    this.#mounts = mounts
      .map((m) => {
        const parts = m.path.split("/").filter((p) => p !== "");
        return { parts, prefix: parts.length ? "/" + parts.join("/") : "", fs: m.fs };
      })
      .sort((a, b) => b.parts.length - a.parts.length);
    const root = this.#mounts.find((m) => m.parts.length === 0);
    if (!root) throw new Error("a mount table needs a layer at /");
    this.#root = root;
    this.#heads = new Set(this.#mounts.filter((m) => m !== root).map((m) => m.parts[0]));
    this.#longest = PATH_MAX + Math.max(0, ...this.#mounts.map((m) => utf8Length(m.prefix)));
  }

  /**
   * The layer of a path. `..` inside a mount, or at `/`, is taken as written
   * (`/tmp/../data` is `/data`). In the root layer it is physical, as on
   * Linux: the folder it leaves is resolved first, so `/data/link/..` is the
   * parent of where `link` leads, and `/data/../tmp` is the mount `/tmp`.
   */
  #route(path: string, syscall: string): _Route {
    // Before any `..` is resolved, as on Linux: a million `a/..` would cost a realpath each.
    if (path.length > this.#longest / 3 && utf8Length(path) > this.#longest) {
      throw new VfsError("ENAMETOOLONG", syscall, path);
    }
    const raw = path.split("/").filter((p) => p !== "" && p !== ".");
    let parts = raw;
    if (raw.includes("..")) {
      parts = [];
      // whether `parts` is a real path of the root layer: its parent is one too, so a run
      // of `..` costs one realpath, not one each
      let real = false;
      for (const p of raw) {
        if (p !== "..") {
          parts.push(p);
          real = false;
          continue;
        }
        if (parts.length > 0 && !real && !this.#heads.has(parts[0])) {
          // in the root layer: where the folder really is
          try {
            parts = this.#root.fs.realpath("/" + parts.join("/")).split("/").filter((x) => x);
          } catch {
            return { mount: this.#root, sub: path }; // the layer reports the error
          }
          real = true;
        }
        parts.pop();
      }
    }
    for (const mount of this.#mounts) {
      if (mount === this.#root) continue;
      if (mount.parts.length > parts.length) continue;
      if (mount.parts.every((p, i) => parts[i] === p)) {
        return { mount, sub: "/" + parts.slice(mount.parts.length).join("/") };
      }
    }
    return { mount: this.#root, sub: parts === raw ? path : "/" + parts.join("/") };
  }

  #full(mount: _Mount, sub: string): string {
    if (!mount.prefix) return sub;
    return sub === "/" ? mount.prefix : mount.prefix + sub;
  }

  /** Mount points directly inside the folder `full` (a full path), by name. */
  #childMounts(full: string): string[] {
    const parts = full.split("/").filter((p) => p !== "");
    return this.#mounts
      .filter((m) => m.parts.length === parts.length + 1 && parts.every((p, i) => m.parts[i] === p))
      .map((m) => m.parts[parts.length]);
  }

  #busy(route: _Route, syscall: string, path: string): void {
    if (route.mount !== this.#root && route.sub === "/") throw new VfsError("EBUSY", syscall, path);
  }

  stat(path: string): Stat {
    const r = this.#route(path, "stat");
    return r.mount.fs.stat(r.sub);
  }

  lstat(path: string): Stat {
    const r = this.#route(path, "lstat");
    return r.mount.fs.lstat(r.sub);
  }

  realpath(path: string): string {
    const r = this.#route(path, "realpath");
    return this.#full(r.mount, r.mount.fs.realpath(r.sub));
  }

  readDir(path: string): DirEntry[] {
    const r = this.#route(path, "readdir");
    const entries = r.mount.fs.readDir(r.sub);
    const full = this.#full(r.mount, r.mount === this.#root ? r.mount.fs.realpath(r.sub) : r.sub);
    const mounted = this.#childMounts(full);
    if (mounted.length === 0) return entries;
    const names = new Set(mounted);
    return [
      ...entries.filter((e) => !names.has(e.name)),
      ...mounted.map((name) => ({ name, kind: "directory" as const })),
    ];
  }

  open(path: string, options: OpenOptions): FileHandle {
    const r = this.#route(path, "open");
    const handle = r.mount.fs.open(r.sub, options);
    return r.mount.prefix ? new _PrefixedHandle(handle, r.mount.prefix) : handle;
  }

  mkdir(path: string): void {
    const r = this.#route(path, "mkdir");
    if (r.sub === "/" && r.mount !== this.#root) throw new VfsError("EEXIST", "mkdir", path);
    r.mount.fs.mkdir(r.sub);
  }

  unlink(path: string): void {
    const r = this.#route(path, "unlink");
    this.#busy(r, "unlink", path);
    r.mount.fs.unlink(r.sub);
  }

  rmdir(path: string): void {
    const r = this.#route(path, "rmdir");
    this.#busy(r, "rmdir", path);
    r.mount.fs.rmdir(r.sub);
  }

  rename(from: string, to: string): void {
    const a = this.#route(from, "rename");
    const b = this.#route(to, "rename");
    this.#busy(a, "rename", from);
    this.#busy(b, "rename", to);
    if (a.mount !== b.mount) throw new VfsError("EXDEV", "rename", from);
    a.mount.fs.rename(a.sub, b.sub);
  }

  symlink(target: string, path: string): void {
    const r = this.#route(path, "symlink");
    r.mount.fs.symlink(target, r.sub);
  }

  readlink(path: string): string {
    const r = this.#route(path, "readlink");
    return r.mount.fs.readlink(r.sub);
  }

  link(existing: string, newPath: string): void {
    const a = this.#route(existing, "link");
    const b = this.#route(newPath, "link");
    if (a.mount !== b.mount) throw new VfsError("EXDEV", "link", existing);
    a.mount.fs.link(a.sub, b.sub);
  }

  setTimes(path: string, atime: TimeSpec, mtime: TimeSpec, follow: boolean): void {
    const r = this.#route(path, "utimes");
    r.mount.fs.setTimes(r.sub, atime, mtime, follow);
  }
}

/** A handle of a mounted layer, reporting its path in the whole table. */
class _PrefixedHandle implements FileHandle {
  readonly #inner: FileHandle;
  readonly path: string;

  constructor(inner: FileHandle, prefix: string) {
    this.#inner = inner;
    this.path = inner.path === "/" ? prefix : prefix + inner.path;
  }

  get kind() {
    return this.#inner.kind;
  }
  get holdsHostFile() {
    return this.#inner.holdsHostFile;
  }
  read(buffer: Uint8Array, offset: number): number {
    return this.#inner.read(buffer, offset);
  }
  write(data: Uint8Array, offset: number): number {
    return this.#inner.write(data, offset);
  }
  append(data: Uint8Array): number {
    return this.#inner.append(data);
  }
  setSize(size: number): void {
    this.#inner.setSize(size);
  }
  stat(): Stat {
    return this.#inner.stat();
  }
  sync(): void {
    this.#inner.sync();
  }
  syncData(): void {
    this.#inner.syncData();
  }
  setTimes(atime: TimeSpec, mtime: TimeSpec): void {
    this.#inner.setTimes(atime, mtime);
  }
  close(): void {
    this.#inner.close();
  }
}
