/**
 * Whether a disk has room, told by the OS and never by a message's text:
 * an error's code (`ENOSPC`, `EDQUOT`), or a probe write that gets one.
 *
 * A build's compilers say "No space left on device" in their own words and
 * languages; what they said is shown, never parsed. After a failed step the
 * builder writes a probe where the step wrote: a disk that refuses it is the
 * cause.
 *
 * @module
 */
import { statfs } from "node:fs/promises";
import { join } from "node:path";

/** The bytes a probe writes: room for far less than this is a full disk to a build. */
export const PROBE_BYTES = 1024 * 1024;

/** Whether an error is the OS saying that a disk (or a quota on it) is full. */
export function isNoSpace(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return code === "ENOSPC" || code === "EDQUOT";
}

/** What a probe found out about a folder's disk. */
export interface Room {
  /** The probe write was refused with `ENOSPC` or `EDQUOT`. */
  full: boolean;
  /** The bytes free to an unprivileged writer, when the OS says (else undefined). */
  freeBytes?: number;
}

/**
 * Writes `bytes` into a new file in `dir` and removes it: a disk that
 * refuses it is full. Any other failure (no such folder, no permission) is
 * thrown, as it is not about room.
 */
export async function probeRoom(dir: string, bytes = PROBE_BYTES): Promise<Room> {
  const probe = join(dir, `.sausage-room-${crypto.randomUUID()}`);
  let full = false;
  try {
    await Deno.writeFile(probe, new Uint8Array(bytes));
  } catch (e) {
    if (!isNoSpace(e)) throw e;
    full = true;
  } finally {
    await Deno.remove(probe).catch(() => {});
  }
  return { full, freeBytes: await freeBytes(dir) };
}

/** The bytes free to an unprivileged writer on `dir`'s disk, when the OS says. */
export async function freeBytes(dir: string): Promise<number | undefined> {
  try {
    const s = await statfs(dir);
    return Number(s.bavail) * Number(s.bsize);
  } catch {
    return undefined; // an OS without statfs
  }
}
