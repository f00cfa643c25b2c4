/**
 * Writes that survive a power cut, not only a kill: a killed process leaves
 * its writes in the kernel's page cache, a power cut loses what was never
 * written through. A file is durable once its bytes are synced, and its name
 * once its folder is (a rename or a new file changes the folder).
 *
 * @module
 */

/** Writes a file's bytes and metadata through to the disk (`fsync`). */
export async function syncFile(path: string): Promise<void> {
  const file = await Deno.open(path, { read: true });
  try {
    await file.sync();
  } finally {
    file.close();
  }
}

/**
 * Writes a folder's entries through to the disk (`fsync` of the folder), so
 * that a rename or a new name in it survives a power cut. Windows opens no
 * folder as a file: there, NTFS journals names itself and this does nothing.
 */
export async function syncFolder(path: string): Promise<void> {
  if (Deno.build.os === "windows") return;
  const dir = await Deno.open(path, { read: true });
  try {
    await dir.sync();
  } finally {
    dir.close();
  }
}

/** Writes `bytes` to a new file and syncs it before it is closed. */
export async function writeSynced(path: string, bytes: Uint8Array): Promise<void> {
  const file = await Deno.open(path, { write: true, create: true, truncate: true });
  try {
    let done = 0;
    while (done < bytes.length) done += await file.write(bytes.subarray(done));
    await file.sync();
  } finally {
    file.close();
  }
}
