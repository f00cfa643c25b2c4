/**
 * The linear memories of a worker's ended processes, zeroed and kept for the
 * next instance of a module with the same limits (see
 * `core/components/pooled_memory.ts` for how a module is made to take one).
 *
 * A memory goes back only after a clean exit: after a trap or a kill a
 * suspended stack of the guest might still run and write to it. It is
 * zeroed whole, to its real size, so no process sees another's data.
 *
 * @example
 * ```ts
 * import { ProcessMemory } from "./memory_pool.ts";
 * const memory = new ProcessMemory(64); // a process limited to 64 MiB
 * const module = new WebAssembly.Module(new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0]));
 * const instance = new WebAssembly.Instance(module, memory.importsFor(module) ?? {});
 * memory.release(); // after a clean exit: the memory is zeroed and kept
 * ```
 *
 * @module
 */
import {
  POOLED_IMPORTS,
  POOLED_MEMORY_MODULE,
  POOLED_MEMORY_SECTION,
  type PooledMemoryLimits,
} from "./messages.ts";

/** A memory larger than this is dropped at the end of its process, not kept. */
const KEEP_BYTES = 4 * 2 ** 20;
/** Memories kept per set of limits: about as many as a worker runs processes at once. */
const KEEP_COUNT = 8;
/** Pages of a 32-bit memory. */
const MAX_PAGES = 65536;

interface PoolImports {
  limits: PooledMemoryLimits | null;
  pages: boolean;
}
const importsOf = new WeakMap<WebAssembly.Module, PoolImports>();
const kept = new Map<string, WebAssembly.Memory[]>();
/** What linking leaves in the memory a module imports from the pool: the same for each instance. */
interface Image {
  at: number;
  bytes: Uint8Array;
}
const images = new WeakMap<WebAssembly.Module, Image>();

function poolImports(module: WebAssembly.Module): PoolImports {
  let known = importsOf.get(module);
  if (known === undefined) {
    const names = WebAssembly.Module.imports(module)
      .filter((i) => i.module === POOLED_MEMORY_MODULE)
      .map((i) => i.name);
    known = {
      limits: names.includes(POOLED_IMPORTS.memory) ? pooledLimits(module) : null,
      pages: names.includes(POOLED_IMPORTS.pages),
    };
    importsOf.set(module, known);
  }
  return known;
}

/** The limits of the memory `module` imports from the pool, or null when it imports none. */
export function pooledLimits(module: WebAssembly.Module): PooledMemoryLimits | null {
  const [section] = WebAssembly.Module.customSections(module, POOLED_MEMORY_SECTION);
  return section ? JSON.parse(new TextDecoder().decode(section)) as PooledMemoryLimits : null;
}

/** A new memory with limits `l`. */
export function freshMemory(l: PooledMemoryLimits): WebAssembly.Memory {
  return new WebAssembly.Memory({
    initial: l.initial,
    ...(l.maximum === null ? {} : { maximum: l.maximum }),
    shared: l.shared,
  } as WebAssembly.MemoryDescriptor);
}

/** The pooled memory of one process and the size its guest sees. */
export class ProcessMemory {
  readonly #capPages: number | undefined;
  #key = "";
  #memory: WebAssembly.Memory | undefined;
  #pages: WebAssembly.Global | undefined;
  #initialPages = 0;
  /** The module that imports the memory, whose instances all start with the same image. */
  #owner: WebAssembly.Module | undefined;
  /** What linking wrote to the memory (its data segments): from `at`, `bytes`. */
  #image: Image | undefined;

  /** `memoryMib`: the process's memory limit, which caps the memory's maximum. */
  constructor(memoryMib?: number) {
    this.#capPages = memoryMib === undefined ? undefined : memoryMib * 16;
  }

  /** What `module` imports from the pool, to add to its imports; undefined when nothing. */
  importsFor(module: WebAssembly.Module): WebAssembly.Imports | undefined {
    const wanted = poolImports(module);
    if (!wanted.limits && !wanted.pages) return undefined;
    const pages = this.#pages ??= new WebAssembly.Global({ value: "i32", mutable: true }, 0);
    const out: Record<string, WebAssembly.ImportValue> = {};
    if (wanted.pages) out[POOLED_IMPORTS.pages] = pages;
    if (wanted.limits) {
      const l = wanted.limits;
      const declared = l.maximum ?? MAX_PAGES;
      const maximum = Math.max(l.initial, Math.min(declared, this.#capPages ?? declared));
      this.#key = `${l.initial}:${maximum}:${l.shared}`;
      this.#memory = kept.get(this.#key)?.pop() ?? freshMemory({ ...l, maximum });
      pages.value = this.#initialPages = l.initial; // the guest's size, whatever the real one
      this.#owner = module;
      out[POOLED_IMPORTS.memory] = this.#memory;
    }
    return { [POOLED_MEMORY_MODULE]: out };
  }

  /** Bytes the guest sees in its memory; undefined when it has no pooled one. */
  get bytes(): number | undefined {
    return this.#memory && this.#pages ? this.#pages.value * 65536 : undefined;
  }

  /**
   * Keeps what the memory holds right after linking, for
   * {@linkcode ProcessMemory.restore}: the image an earlier instance of the
   * same module kept (every instance of it starts with the same), or what
   * the memory holds now, read once per module (2 to 6 ms in a cold worker
   * for a 1 MiB memory). False when there is no pooled memory.
   */
  keepImage(): boolean {
    if (!this.#memory || !this.#pages || !this.#owner) return false;
    const known = images.get(this.#owner);
    if (known) {
      this.#image = known;
      return true;
    }
    const buffer = this.#memory.buffer;
    // by words: a memory is whole pages, and the image may start and end on a word
    const words = new Uint32Array(buffer);
    let start = 0;
    while (start < words.length && words[start] === 0) start++;
    let end = words.length;
    while (end > start && words[end - 1] === 0) end--;
    this.#image = { at: start * 4, bytes: new Uint8Array(buffer.slice(start * 4, end * 4)) };
    images.set(this.#owner, this.#image);
    return true;
  }

  /**
   * Puts the memory back as {@linkcode ProcessMemory.keepImage} found it,
   * zeroed to its real size, with the guest's size as linking left it, for
   * the next process of the same instance; only after a clean exit. False
   * (and nothing done) when it has no image or grew past what is kept.
   */
  restore(): boolean {
    const image = this.#image;
    if (!this.#memory || !this.#pages || !image) return false;
    const buffer = this.#memory.buffer;
    if (buffer.byteLength > KEEP_BYTES) return false;
    const bytes = new Uint8Array(buffer);
    bytes.fill(0);
    bytes.set(image.bytes, image.at);
    this.#pages.value = this.#initialPages;
    return true;
  }

  /** Bytes of the linear memory it holds, its real size (0 once released). */
  get heldBytes(): number {
    return this.#memory?.buffer.byteLength ?? 0;
  }

  /** Zeroes the memory and keeps it for the next process; only after a clean exit. */
  release(): void {
    const memory = this.#memory;
    this.#memory = undefined;
    if (!memory) return;
    const buffer = memory.buffer;
    if (buffer.byteLength > KEEP_BYTES) return;
    let list = kept.get(this.#key);
    if (!list) kept.set(this.#key, list = []);
    if (list.length >= KEEP_COUNT) return;
    new Uint8Array(buffer).fill(0);
    list.push(memory);
  }
}
