/**
 * A virtual filesystem: one synchronous interface, {@linkcode FileSystem},
 * and layers that implement it.
 *
 * - {@linkcode HostFileSystem}: a real folder of the host, confined with
 *   `chroot` semantics (no path, `..` or symbolic link leads out).
 * - {@linkcode MemoryFileSystem}: files in memory, with an optional byte budget.
 * - {@linkcode GeneratedFileSystem}: read-only files made by functions at each open.
 * - {@linkcode MountFileSystem}: a table of layers, each at a path.
 * - {@linkcode RemoteFileSystem}: a layer served by another thread over a
 *   synchronous channel ({@linkcode SyncChannel}, {@linkcode FileSystemServer}).
 *
 * @example
 * ```ts
 * import { HostFileSystem, VfsError } from "./mod.ts";
 * const fs = new HostFileSystem(Deno.makeTempDirSync());
 * try {
 *   fs.stat("/missing");
 * } catch (e) {
 *   if (e instanceof VfsError) console.log(e.code); // "ENOENT"
 * }
 * ```
 *
 * @module
 */
export * from "./types.ts";
export { DEFAULT_LINK_PREFIX, HostFileSystem, type HostFileSystemOptions } from "./host_fs.ts";
export { BYTES_PER_NAME, MemoryFileSystem, type MemoryFileSystemOptions } from "./memory.ts";
export { type Mount, MountFileSystem } from "./mounts.ts";
export {
  type GeneratedDir,
  type GeneratedFile,
  GeneratedFileSystem,
  type GeneratedNode,
} from "./generated.ts";
export { CHANNEL_DATA_BYTES, FileSystemServer, RemoteFileSystem, SyncChannel } from "./remote.ts";
