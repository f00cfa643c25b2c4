/**
 * Ctrl-R: the reverse incremental search of the history, as in bash. Each
 * key typed narrows the search to the newest entry that holds the query;
 * Ctrl-R again goes to the next older one.
 *
 * @module
 */

/** One search through the history (newest entry first). */
export class HistorySearch {
  readonly #entries: readonly string[];
  #query = "";
  /** The index in `entries` of the match shown; -1 when nothing matches. */
  #at = -1;
  #failed = false;

  /** Starts a search over `newestFirst` (the history, newest entry first). */
  constructor(newestFirst: readonly string[]) {
    this.#entries = newestFirst;
  }

  /** What was typed to search. */
  get query(): string {
    return this.#query;
  }

  /** The entry found, or "" when none (yet). */
  get match(): string {
    return this.#at >= 0 ? this.#entries[this.#at] : "";
  }

  /** Where the query starts in the match (for the cursor), or 0. */
  get offset(): number {
    return Math.max(0, this.match.indexOf(this.#query));
  }

  /** The prompt shown while searching, as bash has it. */
  get prompt(): string {
    return `(${this.#failed ? "failed " : ""}reverse-i-search)\`${this.#query}': `;
  }

  /** Adds text to the query: the newest entry from the current match on that holds it. */
  type(text: string): void {
    this.#query += text;
    this.#find(Math.max(0, this.#at));
  }

  /** Removes the query's last character, and searches again from the newest entry. */
  backspace(): void {
    this.#query = this.#query.slice(0, -1);
    this.#find(0);
  }

  /** Ctrl-R again: the next older entry that holds the query. */
  older(): void {
    if (this.#query === "") return;
    const before = this.#at;
    this.#find(this.#at + 1);
    if (this.#at === -1 && before >= 0) {
      this.#at = before; // nothing older: stay, as bash does, and say that it failed
      this.#failed = true;
    }
  }

  #find(from: number): void {
    this.#failed = false;
    if (this.#query === "") {
      this.#at = -1;
      return;
    }
    for (let i = from; i < this.#entries.length; i++) {
      if (this.#entries[i].includes(this.#query)) {
        this.#at = i;
        return;
      }
    }
    this.#at = -1;
    this.#failed = true;
  }
}
