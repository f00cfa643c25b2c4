/**
 * The journal of a host that runs for months (PROTOCOL section 7):
 *
 * - entries written per second at full speed, retention on (goal: at least
 *   25,000/s);
 * - the file's largest size while many times its `journal_mib` is written,
 *   against that bound (goal: at most 1);
 * - a `grep` for the oldest entry of a journal of 1M and of 10M entries,
 *   following `cut` as `sausage log` does (goals: 1 s and 3 s);
 * - the longest the event loop waits while a prune runs (goal: 20 ms).
 *
 * Each journal is a file of its own in a temporary folder; lines look like a
 * plugin's log (about 90 bytes).
 *
 * @module
 */
import { join } from "node:path";
import type { Figure } from "../figures.ts";
import type { Section } from "../section.ts";
import { Journal } from "../../core/journal.ts";
import { searchAll } from "../../cli/log_query.ts";

const MiB = 1024 * 1024;

/** A line like a plugin's: the number makes each one unique. */
function line(i: number): string {
  return `request ${i} handled in ${i % 97} ms for user${i % 1000} path /api/items/${
    i % 5000
  } status ok`;
}

/**
 * Writes `n` entries as a busy host does (a transaction of 1,000 a turn of
 * the event loop); calls `each` after each transaction. Resolves the entries written per second.
 */
async function write(journal: Journal, n: number, each: () => void = () => {}): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    journal.append("plugin-1", "plugin", "stderr", line(i));
    if (i % 1000 === 999) {
      // a turn of the host's event loop: a transaction, then whatever else waits (a prune)
      journal.flush();
      each();
      await new Promise((r) => setTimeout(r, 0));
    }
  }
  journal.flush();
  return n / ((performance.now() - t0) / 1000);
}

/** Seconds to find the oldest entry by `grep`, following `cut` to it. */
async function grepOldest(journal: Journal): Promise<number> {
  const t0 = performance.now();
  const answer = await searchAll((q) => Promise.resolve(journal.search(q)), {
    grep: `^${line(0)}$`,
    limit: 1,
  });
  const seconds = (performance.now() - t0) / 1000;
  if (answer.entries.length !== 1) throw new Error("the oldest entry was not found");
  return seconds;
}

/** The longest gap between ticks of a 1 ms timer while `work` runs, in milliseconds. */
async function longestStall(work: () => Promise<unknown>): Promise<number> {
  let last = performance.now();
  let longest = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
  }, 1);
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  return longest;
}

function figure(
  name: string,
  label: string,
  unit: string,
  value: number,
  goal?: Figure["goal"],
): Figure {
  return {
    name,
    label,
    unit,
    median: value,
    runs: 1,
    warmup: 0,
    samples: [value],
    ...(goal ? { goal } : {}),
  };
}

/** The journal section. */
export const journal: Section = {
  name: "journal",
  group: "host",
  summary: "the journal: writes per second, size within journal_mib, grep at 1M and 10M, " +
    "the stall of a prune",
  async run(ctx) {
    const figures: Figure[] = [];
    const dir = await Deno.makeTempDir({ prefix: "sausage-bench-journal-" });
    try {
      // a bound many times smaller than what is written: retention at work all along
      const bound = ctx.quick ? 8 : 64;
      const written = ctx.quick ? 300_000 : 2_000_000;
      ctx.progress(`${written} entries into a journal of journal_mib ${bound}`);
      const pruned = new Journal(join(dir, "pruned.sqlite"), {
        retention: { mib: bound, days: 90 },
      });
      let largest = 0;
      const rate = await write(pruned, written, () => {
        largest = Math.max(largest, pruned.fileBytes());
      });
      await pruned.prune();
      largest = Math.max(largest, pruned.fileBytes());
      pruned.close();
      figures.push(
        figure("write", "entries written per second (retention on)", "/s", rate, {
          op: ">=",
          value: 25_000,
        }),
        figure(
          "bound",
          `largest file while ${written / 1e6}M entries were written / journal_mib ${bound}`,
          "x",
          largest / (bound * MiB),
          { op: "<=", value: 1 },
        ),
      );

      ctx.progress("the stall of a prune");
      const full = new Journal(join(dir, "stall.sqlite"));
      await write(full, ctx.quick ? 100_000 : 400_000);
      const size = full.usedBytes();
      full.close();
      // opened again with a bound a third of its size: one long prune
      const stalled = new Journal(join(dir, "stall.sqlite"), {
        retention: { mib: Math.max(1, Math.floor(size / 3 / MiB)), days: 90 },
      });
      const stall = await longestStall(() => stalled.prune());
      stalled.close();
      figures.push(
        figure("prune.stall", "longest wait of the event loop while a prune runs", "ms", stall, {
          op: "<=",
          value: 20,
        }),
      );

      for (const millions of ctx.quick ? [0.2] : [1, 10]) {
        const n = millions * 1_000_000;
        ctx.progress(`grep for the oldest of ${millions}M entries`);
        const big = new Journal(join(dir, `grep-${millions}.sqlite`), {
          retention: { mib: 1024 * 1024, days: 36_500 },
        });
        await write(big, n);
        const seconds = await grepOldest(big);
        big.close();
        figures.push(
          figure(
            `grep.${millions}m`,
            `grep for the oldest of ${millions}M entries (following cut)`,
            "s",
            seconds,
            millions >= 10 ? { op: "<=", value: 3 } : { op: "<=", value: 1 },
          ),
        );
        await Deno.remove(join(dir, `grep-${millions}.sqlite`));
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
    return figures;
  },
};
