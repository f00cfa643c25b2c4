/**
 * An open folder bound to its path, for the layers that have no handle of
 * their own for a folder (host, memory): its methods act on whatever is at
 * {@linkcode FolderHandle.path}.
 *
 * @module
 */
import {
  type FileHandle,
  type FileKind,
  type FileSystem,
  type Stat,
  type TimeSpec,
  VfsError,
} from "./types.ts";

/** A folder handle of `fs` at `path`; `sync` writes the folder through, when the layer can. */
export class FolderHandle implements FileHandle {
  readonly kind: FileKind = "directory";
  readonly path: string;
  readonly #fs: FileSystem;
  readonly #sync: (path: string) => void;
  #closed = false;

  constructor(fs: FileSystem, path: string, sync: (path: string) => void = () => {}) {
    this.#fs = fs;
    this.path = path;
    this.#sync = sync;
  }

  #open(syscall: string): void {
    if (this.#closed) throw new VfsError("EBADF", syscall, this.path);
  }

  read(): number {
    this.#open("read");
    throw new VfsError("EISDIR", "read", this.path);
  }

  write(): number {
    this.#open("write");
    throw new VfsError("EISDIR", "write", this.path);
  }

  append(): number {
    this.#open("write");
    throw new VfsError("EISDIR", "write", this.path);
  }

  setSize(): void {
    this.#open("ftruncate");
    throw new VfsError("EISDIR", "ftruncate", this.path);
  }

  stat(): Stat {
    this.#open("fstat");
    return this.#fs.stat(this.path);
  }

  sync(): void {
    this.#open("fsync");
    this.#sync(this.path);
  }

  syncData(): void {
    this.#open("fdatasync");
    this.#sync(this.path);
  }

  setTimes(atime: TimeSpec, mtime: TimeSpec): void {
    this.#open("futimes");
    this.#fs.setTimes(this.path, atime, mtime, true);
  }

  close(): void {
    this.#open("close");
    this.#closed = true;
  }
}
