/**
 * `wasi:filesystem` 0.2: `types` and `preopens`, on top of the virtual
 * filesystem in `vfs/`.
 *
 * A {@linkcode Descriptor} is a file or folder of one {@linkcode FileSystem}
 * layer. A folder descriptor is a path in its layer; a file descriptor owns an
 * open {@linkcode FileHandle}, shared with the streams made from it and
 * closed when the last of them is dropped.
 *
 * Conventions of jco: a `result` returns its value or throws the error code
 * string; `option` is `undefined`; `u64` is a bigint; flags are objects of
 * booleans; resources are classes, and jco calls `[Symbol.dispose]()` when
 * the guest drops one.
 *
 * Choices, where WASI leaves room or where this host differs from Wasmtime:
 *
 * - Paths are resolved as in a Linux `chroot` into the layer: `..` at the
 *   root stays at the root, symbolic links may be absolute (from the root of
 *   the layer), and `..` after a link is physical. An absolute path given to
 *   an `*-at` call is `not-permitted`, as in Wasmtime.
 * - `symlink-at` accepts an absolute target and `readlink-at` returns it
 *   (WASI says `not-permitted` for both): with `chroot` semantics it names a
 *   path of the layer, never of the host. Deno makes links only with unscoped
 *   permissions: a worker passes {@linkcode FilesystemOptions.symlink}.
 *   With {@linkcode FilesystemOptions.bounded} (`sausage run`), a folder
 *   opened below a preopen follows Wasmtime instead: no `..` above it, no
 *   absolute link target made through it.
 * - Times are passed and read to the nanosecond where the layer keeps them
 *   (`Stat.atimeExact`, `mtimeExact`), else in milliseconds.
 * - Permissions come from the layer: a read-only layer refuses changes with
 *   `read-only`. The `mutate-directory` flag of a descriptor is reported as
 *   it was opened with (a preopen has it unless its layer is read-only) but
 *   not required, as in Wasmtime (wasi-libc opens folders without it and
 *   then changes things in them). Reading, writing or resizing a file opened
 *   without that access is `not-permitted`, as in Wasmtime.
 * - `file-integrity-sync` and `data-integrity-sync` are honoured with a sync
 *   after each write (Wasmtime refuses them with `unsupported`).
 * - At most {@linkcode MAX_DESCRIPTORS_PER_PROCESS} descriptors per process,
 *   and a budget of host files per worker. WASI 0.2 has no `EMFILE`: both
 *   limits give `insufficient-memory`, which the guest can handle (Wasmtime
 *   traps when its table is full).
 * - A folder descriptor is bound to its path: renaming an open folder moves
 *   it away from its descriptor.
 *
 * @module
 */
import {
  type ByteSink,
  type ByteSource,
  InputStream,
  IoError,
  OutputStream,
  type StreamError,
} from "./io.ts";
import {
  type DirEntry,
  type FileHandle,
  type FileKind,
  type FileSystem,
  HostFileSystem,
  type Stat,
  type TimeSpec,
  type Timestamp,
  VfsError,
  type VfsErrorCode,
} from "../../vfs/mod.ts";
import { MAX_DESCRIPTORS_PER_PROCESS } from "../../protocol/limits.ts";
export { MAX_DESCRIPTORS_PER_PROCESS };

/** `wasi:filesystem/types.error-code`. */
export type ErrorCode =
  | "access"
  | "would-block"
  | "already"
  | "bad-descriptor"
  | "busy"
  | "deadlock"
  | "quota"
  | "exist"
  | "file-too-large"
  | "illegal-byte-sequence"
  | "in-progress"
  | "interrupted"
  | "invalid"
  | "io"
  | "is-directory"
  | "loop"
  | "too-many-links"
  | "message-size"
  | "name-too-long"
  | "no-device"
  | "no-entry"
  | "no-lock"
  | "insufficient-memory"
  | "insufficient-space"
  | "not-directory"
  | "not-empty"
  | "not-recoverable"
  | "unsupported"
  | "no-tty"
  | "no-such-device"
  | "overflow"
  | "not-permitted"
  | "pipe"
  | "read-only"
  | "invalid-seek"
  | "text-file-busy"
  | "cross-device";

/** `wasi:filesystem/types.descriptor-type`. */
export type DescriptorType =
  | "unknown"
  | "block-device"
  | "character-device"
  | "directory"
  | "fifo"
  | "symbolic-link"
  | "regular-file"
  | "socket";

/** `wasi:filesystem/types.descriptor-flags`. */
export interface DescriptorFlags {
  read?: boolean;
  write?: boolean;
  fileIntegritySync?: boolean;
  dataIntegritySync?: boolean;
  requestedWriteSync?: boolean;
  mutateDirectory?: boolean;
}

/** `wasi:filesystem/types.path-flags`. */
export interface PathFlags {
  symlinkFollow?: boolean;
}

/** `wasi:filesystem/types.open-flags`. */
export interface OpenFlags {
  create?: boolean;
  directory?: boolean;
  exclusive?: boolean;
  truncate?: boolean;
}

/** `wasi:clocks/wall-clock.datetime`. */
export interface Datetime {
  seconds: bigint;
  nanoseconds: number;
}

/** `wasi:filesystem/types.descriptor-stat`. */
export interface DescriptorStat {
  type: DescriptorType;
  linkCount: bigint;
  size: bigint;
  dataAccessTimestamp?: Datetime;
  dataModificationTimestamp?: Datetime;
  statusChangeTimestamp?: Datetime;
}

/** `wasi:filesystem/types.new-timestamp`. */
export type NewTimestamp =
  | { tag: "no-change" }
  | { tag: "now" }
  | { tag: "timestamp"; val: Datetime };

/** `wasi:filesystem/types.directory-entry`. */
export interface DirectoryEntry {
  type: DescriptorType;
  name: string;
}

/** `wasi:filesystem/types.metadata-hash-value`. */
export interface MetadataHashValue {
  lower: bigint;
  upper: bigint;
}

/** `wasi:filesystem/types.advice`. */
export type Advice = "normal" | "sequential" | "random" | "will-need" | "dont-need" | "no-reuse";

/** A host folder that a process sees at `guestPath` (like `wasmtime run --dir HOST::GUEST`). */
export interface DirectoryMount {
  guestPath: string;
  hostPath: string;
}

/** A preopen on any layer: the guest sees `path` of `fs` (default `/`) at `guestPath`. */
export interface Preopen {
  guestPath: string;
  fs: FileSystem;
  path?: string;
}

/** Most bytes one `read` or stream read returns. */
const _MAX_READ = 1 << 20;
/** What a file output stream accepts per `check-write`. */
const _WRITE_BUDGET = 1 << 20;

/**
 * Host files open in this worker, across processes, and the budget for them.
 * The budget is shared: when processes on a worker hold it all, the next open
 * of a host file on that worker fails with `insufficient-memory` (WASI 0.2
 * has no `ENFILE`). Folders and files in memory do not count.
 */
let _hostFiles = 0;
let _hostFileBudget = 1024;

/**
 * Sets how many host files this worker may hold open, over all its
 * processes. The host computes it from its limit of open files (a worker
 * cannot read that limit with its permissions).
 */
export function setHostFileBudget(files: number): void {
  _hostFileBudget = Math.max(64, Math.floor(files));
}

/** The state of one process: its descriptor count and its open files. */
class _Process {
  descriptors = 0;
  /** Nothing may lead above an opened folder (see {@linkcode FilesystemOptions.bounded}). */
  bounded = false;
  readonly files = new Set<_OpenFile>();
  released = false;
  /** The folders the process sees, given before it runs. */
  preopens: Preopen[] | undefined;
}

/** A host file shared by a descriptor and its streams; closed with the last of them. */
class _OpenFile {
  readonly handle: FileHandle;
  readonly #process: _Process;
  #refs = 1;

  constructor(handle: FileHandle, process: _Process) {
    this.handle = handle;
    this.#process = process;
    process.files.add(this);
    if (handle.holdsHostFile) _hostFiles++;
  }

  retain(): this {
    this.#refs++;
    return this;
  }

  release(): void {
    if (this.#refs <= 0 || --this.#refs > 0) return;
    this.close();
  }

  /** Closes now, whoever still holds it (at the end of the process). */
  close(): void {
    if (!this.#process.files.delete(this)) return;
    this.#refs = 0;
    if (this.handle.holdsHostFile) _hostFiles--;
    try {
      this.handle.close();
    } catch {
      // Already closed: nothing to release.
    }
  }
}

/** Guards the constructor of the resources: only this module makes them. */
const _TOKEN = Symbol("wasi:filesystem");

/** The `error-code` behind the `io.error`s of file streams. */
const _streamCodes = new WeakMap<IoError, ErrorCode>();

/** `wasi:filesystem/types.descriptor`: an open file or folder. */
export class Descriptor {
  readonly #process: _Process;
  readonly #fs: FileSystem;
  /** The layer path: the base of relative paths for a folder. */
  readonly #path: string;
  readonly #type: DescriptorType;
  readonly #flags: DescriptorFlags;
  /** The open file; `null` for a folder. */
  readonly #file: _OpenFile | null;
  /** The handle of a folder, `null` for a file. */
  readonly #dir: FileHandle | null;
  readonly #counted: boolean;
  #closed = false;

  /** Not for guests: descriptors come from `get-directories` and `open-at`. */
  constructor(
    token: symbol,
    process: _Process,
    fs: FileSystem,
    handle: FileHandle,
    flags: DescriptorFlags,
    counted: boolean,
  ) {
    if (token !== _TOKEN) throw new TypeError("Descriptor has no public constructor");
    this.#process = process;
    this.#fs = fs;
    this.#path = handle.path;
    this.#type = _TYPES[handle.kind];
    this.#counted = counted;
    if (handle.kind === "directory") {
      this.#file = null;
      this.#dir = handle;
      // a preopen has every right of its layer; an opened folder the flags it was opened with
      this.#flags = counted
        ? {
          read: flags.read === true,
          mutateDirectory: flags.mutateDirectory === true,
          ...(flags.fileIntegritySync ? { fileIntegritySync: true } : {}),
          ...(flags.dataIntegritySync ? { dataIntegritySync: true } : {}),
          ...(flags.requestedWriteSync ? { requestedWriteSync: true } : {}),
        }
        : { read: true, mutateDirectory: !fs.readOnly };
    } else {
      this.#file = new _OpenFile(handle, process);
      this.#dir = null;
      this.#flags = {
        read: flags.read === true,
        write: flags.write === true,
        fileIntegritySync: flags.fileIntegritySync === true,
        dataIntegritySync: flags.dataIntegritySync === true,
        requestedWriteSync: flags.requestedWriteSync === true,
      };
    }
    if (counted) process.descriptors++;
  }

  /** A stream that reads the file from `offset`. */
  readViaStream(offset: bigint): InputStream {
    const file = this.#openFile("read", "bad-descriptor");
    return new InputStream(new _FileSource(file.retain(), _offsetForRead(offset)));
  }

  /** A stream that writes the file from `offset`. */
  writeViaStream(offset: bigint): OutputStream {
    const file = this.#openFile("write", "bad-descriptor");
    const sync = this.#syncAfterWrite();
    return new OutputStream(new _FileSink(file.retain(), _offsetForWrite(offset), sync));
  }

  /** A stream that writes at the end of the file. */
  appendViaStream(): OutputStream {
    const file = this.#openFile("write", "bad-descriptor");
    return new OutputStream(new _FileSink(file.retain(), -1, this.#syncAfterWrite()));
  }

  /** Access advice: accepted and ignored. */
  advise(_offset: bigint, _length: bigint, _advice: Advice): void {
    this.#openFile();
  }

  /** Writes the data through to the storage. */
  syncData(): void {
    try {
      this.#handle().syncData();
    } catch (e) {
      throw _errorCode(e);
    }
  }

  /** The flags the descriptor was opened with. */
  getFlags(): DescriptorFlags {
    this.#handle();
    return { ...this.#flags };
  }

  /** The type of the object. */
  getType(): DescriptorType {
    this.#handle();
    return this.#type;
  }

  /** Sets the size of the file, cutting or extending with zeros. */
  setSize(size: bigint): void {
    const file = this.#openFile("write");
    try {
      file.handle.setSize(_offsetForWrite(size));
    } catch (e) {
      throw _errorCode(e);
    }
  }

  /** Sets the access and modification times. */
  setTimes(dataAccessTimestamp: NewTimestamp, dataModificationTimestamp: NewTimestamp): void {
    try {
      this.#handle().setTimes(_timeSpec(dataAccessTimestamp), _timeSpec(dataModificationTimestamp));
    } catch (e) {
      throw _errorCode(e);
    }
  }

  /** Reads up to `length` bytes at `offset`; the flag is true at the end of the file. */
  read(length: bigint, offset: bigint): [Uint8Array, boolean] {
    const file = this.#openFile("read");
    if (length === 0n) return [new Uint8Array(0), false];
    const at = _offsetForRead(offset);
    if (at < 0) return [new Uint8Array(0), true];
    try {
      const buffer = _buffer(length > BigInt(_MAX_READ) ? _MAX_READ : Number(length));
      const n = file.handle.read(buffer, at);
      return [_keep(buffer, n), n === 0];
    } catch (e) {
      throw _errorCode(e);
    }
  }

  /** Writes `buffer` at `offset`; returns the number of bytes written. */
  write(buffer: Uint8Array, offset: bigint): bigint {
    const file = this.#openFile("write");
    try {
      const n = file.handle.write(buffer, _offsetForWrite(offset));
      this.#syncAfterWrite()?.(file.handle);
      return BigInt(n);
    } catch (e) {
      throw _errorCode(e);
    }
  }

  /** The entries of the folder, without `.` and `..`. */
  readDirectory(): DirectoryEntryStream {
    const dir = this.#openDir();
    try {
      return new DirectoryEntryStream(_TOKEN, this.#fs.readDir(dir));
    } catch (e) {
      throw _errorCode(e);
    }
  }

  /** Writes data and metadata through to the storage. */
  sync(): void {
    try {
      this.#handle().sync();
    } catch (e) {
      throw _errorCode(e);
    }
  }

  /** Makes a folder. */
  createDirectoryAt(path: string): void {
    try {
      this.#fs.mkdir(this.#at(path)[0]);
    } catch (e) {
      throw _errorCode(e);
    }
  }

  /** The attributes of the open object. */
  stat(): DescriptorStat {
    try {
      return _descriptorStat(this.#handle().stat());
    } catch (e) {
      throw _errorCode(e);
    }
  }

  /** The attributes of the object at `path`. */
  statAt(pathFlags: PathFlags, path: string): DescriptorStat {
    try {
      return _descriptorStat(this.#statAt(pathFlags, path));
    } catch (e) {
      throw _errorCode(e);
    }
  }

  /** Sets the times of the object at `path`. */
  setTimesAt(
    pathFlags: PathFlags,
    path: string,
    dataAccessTimestamp: NewTimestamp,
    dataModificationTimestamp: NewTimestamp,
  ): void {
    try {
      const [target, slash] = this.#at(path);
      const follow = pathFlags.symlinkFollow === true || slash;
      if (slash) _requireDirectory(this.#fs.stat(target));
      this.#fs.setTimes(
        target,
        _timeSpec(dataAccessTimestamp),
        _timeSpec(dataModificationTimestamp),
        follow,
      );
    } catch (e) {
      throw _errorCode(e);
    }
  }

  /** Makes `newPath` (in `newDescriptor`) a hard link to `oldPath`. */
  linkAt(
    oldPathFlags: PathFlags,
    oldPath: string,
    newDescriptor: Descriptor,
    newPath: string,
  ): void {
    try {
      const [from, fromSlash] = this.#at(oldPath);
      const [to, toSlash] = newDescriptor.#at(newPath);
      if (newDescriptor.#fs !== this.#fs) throw "cross-device";
      if (fromSlash) {
        throw this.#fs.stat(from).kind === "directory" ? "not-permitted" : "not-directory";
      }
      if (toSlash) {
        this.#fs.lstat(from);
        throw _existsAt(this.#fs, to) ? "exist" : "no-entry";
      }
      this.#fs.link(oldPathFlags.symlinkFollow ? this.#fs.realpath(from) : from, to);
    } catch (e) {
      throw _errorCode(e);
    }
  }

  /** Opens a file or folder. */
  openAt(
    pathFlags: PathFlags,
    path: string,
    openFlags: OpenFlags,
    flags: DescriptorFlags,
  ): Descriptor {
    try {
      const [target, slash] = this.#at(path);
      const create = openFlags.create === true;
      const truncate = openFlags.truncate === true;
      const exclusive = openFlags.exclusive === true;
      if (openFlags.directory && (create || exclusive || truncate)) throw "invalid";
      if (slash && create) throw "is-directory";
      if (
        this.#fs.readOnly && (flags.write || flags.mutateDirectory || create || truncate)
      ) throw "read-only";
      const process = this.#process;
      if (process.released) throw "bad-descriptor";
      if (process.descriptors >= MAX_DESCRIPTORS_PER_PROCESS) throw "insufficient-memory";
      const handle = this.#fs.open(target, {
        read: flags.read === true,
        write: flags.write === true,
        create,
        exclusive,
        truncate,
        directory: openFlags.directory === true || slash,
        noFollow: pathFlags.symlinkFollow !== true,
      });
      if (handle.kind === "directory" && flags.write) {
        handle.close();
        throw "is-directory";
      }
      if (handle.holdsHostFile && _hostFiles >= _hostFileBudget) {
        handle.close();
        throw "insufficient-memory";
      }
      return new Descriptor(_TOKEN, process, this.#fs, handle, flags, true);
    } catch (e) {
      throw _errorCode(e);
    }
  }

  /** The content of the symbolic link at `path`. */
  readlinkAt(path: string): string {
    try {
      const [target, slash] = this.#at(path);
      if (slash) throw this.#fs.stat(target).kind === "directory" ? "invalid" : "not-directory";
      return this.#fs.readlink(target);
    } catch (e) {
      throw _errorCode(e);
    }
  }

  /** Removes an empty folder. */
  removeDirectoryAt(path: string): void {
    try {
      // As rmdir(2): `.` is not a name that can be removed.
      if (_LAST_IS_DOT.test(path)) throw "invalid";
      this.#fs.rmdir(this.#at(path)[0]);
    } catch (e) {
      throw _errorCode(e);
    }
  }

  /** Renames `oldPath` to `newPath` in `newDescriptor`, replacing what is there. */
  renameAt(oldPath: string, newDescriptor: Descriptor, newPath: string): void {
    try {
      const [from, fromSlash] = this.#at(oldPath);
      const [to, toSlash] = newDescriptor.#at(newPath);
      if (newDescriptor.#fs !== this.#fs) throw "cross-device";
      if (fromSlash || toSlash) {
        // A trailing slash asks for folders on both sides.
        if (this.#fs.lstat(from).kind !== "directory") throw "not-directory";
        if (toSlash && _existsAt(this.#fs, to) && this.#fs.lstat(to).kind !== "directory") {
          throw "not-directory";
        }
      }
      this.#fs.rename(from, to);
    } catch (e) {
      throw _errorCode(e);
    }
  }

  /** Makes a symbolic link at `newPath` whose content is `oldPath`. */
  symlinkAt(oldPath: string, newPath: string): void {
    try {
      // an absolute target names the root, above a bounded folder
      if (this.#process.bounded && this.#counted && oldPath.startsWith("/")) throw "not-permitted";
      const [target, slash] = this.#at(newPath);
      if (slash) {
        if (!_existsAt(this.#fs, target)) throw "no-entry";
        throw this.#fs.stat(target).kind === "directory" ? "exist" : "not-directory";
      }
      this.#fs.symlink(oldPath, target);
    } catch (e) {
      throw _errorCode(e);
    }
  }

  /** Removes a name that is not a folder. */
  unlinkFileAt(path: string): void {
    try {
      const [target, slash] = this.#at(path);
      if (slash) {
        throw this.#fs.stat(target).kind === "directory" ? "is-directory" : "not-directory";
      }
      this.#fs.unlink(target);
    } catch (e) {
      throw _errorCode(e);
    }
  }

  /** Whether both descriptors name the same object. */
  isSameObject(other: Descriptor): boolean {
    if (other === this) return true;
    if (!(#fs in other) || other.#fs !== this.#fs) return false;
    try {
      const a = this.#handle().stat();
      const b = other.#handle().stat();
      return a.dev === b.dev && a.ino === b.ino;
    } catch {
      return false;
    }
  }

  /** A hash of the identity of the object (device and inode). */
  metadataHash(): MetadataHashValue {
    try {
      return _metadataHash(this.#handle().stat());
    } catch (e) {
      throw _errorCode(e);
    }
  }

  /** {@linkcode metadataHash} of the object at `path`. */
  metadataHashAt(pathFlags: PathFlags, path: string): MetadataHashValue {
    try {
      return _metadataHash(this.#statAt(pathFlags, path));
    } catch (e) {
      throw _errorCode(e);
    }
  }

  /** Called by jco when the guest drops the descriptor. */
  [Symbol.dispose](): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#counted) this.#process.descriptors--;
    if (this.#file) this.#file.release();
    else {
      try {
        this.#dir?.close();
      } catch {
        // Already closed.
      }
    }
  }

  /** The handle, or `bad-descriptor` once closed. */
  #handle(): FileHandle {
    if (this.#closed) throw "bad-descriptor";
    return this.#file ? this.#file.handle : this.#dir!;
  }

  /**
   * The open file, checked for the access asked. As in Wasmtime, folders are
   * `bad-descriptor`, and a file opened without the access is `not-permitted`
   * (`bad-descriptor` for a stream).
   */
  #openFile(
    access?: "read" | "write",
    denied: "not-permitted" | "bad-descriptor" = "not-permitted",
  ): _OpenFile {
    if (this.#closed || this.#file === null) throw "bad-descriptor";
    if (access && !this.#flags[access]) throw denied;
    return this.#file;
  }

  /** The path of the folder; files are `not-directory`. */
  #openDir(): string {
    if (this.#closed) throw "bad-descriptor";
    if (this.#dir === null) throw "not-directory";
    return this.#path;
  }

  /** The layer path of `path` relative to this folder, and whether it ended with `/`. */
  #at(path: string): [string, boolean] {
    const base = this.#openDir();
    if (path === "") throw "no-entry";
    if (path.charCodeAt(0) === 47) throw "not-permitted";
    if (this.#process.bounded && this.#counted) _checkBounded(path);
    const slash = path.charCodeAt(path.length - 1) === 47;
    let rel = path;
    if (_NEEDS_CLEANING.test(path)) {
      rel = path.split("/").filter((part) => part !== "" && part !== ".").join("/");
    }
    if (rel === "") return [base, slash];
    return [base === "/" ? "/" + rel : base + "/" + rel, slash];
  }

  #statAt(pathFlags: PathFlags, path: string): Stat {
    const [target, slash] = this.#at(path);
    const stat = pathFlags.symlinkFollow || slash ? this.#fs.stat(target) : this.#fs.lstat(target);
    if (slash) _requireDirectory(stat);
    return stat;
  }

  /** The sync that the descriptor's flags ask for after each write, if any. */
  #syncAfterWrite(): ((handle: FileHandle) => void) | undefined {
    if (this.#flags.fileIntegritySync) return (h) => h.sync();
    if (this.#flags.dataIntegritySync) return (h) => h.syncData();
    return undefined;
  }
}

/** `wasi:filesystem/types.directory-entry-stream`: a listing taken when it was asked for. */
export class DirectoryEntryStream {
  readonly #entries: DirEntry[];
  #next = 0;

  /** Not for guests: streams come from `read-directory`. */
  constructor(token: symbol, entries: DirEntry[]) {
    if (token !== _TOKEN) throw new TypeError("DirectoryEntryStream has no public constructor");
    this.#entries = entries;
  }

  /**
   * The next entry, or `undefined` after the last. An entry whose host name
   * is not UTF-8 is `illegal-byte-sequence`, as in Wasmtime; the next call
   * goes on after it.
   */
  readDirectoryEntry(): DirectoryEntry | undefined {
    const entry = this.#entries[this.#next];
    if (entry === undefined) return undefined;
    this.#next++;
    if (entry.undecodable) throw "illegal-byte-sequence";
    return { type: _TYPES[entry.kind], name: entry.name };
  }

  /** Called by jco when the guest drops the stream. */
  [Symbol.dispose](): void {
    this.#next = this.#entries.length;
  }
}

/** `wasi:filesystem/types.filesystem-error-code`: the code behind a file stream's error. */
export function filesystemErrorCode(err: IoError): ErrorCode | undefined {
  return _streamCodes.get(err);
}

/** Reads a file from a position: the source of `read-via-stream`. */
class _FileSource implements ByteSource {
  #file: _OpenFile | null;
  #position: number;

  constructor(file: _OpenFile, position: number) {
    this.#file = file;
    this.#position = position;
  }

  read(max: number): Uint8Array | null {
    const file = this.#file;
    if (file === null || this.#position < 0) return null;
    let n: number;
    const buffer = _buffer(Math.min(max, _MAX_READ));
    try {
      n = file.handle.read(buffer, this.#position);
    } catch (e) {
      throw _streamError(e);
    }
    if (n === 0) return null;
    this.#position += n;
    return _keep(buffer, n);
  }

  readable(): boolean {
    return true;
  }

  whenReadable(): Promise<void> {
    return Promise.resolve();
  }

  close(): void {
    this.#file?.release();
    this.#file = null;
  }
}

/** Writes a file from a position, or at its end (position -1): the sink of the write streams. */
class _FileSink implements ByteSink {
  #file: _OpenFile | null;
  #position: number;
  readonly #sync: ((handle: FileHandle) => void) | undefined;

  constructor(file: _OpenFile, position: number, sync: ((handle: FileHandle) => void) | undefined) {
    this.#file = file;
    this.#position = position;
    this.#sync = sync;
  }

  capacity(): number {
    return _WRITE_BUDGET;
  }

  write(bytes: Uint8Array): void {
    const file = this.#file;
    if (file === null) throw _streamError("bad-descriptor");
    if (bytes.length === 0) return;
    try {
      // A stream write takes all of `bytes`: a short write is continued, and
      // a layer that then writes nothing has run out of space.
      let done = 0;
      while (done < bytes.length) {
        const rest = done === 0 ? bytes : bytes.subarray(done);
        const n = this.#position < 0
          ? file.handle.append(rest)
          : file.handle.write(rest, this.#position);
        if (n <= 0) {
          throw new VfsError(
            "ENOSPC",
            "write",
            file.handle.path,
            `${done} of ${bytes.length} bytes`,
          );
        }
        if (this.#position >= 0) this.#position += n;
        done += n;
      }
      this.#sync?.(file.handle);
    } catch (e) {
      throw _streamError(e);
    }
  }

  whenWritable(): Promise<void> {
    return Promise.resolve();
  }

  close(): void {
    this.#file?.release();
    this.#file = null;
  }
}

/**
 * Read buffers are views on a shared slab, handed out once each and never
 * reused: allocating a fresh `Uint8Array` costs more than reading 4 KiB.
 */
const _SLAB = 1 << 20;
let _slab = new ArrayBuffer(_SLAB);
let _slabUsed = 0;

/** A buffer of `length` bytes to read into; {@linkcode _keep} takes what was read. */
function _buffer(length: number): Uint8Array {
  if (length > _SLAB - _slabUsed) {
    if (length > _SLAB / 2) return new Uint8Array(length);
    _slab = new ArrayBuffer(_SLAB);
    _slabUsed = 0;
  }
  return new Uint8Array(_slab, _slabUsed, length);
}

/** The first `n` bytes of a buffer from {@linkcode _buffer}, which then leave the slab. */
function _keep(buffer: Uint8Array, n: number): Uint8Array {
  if (buffer.buffer === _slab) _slabUsed += n;
  return n === buffer.length ? buffer : buffer.subarray(0, n);
}

/** A path whose last component is `.`. */
const _LAST_IS_DOT = /(?:^|\/)\.\/*$/;

/** Cleans `//`, `.` components and a trailing `/` out of a relative path. */
const _NEEDS_CLEANING = /\/\/|(?:^|\/)\.(?:\/|$)|\/$/;

/** `not-permitted` when the `..` of a relative path, taken as written, climb above its start. */
function _checkBounded(path: string): void {
  if (!path.includes("..")) return;
  let depth = 0;
  for (const part of path.split("/")) {
    if (part === "..") {
      if (--depth < 0) throw "not-permitted";
    } else if (part !== "" && part !== ".") depth++;
  }
}

const _TYPES: Record<FileKind, DescriptorType> = {
  "file": "regular-file",
  "directory": "directory",
  "symlink": "symbolic-link",
  "block-device": "block-device",
  "character-device": "character-device",
  "fifo": "fifo",
  "socket": "socket",
  "unknown": "unknown",
};

/** `errno` to `error-code`, as Wasmtime maps them; `EMFILE` and `ENFILE` have no code in WASI 0.2. */
const _CODES: Record<VfsErrorCode, ErrorCode> = {
  ENOENT: "no-entry",
  EEXIST: "exist",
  ENOTDIR: "not-directory",
  EISDIR: "is-directory",
  ENOTEMPTY: "not-empty",
  EACCES: "access",
  EPERM: "not-permitted",
  EROFS: "read-only",
  EXDEV: "cross-device",
  ELOOP: "loop",
  ENAMETOOLONG: "name-too-long",
  EINVAL: "invalid",
  EBADF: "bad-descriptor",
  ENOSPC: "insufficient-space",
  EDQUOT: "quota",
  EMFILE: "insufficient-memory",
  ENFILE: "insufficient-memory",
  ENOMEM: "insufficient-memory",
  EIO: "io",
  EBUSY: "busy",
  EFBIG: "file-too-large",
  ENOTSUP: "unsupported",
  EMLINK: "too-many-links",
  ETXTBSY: "text-file-busy",
  EOVERFLOW: "overflow",
  ESPIPE: "invalid-seek",
  EAGAIN: "would-block",
  EINTR: "interrupted",
  EILSEQ: "illegal-byte-sequence",
  ENODEV: "no-device",
  ENXIO: "no-such-device",
  EPIPE: "pipe",
  EDEADLK: "deadlock",
  ENOLCK: "no-lock",
};

/**
 * The `error-code` for a caught error. Anything that is not a filesystem
 * error is a bug: it is thrown on, and jco turns it into a trap.
 */
function _errorCode(e: unknown): ErrorCode {
  if (typeof e === "string") return e as ErrorCode;
  if (e instanceof VfsError) return _CODES[e.code];
  throw e;
}

function _streamError(e: unknown): StreamError {
  const code = _errorCode(e);
  const error = new IoError(code);
  _streamCodes.set(error, code);
  return { tag: "last-operation-failed", val: error };
}

/** A read offset as a number; -1 beyond what a file can hold (the read finds the end). */
function _offsetForRead(offset: bigint): number {
  return offset > BigInt(Number.MAX_SAFE_INTEGER) ? -1 : Number(offset);
}

/** A write offset or size as a number. */
function _offsetForWrite(offset: bigint): number {
  if (offset > BigInt(Number.MAX_SAFE_INTEGER)) throw "file-too-large";
  return Number(offset);
}

function _requireDirectory(stat: Stat): void {
  if (stat.kind !== "directory") throw "not-directory";
}

function _existsAt(fs: FileSystem, path: string): boolean {
  try {
    fs.lstat(path);
    return true;
  } catch (e) {
    if (e instanceof VfsError && e.code === "ENOENT") return false;
    throw e;
  }
}

function _datetime(ms: number | null, exact?: Timestamp): Datetime | undefined {
  // WASI datetimes are unsigned: a time before 1970 is not reported.
  if (ms === null || !(ms >= 0)) return undefined;
  if (exact) return { seconds: BigInt(exact.seconds), nanoseconds: exact.nanoseconds };
  const seconds = Math.floor(ms / 1000);
  const nanoseconds = Math.min(999_999_999, Math.round((ms - seconds * 1000) * 1e6));
  return { seconds: BigInt(seconds), nanoseconds };
}

function _descriptorStat(stat: Stat): DescriptorStat {
  return {
    type: _TYPES[stat.kind],
    linkCount: BigInt(stat.nlink),
    size: BigInt(stat.size),
    dataAccessTimestamp: _datetime(stat.atimeMs, stat.atimeExact),
    dataModificationTimestamp: _datetime(stat.mtimeMs, stat.mtimeExact),
    statusChangeTimestamp: _datetime(stat.ctimeMs),
  };
}

function _timeSpec(t: NewTimestamp): TimeSpec {
  switch (t.tag) {
    case "no-change":
      return null;
    case "now":
      return "now";
    case "timestamp": {
      if (t.val.seconds > BigInt(Math.floor(Number.MAX_SAFE_INTEGER / 1000))) throw "overflow";
      // to the nanosecond: milliseconds in a double would lose them (a second or more of
      // nanoseconds carries, as in Wasmtime)
      const carry = Math.floor(t.val.nanoseconds / 1e9);
      return { seconds: Number(t.val.seconds) + carry, nanoseconds: t.val.nanoseconds % 1e9 };
    }
  }
}

const _MASK64 = (1n << 64n) - 1n;

/** A 64-bit mix (splitmix64's finalizer). */
function _mix(x: bigint): bigint {
  x = ((x ^ (x >> 30n)) * 0xbf58476d1ce4e5b9n) & _MASK64;
  x = ((x ^ (x >> 27n)) * 0x94d049bb133111ebn) & _MASK64;
  return x ^ (x >> 31n);
}

function _metadataHash(stat: Stat): MetadataHashValue {
  const lower = _mix(((BigInt(stat.dev) << 32n) ^ BigInt(stat.ino)) & _MASK64);
  return { lower, upper: _mix(lower ^ 0x9e3779b97f4a7c15n) };
}

/** The processes whose imports {@linkcode filesystemImports} made, to release them. */
const _processes = new WeakMap<object, _Process>();

/**
 * The `wasi:filesystem` imports for one process, on any layers: the
 * integration point for a mount table.
 *
 * @example
 * ```ts
 * import { filesystemImportsFor } from "./filesystem.ts";
 * import { HostFileSystem } from "../../vfs/mod.ts";
 * const fs = new HostFileSystem(Deno.makeTempDirSync());
 * const imports = filesystemImportsFor([{ guestPath: "/", fs }]);
 * ```
 */
export function filesystemImportsFor(
  preopens: Preopen[],
  options: Pick<FilesystemOptions, "bounded"> = {},
): Record<string, Record<string, unknown>> {
  const imports = unboundFilesystemImports();
  bindFilesystem(imports, preopens, options);
  return imports;
}

/**
 * The `wasi:filesystem` imports of a process whose folders are not known
 * yet: an instance made ahead of its process (`runtime/instance.ts`) is
 * linked with these, and {@linkcode bindFilesystem} gives them the folders
 * before the guest runs. Until then `get-directories` fails.
 */
export function unboundFilesystemImports(): Record<string, Record<string, unknown>> {
  const process = new _Process();
  const getDirectories = (): [Descriptor, string][] => {
    if (!process.preopens) throw new Error("the process's folders were never given");
    return process.preopens.map(({ guestPath, fs, path }) => {
      const handle = fs.open(path ?? "/", { read: true, directory: true });
      return [new Descriptor(_TOKEN, process, fs, handle, {}, false), guestPath];
    });
  };
  const imports = {
    "wasi:filesystem/types": { Descriptor, DirectoryEntryStream, filesystemErrorCode },
    "wasi:filesystem/preopens": { getDirectories },
  };
  _processes.set(imports, process);
  return imports;
}

/** Gives the imports of {@linkcode unboundFilesystemImports} their folders, once. */
export function bindFilesystem(
  imports: object,
  preopens: Preopen[],
  options: Pick<FilesystemOptions, "bounded"> = {},
): void {
  const process = _processes.get(imports);
  if (!process) throw new Error("these are not the filesystem imports of a process");
  if (process.preopens) throw new Error("the process's folders were given already");
  process.preopens = preopens;
  process.bounded = options.bounded === true;
}

/** Options of {@linkcode filesystemImports}. */
export interface FilesystemOptions {
  /**
   * Makes a symbolic link on the host (see `HostFileSystemOptions.symlink`).
   * A worker whose file permissions are scoped to folders cannot do it
   * itself: without this, `symlink-at` fails with `not-permitted`.
   */
  symlink?: (target: string, hostPath: string) => void;
  /**
   * A folder opened below a preopen is a capability for that folder only, as
   * in Wasmtime: a path given to it whose `..` (taken as written) climb above
   * it, and a link made through it with an absolute target, are
   * `not-permitted`. A preopen keeps the rules of a `chroot` (`..` at its
   * root stays there). Without it, every folder has those rules.
   */
  bounded?: boolean;
}

/**
 * The `wasi:filesystem` imports for one process: `types` and `preopens`.
 * Each mount becomes a preopen on a {@linkcode HostFileSystem}.
 *
 * @example
 * ```ts
 * import { filesystemImports } from "./filesystem.ts";
 * const imports = filesystemImports([{ guestPath: "/", hostPath: Deno.makeTempDirSync() }]);
 * // ... instantiate the component with { ...imports, ... }, run it, then:
 * // releaseFilesystem(imports);
 * ```
 */
export function filesystemImports(
  mounts: DirectoryMount[],
  options: FilesystemOptions = {},
): Record<string, Record<string, unknown>> {
  return filesystemImportsFor(mountPreopens(mounts, options), options);
}

/**
 * Each mount as a preopen on a {@linkcode HostFileSystem}; a folder that
 * does not exist or is not a folder is an error that names it.
 */
export function mountPreopens(
  mounts: DirectoryMount[],
  options: Pick<FilesystemOptions, "symlink"> = {},
): Preopen[] {
  return mounts.map(({ guestPath, hostPath }): Preopen => {
    let fs: HostFileSystem;
    try {
      // One process and no one else renaming inside: the caller's links stay as they are.
      fs = new HostFileSystem(hostPath, { symlink: options.symlink, keepHostLinks: true });
    } catch (e) {
      const reason = e instanceof VfsError && e.code === "ENOENT"
        ? "does not exist"
        : e instanceof VfsError && e.code === "ENOTDIR"
        ? "is not a folder"
        : `cannot be opened (${e instanceof Error ? e.message : e})`;
      throw new Error(`the folder to mount at ${guestPath}, ${hostPath}, ${reason}`);
    }
    return { guestPath, fs };
  });
}

/**
 * Closes every file that the process of `imports` still holds. Call it when
 * the process ends: a guest that exits does not drop its descriptors.
 * Descriptors and streams that remain then fail with `bad-descriptor`.
 */
export function releaseFilesystem(imports: object): void {
  const process = _processes.get(imports);
  if (!process) return;
  process.released = true;
  for (const file of [...process.files]) file.close();
}
