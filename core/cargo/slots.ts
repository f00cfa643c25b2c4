/**
 * Build slots: cargo target folders in the cache that builds hold one at a
 * time, so that builds of different plugins and worlds (and hosts sharing a
 * cache) run side by side instead of queueing on cargo's lock of one target
 * folder.
 *
 * Slot 0 is `<cache>/cargo/target`, slot i is `<cache>/cargo/target-<i>`.
 * A build takes the first free slot (a `flock` on `<cache>/cargo/slots/<i>.lock`,
 * so other hosts on the same cache see it too). After a build, the slots
 * that have no target folder yet are made as copies of its slot's (`fill`),
 * and a slot found without one when taken is copied from a free slot:
 * cargo's fingerprints do not depend on where the target folder is, so the
 * compiled dependencies are fresh in the copy and only what changed
 * compiles. Only a free slot is copied (a held one may be half written).
 * Slots then go their own ways: a dependency compiled in one is compiled
 * again in another when a build there needs it.
 *
 * @module
 */
import { join } from "node:path";

/** How many builds run at once: one per core, at least 2 and at most 4. */
export const BUILD_SLOTS: number = Math.min(4, Math.max(2, navigator.hardwareConcurrency || 2));

/** How often a build that waits for a slot looks again. */
const WAIT_POLL_MS = 200;

/** A slot a build holds until `release`. */
export interface BuildSlot {
  index: number;
  /** Cargo's target folder of the slot. */
  targetDir: string;
  /** Where the build copies a plugin's source: the same path for each build of it in this slot. */
  workDir(plugin: string): string;
  release(): void;
}

/** The target folder of slot `index` in `cacheDir`. */
export function slotTarget(cacheDir: string, index: number): string {
  return join(cacheDir, "cargo", index === 0 ? "target" : `target-${index}`);
}

/** What a build is told while it waits or a slot is made. */
export interface SlotProgress {
  (text: string): void;
}

/** The build slots of a cache folder. */
export class BuildSlots {
  readonly #cacheDir: string;
  readonly #count: number;

  constructor(cacheDir: string, count: number = BUILD_SLOTS) {
    this.#cacheDir = cacheDir;
    this.#count = count;
  }

  /**
   * The first free slot, waiting while all are held (by this host or
   * another on the same cache); a new slot's target folder is first seeded
   * from a free one. Rejects with the signal's reason when it aborts.
   */
  async acquire(signal: AbortSignal, progress: SlotProgress): Promise<BuildSlot> {
    const locks = join(this.#cacheDir, "cargo", "slots");
    await Deno.mkdir(locks, { recursive: true });
    let told = false;
    for (;;) {
      signal.throwIfAborted();
      for (let i = 0; i < this.#count; i++) {
        const lock = await tryLock(join(locks, `${i}.lock`));
        if (!lock) continue;
        try {
          await this.#seed(i, locks, progress);
        } catch (e) {
          lock.close();
          throw e;
        }
        return {
          index: i,
          targetDir: slotTarget(this.#cacheDir, i),
          workDir: (plugin) => join(this.#cacheDir, "cargo", "work", `${i}-${plugin}`),
          release: () => lock.close(), // closing the file releases its flock
        };
      }
      if (!told) {
        told = true;
        progress(
          `waiting for a build slot: ${this.#count} builds are running on this cache ` +
            "(of this world or others)",
        );
      }
      await abortableSleep(WAIT_POLL_MS, signal);
    }
  }

  /**
   * After a build in slot `from` (released): makes each slot that has no
   * target folder a copy of it, taking both slots' locks; a slot or the
   * source that a build holds meanwhile is left for another time. Answers
   * the slots it made.
   */
  async fill(from: number): Promise<number[]> {
    const locks = join(this.#cacheDir, "cargo", "slots");
    const made: number[] = [];
    for (let i = 0; i < this.#count; i++) {
      if (i === from || await exists(slotTarget(this.#cacheDir, i))) continue;
      const lock = await tryLock(join(locks, `${i}.lock`));
      if (!lock) continue;
      try {
        if (await this.#copyFrom(from, i, locks)) made.push(i);
      } finally {
        lock.close();
      }
    }
    return made;
  }

  /** Makes slot `index`'s target folder a copy of a free slot's, when it has none yet. */
  async #seed(index: number, locks: string, progress: SlotProgress): Promise<void> {
    if (await exists(slotTarget(this.#cacheDir, index))) return;
    for (let j = 0; j < this.#count; j++) {
      if (j === index || !(await exists(slotTarget(this.#cacheDir, j)))) continue;
      progress(`making build slot ${index}: a copy of slot ${j}'s compiled crates`);
      if (await this.#copyFrom(j, index, locks)) return;
    }
  }

  /**
   * Copies slot `from`'s target folder to slot `to`'s (whose lock the caller
   * holds) when `from` is free; false when it is held or the copy failed
   * (then `to` starts empty and compiles what it needs).
   */
  async #copyFrom(from: number, to: number, locks: string): Promise<boolean> {
    const lock = await tryLock(join(locks, `${from}.lock`));
    if (!lock) return false;
    const target = slotTarget(this.#cacheDir, to);
    const tmp = `${target}.tmp-${crypto.randomUUID()}`;
    try {
      const out = await new Deno.Command("cp", {
        args: ["-a", "--reflink=auto", slotTarget(this.#cacheDir, from), tmp],
        stdout: "null",
        stderr: "null",
      }).output();
      if (!out.success) {
        await Deno.remove(tmp, { recursive: true }).catch(() => {});
        return false;
      }
      await Deno.rename(tmp, target);
      return true;
    } finally {
      lock.close();
    }
  }
}

/** The lock file opened and locked exclusively, or null when another holds it. */
async function tryLock(path: string): Promise<Deno.FsFile | null> {
  const file = await Deno.open(path, { read: true, write: true, create: true });
  try {
    if (await file.tryLock(true)) return file;
  } catch (e) {
    file.close();
    throw e;
  }
  file.close();
  return null;
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
