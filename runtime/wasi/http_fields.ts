/**
 * `wasi:http/types.fields` 0.2: the headers and trailers of requests and
 * responses.
 *
 * Names are checked as HTTP tokens and kept in lower case (as Wasmtime's
 * `http` crate keeps them); values are bytes without control characters
 * (horizontal tab allowed). The headers a guest may not set are those of
 * Wasmtime's default list: they belong to the connection, which the host
 * manages. They are also removed from the responses a guest sees.
 *
 * @module
 */

/** `wasi:http/types.header-error`, thrown as a value. */
export type HeaderError =
  | { tag: "invalid-syntax" }
  | { tag: "forbidden" }
  | { tag: "immutable" };

/** Headers a guest may not set, nor see in responses (Wasmtime's `DEFAULT_FORBIDDEN_HEADERS`). */
export const FORBIDDEN_HEADERS: ReadonlySet<string> = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "transfer-encoding",
  "upgrade",
  "host",
  "http2-settings",
]);

/** Most bytes of names and values one fields resource may hold. */
export const MAX_FIELDS_BYTES = 1024 * 1024;

const _TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** Whether `name` is a valid field name (an HTTP token). */
export function isFieldName(name: string): boolean {
  return _TOKEN.test(name);
}

/** Whether `value` is a valid field value: no control characters but tab, no DEL. */
export function isFieldValue(value: Uint8Array): boolean {
  for (const b of value) {
    if ((b < 0x20 && b !== 0x09) || b === 0x7f) return false;
  }
  return true;
}

const INVALID: HeaderError = Object.freeze({ tag: "invalid-syntax" }) as HeaderError;
const FORBIDDEN: HeaderError = Object.freeze({ tag: "forbidden" }) as HeaderError;
const IMMUTABLE: HeaderError = Object.freeze({ tag: "immutable" }) as HeaderError;

/** `wasi:http/types.fields`: an ordered multimap of names to byte values. */
export class Fields {
  #entries: [string, Uint8Array][] = [];
  #bytes = 0;
  #immutable = false;

  /** An empty, mutable fields resource. */
  constructor() {}

  /** Fields with `entries`, checked as {@linkcode append} checks them. */
  static fromList(entries: [string, Uint8Array][]): Fields {
    const fields = new Fields();
    for (const [name, value] of entries) fields.append(name, value);
    return fields;
  }

  /** Fields the host made (response headers): unchecked, immutable, forbidden names left out. */
  static received(entries: Iterable<[string, Uint8Array]>): Fields {
    const fields = new Fields();
    for (const [name, value] of entries) {
      const lower = name.toLowerCase();
      if (!FORBIDDEN_HEADERS.has(lower)) fields.#entries.push([lower, value]);
    }
    fields.#immutable = true;
    return fields;
  }

  /** The values of `name`, in order; none for an invalid name. */
  get(name: string): Uint8Array[] {
    const lower = name.toLowerCase();
    return this.#entries.filter(([n]) => n === lower).map(([, v]) => v.slice());
  }

  /** Whether `name` has a value. */
  has(name: string): boolean {
    const lower = name.toLowerCase();
    return this.#entries.some(([n]) => n === lower);
  }

  /** Replaces the values of `name`. */
  set(name: string, value: Uint8Array[]): void {
    const lower = this.#checkName(name);
    for (const v of value) this.#checkValue(v);
    const added = value.reduce((n, v) => n + lower.length + v.length, 0);
    const removed = this.#sizeOf(lower);
    if (this.#bytes - removed + added > MAX_FIELDS_BYTES) throw INVALID;
    this.#remove(lower);
    for (const v of value) this.#entries.push([lower, v.slice()]);
    this.#bytes += added;
  }

  /** Removes every value of `name`. */
  delete(name: string): void {
    this.#remove(this.#checkName(name));
  }

  /** Adds a value of `name` after the others. */
  append(name: string, value: Uint8Array): void {
    const lower = this.#checkName(name);
    this.#checkValue(value);
    if (this.#bytes + lower.length + value.length > MAX_FIELDS_BYTES) throw INVALID;
    this.#entries.push([lower, value.slice()]);
    this.#bytes += lower.length + value.length;
  }

  /** Every name and value, in order. */
  entries(): [string, Uint8Array][] {
    return this.#entries.map(([n, v]) => [n, v.slice()]);
  }

  /** A mutable copy. */
  clone(): Fields {
    const copy = new Fields();
    copy.#entries = this.#entries.map(([n, v]) => [n, v]);
    copy.#bytes = this.#bytes;
    return copy;
  }

  /** An immutable copy (what `headers()` of a request or response returns). */
  frozenCopy(): Fields {
    const copy = this.clone();
    copy.#immutable = true;
    return copy;
  }

  /** Makes these fields immutable (they now belong to a request or response). */
  freeze(): void {
    this.#immutable = true;
  }

  /** The number of entries. */
  get size(): number {
    return this.#entries.length;
  }

  /** Called by jco when the guest drops the fields. */
  [Symbol.dispose](): void {}

  #checkName(name: string): string {
    if (this.#immutable) throw IMMUTABLE;
    if (!isFieldName(name)) throw INVALID;
    const lower = name.toLowerCase();
    if (FORBIDDEN_HEADERS.has(lower)) throw FORBIDDEN;
    return lower;
  }

  #checkValue(value: Uint8Array): void {
    if (!(value instanceof Uint8Array) || !isFieldValue(value)) throw INVALID;
  }

  #sizeOf(lower: string): number {
    let n = 0;
    for (const [name, value] of this.#entries) if (name === lower) n += name.length + value.length;
    return n;
  }

  #remove(lower: string): void {
    this.#bytes -= this.#sizeOf(lower);
    this.#entries = this.#entries.filter(([n]) => n !== lower);
  }
}

/** A field value as the byte string `fetch` takes (one character per byte). */
export function toByteString(value: Uint8Array): string {
  let s = "";
  for (let i = 0; i < value.length; i += 8192) {
    s += String.fromCharCode(...value.subarray(i, i + 8192));
  }
  return s;
}

/** The bytes of a byte string from `fetch`. */
export function fromByteString(value: string): Uint8Array {
  const out = new Uint8Array(value.length);
  for (let i = 0; i < value.length; i++) out[i] = value.charCodeAt(i) & 0xff;
  return out;
}
