/**
 * `ls` and `cat`: the filesystem as a process sees it (PROTOCOL section 4),
 * read on the host's thread. `/` is the world folder, `/proc` the core's
 * generated files, `/run` the shared memory folder. The console is not a
 * process, so it has no `/self`.
 *
 * {@linkcode listPath} and {@linkcode readPath} read; {@linkcode formatListing}
 * and {@linkcode formatFile} turn what they read into text.
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
import { formatClock, indent, PLAIN, type Style } from "./format.ts";

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
/** Binary files up to this size are shown as a hex dump (a screen of 16 bytes a line). */
export const SCREEN_BYTES = 16 * 24;

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

/** Options of {@linkcode formatListing}. */
export interface ListingOptions {
  /** Sizes, times and link targets (`ls -l`). */
  long?: boolean;
  now?: Date;
  style?: Style;
}

/** A listing: names, folders with a final `/`; with `long`, the size and time before each. */
export function formatListing(listing: Listing, options: ListingOptions = {}): string {
  const style = options.style ?? PLAIN;
  if (listing.folder && listing.entries.length === 0) {
    return indent(style.dim(`${listing.path} is an empty folder`));
  }
  const names = listing.entries.map((e) => {
    const name = e.folder && e.kind === "directory" ? style.cyan(`${e.name}/`) : e.name;
    if (e.target === undefined) return name;
    return options.long ? `${name} -> ${e.target}` : `${name}@`;
  });
  if (!options.long) return indent(names.join("\n"));
  const now = options.now ?? new Date();
  const sizes = listing.entries.map((e) => e.size === null ? "-" : formatSize(e.size));
  const times = listing.entries.map((e) =>
    e.mtimeMs === null ? "-" : formatClock(new Date(e.mtimeMs), now).replace(/\.\d{3}$/, "")
  );
  const sizeWidth = Math.max(...sizes.map((s) => s.length));
  const timeWidth = Math.max(...times.map((t) => t.length));
  return indent(
    names.map((n, i) => `${sizes[i].padStart(sizeWidth)}  ${times[i].padEnd(timeWidth)}  ${n}`)
      .join("\n"),
  );
}

/** A size, short: `512 B`, `4.0 KiB`, `1.2 MiB`. */
export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
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

/** Whether bytes are text: UTF-8 without NUL (a character cut at the end counts as text). */
export function isText(bytes: Uint8Array): boolean {
  if (bytes.includes(0)) return false;
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(bytes, { stream: true });
    return true;
  } catch {
    return false;
  }
}

/**
 * A file as `cat` prints it: text as it is (indented like every output),
 * a small binary file as a hex dump, and a note instead of a larger one.
 */
export function formatFile(file: FileContent, style: Style = PLAIN): string {
  if (file.size === 0) return indent(style.dim(`${file.path} is empty`));
  if (!isText(file.bytes)) {
    if (file.size > SCREEN_BYTES) {
      return indent(style.dim(
        `${file.path} is a binary file of ${formatSize(file.size)}: not printed ` +
          `(cat shows text, and binary files up to ${SCREEN_BYTES} bytes as hex)`,
      ));
    }
    return indent(hexDump(file.bytes));
  }
  let text = new TextDecoder().decode(file.bytes).replace(/\r?\n$/, "");
  const cut = file.size > file.bytes.length;
  if (cut) {
    const lastNewline = text.lastIndexOf("\n");
    if (lastNewline > 0) text = text.slice(0, lastNewline);
  }
  const body = indent(text);
  if (!cut) return body;
  return `${body}\n${
    indent(style.dim(
      `… cut: these are the first ${formatSize(file.bytes.length)} of ` +
        `${formatSize(file.size)} of ${file.path}`,
    ))
  }`;
}

/** Bytes as lines of 16: offset, hex, and the printable characters. */
export function hexDump(bytes: Uint8Array): string {
  const lines: string[] = [];
  for (let at = 0; at < bytes.length; at += 16) {
    const row = [...bytes.subarray(at, at + 16)];
    const hex = row.map((b) => b.toString(16).padStart(2, "0"));
    const left = hex.slice(0, 8).join(" ");
    const right = hex.slice(8).join(" ");
    const chars = row.map((b) => b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : ".").join("");
    lines.push(
      `${at.toString(16).padStart(8, "0")}  ${left.padEnd(23)}  ${right.padEnd(23)}  |${chars}|`,
    );
  }
  return lines.join("\n");
}
