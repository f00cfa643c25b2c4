/**
 * `deno task faults`: the fault suite. Attacks on a real host, each followed
 * by the checks of `checks.ts`; a randomized run of healthy and faulty
 * calls; and crash consistency (the host killed with SIGKILL in the middle of
 * its work, then the world reopened). Prints a table and writes it all to
 * `bench/results/<time>-faults.json`.
 *
 * @module
 */
import { join } from "node:path";
import { parseArgs } from "node:util";
import pc from "picocolors";
import { describeMachine } from "../bench/figures.ts";
import { gitState, resultsFileName, writeResults } from "../bench/results.ts";
import { buildTestPlugins, testPlugin } from "../tests/setup.ts";
import { TEST_CACHE_DIR } from "../tests/world.ts";
import { type Attack, type AttackContext, ATTACKS, Unexpected } from "./attacks.ts";
import { type CheckResult, runChecks, setWorld, takeBaseline } from "./checks.ts";
import { CRASH_KINDS, type CrashResult, crashRun } from "./crash.ts";
import { attackWorld, HostProcess, limitsYaml, mib } from "./harness.ts";
import { HTTP_ATTACKS, httpBaseline, httpChecks } from "./http_attacks.ts";
import { type RandomResult, randomRun } from "./random.ts";
import { type SoakOptions, type SoakResult, soakRun } from "./soak.ts";
import { type DiskResult, diskRun } from "./disk.ts";

const REPO_ROOT = new URL("..", import.meta.url).pathname;

/** Exit codes of `deno task faults`. */
export const ExitCode = {
  /** Every attack passed its checks, the randomized run and the crash rounds met their goals. */
  Ok: 0,
  /** An attack failed a check, or the randomized run or a crash round missed its goal. */
  Failed: 1,
  /** Bad arguments. */
  Usage: 2,
  /** The suite could not run: the test plugins did not build, or no host started. */
  Setup: 3,
} as const;

/** The watchdog's bounds: the host is killed past them and the attack fails. */
export const WATCHDOG = { rssBytes: 3 * 2 ** 30, attackMs: 60_000 } as const;

const USAGE = `Usage: deno task faults [options]

Attacks a real Sausage host (a subprocess, watched: killed past ${
  WATCHDOG.rssBytes / 2 ** 30
} GiB RSS
or ${WATCHDOG.attackMs / 1000} s per attack), checks after each attack that the host is up,
another plugin answers within 2 s, bystanders live, /proc, locks, the journal,
memory and open files are back; then the HTTP side under attack (the web
server, /mcp and the control endpoint: after each, a call answered within 1 s
through each, their connections back); then a randomized run of healthy and faulty
calls; then crash consistency: the host killed with SIGKILL during a journal
write, an activation, a cargo.build and an agent's tool call, and the world
reopened; then a full disk (a world and a build cache on small tmpfs, as
root): a plugin and builds fill them, calls get clear errors, the journal
holds its entries and catches up once there is room; then the agent's soak:
turns in three sessions against a scripted model that waits 0-2 s (sometimes
25-60 s), stopped mid-stream, mid-tool and mid-build, the host killed and
started again. Prints a table and writes bench/results/<time>-faults.json.

Options:
  --quick            smaller attacks, 500 random calls, 1 crash round each
  --long             100 crash rounds of each kind (default 3)
  --calls <n>        calls of the randomized run (default 10000; --quick 500)
  --seed <n>         the randomized run's seed (default: drawn, and printed)
  --rounds <n>       crash rounds of each kind
  --turns <n>        turns of the agent's soak (default 240; --quick 60)
  --only <names>     attacks by name, or the parts: attacks, http, random, crash,
                     disk, soak
                     (comma-separated, repeatable)
  --list             the attacks and the crash kinds, then exit
  --out <dir>        where the results file goes (default bench/results)
  --no-save          print the table only
  -h, --help         this text

Exit codes:
  0  every attack passed every check; every random caller was answered as the
     protocol says and nothing leaked; every crash round reopened intact; every
     turn of the soak ended, no agent process was left, every history is whole
  1  an attack failed a check (or the watchdog killed the host), or the
     randomized run or a crash round missed its goal
  2  bad arguments
  3  the suite could not run (the test plugins did not build, no host started)

NO_COLOR=1 turns colours off.`;

/** One attack's row. */
export interface AttackResult {
  name: string;
  summary: string;
  ok: boolean;
  /** `ok`, or what failed. */
  result: string;
  note: string;
  ms: number;
  peakRssMiB: number;
  /** The slowest answer of another plugin while the attack ran (called every 250 ms). */
  duringMaxMs: number;
  /** Those calls that got no answer within 5 s. */
  duringUnanswered: number;
  checks: CheckResult[];
}

/** Builds the test plugins, waiting and trying again while another crate of the workspace is broken. */
async function buildPlugins(note: (t: string) => void): Promise<void> {
  for (let attempt = 1;; attempt++) {
    try {
      await buildTestPlugins();
      await testPlugin("hostile");
      return;
    } catch (e) {
      if (attempt >= 3) throw e;
      note(`the test plugins did not build (attempt ${attempt}); trying again in 30 s`);
      await new Promise((r) => setTimeout(r, 30_000));
      // a new process-wide build: setup.ts caches the failed promise
      const cmd = new Deno.Command(Deno.execPath(), {
        args: ["run", "--allow-all", join(REPO_ROOT, "tests", "setup.ts")],
        stdout: "null",
        stderr: "null",
      });
      if ((await cmd.output()).success) return;
    }
  }
}

/** A host with its bystanders: the boot service that holds a lock, and an attached call. */
async function startHost(root: string): Promise<HostProcess> {
  const h = await HostProcess.start(root, TEST_CACHE_DIR);
  setWorld(h, root);
  h.watch(WATCHDOG.rssBytes);
  // answered only when the host stops
  h.order({ op: "call", method: "bystander.wait", params: {} }, 2 ** 31 - 1).catch(() => {});
  const deadline = performance.now() + 10_000;
  while (performance.now() < deadline) {
    const s = await h.state();
    if (s.processes.filter((p) => p.plugin === "bystander").length >= 2) return h;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("the bystanders did not start");
}

async function runAttack(
  attack: Attack,
  ctx: AttackContext,
  note: (t: string) => void,
): Promise<AttackResult> {
  const h = ctx.host;
  const http = HTTP_ATTACKS.includes(attack);
  const httpBase = http ? await httpBaseline(h) : undefined;
  const base = await takeBaseline(h);
  h.resetPeak();
  const started = performance.now();
  let noteText = "";
  let failure: string | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      h.tripped ??= { reason: `watchdog: the attack ran past ${WATCHDOG.attackMs / 1000} s` };
      h.kill();
      reject(new Error(h.tripped.reason));
    }, WATCHDOG.attackMs);
  });
  // another plugin is called every 250 ms while the attack runs: how long the others wait
  let probing = true;
  let slowest = 0;
  let unanswered = 0;
  const prober = (async () => {
    while (probing && h.alive) {
      const t = performance.now();
      const a = await h.call("other.echo", { during: true }, { timeoutMs: 5000 })
        .catch(() => undefined);
      if (!probing) break;
      if (!a?.response) unanswered++;
      slowest = Math.max(slowest, performance.now() - t);
      await new Promise((r) => setTimeout(r, 250));
    }
  })();
  try {
    noteText = await Promise.race([attack.run(ctx), timeout]);
  } catch (e) {
    failure = e instanceof Unexpected
      ? `wrong answer: ${e.message}`
      : (h.tripped?.reason ?? (e as Error).message);
  } finally {
    clearTimeout(timer);
  }
  const ms = performance.now() - started;
  probing = false;
  await prober;
  const peak = h.peak;
  note(`${attack.name}: ${failure ?? noteText}; checking`);
  const checks = await runChecks(h, base);
  if (httpBase) checks.push(...await httpChecks(h, httpBase));
  const failed = checks.filter((c) => !c.ok);
  // what an attack left running is killed, so that the next attack starts from the bystanders
  if (h.alive) {
    const left = (await h.state().catch(() => undefined))?.processes
      .filter((p) => !base.pids.includes(p.pid)) ?? [];
    await Promise.all(left.map((p) => h.call("core.kill", { pid: p.pid }, { timeoutMs: 10_000 })))
      .catch(() => {});
    if (left.length > 0) note(`${attack.name}: killed ${left.length} processes it left`);
  }
  const ok = failure === undefined && failed.length === 0;
  const result = ok ? "ok" : [
    ...(failure ? [failure] : []),
    ...(failed.length ? [`checks failed: ${failed.map((c) => c.name).join(", ")}`] : []),
  ].join("; ");
  return {
    name: attack.name,
    summary: attack.summary,
    ok,
    result,
    note: noteText,
    ms,
    peakRssMiB: mib(peak),
    duringMaxMs: Math.round(slowest),
    duringUnanswered: unanswered,
    checks,
  };
}

function table(rows: string[][], colour: (row: number, col: number, text: string) => string) {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r, ri) =>
    r.map((c, i) => colour(ri, i, i >= 2 ? c.padStart(widths[i]) : c.padEnd(widths[i])))
      .join("  ").trimEnd()
  );
}

/** The soak of `deno task faults`: a real model's waits, and builds; `--quick` waits less. */
export function soakOptions(
  turns: number,
  seed: number,
  quick: boolean,
  progress: (t: string) => void,
): SoakOptions {
  return {
    turns,
    sessions: 3,
    seed,
    waitMs: quick ? 500 : 2000,
    longWaitShare: quick ? 0.01 : 0.02,
    builds: quick ? 1 : 4,
    hostKills: quick ? 1 : 3,
    stopShare: 0.25,
    progress,
  };
}

/** Runs the suite with command-line `args`; returns the exit code. */
export async function main(args: string[]): Promise<number> {
  let opts;
  try {
    opts = parseArgs({
      args,
      options: {
        quick: { type: "boolean", default: false },
        long: { type: "boolean", default: false },
        calls: { type: "string" },
        seed: { type: "string" },
        rounds: { type: "string" },
        turns: { type: "string" },
        only: { type: "string", multiple: true },
        list: { type: "boolean", default: false },
        out: { type: "string" },
        "no-save": { type: "boolean", default: false },
        help: { type: "boolean", short: "h", default: false },
      },
      allowPositionals: false,
    }).values;
  } catch (e) {
    console.error(`faults: ${(e as Error).message}\n\n${USAGE}`);
    return ExitCode.Usage;
  }
  if (opts.help) {
    console.log(USAGE);
    return ExitCode.Ok;
  }
  if (opts.list) {
    for (const a of [...ATTACKS, ...HTTP_ATTACKS]) console.log(`${a.name.padEnd(20)} ${a.summary}`);
    console.log(`${"random".padEnd(20)} the randomized run`);
    console.log(`${"soak".padEnd(20)} the agent's soak`);
    for (const k of CRASH_KINDS) console.log(`${("crash " + k.name).padEnd(20)} ${k.summary}`);
    console.log(`${"disk".padEnd(20)} a full disk: a world and a build cache on small tmpfs`);
    return ExitCode.Ok;
  }
  const positive = (text: string | undefined, name: string): number | undefined => {
    if (text === undefined) return undefined;
    const n = Number(text);
    if (!Number.isSafeInteger(n) || n < (name === "--seed" ? 0 : 1)) {
      throw new Error(`${name} takes a ${name === "--seed" ? "non-negative" : "positive"} integer`);
    }
    return n;
  };
  let calls: number, seed: number, rounds: number, turns: number;
  const only = (opts.only ?? []).flatMap((o) => o.split(",")).map((s) => s.trim()).filter(Boolean);
  try {
    calls = positive(opts.calls, "--calls") ?? (opts.quick ? 500 : 10_000);
    seed = positive(opts.seed, "--seed") ?? crypto.getRandomValues(new Uint32Array(1))[0];
    rounds = positive(opts.rounds, "--rounds") ?? (opts.long ? 100 : opts.quick ? 1 : 3);
    turns = positive(opts.turns, "--turns") ?? (opts.quick ? 60 : 240);
    const known = [
      "attacks",
      "http",
      "random",
      "crash",
      "disk",
      "soak",
      ...[...ATTACKS, ...HTTP_ATTACKS].map((a) => a.name),
    ];
    const unknown = only.filter((o) => !known.includes(o));
    if (unknown.length) {
      throw new Error(`no part ${unknown.join(", ")}; known: ${known.join(", ")}`);
    }
  } catch (e) {
    console.error(`faults: ${(e as Error).message}`);
    return ExitCode.Usage;
  }
  const wants = (part: string) => only.length === 0 || only.includes(part);
  const attacks = [
    ...ATTACKS.filter((a) => wants("attacks") || only.includes(a.name)),
    ...HTTP_ATTACKS.filter((a) => wants("http") || only.includes(a.name)),
  ];
  const note = (t: string) => console.error(`faults: ${t}`);
  const started = new Date();
  const t0 = performance.now();
  const machine = describeMachine();
  note(
    `${machine.cores} cores, deno ${machine.deno}` +
      (machine.loadavg ? `, load ${machine.loadavg.map((l) => l.toFixed(2)).join(" ")}` : "") +
      `, seed ${seed}` + (opts.quick ? ", quick run" : "") + (opts.long ? ", long run" : ""),
  );
  try {
    await buildPlugins(note);
  } catch (e) {
    console.error(`faults: ${(e as Error).message}`);
    return ExitCode.Setup;
  }

  const results: AttackResult[] = [];
  let random: RandomResult | undefined;
  let crash: CrashResult[] = [];
  let soak: SoakResult | undefined;
  let disk: DiskResult | undefined;
  const failures: string[] = [];
  const outside = await Deno.makeTempDir({ prefix: "sausage-faults-outside-" });
  const canary = { name: "canary.txt", secret: `secret-${crypto.randomUUID()}` };
  await Deno.writeTextFile(join(outside, canary.name), canary.secret);
  let root: string | undefined;
  let host: HostProcess | undefined;
  try {
    if (attacks.length > 0 || wants("random")) {
      root = await attackWorld(limitsYaml());
      try {
        host = await startHost(root);
      } catch (e) {
        console.error(`faults: no host started: ${(e as Error).message}`);
        return ExitCode.Setup;
      }
    }
    for (const attack of attacks) {
      if (!host!.alive) {
        await host!.reap();
        note("the host died; starting another on the same world");
        host = await startHost(root!);
      }
      note(`attack: ${attack.name} (${attack.summary})`);
      results.push(
        await runAttack(
          attack,
          { host: host!, root: root!, outside, canary, quick: opts.quick },
          note,
        ),
      );
    }
    if (wants("random")) {
      if (!host!.alive) {
        await host!.reap();
        host = await startHost(root!);
      }
      note(`randomized run: ${calls} calls, seed ${seed}`);
      const base = await takeBaseline(host!);
      random = await randomRun(host!, base, { calls, seed, progress: note }, root);
    }
    if (host) await (host.alive ? host.stop() : host.reap());
    host = undefined;
    if (wants("crash")) {
      note(`crash consistency: ${rounds} round(s) of each kind`);
      crash = await crashRun({ rounds, seed, progress: note });
    }
    if (wants("disk")) {
      note("full disk: a world and a build cache on small tmpfs");
      disk = await diskRun({ quick: opts.quick, progress: note });
    }
    if (wants("soak")) {
      const options = soakOptions(turns, seed, opts.quick, note);
      note(`the agent's soak: ${turns} turns in ${options.sessions} sessions`);
      soak = await soakRun(options);
    }
  } catch (e) {
    failures.push((e as Error).stack ?? String(e));
    console.error(`faults: the suite failed: ${(e as Error).stack ?? e}`);
  } finally {
    if (host) await (host.alive ? host.stop() : host.reap()).catch(() => {});
    if (root) await Deno.remove(root, { recursive: true }).catch(() => {});
    await Deno.remove(outside, { recursive: true }).catch(() => {});
  }
  const seconds = (performance.now() - t0) / 1000;

  const good = (t: string) => pc.green(t);
  const bad = (t: string) => pc.red(t);
  console.log("");
  if (results.length > 0) {
    const rows = [["attack", "result", "time", "peak RSS", "others meanwhile"]];
    for (const r of results) {
      rows.push([
        r.name,
        r.ok ? "ok" : `FAILED: ${r.result}`,
        `${(r.ms / 1000).toFixed(1)} s`,
        `${r.peakRssMiB} MiB`,
        `≤ ${(r.duringMaxMs / 1000).toFixed(1)} s` +
        (r.duringUnanswered ? `, ${r.duringUnanswered} unanswered` : ""),
      ]);
    }
    const lines = table(
      rows,
      (ri, ci, text) =>
        ri === 0 ? pc.bold(text) : ci === 1 ? (results[ri - 1].ok ? good(text) : bad(text)) : text,
    );
    console.log(lines[0]);
    console.log(
      rows[0].map((_, i) => "-".repeat(Math.max(...rows.map((r) => r[i].length)))).join("  "),
    );
    for (const l of lines.slice(1)) console.log(l);
    for (const r of results) {
      console.log(pc.dim(`  ${r.name}: ${r.note || "-"}`));
      for (const c of r.checks.filter((c) => !c.ok)) {
        console.log(`    ${bad("✗")} ${c.name}: ${c.detail ?? ""}`);
      }
    }
  }
  if (random) {
    const r = random;
    const wrong = Object.entries(r.wrong).map(([k, v]) => `${k} ${v}`).join(", ") || "none";
    console.log(
      `\nRandomized run (seed ${r.seed}): ${r.calls} calls (${r.faulty} faulty), ` +
        `${r.answered} answered, ${r.unanswered} unanswered, wrong answers: ${wrong}; ` +
        `leaked: ${r.leaked.processes.length} processes, ${r.leaked.locks.length} locks, ` +
        `${r.leaked.workers} workers; ${r.seconds.toFixed(1)} s ` +
        (r.ok ? good("ok") : bad("FAILED")),
    );
    for (const e of r.examples) console.log(pc.dim(`  ${e}`));
    for (const p of r.leaked.processes.slice(0, 10)) {
      console.log(pc.dim(`  left: ${p}`));
      for (const l of r.leakedLog[p.split(" ")[0]] ?? []) console.log(pc.dim(`    ${l}`));
    }
    const slow = Object.entries(r.medianMs).sort((a, b) => b[1] - a[1]).slice(0, 6);
    console.log(pc.dim(`  median ms: ${slow.map(([k, v]) => `${k} ${v}`).join(", ")}`));
  }
  if (crash.length > 0) {
    console.log("\nCrash consistency (SIGKILL of the host, then the world reopened):");
    for (const c of crash) {
      console.log(
        `  ${c.kind.padEnd(12)} ${c.rounds} rounds, ${c.passed} intact, ${c.unclean} said unclean` +
          `, ${c.seconds.toFixed(1)} s ` + (c.ok ? good("ok") : bad("FAILED")),
      );
      for (const p of c.problems.slice(0, 5)) console.log(`    ${bad("✗")} ${p}`);
    }
  }
  if (soak) {
    const s = soak;
    const kinds = Object.entries(s.byKind).map(([k, v]) => `${k} ${v}`).join(", ");
    const interrupted = Object.entries(s.interrupted).map(([k, v]) => `${k} ${v}`).join(", ");
    console.log(
      `\nThe agent's soak: ${s.turns} turns (${kinds}): ${s.answered} answered, ` +
        `${s.stopped} stopped (each answered ≤ ${s.maxStopToAnswerMs} ms after its stop), ` +
        `${s.cutByHostKill} cut by ${s.hostKills} host kills; ${s.modelRequests} model requests ` +
        `(${s.longWaits} waited 25-60 s); ${
          s.seconds.toFixed(1)
        } s, peak RSS ${s.peakRssMiB} MiB ` +
        (s.ok ? good("ok") : bad("FAILED")),
    );
    console.log(pc.dim(`  operations interrupted: ${interrupted || "none"}`));
    for (const p of s.problems.slice(0, 10)) console.log(`    ${bad("✗")} ${p}`);
  }
  if (disk) printDisk(disk, good, bad);
  const ok = failures.length === 0 && results.every((r) => r.ok) && (random?.ok ?? true) &&
    crash.every((c) => c.ok) && (disk?.skipped !== undefined || (disk?.ok ?? true)) &&
    (soak?.ok ?? true);
  console.log(
    `\n${seconds.toFixed(1)} s in all. ${ok ? good("All passed.") : bad("Some failed.")}`,
  );

  if (!opts["no-save"]) {
    const data = {
      suite: "sausage-faults",
      date: started.toISOString(),
      quick: opts.quick,
      long: opts.long,
      seed,
      machine,
      git: await gitState(),
      seconds,
      watchdog: WATCHDOG,
      limits: limitsYaml(),
      attacks: results,
      random,
      crash,
      disk,
      soak,
      failures,
    };
    const dir = opts.out ?? join(REPO_ROOT, "bench", "results");
    const path = await writeResults(dir, resultsFileName(started, ["faults"]), data);
    console.log(`Results: ${path}`);
  }
  return ok ? ExitCode.Ok : ExitCode.Failed;
}

/** The full-disk run's lines. */
function printDisk(d: DiskResult, good: (t: string) => string, bad: (t: string) => string): void {
  if (d.skipped) {
    console.log(`\nFull disk: skipped (${d.skipped})`);
    return;
  }
  const f = d.figures;
  const mib = (b?: number) => b === undefined ? "-" : `${(b / 2 ** 20).toFixed(1)} MiB`;
  console.log(`\nFull disk (${d.seconds.toFixed(1)} s): ${d.ok ? good("ok") : bad("FAILED")}`);
  console.log(
    `  a plugin filled ${mib(f.pluginFilledBytes)} of a 32 MiB world in ${f.pluginFillMs} ms, ` +
      "then got insufficient-space; what it wrote read back whole",
  );
  console.log(
    `  disk full: ${f.callsWhileFull} calls answered, the journal held ${f.journalHeld} entries; ` +
      `it caught up ${f.journalCaughtUpMs} ms after room came back`,
  );
  if (f.worldRefusals !== undefined) {
    console.log(
      `  builds into the full world: ${f.worldRefusals} refused, median ${f.worldRefusedMedianMs} ms` +
        (f.buildAfterMs !== undefined ? `; with room, a build took ${f.buildAfterMs} ms` : ""),
    );
  }
  if (f.cacheFailedMs !== undefined) {
    console.log(
      `  a 16 MiB build cache: the first build failed when cargo filled it, after ` +
        `${f.cacheFailedMs} ms; the next were refused in a median ${f.cacheRefusedMedianMs} ms`,
    );
  }
  for (const p of d.problems) console.log(`    ${bad("✗")} ${p}`);
}

if (import.meta.main) {
  Deno.exit(await main(Deno.args));
}
