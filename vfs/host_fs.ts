/**
 * The host layer: a real folder of the host as the root of a
 * {@linkcode FileSystem}.
 *
 * ## Confinement
 *
 * Nothing reaches outside the root folder. Paths are resolved with the
 * semantics of a Linux `chroot` into the root:
 *
 * - `..` at the root stays at the root.
 * - The target of a symbolic link is resolved inside the layer: an absolute
 *   target (`/state/x`) starts at the root of the layer, not of the host, and
 *   a relative one cannot climb above the root. This holds for links made
 *   through the layer and for links that were there before.
 * - After 40 symbolic links in one resolution, the result is `ELOOP`.
 * - A path longer than 4095 bytes, or with a component longer than 255 bytes,
 *   gives `ENAMETOOLONG`; a NUL character gives `EINVAL`.
 *
 * Symbolic links are resolved here, component by component, never by the
 * host. The host only sees paths whose every folder is known to be a real
 * folder inside the root. To stay fast, the walk is skipped when the folder of
 * a path is known to be real: a `realpath` of it is the path itself, or a
 * folder found real before (the layer remembers a few, by inode) still has its
 * inode at that path, since no link this layer made leads the host anywhere.
 * Each call then costs a few host calls whatever the depth of the path (a
 * `realpath` alone is quadratic in it).
 *
 * The runtime has no `openat`, so a check and the call that follows it are
 * two steps, and a concurrent writer could rename a symbolic link over a
 * checked folder between them. So no link under the root is one the host can
 * follow: a link made through the layer is written on the host with its
 * target behind the link prefix (`linkPrefix`, default
 * {@linkcode DEFAULT_LINK_PREFIX}), a folder at the host's root that does not
 * exist, and a link made on the host is rewritten into that form, with the
 * same meaning in the layer, when the layer meets it (resolving, listing,
 * renaming) and by {@linkcode HostFileSystem.sealLinks} over the whole root.
 * `readlink` still returns the target as it was given. The host's own tools no
 * longer follow such links; pass `keepHostLinks` for a root that only one
 * caller uses at a time.
 *
 * A folder handle is bound to its path, not to the folder. Opening a FIFO
 * blocks the thread, as it does on the host.
 *
 * @example
 * ```ts
 * import { HostFileSystem } from "./host_fs.ts";
 * const root = Deno.makeTempDirSync();
 * const fs = new HostFileSystem(root);
 * fs.mkdir("/notes");
 * const file = fs.open("/notes/a.txt", { write: true, create: true });
 * file.write(new TextEncoder().encode("hello"), 0);
 * file.close();
 * fs.stat("/notes/a.txt").size; // 5
 * ```
 *
 * @module
 */
import { existsSync, lutimesSync } from "node:fs";
import { checkPath as _check, checkTarget as _checkTarget } from "./_path.ts";
import {
  type DirEntry,
  type FileHandle,
  type FileKind,
  type FileSystem,
  isVfsErrorCode,
  MAX_SYMLINKS,
  type OpenOptions,
  type Stat,
  type TimeSpec,
  VfsError,
  type VfsErrorCode,
} from "./types.ts";
import { FolderHandle } from "./_folder_handle.ts";
import { hostDate, rememberTimes, withExactTimes } from "./_exact_times.ts";

/**
 * The default host-side start of the target of a link under the root: a
 * folder at the host's root that does not exist, so that the host's own
 * resolution of the link fails with `ENOENT` instead of leading anywhere.
 */
export const DEFAULT_LINK_PREFIX = "/.vfs-link/";

const _encoder = new TextEncoder();

/** Options of {@linkcode HostFileSystem}. */
export interface HostFileSystemOptions {
  /** Refuse every change with `EROFS`. */
  readOnly?: boolean;
  /**
   * Makes a symbolic link on the host at `hostPath` (a checked path inside
   * the root) that the layer reads as `target`: the default writes the link
   * prefix and `target` with `Deno.symlinkSync`, which needs unscoped read
   * and write permissions. Where permissions are scoped to folders (a
   * worker), pass a function that asks a layer with the same prefix on a
   * thread that has them. Without it, making a link there fails with `EPERM`,
   * as on a filesystem without links, and links made on the host are left as
   * they are.
   */
  symlink?: (target: string, hostPath: string) => void;
  /**
   * Names at the top of the root that nothing may create, also through a
   * link to the root (for example the mount points of a table above).
   */
  reserved?: readonly string[];
  /**
   * The host-side start of link targets, a folder at the host's root that
   * must not exist: {@linkcode DEFAULT_LINK_PREFIX} unless given. Every
   * layer over one root must use the same.
   */
  linkPrefix?: string;
  /**
   * Leave links made on the host as they are instead of rewriting them
   * behind the link prefix. They are still followed only inside the layer,
   * but a concurrent rename could make the host follow one out of the root.
   */
  keepHostLinks?: boolean;
  /**
   * The root is the {@linkcode HostFileSystem.root} of another layer: a real
   * folder path, not resolved and looked at again. Opening the root itself
   * then reads nothing from the disk either (a worker makes a layer of the
   * world for every process; each would resolve the same path).
   */
  realRoot?: boolean;
}

/** Matches what a path must not have for the fast check: `//`, `.` or `..` components, a trailing `/`. */
const _NOT_SIMPLE = /\/\/|\/\.\.?(?:\/|$)|\/$/;

/** The host layer. See the module documentation for its rules. */
export class HostFileSystem implements FileSystem {
  /** The real path of the root folder on the host. */
  readonly root: string;
  /** Whether every change is refused with `EROFS`. */
  readonly readOnly: boolean;
  /** Prepended to a layer path to get the host path: the root, or "" for the host's `/`. */
  readonly #prefix: string;
  readonly #symlink: (target: string, hostPath: string) => void;
  readonly #reserved: ReadonlySet<string>;
  readonly #linkPrefix: string;
  /** Whether links made on the host are rewritten behind the prefix when met. */
  readonly #seal: boolean;
  /** The root was given as real (see {@linkcode HostFileSystemOptions.realRoot}). */
  readonly #realRoot: boolean;
  /** False once making a link failed for want of permission: no more attempts. */
  #canLink = true;
  /** Host folders found real, to their identity, least recently used first (see {@linkcode #isReal}). */
  readonly #real = new Map<string, string>();
  /** The characters of the keys of {@linkcode #real}. */
  #realChars = 0;

  constructor(root: string, options: HostFileSystemOptions = {}) {
    let real: string;
    if (options.realRoot) {
      real = root;
    } else {
      try {
        real = Deno.realPathSync(root);
      } catch (e) {
        throw _fromHost(e, "open", root);
      }
      if (!Deno.statSync(real).isDirectory) throw new VfsError("ENOTDIR", "open", root);
    }
    this.#realRoot = options.realRoot === true;
    this.root = real;
    this.#prefix = real === "/" ? "" : real;
    this.readOnly = options.readOnly ?? false;
    const prefix = options.linkPrefix ?? DEFAULT_LINK_PREFIX;
    if (!prefix.startsWith("/") || !prefix.endsWith("/") || prefix.length < 3) {
      throw new TypeError(`a link prefix is a folder path such as "/.links/", not "${prefix}"`);
    }
    this.#linkPrefix = prefix;
    this.#symlink = options.symlink ??
      ((target, hostPath) => Deno.symlinkSync(prefix + target, hostPath));
    this.#reserved = new Set(options.reserved ?? []);
    this.#seal = !this.readOnly && options.keepHostLinks !== true;
  }

  /** The host-side start of link targets under this root. */
  get linkPrefix(): string {
    return this.#linkPrefix;
  }

  /**
   * Rewrites every symbolic link under the root that is not behind the link
   * prefix into that form, with the meaning the layer gives it, so that the
   * host can follow none. A link whose target starts with one of
   * `formerPrefixes` (a prefix used before) gets the current prefix instead.
   * Does not follow links. Returns the paths (in the layer) of the links it
   * rewrote.
   */
  sealLinks(formerPrefixes: readonly string[] = []): string[] {
    if (this.readOnly) throw new VfsError("EROFS", "symlink", "/");
    return this.#sealUnder(this.#prefix || "/", formerPrefixes);
  }

  /** {@linkcode sealLinks} for the folder `top` on the host and all below it. */
  #sealUnder(top: string, formerPrefixes: readonly string[] = []): string[] {
    const rewritten: string[] = [];
    const folders = [top];
    while (folders.length > 0) {
      const folder = folders.pop()!;
      let entries: Deno.DirEntry[];
      try {
        entries = [...Deno.readDirSync(folder)];
      } catch (e) {
        throw _fromHost(e, "readdir", this.#layerPath(folder));
      }
      for (const entry of entries) {
        const host = _join(folder, entry.name);
        if (entry.isDirectory) folders.push(host);
        if (!entry.isSymlink) continue;
        let onHost: string;
        try {
          onHost = Deno.readLinkSync(host);
        } catch (e) {
          throw _fromHost(e, "readlink", this.#layerPath(host));
        }
        if (onHost.startsWith(this.#linkPrefix)) continue;
        const former = formerPrefixes.find((p) => onHost.startsWith(p));
        this.#rewriteLink(host, former ? onHost.slice(former.length) : onHost, true);
        rewritten.push(this.#layerPath(host));
      }
    }
    return rewritten;
  }

  /**
   * Reads the link at `host` and, when it is one the host could follow,
   * rewrites it behind the prefix (see {@linkcode #rewriteLink}). Returns the
   * target as the layer shows it.
   */
  #readLink(host: string, syscall: string, path: string): string {
    let onHost: string;
    try {
      onHost = Deno.readLinkSync(host);
    } catch (e) {
      throw _fromHost(e, syscall, path);
    }
    if (onHost.startsWith(this.#linkPrefix)) return onHost.slice(this.#linkPrefix.length);
    if (this.#seal && this.#canLink && onHost !== "") this.#rewriteLink(host, onHost, false);
    return onHost;
  }

  /**
   * Replaces the link at `host` by one the host cannot follow, whose target
   * in the layer is `target`: a new link beside it, renamed over it, so that
   * the name never goes missing. When `strict` is false a failure is
   * ignored: the layer still follows the link only itself, and a rename of
   * it is refused (see {@linkcode #sealSource}).
   */
  #rewriteLink(host: string, target: string, strict: boolean): void {
    const temporary = `${_parentOf(host)}/.vfs-relink-${crypto.randomUUID().slice(0, 8)}`;
    const before = _linkIdentity(host);
    try {
      this.#symlink(target, temporary);
      try {
        // another caller may have replaced the link meanwhile (an atomic save): keep theirs
        const now = _linkIdentity(host);
        if (before === null || now !== before) {
          Deno.removeSync(temporary);
          return;
        }
        Deno.renameSync(temporary, host);
      } catch (e) {
        try {
          Deno.removeSync(temporary);
        } catch {
          // already gone
        }
        throw e;
      }
    } catch (e) {
      // without the right to make links, stop trying (renames of them are refused)
      if (e instanceof Error && e.name === "NotCapable") this.#canLink = false;
      if (strict) throw _fromHost(e, "symlink", this.#layerPath(host));
    }
  }

  /**
   * Before a rename or a hard link of `host`: a link made on the host is
   * rewritten first, and when that fails the call is refused, so that no
   * such link is moved where a checked folder was.
   */
  #sealSource(host: string, syscall: string, path: string): void {
    if (!this.#seal) return;
    let info: Deno.FileInfo;
    try {
      info = Deno.lstatSync(host);
    } catch {
      return; // the call itself reports it
    }
    if (info.isDirectory) {
      // a folder carries the links in it: none may arrive where a checked folder was
      try {
        this.#sealUnder(host);
      } catch (e) {
        throw new VfsError(
          "EPERM",
          syscall,
          path,
          `a link made on the host inside it cannot be rewritten behind the link prefix (${
            e instanceof Error ? e.message : e
          })`,
        );
      }
      return;
    }
    if (!info.isSymlink) return;
    this.#readLink(host, syscall, path);
    let onHost: string;
    try {
      onHost = Deno.readLinkSync(host);
    } catch (e) {
      throw _fromHost(e, syscall, path);
    }
    if (!onHost.startsWith(this.#linkPrefix)) {
      throw new VfsError(
        "EPERM",
        syscall,
        path,
        "a link made on the host cannot be moved until it can be rewritten behind the link prefix",
      );
    }
  }

  stat(path: string): Stat {
    _check(path, "stat");
    const host = this.#follow(path, "stat");
    try {
      // The host path has no symbolic link left: lstat does not follow a
      // link that a concurrent writer might have put there.
      return _stat(Deno.lstatSync(host));
    } catch (e) {
      throw _fromHost(e, "stat", path);
    }
  }

  lstat(path: string): Stat {
    _check(path, "lstat");
    const host = this.#noFollow(path, "lstat");
    try {
      const info = _stat(Deno.lstatSync(host));
      if (info.kind !== "symlink") return info;
      // a link's size is the length of its target, as the layer shows it
      const shown = this.#readLink(host, "lstat", path);
      const size = _encoder.encode(shown).length;
      return size === info.size ? info : { ...info, size };
    } catch (e) {
      throw _fromHost(e, "lstat", path);
    }
  }

  realpath(path: string): string {
    _check(path, "realpath");
    const host = this.#follow(path, "realpath");
    try {
      Deno.lstatSync(host);
    } catch (e) {
      throw _fromHost(e, "realpath", path);
    }
    return this.#layerPath(host);
  }

  readDir(path: string): DirEntry[] {
    _check(path, "readdir");
    const host = this.#follow(path, "readdir");
    try {
      const entries: DirEntry[] = [];
      for (const entry of Deno.readDirSync(host)) {
        let kind: FileKind = entry.isFile
          ? "file"
          : entry.isDirectory
          ? "directory"
          : entry.isSymlink
          ? "symlink"
          : "unknown";
        // Devices, FIFOs and sockets are rare: ask for their kind.
        if (kind === "unknown") kind = _lstatKind(_join(host, entry.name));
        else if (kind === "symlink" && this.#seal) {
          // a link listed is one a caller may rename next: make it safe first
          this.#readLink(_join(host, entry.name), "readdir", path);
        }
        // a name that is not UTF-8 comes back with U+FFFD, and that name leads nowhere
        if (entry.name.includes("\uFFFD") && !_lexists(_join(host, entry.name))) {
          entries.push({ name: entry.name, kind, undecodable: true });
        } else {
          entries.push({ name: entry.name, kind });
        }
      }
      return entries;
    } catch (e) {
      throw _fromHost(e, "readdir", path);
    }
  }

  open(path: string, options: OpenOptions): FileHandle {
    _check(path, "open");
    const write = options.write === true;
    const read = options.read === true || !write;
    const create = options.create === true;
    const exclusive = create && options.exclusive === true;
    const truncate = options.truncate === true;
    if ((write || create || truncate) && this.readOnly) throw new VfsError("EROFS", "open", path);
    if (this.#realRoot && path === "/" && !write && !create && !truncate) {
      // a process's first look at its world: the root is known to be a folder
      return new FolderHandle(this, "/", (p) => this.#syncDir(p));
    }
    let host: string;
    if (exclusive) {
      // O_EXCL never follows the last component, on the host either.
      host = this.#noFollow(path, "open");
    } else if (options.noFollow) {
      host = this.#noFollow(path, "open");
      let info: Deno.FileInfo | undefined;
      try {
        info = Deno.lstatSync(host);
      } catch (e) {
        const err = _fromHost(e, "open", path);
        if (err.code !== "ENOENT") throw err;
      }
      if (info?.isSymlink) {
        throw new VfsError(options.directory ? "ENOTDIR" : "ELOOP", "open", path);
      }
    } else {
      host = this.#follow(path, "open", create);
    }
    if (create) this.#refuseReserved(host, "open", path);
    let file: Deno.FsFile;
    try {
      file = Deno.openSync(host, {
        read,
        write: write || create || truncate,
        create: create && !exclusive,
        createNew: exclusive,
        truncate,
      });
    } catch (e) {
      throw _fromHost(e, "open", path);
    }
    let kind: FileKind;
    try {
      kind = _kind(file.statSync());
    } catch (e) {
      file.close();
      throw _fromHost(e, "open", path);
    }
    const layerPath = this.#layerPath(host);
    if (kind === "directory") {
      // Folders are bound to their path: no host descriptor stays open.
      file.close();
      return new FolderHandle(this, layerPath, (p) => this.#syncDir(p));
    }
    if (options.directory) {
      file.close();
      throw new VfsError("ENOTDIR", "open", path);
    }
    return new _HostFile(file, kind, layerPath, read, write);
  }

  mkdir(path: string): void {
    _check(path, "mkdir");
    if (this.readOnly) throw new VfsError("EROFS", "mkdir", path);
    const host = this.#noFollow(path, "mkdir");
    this.#refuseReserved(host, "mkdir", path);
    try {
      Deno.mkdirSync(host);
    } catch (e) {
      throw _fromHost(e, "mkdir", path);
    }
  }

  unlink(path: string): void {
    _check(path, "unlink");
    if (this.readOnly) throw new VfsError("EROFS", "unlink", path);
    const host = this.#noFollow(path, "unlink");
    try {
      // Deno's remove also removes empty folders: check the kind first.
      if (Deno.lstatSync(host).isDirectory) throw new VfsError("EISDIR", "unlink", path);
      Deno.removeSync(host);
    } catch (e) {
      throw _fromHost(e, "unlink", path);
    }
  }

  rmdir(path: string): void {
    _check(path, "rmdir");
    if (this.readOnly) throw new VfsError("EROFS", "rmdir", path);
    const host = this.#noFollow(path, "rmdir");
    try {
      // Deno's remove also removes files and links: check the kind first.
      if (!Deno.lstatSync(host).isDirectory) throw new VfsError("ENOTDIR", "rmdir", path);
      // `/` and `x/..` name a folder in use, never an entry to remove.
      if (_namesFolder(path)) {
        throw new VfsError(path === "/" ? "EBUSY" : "ENOTEMPTY", "rmdir", path);
      }
      Deno.removeSync(host);
      this.#forget(host);
    } catch (e) {
      throw _fromHost(e, "rmdir", path);
    }
  }

  rename(from: string, to: string): void {
    _check(from, "rename");
    _check(to, "rename");
    if (this.readOnly) throw new VfsError("EROFS", "rename", from);
    const hostFrom = this.#noFollow(from, "rename");
    // As on Linux: the source's folder is checked before the destination's.
    _requireFolder(_parentOf(hostFrom), "rename", from);
    this.#sealSource(hostFrom, "rename", from);
    const hostTo = this.#noFollow(to, "rename");
    this.#refuseReserved(hostTo, "rename", to);
    if (_namesFolder(from) || _namesFolder(to)) {
      _requireFolder(_parentOf(hostTo), "rename", to);
      throw new VfsError("EBUSY", "rename", from);
    }
    try {
      Deno.renameSync(hostFrom, hostTo);
      this.#forget(hostFrom);
    } catch (e) {
      throw _fromHost(e, "rename", from);
    }
  }

  symlink(target: string, path: string): void {
    _check(path, "symlink");
    if (this.readOnly) throw new VfsError("EROFS", "symlink", path);
    _checkTarget(target, path);
    const host = this.#noFollow(path, "symlink");
    this.#refuseReserved(host, "symlink", path);
    try {
      this.#symlink(target, host);
    } catch (e) {
      if (e instanceof Error && e.name === "NotCapable") {
        throw new VfsError("EPERM", "symlink", path, e.message);
      }
      throw _fromHost(e, "symlink", path);
    }
  }

  readlink(path: string): string {
    _check(path, "readlink");
    const host = this.#noFollow(path, "readlink");
    try {
      return this.#readLink(host, "readlink", path);
    } catch (e) {
      throw _fromHost(e, "readlink", path);
    }
  }

  link(existing: string, newPath: string): void {
    _check(existing, "link");
    _check(newPath, "link");
    if (this.readOnly) throw new VfsError("EROFS", "link", newPath);
    const hostExisting = this.#noFollow(existing, "link");
    try {
      // As on Linux: a missing source is reported before a bad destination.
      Deno.lstatSync(hostExisting);
    } catch (e) {
      throw _fromHost(e, "link", existing);
    }
    this.#sealSource(hostExisting, "link", existing);
    const hostNew = this.#noFollow(newPath, "link");
    this.#refuseReserved(hostNew, "link", newPath);
    try {
      Deno.linkSync(hostExisting, hostNew);
    } catch (e) {
      throw _fromHost(e, "link", existing);
    }
  }

  setTimes(path: string, atime: TimeSpec, mtime: TimeSpec, follow: boolean): void {
    _check(path, "utimes");
    if (this.readOnly) throw new VfsError("EROFS", "utimes", path);
    const host = follow ? this.#follow(path, "utimes") : this.#noFollow(path, "utimes");
    try {
      const info = Deno.lstatSync(host);
      const a = hostDate(atime, info.atime);
      const m = hostDate(mtime, info.mtime);
      if (info.isSymlink) lutimesSync(host, a, m);
      else Deno.utimeSync(host, a, m);
      rememberTimes(_stat(Deno.lstatSync(host)), atime, mtime);
    } catch (e) {
      throw _fromHost(e, "utimes", path);
    }
  }

  /** Refuses to create a reserved name at the top of the root, however the path got there. */
  #refuseReserved(host: string, syscall: string, path: string): void {
    if (this.#reserved.size === 0) return;
    const layerPath = this.#layerPath(host);
    const name = layerPath.slice(1);
    if (!name.includes("/") && this.#reserved.has(name)) {
      throw new VfsError("EACCES", syscall, path, `the name /${name} at the top is reserved`);
    }
  }

  /** The layer path of a host path that {@linkcode #follow} or {@linkcode #walk} returned. */
  #layerPath(host: string): string {
    return host.length > this.#prefix.length ? host.slice(this.#prefix.length) : "/";
  }

  #syncDir(path: string): void {
    const host = this.#follow(path, "fsync");
    try {
      const dir = Deno.openSync(host, { read: true });
      try {
        dir.syncSync();
      } finally {
        dir.close();
      }
    } catch (e) {
      throw _fromHost(e, "fsync", path);
    }
  }

  /**
   * The host path of `path` with every symbolic link resolved, the last one
   * included. A missing last component is returned as is when `create`, and
   * is `ENOENT` otherwise.
   */
  #follow(path: string, syscall: string, create = false): string {
    if (path === "/") return this.#prefix || "/";
    const host = this.#prefix + path;
    const simple = !_NOT_SIMPLE.test(path);
    if (simple && this.#isReal(_parentOf(host))) {
      // The folder is real: only the last component may be a link.
      let info: Deno.FileInfo;
      try {
        info = Deno.lstatSync(host);
      } catch (e) {
        const err = _fromHost(e, syscall, path);
        if (err.code === "ENOENT" && create) return host;
        throw err;
      }
      if (!info.isSymlink) {
        if (info.isDirectory) this.#remember(host, info);
        return host;
      }
    }
    // a simple path's folder was just asked about: the walk need not ask again at its start
    const resolved = this.#walk(path, true, syscall, false, simple);
    if (!create && resolved !== host && !_exists(resolved)) {
      // The walk returns a missing last component for a create.
      try {
        Deno.lstatSync(resolved);
      } catch (e) {
        throw _fromHost(e, syscall, path);
      }
    }
    return resolved;
  }

  /**
   * The host path of `path` with the symbolic links of its folders resolved,
   * and its last component as it is.
   */
  #noFollow(path: string, syscall: string): string {
    if (path === "/") return this.#prefix || "/";
    const slash = path.lastIndexOf("/");
    const name = path.slice(slash + 1);
    // `.` and `..` name a folder, never an entry: resolve them like any folder.
    if (name === ".." || name === "." || name === "") return this.#follow(path, syscall);
    if (slash === 0) return this.#prefix + path;
    const parent = path.slice(0, slash);
    const simple = !_NOT_SIMPLE.test(parent);
    if (simple && this.#isReal(this.#prefix + parent)) return this.#prefix + parent + "/" + name;
    return _join(this.#walk(parent, true, syscall, true, simple), name);
  }

  /**
   * Whether the host folder `host` (a path without `.`, `..` or `//`) is a
   * real folder with no symbolic link on the way from the root.
   *
   * One `realpath` answers it, but that costs the host a lookup of every
   * prefix of the path, which is quadratic in its depth (38 ms at 1,000
   * levels). So folders found real are remembered with their device and
   * inode ({@linkcode #remember}), and a folder is known real again when a
   * `stat` of it, or of a remembered folder below it, still finds that inode:
   * every link this layer makes leads the host nowhere, so a path that
   * reaches the remembered folder on the host holds none. A folder a few
   * levels below a remembered one is checked by an `lstat` of each level in
   * between. Only a folder far from every remembered one costs a `realpath`.
   */
  #isReal(host: string): boolean {
    const prefix = this.#prefix;
    if (host.length <= prefix.length) return true; // the root
    const real = this.#real;
    const known = real.get(host);
    if (known !== undefined) {
      if (this.#still(host, known)) {
        // most recently used last, so that the oldest goes first
        real.delete(host);
        real.set(host, known);
        return true;
      }
      this.#forget(host);
    }
    // a remembered folder below: its path holds this one
    const below = host + "/";
    for (const [folder, id] of real) {
      if (!folder.startsWith(below)) continue;
      if (this.#still(folder, id)) {
        this.#rememberPath(host);
        return true;
      }
      this.#forget(folder);
    }
    // a remembered folder a few levels above: check the levels in between
    let above = host;
    for (let level = 0; level < _CLIMB; level++) {
      const slash = above.lastIndexOf("/");
      if (slash <= prefix.length) break;
      above = host.slice(0, slash);
      const id = real.get(above);
      if (id === undefined) continue;
      if (!this.#still(above, id)) {
        this.#forget(above);
        break;
      }
      for (let at = above.length; at < host.length;) {
        const next = host.indexOf("/", at + 1);
        const end = next === -1 ? host.length : next;
        const folder = host.slice(0, end);
        let info: Deno.FileInfo;
        try {
          info = Deno.lstatSync(folder);
        } catch {
          return false; // missing or not reachable: the walk reports it
        }
        if (!info.isDirectory) return false; // a link (lstat) or a file
        this.#remember(folder, info);
        at = end;
      }
      return true;
    }
    try {
      if (Deno.realPathSync(host) !== host) return false;
    } catch {
      return false; // missing, a loop, or no access: the walk finds out
    }
    this.#rememberPath(host);
    return true;
  }

  /** Whether the folder at `host` still has the identity `id` ({@linkcode _identity}). */
  #still(host: string, id: string): boolean {
    try {
      const info = Deno.statSync(host);
      return info.isDirectory && _identity(info) === id;
    } catch {
      return false;
    }
  }

  /** Remembers `host`, a folder just found real, with the identity an `lstat` gives. */
  #rememberPath(host: string): void {
    try {
      const info = Deno.lstatSync(host);
      if (info.isDirectory) this.#remember(host, info);
    } catch {
      // gone meanwhile: nothing to remember
    }
  }

  /** Remembers the real folder `host`; the least recently used go beyond the budget. */
  #remember(host: string, info: Deno.FileInfo): void {
    if (info.ino === null || host.length > _REMEMBERED_CHARS / 4) return;
    const real = this.#real;
    if (real.has(host)) this.#forget(host);
    real.set(host, _identity(info));
    this.#realChars += host.length;
    while (real.size > _REMEMBERED || this.#realChars > _REMEMBERED_CHARS) {
      this.#forget(real.keys().next().value!);
    }
  }

  #forget(host: string): void {
    if (this.#real.delete(host)) this.#realChars -= host.length;
  }

  /**
   * Resolves `path` one component at a time, with `chroot` semantics. Returns
   * a host path whose folders are all real folders inside the root. A missing
   * last component is returned as is (for a create), unless `mustExist`.
   *
   * Where a run of plain names follows (at the start, after a link, after
   * `..`), the walk first asks {@linkcode #isReal} about the whole run (unless
   * `asked`: the caller just did) and skips it when it holds no link, or skips
   * to the deepest folder on the way that it remembers, so that a deep path
   * costs a few host calls rather than one per level, each as long as the
   * path.
   */
  #walk(
    path: string,
    followLast: boolean,
    syscall: string,
    mustExist = false,
    asked = false,
  ): string {
    const prefix = this.#prefix;
    const pending = path.split("/").reverse();
    /** How many of `pending` are "" or ".": when only those are left, the name is the last. */
    let empty = 0;
    for (const name of pending) if (name === "" || name === ".") empty++;
    const folders: string[] = [];
    let current = prefix;
    let links = 0;
    let jump = true;
    while (pending.length > 0) {
      if (jump && !_isSpecial(pending[pending.length - 1])) {
        jump = false;
        this.#skipRun(pending, folders, current, empty, asked);
        asked = false;
        if (folders.length > 0) current = folders[folders.length - 1];
      }
      const name = pending.pop()!;
      if (_isSpecial(name)) {
        if (name !== "..") empty--;
        else {
          folders.pop();
          current = folders.length > 0 ? folders[folders.length - 1] : prefix;
          jump = true;
        }
        continue;
      }
      const last = empty === pending.length;
      const candidate = current + "/" + name;
      if (last && !followLast) return candidate;
      let info: Deno.FileInfo;
      try {
        info = Deno.lstatSync(candidate);
      } catch (e) {
        const err = _fromHost(e, syscall, path);
        if (err.code === "ENOENT" && last && !mustExist) return candidate;
        throw err;
      }
      if (info.isSymlink) {
        if (++links > MAX_SYMLINKS) throw new VfsError("ELOOP", syscall, path);
        // the next walk through this link can start here
        if (current.length > prefix.length) this.#rememberPath(current);
        const target = this.#readLink(candidate, syscall, path);
        if (target === "") throw new VfsError("ENOENT", syscall, path);
        if (target.charCodeAt(0) === 47) {
          folders.length = 0;
          current = prefix;
        }
        const parts = target.split("/");
        for (let i = parts.length - 1; i >= 0; i--) {
          pending.push(parts[i]);
          if (parts[i] === "" || parts[i] === ".") empty++;
        }
        jump = true;
        continue;
      }
      if (!last && !info.isDirectory) throw new VfsError("ENOTDIR", syscall, path);
      folders.push(candidate);
      current = candidate;
    }
    return current === "" ? "/" : current;
  }

  /**
   * Moves the plain names at the top of `pending` (the walk's components, in
   * reverse) that lead through real folders from `current` onto `folders`,
   * when {@linkcode #isReal} knows the folder they reach. The last component
   * of the path stays, for the walk to judge (it may be a link).
   */
  #skipRun(
    pending: string[],
    folders: string[],
    current: string,
    empty: number,
    asked: boolean,
  ): void {
    let run = 0;
    for (let i = pending.length - 1; i >= 0 && !_isSpecial(pending[i]); i--) run++;
    // the last component of the path stays for the walk
    if (pending.length - run === empty) run--;
    if (run < 2) return;
    const names = pending.slice(pending.length - run).reverse();
    const reached = current + "/" + names.join("/");
    // all of the run, or as far as a remembered folder on the way (a link lies beyond it);
    // when the caller has just asked about all of it, only the second
    const to = !asked && this.#isReal(reached)
      ? reached
      : this.#deepestKnown(reached, current.length);
    if (to === undefined) return;
    let at = current.length;
    for (const name of names) {
      if (at >= to.length) break;
      at += name.length + 1;
      folders.push(reached.slice(0, at));
      pending.pop();
    }
  }

  /** The deepest remembered folder that still holds on the way to `host`, below its first `above` characters. */
  #deepestKnown(host: string, above: number): string | undefined {
    let best: string | undefined;
    for (const folder of this.#real.keys()) {
      if (
        folder.length > above && folder.length > (best?.length ?? 0) &&
        host.charCodeAt(folder.length) === 47 && host.startsWith(folder)
      ) best = folder;
    }
    if (best === undefined || this.#still(best, this.#real.get(best)!)) return best;
    this.#forget(best);
    return undefined;
  }
}

/** Levels above a folder that {@linkcode HostFileSystem} looks for one it knows is real. */
const _CLIMB = 16;
/** Real folders one host layer remembers, at most. */
const _REMEMBERED = 64;
/** Characters of their paths, at most. */
const _REMEMBERED_CHARS = 32 * 1024;

/** Whether a component of a path is "", "." or "..": not a name to look up. */
function _isSpecial(name: string): boolean {
  return name === "" || name === "." || name === "..";
}

/** The device and inode of a folder, as one key. */
function _identity(info: Deno.FileInfo): string {
  return `${info.dev}:${info.ino}`;
}

/** An open file of the host layer: a host descriptor and the position it was left at. */
class _HostFile implements FileHandle {
  readonly kind: FileKind;
  readonly holdsHostFile = true;
  readonly path: string;
  #file: Deno.FsFile | null;
  readonly #read: boolean;
  readonly #write: boolean;
  /** Where the host descriptor's position is; -1 when unknown. Saves a seek on sequential access. */
  #pos = 0;

  constructor(file: Deno.FsFile, kind: FileKind, path: string, read: boolean, write: boolean) {
    this.#file = file;
    this.kind = kind;
    this.path = path;
    this.#read = read;
    this.#write = write;
  }

  #open(syscall: string): Deno.FsFile {
    if (this.#file === null) throw new VfsError("EBADF", syscall, this.path);
    return this.#file;
  }

  read(buffer: Uint8Array, offset: number): number {
    const file = this.#open("read");
    if (!this.#read) throw new VfsError("EBADF", "read", this.path, "not open for reading");
    if (buffer.length === 0) return 0;
    try {
      if (offset !== this.#pos) {
        this.#pos = -1;
        file.seekSync(offset, Deno.SeekMode.Start);
        this.#pos = offset;
      }
      const n = file.readSync(buffer) ?? 0;
      this.#pos += n;
      return n;
    } catch (e) {
      this.#pos = -1;
      throw _fromHost(e, "read", this.path);
    }
  }

  write(data: Uint8Array, offset: number): number {
    const file = this.#open("write");
    if (!this.#write) throw new VfsError("EBADF", "write", this.path, "not open for writing");
    try {
      if (offset !== this.#pos) {
        this.#pos = -1;
        file.seekSync(offset, Deno.SeekMode.Start);
        this.#pos = offset;
      }
    } catch (e) {
      this.#pos = -1;
      throw _fromHost(e, "write", this.path);
    }
    let done = 0;
    try {
      while (done < data.length) {
        const n = file.writeSync(done === 0 ? data : data.subarray(done));
        done += n;
        this.#pos += n;
      }
    } catch (e) {
      // What was written stays written: report it as a short write, as the host does.
      if (done > 0) return done;
      this.#pos = -1;
      throw _fromHost(e, "write", this.path);
    }
    return done;
  }

  append(data: Uint8Array): number {
    const file = this.#open("write");
    if (!this.#write) throw new VfsError("EBADF", "write", this.path, "not open for writing");
    let size: number;
    try {
      size = file.statSync().size;
    } catch (e) {
      throw _fromHost(e, "write", this.path);
    }
    return this.write(data, size);
  }

  setSize(size: number): void {
    const file = this.#open("ftruncate");
    if (!this.#write) throw new VfsError("EBADF", "ftruncate", this.path, "not open for writing");
    try {
      file.truncateSync(size);
    } catch (e) {
      throw _fromHost(e, "ftruncate", this.path);
    }
  }

  stat(): Stat {
    const file = this.#open("fstat");
    try {
      return _stat(file.statSync());
    } catch (e) {
      throw _fromHost(e, "fstat", this.path);
    }
  }

  sync(): void {
    const file = this.#open("fsync");
    try {
      file.syncSync();
    } catch (e) {
      throw _fromHost(e, "fsync", this.path);
    }
  }

  syncData(): void {
    const file = this.#open("fdatasync");
    try {
      file.syncDataSync();
    } catch (e) {
      throw _fromHost(e, "fdatasync", this.path);
    }
  }

  setTimes(atime: TimeSpec, mtime: TimeSpec): void {
    const file = this.#open("futimes");
    try {
      const info = atime === null || mtime === null ? file.statSync() : undefined;
      file.utimeSync(hostDate(atime, info?.atime ?? null), hostDate(mtime, info?.mtime ?? null));
      rememberTimes(_stat(file.statSync()), atime, mtime);
    } catch (e) {
      throw _fromHost(e, "futimes", this.path);
    }
  }

  close(): void {
    const file = this.#open("close");
    this.#file = null;
    try {
      file.close();
    } catch (e) {
      throw _fromHost(e, "close", this.path);
    }
  }
}

/** Whether `path` is `/` or ends in `..`: it names a folder in use, never an entry to remove. */
function _namesFolder(path: string): boolean {
  return path === "/" || path.endsWith("/..");
}

/**
 * Whether something is at `host`, following links, without the cost of a
 * failed call. False also when the host refuses to look (a link that leads
 * outside the folders a worker with scoped permissions may read): the walk
 * then decides.
 */
function _exists(host: string): boolean {
  try {
    return existsSync(host);
  } catch {
    return false;
  }
}

function _parentOf(host: string): string {
  const slash = host.lastIndexOf("/");
  return slash <= 0 ? "/" : host.slice(0, slash);
}

function _requireFolder(host: string, syscall: string, path: string): void {
  let info: Deno.FileInfo;
  try {
    info = Deno.lstatSync(host);
  } catch (e) {
    throw _fromHost(e, syscall, path);
  }
  if (!info.isDirectory) throw new VfsError("ENOTDIR", syscall, path);
}

function _join(hostFolder: string, name: string): string {
  return hostFolder === "/" ? "/" + name : hostFolder + "/" + name;
}

function _kind(info: Deno.FileInfo): FileKind {
  if (info.isFile) return "file";
  if (info.isDirectory) return "directory";
  if (info.isSymlink) return "symlink";
  if (info.isBlockDevice) return "block-device";
  if (info.isCharDevice) return "character-device";
  if (info.isFifo) return "fifo";
  if (info.isSocket) return "socket";
  return "unknown";
}

/** A link's inode and target, to see whether it is still the same link; null when it is not a link. */
function _linkIdentity(host: string): string | null {
  try {
    const info = Deno.lstatSync(host);
    return info.isSymlink ? `${info.ino} ${Deno.readLinkSync(host)}` : null;
  } catch {
    return null;
  }
}

/** Whether something is at `host` itself (a link counts, wherever it leads). */
function _lexists(host: string): boolean {
  try {
    Deno.lstatSync(host);
    return true;
  } catch {
    return false;
  }
}

function _lstatKind(host: string): FileKind {
  try {
    return _kind(Deno.lstatSync(host));
  } catch {
    return "unknown";
  }
}

function _stat(info: Deno.FileInfo): Stat {
  return withExactTimes({
    kind: _kind(info),
    size: info.size,
    nlink: info.nlink ?? 1,
    dev: info.dev,
    ino: info.ino ?? 0,
    mode: info.mode ?? 0,
    atimeMs: info.atime?.getTime() ?? null,
    mtimeMs: info.mtime?.getTime() ?? null,
    ctimeMs: info.ctime?.getTime() ?? null,
  });
}

/** Deno error classes without a `code`, by name. */
const _BY_CLASS: Record<string, VfsErrorCode> = {
  NotFound: "ENOENT",
  AlreadyExists: "EEXIST",
  NotADirectory: "ENOTDIR",
  IsADirectory: "EISDIR",
  PermissionDenied: "EACCES",
  NotCapable: "EACCES",
  FilesystemLoop: "ELOOP",
  InvalidData: "EINVAL",
  Busy: "EBUSY",
  Interrupted: "EINTR",
  WouldBlock: "EAGAIN",
  BrokenPipe: "EPIPE",
};

/**
 * Turns an error of a host call into a {@linkcode VfsError}. Errors that
 * are not about files (bugs) are thrown on unchanged.
 */
function _fromHost(e: unknown, syscall: string, path: string): VfsError {
  if (e instanceof VfsError) return e;
  const code = (e as { code?: unknown } | null)?.code;
  if (isVfsErrorCode(code)) return new VfsError(code, syscall, path, (e as Error).message);
  if (e instanceof Error) {
    const byClass = _BY_CLASS[e.name];
    if (byClass) return new VfsError(byClass, syscall, path, e.message);
    if (typeof code === "string" && code.startsWith("E")) {
      return new VfsError("EIO", syscall, path, e.message);
    }
  }
  throw e;
}
