/**
 * `ls` and `cat` as text: {@linkcode formatListing} and {@linkcode formatFile}
 * turn what a front end read (`core/view_files.ts`) into what the console
 * prints.
 *
 * @module
 */
import type { FileContent, Listing } from "../core/view_files.ts";
import { formatClock, indent, PLAIN, type Style } from "./format.ts";

/** Binary files up to this size are shown as a hex dump (a screen of 16 bytes a line). */
export const SCREEN_BYTES = 16 * 24;

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
