/**
 * What surviving a power cut costs (DECISIONS, "Power loss and a full
 * disk"): each durable write with its syncs and without them, interleaved in
 * the same run so that both see the same disk.
 *
 * - `core.activate` of a known version of `notes` (notes_v1 and notes_v2 in
 *   turn: nothing to load or discover, so the files are most of it), with
 *   the host's `activation.durable` on and off;
 * - the SDK's `write_atomic` of 8 KiB and an agent's session commit, under
 *   WASI in `sausage test` (the agent's `store::durability_costs`, run with
 *   `--ignored`): synced, and the same write and rename without syncs;
 * - the host's journal, one entry a transaction, with SQLite's `synchronous`
 *   NORMAL and FULL (WAL both).
 *
 * @module
 */
import { join } from "node:path";
import type { Figure } from "../figures.ts";
import { createWorld, removeWorld, startHost } from "../fixture.ts";
import { pick, type Section } from "../section.ts";
import { summarize } from "../stats.ts";
import type { Host } from "../../core/host.ts";
import { Journal } from "../../core/journal.ts";
import { agentTestsUnderWasi } from "../../plugins/agent/wasi_tests.ts";
import { testPlugin } from "../../tests/setup.ts";

/** Medians of the agent's `durability_costs` test, in milliseconds. */
interface WasiCosts {
  rounds: number;
  commit_synced_ms: number;
  commit_unsynced_ms: number;
  write_atomic_synced_ms: number;
  write_atomic_unsynced_ms: number;
}

/** Runs the agent's `store::durability_costs` under WASI and reads its medians. */
async function wasiCosts(): Promise<WasiCosts> {
  const { success, text, stage } = await agentTestsUnderWasi({
    release: true,
    testArgs: ["--ignored", "--nocapture", "durability_costs"],
  });
  if (!success) throw new Error(`the agent's durability_costs failed:\n${text}`);
  // the test writes its medians into the crate's folder, which it sees at its own path
  const written = join(stage, "durability.json");
  const costs = JSON.parse(await Deno.readTextFile(written)) as WasiCosts;
  await Deno.remove(written);
  return costs;
}

/** Milliseconds per entry of a journal appended and flushed one entry at a time. */
function journalEntryMs(journal: Journal, entries: number): number[] {
  const samples: number[] = [];
  for (let i = 0; i < entries; i++) {
    const t = performance.now();
    journal.event(null, null, `bench entry ${i}`);
    journal.flush();
    samples.push(performance.now() - t);
  }
  return samples;
}

/** Waits until the processes that follow an activation have ended. */
async function settle(host: Host): Promise<void> {
  const deadline = performance.now() + 10_000;
  while (host.processes.list().length > 0 && performance.now() < deadline) {
    await new Promise((r) => setTimeout(r, 5));
  }
}

export const durability: Section = {
  name: "durability",
  group: "host",
  summary: "syncs for a power cut: activation, write_atomic, session commit, journal NORMAL/FULL",
  async run(ctx) {
    const rounds = pick(ctx, 20, 6);
    const journalEntries = pick(ctx, 400, 100);
    const figures: Figure[] = [];
    const ms = (name: string, label: string, values: number[], method: string): Figure => {
      const s = summarize(values);
      return {
        name,
        label,
        unit: "ms",
        median: s.median,
        p99: s.p99,
        samples: values,
        runs: values.length,
        warmup: 1,
        method,
      };
    };
    const ratio = (name: string, label: string, on: number, off: number): Figure => ({
      name,
      label,
      unit: "x",
      median: on / off,
      runs: 1,
      warmup: 0,
      method: "the median with syncs over the median without, same run",
    });

    // activation
    ctx.progress(`durability: ${rounds} activations with syncs and ${rounds} without`);
    const root = await createWorld({ notes: "notes_v1" });
    let host: Host | undefined;
    try {
      const builds = join(root, "state", "builds");
      await Deno.mkdir(builds, { recursive: true });
      for (const crate of ["notes_v1", "notes_v2"]) {
        await Deno.copyFile(await testPlugin(crate), join(builds, `${crate}.wasm`));
      }
      const h = host = await startHost(root, { services: false, onNote: () => {} });
      const client = h.client("bench-durability");
      let turn = 0;
      const activate = async (durable: boolean) => {
        h.activation.durable = durable;
        const wasm = `/state/builds/${turn++ % 2 === 0 ? "notes_v2" : "notes_v1"}.wasm`;
        const t = performance.now();
        const r = await client.request("core.activate", { plugin: "notes", wasm });
        const took = performance.now() - t;
        if (r.error) throw new Error(`core.activate ${wasm}: ${r.error.message}`);
        await settle(h);
        return took;
      };
      await activate(true); // both versions known from here on
      await activate(false);
      const on: number[] = [];
      const off: number[] = [];
      for (let i = 0; i < rounds; i++) {
        // the order alternates, so that neither always follows the other
        if (i % 2 === 0) {
          on.push(await activate(true));
          off.push(await activate(false));
        } else {
          off.push(await activate(false));
          on.push(await activate(true));
        }
      }
      h.activation.durable = true;
      const a = ms(
        "activation.synced",
        "activate a known version, synced",
        on,
        "core.activate of notes_v1 and notes_v2 in turn; the new plugin.wasm fsynced before " +
          "its rename, its folder after",
      );
      const b = ms(
        "activation.unsynced",
        "activate a known version, no syncs",
        off,
        "the same, host.activation.durable = false",
      );
      figures.push(a, b, ratio("activation.ratio", "  synced / unsynced", a.median, b.median));
    } finally {
      await host?.shutdown();
      await removeWorld(root);
    }

    // write_atomic and the session commit, under WASI
    ctx.progress("durability: the agent's durability_costs under WASI (builds the agent's tests)");
    const wasi = await wasiCosts();
    const wasiFigure = (name: string, label: string, median: number, method: string): Figure => ({
      name,
      label,
      unit: "ms",
      median,
      runs: wasi.rounds,
      warmup: 0,
      method,
    });
    figures.push(
      wasiFigure(
        "write_atomic.synced",
        "write_atomic 8 KiB, synced",
        wasi.write_atomic_synced_ms,
        "sausage_plugin::write_atomic of 8 KiB under WASI (sausage test): file fsynced, " +
          "renamed, folder fsynced through wasi:filesystem",
      ),
      wasiFigure(
        "write_atomic.unsynced",
        "write_atomic 8 KiB, no syncs",
        wasi.write_atomic_unsynced_ms,
        "the same write and rename without syncs",
      ),
      ratio(
        "write_atomic.ratio",
        "  synced / unsynced",
        wasi.write_atomic_synced_ms,
        wasi.write_atomic_unsynced_ms,
      ),
      wasiFigure(
        "commit.synced",
        "session commit, synced",
        wasi.commit_synced_ms,
        "the agent's Session::commit of one step: journal appended and fdatasynced, " +
          "state.json by write_atomic",
      ),
      wasiFigure(
        "commit.unsynced",
        "session commit, no syncs",
        wasi.commit_unsynced_ms,
        "the same commit without syncs",
      ),
      ratio(
        "commit.ratio",
        "  synced / unsynced",
        wasi.commit_synced_ms,
        wasi.commit_unsynced_ms,
      ),
    );

    // the journal
    ctx.progress(`durability: ${journalEntries} journal entries, NORMAL and FULL`);
    const dir = await Deno.makeTempDir({ prefix: "sausage-bench-journal-" });
    try {
      const normal = new Journal(join(dir, "normal.sqlite"), { synchronous: "NORMAL" });
      const full = new Journal(join(dir, "full.sqlite"), { synchronous: "FULL" });
      const n: number[] = [];
      const f: number[] = [];
      journalEntryMs(normal, 20); // warm-up
      journalEntryMs(full, 20);
      for (let i = 0; i < 10; i++) {
        n.push(...journalEntryMs(normal, journalEntries / 10));
        f.push(...journalEntryMs(full, journalEntries / 10));
      }
      normal.close();
      full.close();
      const a = ms(
        "journal.normal",
        "journal entry, synchronous NORMAL",
        n,
        "Journal.event then flush, one entry a transaction, WAL, synchronous = NORMAL (the host's)",
      );
      const b = ms(
        "journal.full",
        "journal entry, synchronous FULL",
        f,
        "the same with synchronous = FULL: an fsync of the WAL at every commit",
      );
      figures.push(a, b, ratio("journal.ratio", "  FULL / NORMAL", b.median, a.median));
    } finally {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
    return figures;
  },
};
