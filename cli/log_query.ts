/**
 * `sausage log`'s reading of the journal: a query that follows the scan's
 * time bound (`cut` of PROTOCOL section 7) until it has its entries, with
 * progress on a terminal, and the export of every entry of a range, oldest
 * first, as text, a JSON array or one JSON entry a line.
 *
 * @module
 */
import { type Entry, type LogAnswer, type LogQuery, timeOfId } from "../core/journal.ts";

/** How the entries are printed. */
export type LogFormat = "text" | "json" | "ndjson";

/** The formats `--format` takes. */
export const LOG_FORMATS: readonly LogFormat[] = ["text", "json", "ndjson"];

/**
 * Asks `ask` for `query` and again, older, while an answer was cut by the
 * scan's time bound and fewer than `limit` entries were found; `progress`
 * is told the time of the entry it goes on before. A cut by size ends it:
 * the answer keeps that cut.
 *
 * @example
 * ```ts
 * import { Journal } from "../core/journal.ts";
 * const journal = new Journal(":memory:");
 * journal.event(null, null, "host start");
 * const answer = await searchAll((q) => Promise.resolve(journal.search(q)), { grep: "start" });
 * console.log(answer.entries.length); // 1
 * journal.close();
 * ```
 */
export async function searchAll(
  ask: (query: LogQuery) => Promise<LogAnswer>,
  query: LogQuery,
  progress: (before: string) => void = () => {},
): Promise<LogAnswer> {
  const limit = query.limit ?? 100;
  const pages: Entry[][] = []; // newest first; each page oldest first
  let found = 0;
  const entries = () => pages.toReversed().flat();
  let next: LogQuery = query;
  while (true) {
    const answer = await ask(next);
    pages.push(answer.entries);
    found += answer.entries.length;
    if (answer.cut === undefined) return { entries: entries() };
    if (answer.cut.reason === "size" || found >= limit) {
      return { entries: entries(), cut: answer.cut };
    }
    progress(timeOfId(answer.cut.until));
    next = { ...query, until: answer.cut.until, limit: limit - found };
  }
}

/**
 * Writes `entries` to `out` in `format`, in chunks (an export of millions of
 * entries does not wait on one write a line). `text` is `format` of a batch.
 */
export async function writeEntries(
  entries: Iterable<Entry>,
  format: LogFormat,
  out: { write(bytes: Uint8Array): Promise<number> },
  text: (batch: Entry[]) => string,
): Promise<number> {
  const encoder = new TextEncoder();
  let chunk = "";
  let batch: Entry[] = [];
  let count = 0;
  const flush = async () => {
    if (format === "text" && batch.length > 0) chunk += text(batch) + "\n";
    batch = [];
    const bytes = encoder.encode(chunk);
    chunk = "";
    for (let written = 0; written < bytes.length;) {
      written += await out.write(bytes.subarray(written));
    }
  };
  if (format === "json") chunk = "[";
  for (const entry of entries) {
    if (format === "text") batch.push(entry);
    else if (format === "ndjson") chunk += `${JSON.stringify(entry)}\n`;
    else chunk += `${count === 0 ? "\n  " : ",\n  "}${JSON.stringify(entry)}`;
    count++;
    if (chunk.length > 64 * 1024 || batch.length >= 1000) await flush();
  }
  if (format === "json") chunk += count === 0 ? "]\n" : "\n]\n";
  await flush();
  return count;
}
