/**
 * Checks of layer paths, shared by the layers.
 *
 * @module
 */
import { NAME_MAX, PATH_MAX, VfsError } from "./types.ts";

/** Checks a layer path: absolute, no NUL, not too long. */
export function checkPath(path: string, syscall: string): void {
  if (path.charCodeAt(0) !== 47) {
    throw new VfsError("EINVAL", syscall, path, "not an absolute layer path");
  }
  if (path.includes("\0")) throw new VfsError("EINVAL", syscall, path, "NUL in path");
  // A UTF-16 unit is at most 3 UTF-8 bytes: short paths need no counting.
  if (path.length > NAME_MAX / 3) checkLengths(path, syscall);
}

/** Checks the target of a new symbolic link: not empty, no NUL, not too long. */
export function checkTarget(target: string, path: string): void {
  if (target === "") throw new VfsError("ENOENT", "symlink", path, "empty target");
  if (target.includes("\0")) throw new VfsError("EINVAL", "symlink", path, "NUL in target");
  if (target.length > PATH_MAX / 3 && utf8Length(target) > PATH_MAX) {
    throw new VfsError("ENAMETOOLONG", "symlink", path);
  }
}

function checkLengths(path: string, syscall: string): void {
  if (utf8Length(path) > PATH_MAX) throw new VfsError("ENAMETOOLONG", syscall, path);
  for (const name of path.split("/")) {
    if (name.length > NAME_MAX / 3 && utf8Length(name) > NAME_MAX) {
      throw new VfsError("ENAMETOOLONG", syscall, path);
    }
  }
}

/** The length of `text` in UTF-8 bytes. */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

/** Whether the components left are all empty or `.`: the current one is the last. */
export function onlyEmpty(parts: string[]): boolean {
  for (const part of parts) if (part !== "" && part !== ".") return false;
  return true;
}
