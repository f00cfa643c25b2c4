/**
 * `deno task faults --only disk`: a full disk, on a small tmpfs mounted for
 * the run (so it needs root; skipped with the reason elsewhere).
 *
 * 1. A world on a 32 MiB disk: a plugin (`fsprobe.fill`) writes until the
 *    disk refuses; its error is insufficient-space and what it wrote reads
 *    back whole.
 * 2. The disk filled to its last page from outside: calls go on answering
 *    (their writes refused), the journal holds its entries in memory, and
 *    `cargo.build` is refused at once with the world named.
 * 3. Room again: the journal catches up without a restart, the plugin writes
 *    again, a build (not with `--quick`) succeeds, and after a restart the
 *    journal has every call, those of the full disk too.
 * 4. The build cache on a 16 MiB disk: a build fails with the cache named
 *    once cargo fills it, and the next ones are refused at once.
 *
 * @module
 */
import { join } from "node:path";
import { Host } from "../core/host.ts";
import { initWorld } from "../core/init.ts";
import { findWasmToolchain } from "../core/cargo/toolchain.ts";
import { isNoSpace } from "../core/disk_room.ts";
import { installPlugin, TEST_CACHE_DIR } from "../tests/world.ts";
import { median } from "../bench/stats.ts";

/** What the run found; the figures are in `figures`, what went wrong in `problems`. */
export interface DiskResult {
  ok: boolean;
  /** Why it did not run, when it did not. */
  skipped?: string;
  seconds: number;
  problems: string[];
  figures: {
    /** Bytes the plugin wrote before the disk refused, and how long that took. */
    pluginFilledBytes?: number;
    pluginFillMs?: number;
    /** Calls answered (their writes refused) while the disk was full. */
    callsWhileFull?: number;
    /** Entries the journal held in memory at the most. */
    journalHeld?: number;
    /** From the space freed to the journal written, in milliseconds. */
    journalCaughtUpMs?: number;
    /** Builds refused while the world's disk was full, and their median time. */
    worldRefusals?: number;
    worldRefusedMedianMs?: number;
    /** The build after room came back. */
    buildAfterMs?: number;
    /** The first build on a full cache disk (cargo ran until it filled), then the refusals. */
    cacheFailedMs?: number;
    cacheRefusedMedianMs?: number;
  };
}

/** Why this machine cannot mount a tmpfs for the run, or undefined when it can. */
export function cannotMount(): string | undefined {
  if (Deno.build.os !== "linux") return "a tmpfs needs Linux";
  if (Deno.uid() !== 0) return "mounting a tmpfs needs root";
  const dir = Deno.makeTempDirSync({ prefix: "sausage-mount-probe-" });
  try {
    const out = new Deno.Command("mount", {
      args: ["-t", "tmpfs", "-o", "size=1m", "tmpfs", dir],
      stderr: "piped",
    }).outputSync();
    if (!out.success) return `mount failed: ${new TextDecoder().decode(out.stderr).trim()}`;
    new Deno.Command("umount", { args: [dir] }).outputSync();
    return undefined;
  } catch (e) {
    return `no mount command (${(e as Error).message})`;
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
}

/** Runs a command (mount, umount); its stderr is the error when it fails. */
export async function run(command: string, ...args: string[]): Promise<void> {
  const out = await new Deno.Command(command, { args, stderr: "piped" }).output();
  if (!out.success) {
    throw new Error(`${command} ${args.join(" ")}: ${new TextDecoder().decode(out.stderr)}`);
  }
}

/** A tmpfs of `mib` MiB for the length of `body`. */
async function withSmallDisk<T>(mib: number, body: (dir: string) => Promise<T>): Promise<T> {
  const dir = await Deno.makeTempDir({ prefix: "sausage-faults-disk-" });
  await run("mount", "-t", "tmpfs", "-o", `size=${mib}m`, "tmpfs", dir);
  try {
    return await body(dir);
  } finally {
    await run("umount", dir).catch(() => {});
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/** Writes pages to `path` until the disk refuses. */
export async function fillDisk(path: string): Promise<void> {
  const file = await Deno.open(path, { write: true, create: true });
  try {
    const page = new Uint8Array(4096);
    for (;;) await file.write(page);
  } catch (e) {
    if (!isNoSpace(e)) throw e;
  } finally {
    file.close();
  }
}

/** Runs the full-disk faults; `quick` leaves out the build after room came back. */
export async function diskRun(
  options: { quick: boolean; progress: (text: string) => void },
): Promise<DiskResult> {
  const t0 = performance.now();
  const problems: string[] = [];
  const figures: DiskResult["figures"] = {};
  const done = (skipped?: string): DiskResult => ({
    ok: skipped === undefined && problems.length === 0,
    ...(skipped ? { skipped } : {}),
    seconds: (performance.now() - t0) / 1000,
    problems,
    figures,
  });
  const why = cannotMount();
  if (why) return done(why);
  let toolchain = true;
  try {
    await findWasmToolchain();
  } catch {
    toolchain = false;
    problems.push("no wasm32-wasip2 toolchain: the builds were not tried");
  }
  const check = (ok: boolean, what: string) => {
    if (!ok) problems.push(what);
  };

  await withSmallDisk(32, async (disk) => {
    const root = join(disk, "world");
    await initWorld(root, { installAgent: false, examples: true });
    await installPlugin(root, "fsprobe", "fsprobe");
    const notes: string[] = [];
    let host: Host | undefined = await Host.start({
      world: root,
      cacheDir: TEST_CACHE_DIR,
      installAgent: false,
      onNote: (t) => notes.push(t),
    });
    const calls: string[] = [];
    try {
      await host.discovered;
      const client = host.client("faults-disk");
      const call = async (method: string, params: Record<string, unknown>) => {
        if (method.startsWith("fsprobe.")) calls.push(method.slice(8));
        return await client.request(method, params, { timeoutMs: 600_000 });
      };
      await call("fsprobe.write", { path: "/state/before", text: "written before" });

      options.progress("disk: a plugin fills a 32 MiB world");
      let t = performance.now();
      const filled = (await call("fsprobe.fill", { path: "/state/big", keep: "/state/keep.txt" }))
        .result as Record<string, { ok?: unknown; errno?: string; code?: string }>;
      figures.pluginFillMs = Math.round(performance.now() - t);
      figures.pluginFilledBytes = filled?.size?.ok as number;
      check(filled?.error?.code === "insufficient-space", `fill: ${JSON.stringify(filled?.error)}`);
      check(
        (filled?.read_back?.ok as { first_bad?: unknown })?.first_bad === null,
        "what the plugin wrote did not read back whole",
      );

      options.progress("disk: the disk full to its last page; calls, journal and builds");
      await fillDisk(join(root, "state", "filler"));
      const whileFull = 20;
      for (let i = 0; i < whileFull; i++) {
        const r = await call("fsprobe.write", { path: `/state/during-${i}`, text: "y" });
        check(
          (r.result as { err?: { errno?: string } })?.err?.errno === "ENOSPC",
          `a write on the full disk: ${JSON.stringify(r.result ?? r.error)}`,
        );
      }
      figures.callsWhileFull = whileFull;
      figures.journalHeld = host.journal.unwritten;
      check(host.journal.unwritten > 0, "the journal held no entries while the disk was full");
      check(
        notes.some((n) => /the journal cannot be written/.test(n)),
        "the host did not say that the journal cannot be written",
      );
      if (toolchain) {
        const refused: number[] = [];
        for (let i = 0; i < 5; i++) {
          t = performance.now();
          const r = await call("cargo.build", { plugin: "notes" });
          refused.push(performance.now() - t);
          const data = r.error?.data as { full?: string[] } | undefined;
          check(
            r.error?.code === -32004 && data?.full?.join() === "world",
            `a build on the full world: ${JSON.stringify(r.error ?? r.result).slice(0, 300)}`,
          );
        }
        figures.worldRefusals = refused.length;
        figures.worldRefusedMedianMs = Math.round(median(refused) * 10) / 10;
      }

      options.progress("disk: room again");
      await Deno.remove(join(root, "state", "filler"));
      t = performance.now();
      while (host.journal.unwritten > 0 && performance.now() - t < 10_000) {
        await new Promise((r) => setTimeout(r, 10));
      }
      figures.journalCaughtUpMs = Math.round(performance.now() - t);
      check(host.journal.unwritten === 0, "the journal did not catch up within 10 s");
      const after = await call("fsprobe.write", { path: "/state/after", text: "z" });
      check(
        (after.result as { ok?: string })?.ok === "z",
        `a write after room came back: ${JSON.stringify(after.result ?? after.error)}`,
      );
      if (toolchain && !options.quick) {
        options.progress("disk: a build after room came back");
        t = performance.now();
        const built = await call("cargo.build", { plugin: "notes" });
        figures.buildAfterMs = Math.round(performance.now() - t);
        check(built.error === undefined, `the build after room: ${built.error?.message}`);
      }
      const before = await Deno.readTextFile(join(root, "state", "before")).catch(() => "");
      check(before === "written before", "a file written before the disk filled was lost");
      await host.shutdown();
      host = undefined;

      // every call is in the journal, in order, those of the full disk too
      const reopened = await Host.start({
        world: root,
        cacheDir: TEST_CACHE_DIR,
        services: false,
        installAgent: false,
      });
      try {
        const starts = reopened.journal.query({ grep: "^start (write|fill) " })
          .map((e) => e.line.split(" ")[1]);
        check(
          JSON.stringify(starts) === JSON.stringify(calls),
          `the journal has ${starts.length} of ${calls.length} calls`,
        );
      } finally {
        await reopened.shutdown();
      }
    } finally {
      await host?.shutdown();
    }
  });

  if (toolchain) {
    await withSmallDisk(16, async (cache) => {
      options.progress("disk: a build whose cache disk (16 MiB) fills");
      const root = await Deno.makeTempDir({ prefix: "sausage-faults-world-" });
      let host: Host | undefined;
      try {
        await initWorld(root, { installAgent: false, examples: true });
        host = await Host.start({
          world: root,
          cacheDir: cache,
          services: false,
          installAgent: false,
          onNote: () => {},
        });
        await host.discovered;
        const client = host.client("faults-disk");
        let t = performance.now();
        const failed = await client.request("cargo.build", { plugin: "notes" }, {
          timeoutMs: 600_000,
        });
        figures.cacheFailedMs = Math.round(performance.now() - t);
        check(
          (failed.error?.data as { full?: string[] })?.full?.join() === "cache",
          `a build on a full cache: ${JSON.stringify(failed.error ?? failed.result).slice(0, 300)}`,
        );
        const refused: number[] = [];
        for (let i = 0; i < 5; i++) {
          t = performance.now();
          const r = await client.request("cargo.build", { plugin: "notes" });
          refused.push(performance.now() - t);
          check(
            (r.error?.data as { step?: string })?.step === "checking for room",
            `a build after the cache filled: ${JSON.stringify(r.error ?? r.result).slice(0, 300)}`,
          );
        }
        figures.cacheRefusedMedianMs = Math.round(median(refused) * 10) / 10;
      } finally {
        await host?.shutdown();
        await Deno.remove(root, { recursive: true }).catch(() => {});
      }
    });
  }
  return done();
}
