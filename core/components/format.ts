/**
 * What a transpiled component is, and the checks that need no transpiler:
 * the light half of `transpile.ts`, loaded at every start.
 *
 * @module
 */

/** Bump when the preemption instrumentation changes: it is part of the cache key. */
export const INSTRUMENTATION_VERSION = 2;

/** WASI functions that may wait: jco suspends the guest on them (JSPI). */
export const ASYNC_WASI_IMPORTS = [
  "wasi:io/poll#poll",
  "wasi:io/poll#[method]pollable.block",
  "wasi:io/streams#[method]input-stream.blocking-read",
  "wasi:io/streams#[method]input-stream.blocking-skip",
  "wasi:io/streams#[method]output-stream.blocking-flush",
  "wasi:io/streams#[method]output-stream.blocking-write-and-flush",
  "wasi:io/streams#[method]output-stream.blocking-write-zeroes-and-flush",
  "wasi:io/streams#[method]output-stream.blocking-splice",
];

/** The command entry point; called through `WebAssembly.promising`. */
export const ASYNC_WASI_EXPORTS = ["wasi:cli/run#run"];

/**
 * Identifies everything that shapes the output, so that a cached result of
 * another transpiler version is never used.
 */
export const TRANSPILER_FINGERPRINT = [
  "jco-transpile@0.1.1",
  "binaryen@132.0.0",
  `instrument@${INSTRUMENTATION_VERSION}`,
  `async:${ASYNC_WASI_IMPORTS.length}`,
  "utf8:fatal",
  "debug:once",
  "task:lazy",
  "link:direct",
  "link:table",
  "memory:pooled@2",
  "recycle@3",
].join(" ");

/** The runnable form of a component. */
export interface TranspiledComponent {
  /** The jco glue: an ES module exporting `instantiate`. */
  js: string;
  /** Core modules by the file name the glue asks for. */
  modules: Record<string, Uint8Array>;
  /** Imported interfaces without versions, e.g. `wasi:cli/stdout`. */
  imports: string[];
  /** Exported interfaces, e.g. `wasi:cli/run@0.2.6`. */
  exports: string[];
  /** Loop headers instrumented, over all core modules. */
  loops: number;
}

/** Raised for bytes that cannot become a plugin; the message names the cause and the fix. */
export class ComponentError extends Error {
  override name = "ComponentError";
}

const WASM_MAGIC = [0x00, 0x61, 0x73, 0x6d];

/** Checks the header: a component, not a core module, not something else. */
export function checkComponentHeader(bytes: Uint8Array, what: string): void {
  if (bytes.length < 8 || WASM_MAGIC.some((b, i) => bytes[i] !== b)) {
    const start = [...bytes.slice(0, 4)].map((b) => b.toString(16).padStart(2, "0")).join(" ");
    throw new ComponentError(
      `${what} is not WebAssembly (it starts with ${start || "nothing"}): ` +
        "build the plugin with `cargo build --release --target wasm32-wasip2`",
    );
  }
  // bytes 4..8: version and layer. Layer 1 is a component, layer 0 a core module.
  const layer = bytes[6] | (bytes[7] << 8);
  if (layer === 0) {
    throw new ComponentError(
      `${what} is a core WebAssembly module, not a component: build for wasm32-wasip2 ` +
        "(not wasm32-wasip1 or wasm32-unknown-unknown), or wrap it with `wasm-tools component new`",
    );
  }
  if (layer !== 1) throw new ComponentError(`${what} has an unknown WebAssembly layer ${layer}`);
}

/**
 * The names of a component's own imports as its binary spells them, versions
 * included (`wasi:cli/environment@0.2.6`), or `null` when the bytes cannot be
 * read that far (the transpiler then reports what is wrong). jco's list drops
 * the versions, so this is where a version Sausage does not implement shows.
 *
 * @example
 * ```ts
 * const bytes = Deno.readFileSync("plugins/notes/plugin.wasm");
 * componentImportNames(bytes); // ["wasi:cli/environment@0.2.6", …]
 * ```
 */
export function componentImportNames(bytes: Uint8Array): string[] | null {
  let at = 8;
  const byte = (): number => {
    if (at >= bytes.length) throw new RangeError("past the end");
    return bytes[at++];
  };
  const leb = (): number => {
    let value = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      const b = byte();
      value += (b & 0x7f) * 2 ** shift;
      if (b < 0x80) return value;
    }
    throw new RangeError("a number too long");
  };
  const text = (): string => {
    const length = leb();
    if (at + length > bytes.length) throw new RangeError("past the end");
    at += length;
    return new TextDecoder().decode(bytes.subarray(at - length, at));
  };
  const names: string[] = [];
  try {
    while (at < bytes.length) {
      const id = byte();
      const size = leb();
      const end = at + size;
      if (id === 10) {
        // the import section: vec(importname' externdesc)
        for (let n = leb(); n > 0; n--) {
          const form = byte();
          names.push(text());
          if (form === 0x01) text(); // a version suffix
          else if (form !== 0x00) return null;
          const sort = byte();
          if (sort === 0x00) byte(); // a core sort (module): its type index follows
          if (sort === 0x02 || sort === 0x03) {
            if (byte() === 0x00 || sort === 0x02) leb(); // a bound with an index or a value type
          } else leb();
        }
      }
      at = end;
    }
  } catch {
    return null;
  }
  return names;
}

/** Hex sha256 of bytes. */
export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>);
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}
