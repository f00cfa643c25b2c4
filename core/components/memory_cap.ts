/**
 * Caps the linear memories and tables a core module defines, by rewriting
 * the maximum in its memory and table sections before it is compiled: a
 * `memory.grow` or `table.grow` past the cap then returns -1, as the guest's
 * allocator expects, and nothing else runs on the guest's way.
 *
 * Only the section headers are walked and only those two sections are
 * rebuilt, so this costs a copy of the bytes. Imported memories and tables
 * are left as they are: their maximum is the one of the module that
 * defines them, which is capped too.
 *
 * @module
 */
import { leb, Reader, rewriteSections, SECTION } from "./wasm_sections.ts";

/** Bytes of a wasm page. */
export const PAGE_BYTES = 65536;

/** What {@linkcode capMemory} sets. */
export interface MemoryCap {
  /** Most pages of each defined linear memory. */
  pages: number;
  /** Most elements of each defined table. */
  tableElements: number;
}

/** Elements a table may have in V8. */
const MAX_TABLE_ELEMENTS = 10_000_000;

/** The cap for `memoryMib` MiB: one table element per KiB of memory. */
export function memoryCap(memoryMib: number): MemoryCap {
  return {
    pages: memoryMib * 16,
    tableElements: Math.min(memoryMib * 1024, MAX_TABLE_ELEMENTS),
  };
}

/** Reads limits at `r` and writes them to `out` with the maximum at most `cap`. */
function capLimits(r: Reader, cap: number, out: number[]): void {
  const flags = r.byte();
  const min = r.u();
  const max = flags & 1 ? r.u() : Infinity;
  // the cap never goes below what the module starts with
  const capped = Math.max(min, Math.min(max, cap));
  out.push(flags | 1);
  leb(min, out);
  leb(capped, out);
}

/** Pages a 32-bit memory can have (4 GiB). */
const MEMORY32_PAGES = 65536;

function capMemorySection(bytes: Uint8Array, cap: MemoryCap): number[] {
  const r = new Reader(bytes, 0);
  const out: number[] = [];
  const count = r.u();
  leb(count, out);
  for (let i = 0; i < count; i++) {
    const memory64 = (bytes[r.at] & 4) !== 0;
    capLimits(r, memory64 ? cap.pages : Math.min(cap.pages, MEMORY32_PAGES), out);
  }
  return out;
}

function capTableSection(bytes: Uint8Array, cap: MemoryCap): number[] {
  const r = new Reader(bytes, 0);
  const out: number[] = [];
  const count = r.u();
  leb(count, out);
  for (let i = 0; i < count; i++) {
    const start = r.at;
    const type = r.byte();
    if (type === 0x40) {
      // a table with an initializer: its expression is not parsed, so the rest stays as it is
      for (let j = start; j < bytes.length; j++) out.push(bytes[j]);
      return out;
    }
    if (type === 0x63 || type === 0x64) r.skipLeb(); // (ref null? heaptype)
    for (let j = start; j < r.at; j++) out.push(bytes[j]);
    capLimits(r, cap.tableElements, out);
  }
  return out;
}

/**
 * `module` (core wasm bytes) with the maximum of each memory and table it
 * defines at most `cap`; the same bytes when it defines none.
 *
 * @example
 * ```ts
 * const moduleBytes = await Deno.readFile("plugin.core.wasm"); // a core module
 * const capped = capMemory(moduleBytes, memoryCap(1024));
 * // capped is moduleBytes, or a copy in a new ArrayBuffer
 * const module = await WebAssembly.compile(capped as Uint8Array<ArrayBuffer>);
 * ```
 */
export function capMemory(module: Uint8Array, cap: MemoryCap): Uint8Array {
  return rewriteSections(module, (id, body) => {
    if (id === SECTION.memory) return capMemorySection(body, cap);
    if (id === SECTION.table) return capTableSection(body, cap);
    return undefined;
  });
}
