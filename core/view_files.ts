/**
 * The files as a front end sees them (the console's `ls` and `cat`, and the
 * control endpoint's `host/ls` and `host/cat`): the mount table of a
 * process (PROTOCOL section 4) without `/self`, read on the host's thread.
 * `/` is the world folder, `/proc` the core's generated files, `/run` the
 * shared memory folder.
 *
 * @module
 */
import {
  type DirEntry,
  type FileKind,
  type FileSystem,
  MountFileSystem,
  normalizePath,
  type Stat,
  VfsError,
} from "../vfs/mod.ts";

/** The layers the console mounts: those of `host.files`. */
export interface ConsoleLayers {
  /** The world folder. */
  world: FileSystem;
  /** `/proc`. */
  proc: FileSystem;
  /** `/run`. */
  run: FileSystem;
}

/** The mount table of the console: the one of a process, without `/self`. */
export function consoleFileSystem(layers: ConsoleLayers): FileSystem {
  return new MountFileSystem([
    { path: "/", fs: layers.world },
    { path: "/proc", fs: layers.proc },
    { path: "/run", fs: layers.run },
  ]);
}

/** Text files larger than this are cut. */
export const MAX_TEXT_BYTES = 1024 * 1024;

/** Why a path cannot be read, in words. */
export class PathError extends Error {
  override name = "PathError";
}

/**
 * A path typed in the console, in the form the layers take: relative paths
 * start at `/` (the current folder of every process). Throws a
 * {@linkcode PathError} for `/self`, which only processes have.
 */
export function consolePath(text: string): string {
  const path = normalizePath(text);
  if (path === "/self" || path.startsWith("/self/")) {
    throw new PathError(
      `${path}: the console has no /self; /self is each process's own folder, ` +
        "which the console sees as /proc/<pid>/ (ls /proc lists them)",
    );
  }
  return path;
}

/** Words for the error codes a read can give. */
const REASONS: Partial<Record<string, string>> = {
  ENOENT: "no such file or folder",
  ENOTDIR: "a part of the path is not a folder",
  EISDIR: "it is a folder",
  EACCES: "permission denied",
  EPERM: "not permitted",
  ELOOP: "too many symbolic links",
  ENAMETOOLONG: "the name is too long",
  EINVAL: "not a valid path",
  EIO: "an input/output error",
};

/** `path: reason` for an error of a read. */
export function pathErrorText(path: string, e: unknown): string {
  if (e instanceof PathError) return e.message;
  if (e instanceof VfsError) return `${path}: ${REASONS[e.code] ?? e.message}`;
  return `${path}: ${e instanceof Error ? e.message : String(e)}`;
}

/** One entry of a listing. */
export interface ListEntry {
  name: string;
  kind: FileKind;
  /** A folder, or a symbolic link to one. */
  folder: boolean;
  /** Bytes of a file; null for a folder. */
  size: number | null;
  mtimeMs: number | null;
  /** The content of a symbolic link. */
  target?: string;
}

/** What `ls` found at a path. */
export interface Listing {
  path: string;
  /** A folder's entries, sorted by name; a file alone otherwise. */
  entries: ListEntry[];
  /** Whether the path is a folder. */
  folder: boolean;
}

function entryOf(fs: FileSystem, full: string, name: string, kind: FileKind): ListEntry {
  let stat: Stat | undefined;
  let target: string | undefined;
  try {
    if (kind === "symlink") target = fs.readlink(full);
    stat = fs.stat(full);
  } catch {
    // a dangling link, or an entry that went away meanwhile
  }
  const folder = (stat?.kind ?? kind) === "directory";
  return {
    name,
    kind,
    folder,
    size: folder ? null : stat?.size ?? null,
    mtimeMs: stat?.mtimeMs ?? null,
    ...(target === undefined ? {} : { target }),
  };
}

/** The entries at a path (a folder's, sorted) or the file itself. Throws a VfsError or PathError. */
export function listPath(fs: FileSystem, text: string): Listing {
  const path = consolePath(text);
  const stat = fs.stat(path);
  if (stat.kind !== "directory") {
    const lstat = fs.lstat(path);
    return { path, folder: false, entries: [entryOf(fs, path, path, lstat.kind)] };
  }
  const prefix = path === "/" ? "" : path;
  const entries = fs.readDir(path)
    .map((e: DirEntry) => entryOf(fs, `${prefix}/${e.name}`, e.name, e.kind))
    .sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  return { path, folder: true, entries };
}

/** Names in a folder for completion: folders with a final `/`; nothing when it cannot be read. */
export function completionNames(fs: FileSystem, folder: string): string[] {
  try {
    const path = consolePath(folder);
    const prefix = path === "/" ? "" : path;
    return fs.readDir(path).map((e) => {
      const folder = e.kind === "directory" ||
        (e.kind === "symlink" && isFolder(fs, `${prefix}/${e.name}`));
      return folder ? `${e.name}/` : e.name;
    });
  } catch {
    return [];
  }
}

function isFolder(fs: FileSystem, path: string): boolean {
  try {
    return fs.stat(path).kind === "directory";
  } catch {
    return false;
  }
}

/** What `cat` read. */
export interface FileContent {
  path: string;
  /** The first bytes, up to the limit of the read. */
  bytes: Uint8Array;
  /** All bytes of the file (more than `bytes.length` when the read stopped at its limit). */
  size: number;
}

/**
 * Reads a file, at most `limit` bytes. Throws a VfsError or PathError; a
 * folder or a special file (a FIFO would block) is refused.
 */
export function readPath(fs: FileSystem, text: string, limit = MAX_TEXT_BYTES): FileContent {
  const path = consolePath(text);
  const stat = fs.stat(path);
  if (stat.kind === "directory") {
    throw new PathError(`${path}: it is a folder (ls ${path} lists it)`);
  }
  if (stat.kind !== "file") throw new PathError(`${path}: not a file but a ${stat.kind}`);
  const handle = fs.open(path, { read: true });
  try {
    const chunks: Uint8Array[] = [];
    let at = 0;
    let size = stat.size;
    while (at < limit) {
      const chunk = new Uint8Array(Math.min(64 * 1024, limit - at));
      const n = handle.read(chunk, at);
      if (n === 0) break;
      chunks.push(chunk.subarray(0, n));
      at += n;
    }
    if (at >= limit) size = Math.max(size, handle.stat().size, at);
    else size = at; // a generated file may differ from its stat: what was read is all of it
    const bytes = new Uint8Array(at);
    let offset = 0;
    for (const c of chunks) {
      bytes.set(c, offset);
      offset += c.length;
    }
    return { path, bytes, size };
  } finally {
    handle.close();
  }
}
