/**
 * The contract of a filesystem layer: {@linkcode FileSystem}, the handles it
 * opens, and the {@linkcode VfsError} it throws.
 *
 * Everything is synchronous: the host layer is built on the synchronous file
 * calls of the runtime (the fastest ones), and a remote layer answers over a
 * synchronous channel.
 *
 * Paths given to a layer are absolute POSIX paths inside that layer: they
 * start with `/`, use `/` as the separator, and have no empty or `.`
 * components and no trailing `/` (`/`, `/a/b`). A `..` component is allowed;
 * a layer resolves it after the symbolic links before it, as POSIX does, and
 * `..` at the root of the layer stays at the root. Use {@linkcode normalizePath}
 * to turn a looser path into this form.
 *
 * @module
 */

/** The error codes a layer throws: a subset of POSIX `errno` names. */
export type VfsErrorCode =
  | "ENOENT"
  | "EEXIST"
  | "ENOTDIR"
  | "EISDIR"
  | "ENOTEMPTY"
  | "EACCES"
  | "EPERM"
  | "EROFS"
  | "EXDEV"
  | "ELOOP"
  | "ENAMETOOLONG"
  | "EINVAL"
  | "EBADF"
  | "ENOSPC"
  | "EDQUOT"
  | "EMFILE"
  | "ENFILE"
  | "ENOMEM"
  | "EIO"
  | "EBUSY"
  | "EFBIG"
  | "ENOTSUP"
  | "EMLINK"
  | "ETXTBSY"
  | "EOVERFLOW"
  | "ESPIPE"
  | "EAGAIN"
  | "EINTR"
  | "EILSEQ"
  | "ENODEV"
  | "ENXIO"
  | "EPIPE"
  | "EDEADLK"
  | "ENOLCK";

const _CODES: ReadonlySet<string> = new Set<VfsErrorCode>([
  "ENOENT",
  "EEXIST",
  "ENOTDIR",
  "EISDIR",
  "ENOTEMPTY",
  "EACCES",
  "EPERM",
  "EROFS",
  "EXDEV",
  "ELOOP",
  "ENAMETOOLONG",
  "EINVAL",
  "EBADF",
  "ENOSPC",
  "EDQUOT",
  "EMFILE",
  "ENFILE",
  "ENOMEM",
  "EIO",
  "EBUSY",
  "EFBIG",
  "ENOTSUP",
  "EMLINK",
  "ETXTBSY",
  "EOVERFLOW",
  "ESPIPE",
  "EAGAIN",
  "EINTR",
  "EILSEQ",
  "ENODEV",
  "ENXIO",
  "EPIPE",
  "EDEADLK",
  "ENOLCK",
]);

/** Whether `code` is one of the {@linkcode VfsErrorCode}s. */
export function isVfsErrorCode(code: unknown): code is VfsErrorCode {
  return typeof code === "string" && _CODES.has(code);
}

/**
 * The error every layer throws.
 *
 * @example
 * ```ts
 * import { VfsError } from "./types.ts";
 * try {
 *   throw new VfsError("ENOENT", "stat", "/missing");
 * } catch (e) {
 *   if (e instanceof VfsError && e.code === "ENOENT") console.log("no such file");
 * }
 * ```
 */
export class VfsError extends Error {
  override name = "VfsError";
  /** What went wrong. */
  readonly code: VfsErrorCode;
  /** The operation, such as `open` or `rename`. */
  readonly syscall: string;
  /** The layer path the operation was given, when there is one. */
  readonly path?: string;

  constructor(code: VfsErrorCode, syscall: string, path?: string, detail?: string) {
    super(
      `${code}: ${syscall}${path === undefined ? "" : ` '${path}'`}${detail ? `: ${detail}` : ""}`,
    );
    this.code = code;
    this.syscall = syscall;
    this.path = path;
  }
}

/** What kind of object a path names. */
export type FileKind =
  | "file"
  | "directory"
  | "symlink"
  | "block-device"
  | "character-device"
  | "fifo"
  | "socket"
  | "unknown";

/** The attributes of an object, as `stat` returns them. */
export interface Stat {
  /** The kind of object. */
  kind: FileKind;
  /** Bytes in a file; the length of the target of a symbolic link. */
  size: number;
  /** Number of hard links. */
  nlink: number;
  /** Device of the object: with {@linkcode ino}, its identity within the layer. */
  dev: number;
  /** Inode number of the object. */
  ino: number;
  /** POSIX mode bits (type and permissions), 0 when the layer has none. */
  mode: number;
  /** Last access, in milliseconds since the epoch; `null` when not kept. */
  atimeMs: number | null;
  /** Last modification of the data, in milliseconds since the epoch. */
  mtimeMs: number | null;
  /** Last change of the status (metadata), in milliseconds since the epoch. */
  ctimeMs: number | null;
  /** {@linkcode atimeMs} to the nanosecond, where the layer knows it. */
  atimeExact?: Timestamp;
  /** {@linkcode mtimeMs} to the nanosecond, where the layer knows it. */
  mtimeExact?: Timestamp;
}

/** A time to the nanosecond: whole seconds since the epoch and the nanoseconds after them. */
export interface Timestamp {
  seconds: number;
  /** 0 to 999,999,999. */
  nanoseconds: number;
}

/** One entry of a folder listing. */
export interface DirEntry {
  /** The name in the folder, without a path. */
  name: string;
  /** The kind of object, not following a symbolic link. */
  kind: FileKind;
  /**
   * The name on the host is not UTF-8: `name` is a lossy copy (with U+FFFD)
   * that names nothing, so the entry cannot be used.
   */
  undecodable?: boolean;
}

/**
 * A new timestamp: milliseconds since the epoch, an exact {@linkcode Timestamp},
 * `"now"`, or `null` to keep the old one.
 */
export type TimeSpec = number | Timestamp | "now" | null;

/** How {@linkcode FileSystem.open} opens a path. */
export interface OpenOptions {
  /** Reading allowed. The default when neither `read` nor `write` is given. */
  read?: boolean;
  /** Writing allowed. */
  write?: boolean;
  /** Create a file when nothing is there (like `O_CREAT`). */
  create?: boolean;
  /** With `create`: fail with `EEXIST` when something is there (like `O_EXCL`). */
  exclusive?: boolean;
  /** Cut the file to zero bytes (like `O_TRUNC`). */
  truncate?: boolean;
  /** Fail with `ENOTDIR` unless the path names a folder (like `O_DIRECTORY`). */
  directory?: boolean;
  /** Fail with `ELOOP` when the last component is a symbolic link (like `O_NOFOLLOW`). */
  noFollow?: boolean;
}

/**
 * An open file or folder.
 *
 * A file handle keeps its object even when the object is renamed or removed.
 * A folder handle may be bound to its path instead (the host layer does
 * that): its methods then act on whatever is at {@linkcode path}.
 */
export interface FileHandle {
  /** The kind of object that was opened. */
  readonly kind: FileKind;
  /** The layer path of the object when it was opened, with symbolic links resolved. */
  readonly path: string;
  /** Reads into `buffer` from `offset`; returns the number of bytes read, 0 at the end. */
  read(buffer: Uint8Array, offset: number): number;
  /**
   * Keeps a descriptor of the host open, which counts in the host's limit of
   * open files (a host file, not a folder or a file in memory).
   */
  readonly holdsHostFile?: boolean;
  /**
   * Writes `data` at `offset` (extending the file); returns `data.length`, or
   * fewer bytes when the layer filled up after writing some (a short write).
   */
  write(data: Uint8Array, offset: number): number;
  /**
   * Writes `data` at the end of the file; returns the number of bytes
   * written, as {@linkcode write} does (fewer in a short write).
   */
  append(data: Uint8Array): number;
  /** Sets the size, cutting or extending with zero bytes. */
  setSize(size: number): void;
  /** The attributes of the open object. */
  stat(): Stat;
  /** Writes data and metadata through to the storage. */
  sync(): void;
  /** Writes the data through to the storage. */
  syncData(): void;
  /** Sets the access and modification times. */
  setTimes(atime: TimeSpec, mtime: TimeSpec): void;
  /** Releases the handle. Further calls throw `EBADF`. */
  close(): void;
}

/**
 * A filesystem layer: the operations of a POSIX filesystem on paths.
 *
 * Operations that take a path follow symbolic links in all components but the
 * last. The last one is followed by {@linkcode stat}, {@linkcode readDir},
 * {@linkcode open} (unless `noFollow`), {@linkcode realpath} and
 * {@linkcode setTimes} with `follow`; the others act on the link itself.
 */
export interface FileSystem {
  /** When true, every operation that would change something throws `EROFS`. */
  readonly readOnly: boolean;
  /** The attributes of the object at `path`, following a final symbolic link. */
  stat(path: string): Stat;
  /** The attributes of the object at `path`; a final symbolic link is not followed. */
  lstat(path: string): Stat;
  /** The layer path of the object at `path`, with every symbolic link and `..` resolved. */
  realpath(path: string): string;
  /** The entries of the folder at `path`, without `.` and `..`, in no particular order. */
  readDir(path: string): DirEntry[];
  /** Opens a file or folder. */
  open(path: string, options: OpenOptions): FileHandle;
  /** Makes a folder. */
  mkdir(path: string): void;
  /** Removes a name that is not a folder (`EISDIR` for a folder). */
  unlink(path: string): void;
  /** Removes an empty folder. */
  rmdir(path: string): void;
  /** Renames atomically, replacing what is at `to` as POSIX `rename` does. */
  rename(from: string, to: string): void;
  /** Makes a symbolic link at `path` whose content is `target`. */
  symlink(target: string, path: string): void;
  /** The content of the symbolic link at `path` (`EINVAL` when it is not one). */
  readlink(path: string): string;
  /** Makes `newPath` a hard link to the object at `existing` (not followed). */
  link(existing: string, newPath: string): void;
  /** Sets the access and modification times of the object at `path`. */
  setTimes(path: string, atime: TimeSpec, mtime: TimeSpec, follow: boolean): void;
}

/** Most symbolic links followed in one resolution, as on Linux; one more is `ELOOP`. */
export const MAX_SYMLINKS = 40;

/** Longest path, in UTF-8 bytes, with its terminating NUL not counted (Linux `PATH_MAX` - 1). */
export const PATH_MAX = 4095;
/** Longest name of one component, in UTF-8 bytes (Linux `NAME_MAX`). */
export const NAME_MAX = 255;

/**
 * Turns a path into the form layers take: absolute, no empty or `.`
 * components, no trailing `/`. `..` stays, because only a layer knows the
 * symbolic links before it. A relative path is taken from `/`.
 *
 * @example
 * ```ts
 * import { normalizePath } from "./types.ts";
 * normalizePath("a//b/./c/"); // "/a/b/c"
 * normalizePath("/a/../b"); // "/a/../b"
 * ```
 */
export function normalizePath(path: string): string {
  const parts: string[] = [];
  for (const part of path.split("/")) {
    if (part !== "" && part !== ".") parts.push(part);
  }
  return "/" + parts.join("/");
}
