/**
 * Reading and rewriting the sections of a core wasm module, for the few
 * edits Sausage makes to modules before they are compiled (the memory cap,
 * the exports of jco's shim): only section headers are walked, and only the
 * sections an edit asks for are rebuilt.
 *
 * @example
 * ```ts
 * import { rewriteSections } from "./wasm_sections.ts";
 * const moduleBytes = new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0]); // an empty module
 * const same = rewriteSections(moduleBytes, () => undefined);
 * console.log(same === moduleBytes); // true: nothing asked to change
 * ```
 *
 * @module
 */

/** Section IDs of the binary format. */
export const SECTION = { import: 2, table: 4, memory: 5, export: 7 } as const;

/** A cursor over the bytes of a module or a section. */
export class Reader {
  at: number;
  constructor(readonly bytes: Uint8Array, at = 0) {
    this.at = at;
  }
  byte(): number {
    if (this.at >= this.bytes.length) throw new RangeError("the module ends early");
    return this.bytes[this.at++];
  }
  /** An unsigned LEB128 (up to 64 bits, as a number: limits fit in 2^53). */
  u(): number {
    let result = 0;
    let scale = 1;
    for (;;) {
      const b = this.byte();
      result += (b & 0x7f) * scale;
      if ((b & 0x80) === 0) return result;
      scale *= 128;
    }
  }
  /** Skips a signed LEB128. */
  skipLeb(): void {
    while (this.byte() & 0x80);
  }
  /** A name: a length and that many bytes of UTF-8. */
  name(): string {
    const length = this.u();
    const bytes = this.bytes.subarray(this.at, this.at + length);
    if (bytes.length !== length) throw new RangeError("a name runs past the end of the module");
    this.at += length;
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  }
}

/** Appends `value` as an unsigned LEB128. */
export function leb(value: number, out: number[]): void {
  do {
    let b = value % 128;
    value = Math.floor(value / 128);
    if (value > 0) b |= 0x80;
    out.push(b);
  } while (value > 0);
}

/** The sections of `module` in order: ID, contents, and where each begins and ends. */
export function* sections(
  module: Uint8Array,
): Generator<{ id: number; body: Uint8Array; start: number; end: number }> {
  const r = new Reader(module, 8);
  while (r.at < module.length) {
    const start = r.at;
    const id = r.byte();
    const size = r.u();
    const body = module.subarray(r.at, r.at + size);
    if (body.length !== size) throw new RangeError("a section runs past the end of the module");
    r.at += size;
    yield { id, body, start, end: r.at };
  }
}

/**
 * Memories `module` defines and imports.
 *
 * @example
 * ```ts
 * import { memoryCounts } from "./wasm_sections.ts";
 * const moduleBytes = await Deno.readFile("plugin.core.wasm"); // a main module
 * console.log(memoryCounts(moduleBytes)); // { defined: 1, imported: 0 }
 * ```
 */
export function memoryCounts(module: Uint8Array): { defined: number; imported: number } {
  let defined = 0;
  let imported = 0;
  for (const { id, body } of sections(module)) {
    if (id === SECTION.memory) defined = new Reader(body).u();
    if (id === SECTION.import) imported = importKinds(body).filter((k) => k === KIND.memory).length;
  }
  return { defined, imported };
}

/** The kinds of imports and exports. */
export const KIND = { function: 0, table: 1, memory: 2, global: 3, tag: 4 } as const;

/** The kind of each import in the contents of an import section, in order. */
export function importKinds(body: Uint8Array): number[] {
  return importsOf(body).map((i) => i.kind);
}

/** The imports in the contents of an import section, in order: names and kind. */
export function importsOf(body: Uint8Array): { module: string; name: string; kind: number }[] {
  const r = new Reader(body);
  const imports: { module: string; name: string; kind: number }[] = [];
  for (let n = r.u(); n > 0; n--) {
    const module = r.name();
    const name = r.name();
    const kind = r.byte();
    if (kind === KIND.function) r.u(); // its type
    else if (kind === KIND.table) { // its element type and limits
      skipValueType(r);
      skipLimits(r);
    } else if (kind === KIND.memory) skipLimits(r);
    else if (kind === KIND.global) { // its type and mutability
      skipValueType(r);
      r.byte();
    } else if (kind === KIND.tag) { // its attribute and type
      r.byte();
      r.u();
    } else throw new RangeError(`an import of unknown kind ${kind}`);
    imports.push({ module, name, kind });
  }
  return imports;
}

/** The exports in the contents of an export section, in order: name and kind. */
export function exportsOf(body: Uint8Array): { name: string; kind: number }[] {
  const r = new Reader(body);
  const exports: { name: string; kind: number }[] = [];
  for (let n = r.u(); n > 0; n--) {
    const name = r.name();
    const kind = r.byte();
    r.u(); // its index
    exports.push({ name, kind });
  }
  return exports;
}

/** Skips a value type (a reference type may name its heap type). */
export function skipValueType(r: Reader): void {
  const t = r.byte();
  if (t === 0x63 || t === 0x64) r.skipLeb();
}

/** Skips the limits of a memory or table. */
function skipLimits(r: Reader): void {
  const flags = r.byte();
  r.u();
  if (flags & 1) r.u();
  if (flags & 8) r.u(); // a custom page size
}

/**
 * `module` with each section that `rewrite` gives new contents for replaced
 * by them (`rewrite` gets the section's ID and contents, and returns
 * undefined to keep it); `module` itself when no section changed.
 */
export function rewriteSections(
  module: Uint8Array,
  rewrite: (id: number, body: Uint8Array) => number[] | undefined,
): Uint8Array {
  const parts: Uint8Array[] = [module.subarray(0, 8)];
  let changed = false;
  for (const { id, body, start, end } of sections(module)) {
    const content = rewrite(id, body);
    if (content === undefined) {
      parts.push(module.subarray(start, end));
      continue;
    }
    const header = [id];
    leb(content.length, header);
    parts.push(new Uint8Array(header), new Uint8Array(content));
    changed = true;
  }
  return changed ? concat(parts) : module;
}

/** The parts one after the other, in one array. */
export function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/**
 * `module` exporting only the exports named in `keep`; the rest of it stays
 * as it is (a function no longer exported is still there, unused). An
 * instance makes a JS function for each exported function when it is
 * created, so a module instantiated per process pays for each export it has.
 *
 * @example
 * ```ts
 * import { keepExports } from "./wasm_sections.ts";
 * const shimBytes = await Deno.readFile("plugin.core3.wasm"); // jco's shim module
 * const trimmed = keepExports(shimBytes, new Set(["$imports", "12"]));
 * console.log(trimmed.length <= shimBytes.length); // true
 * ```
 */
export function keepExports(module: Uint8Array, keep: ReadonlySet<string>): Uint8Array {
  return rewriteSections(module, (id, body) => {
    if (id !== SECTION.export) return undefined;
    const r = new Reader(body);
    const kept: number[][] = [];
    const count = r.u();
    for (let i = 0; i < count; i++) {
      const start = r.at;
      const name = r.name();
      r.byte(); // kind
      r.u(); // index
      if (keep.has(name)) kept.push([...body.subarray(start, r.at)]);
    }
    if (kept.length === count) return undefined;
    const out: number[] = [];
    leb(kept.length, out);
    for (const e of kept) out.push(...e);
    return out;
  });
}

/**
 * `bytes` (a module or a component) with a custom section named `tag`
 * appended: the same program, another hash.
 */
export function withCustomSection(bytes: Uint8Array, tag: string): Uint8Array {
  const name = new TextEncoder().encode(tag);
  const payload: number[] = [];
  leb(name.length, payload);
  payload.push(...name, 1);
  const header = [0];
  leb(payload.length, header);
  return concat([bytes, new Uint8Array(header), new Uint8Array(payload)]);
}
