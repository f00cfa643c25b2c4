/**
 * A stand-in for `wasi:filesystem` with no preopens, used until the full
 * implementation in `filesystem.ts` lands.
 *
 * @module
 */
import type { DirectoryMount } from "../messages.ts";

/** `wasi:filesystem/types.descriptor` (never handed out here). */
export class Descriptor {}
/** `wasi:filesystem/types.directory-entry-stream` (never handed out here). */
export class DirectoryEntryStream {}

/** The `wasi:filesystem` interfaces without any preopen. */
export function filesystemImports(
  _mounts: DirectoryMount[],
): Record<string, Record<string, unknown>> {
  return {
    "wasi:filesystem/types": {
      Descriptor,
      DirectoryEntryStream,
      filesystemErrorCode: () => undefined,
    },
    "wasi:filesystem/preopens": { getDirectories: () => [] },
  };
}
