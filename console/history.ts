/**
 * The console history: one entry a line, oldest first, in
 * `<world>/state/core/console_history`. It keeps the last
 * {@linkcode MAX_HISTORY} entries and is written as lines are entered. A
 * missing or unreadable file is an empty history.
 *
 * @module
 */
import { join } from "node:path";

/** The most entries kept. */
export const MAX_HISTORY = 1000;

/** The history file of a world, from its `state/core` folder. */
export function historyPath(coreStateDir: string): string {
  return join(coreStateDir, "console_history");
}

/** A history backed by a file. */
export class History {
  readonly path: string;
  readonly #entries: string[];
  #writing: Promise<void> = Promise.resolve();
  #failed = false;
  /** Told once when the file cannot be written. */
  onWriteError?: (message: string) => void;

  private constructor(path: string, entries: string[]) {
    this.path = path;
    this.#entries = entries;
  }

  /** Reads the history at `path`; a missing or unreadable file gives an empty history. */
  static async load(path: string): Promise<History> {
    let text = "";
    try {
      text = await Deno.readTextFile(path);
    } catch {
      // no history yet, or one that cannot be read: start empty
    }
    const entries = text.split("\n").filter((line) => line.trim() !== "");
    return new History(path, entries.slice(-MAX_HISTORY));
  }

  /** The entries, oldest first. */
  get entries(): readonly string[] {
    return this.#entries;
  }

  /** The entries, newest first (the order `node:readline` wants). */
  newestFirst(): string[] {
    return [...this.#entries].reverse();
  }

  /**
   * Adds an entered line (without spaces at its end) and writes the file.
   * Blank lines and a repeat of the last entry are not added.
   */
  add(typed: string): void {
    // the space that completion puts after a word means nothing in the history
    const line = typed.trimEnd();
    if (line.trim() === "" || line.includes("\n")) return;
    if (this.#entries.at(-1) === line) return;
    this.#entries.push(line);
    if (this.#entries.length > MAX_HISTORY) {
      this.#entries.splice(0, this.#entries.length - MAX_HISTORY);
    }
    const text = this.#entries.join("\n") + "\n";
    this.#writing = this.#writing.then(() => this.#write(text));
  }

  /** Settles when every added line is in the file (or writing failed). */
  flushed(): Promise<void> {
    return this.#writing;
  }

  async #write(text: string): Promise<void> {
    const tmp = `${this.path}.tmp`;
    try {
      await Deno.writeTextFile(tmp, text);
      await Deno.rename(tmp, this.path);
      this.#failed = false;
    } catch (e) {
      if (!this.#failed) {
        this.onWriteError?.(
          `the history cannot be written to ${this.path}: ${(e as Error).message}`,
        );
      }
      this.#failed = true;
    }
  }
}
