/**
 * Crash consistency: the host, a real `sausage call` subprocess, killed with
 * SIGKILL at a random point of its work (journal writes, an activation, a
 * `cargo.build`, an agent's tool call), then the world opened again. After
 * each kill: the world reopens and answers, the journal passes SQLite's
 * `integrity_check` and keeps every earlier entry, and the next start says
 * that the run before did not stop cleanly (when that run got as far as to
 * journal its start).
 *
 * Each kind is first run once without a kill, to measure how long its work
 * takes after the host's start; the kills then fall uniformly in that span.
 *
 * @module
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { sausageCommand } from "../core/host.ts";
import { initWorld } from "../core/init.ts";
import { installPlugin, TEST_CACHE_DIR } from "../tests/world.ts";
import { testPlugin } from "../tests/setup.ts";
import { type Reply, type SeenRequest, startModelServer } from "../tests/model_server.ts";
import { generator } from "./random.ts";

/** One kind of work the host is killed in. */
export interface CrashKind {
  name: string;
  summary: string;
}

/** The kinds, in the order they run. */
export const CRASH_KINDS: CrashKind[] = [
  { name: "journal", summary: "255 processes starting and ending: journal writes" },
  { name: "activation", summary: "core.activate of a new version of a plugin" },
  { name: "build", summary: "cargo.build of a small plugin" },
  { name: "agent", summary: "the agent's turn with a tool call (a scripted model)" },
];

/** What the rounds of one kind found. */
export interface CrashResult {
  kind: string;
  rounds: number;
  /** Rounds whose every check held. */
  passed: number;
  /** Rounds whose next start journaled the unclean stop. */
  unclean: number;
  /** Rounds killed before the host had journaled its start. */
  beforeStart: number;
  /** Runs that ended before their kill (and were run again with a shorter delay). */
  missed: number;
  /** The kill times after the host's start (ms). */
  killAtMs: number[];
  /** Native processes (cargo, rustc) that outlived a killed host. */
  orphans: number;
  problems: string[];
  seconds: number;
  ok: boolean;
}

/** Options of {@linkcode crashRun}. */
export interface CrashOptions {
  rounds: number;
  seed: number;
  kinds?: string[];
  progress?: (text: string) => void;
}

const decoder = new TextDecoder();
const JOURNAL = (root: string) => join(root, "state", "core", "journal.sqlite");

function sausage(args: string[], stdin: "null" | "piped" = "null"): Deno.ChildProcess {
  const [exe, ...rest] = sausageCommand(args);
  return new Deno.Command(exe, {
    args: rest,
    stdin,
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).spawn();
}

/** `sausage call` to the end: its exit code and its stdout. */
async function callOnce(
  root: string,
  cacheDir: string,
  method: string,
  params: unknown,
): Promise<{ code: number; out: string; err: string }> {
  const p = sausage([
    "call",
    "--timeout",
    "120",
    "--cache-dir",
    cacheDir,
    root,
    method,
    JSON.stringify(params),
  ]);
  const out = await p.output();
  return { code: out.code, out: decoder.decode(out.stdout), err: decoder.decode(out.stderr) };
}

interface Mark {
  count: number;
  lastId: string | null;
}

function withJournal<T>(root: string, f: (db: DatabaseSync) => T): T {
  const db = new DatabaseSync(JOURNAL(root), { readOnly: true });
  try {
    return f(db);
  } finally {
    db.close();
  }
}

function mark(root: string): Mark {
  // a world that no host has run yet has no journal
  if (!existsSync(JOURNAL(root))) return { count: 0, lastId: null };
  return withJournal(root, (db) => {
    const r = db.prepare("SELECT count(*) AS n, max(id) AS last FROM entries").get() as {
      n: number;
      last: string | null;
    };
    return { count: Number(r.n), lastId: r.last };
  });
}

/** Lines after `lastId` that match the LIKE pattern. */
function linesAfter(root: string, lastId: string | null, like: string): string[] {
  return withJournal(
    root,
    (db) =>
      db.prepare("SELECT line FROM entries WHERE id > ? AND line LIKE ? ORDER BY id")
        .all(lastId ?? "", like).map((r) => String(r.line)),
  );
}

/** Whether a host journaled its start after `lastId` (polled while it runs). */
function startedAfter(root: string, lastId: string | null): boolean {
  try {
    return linesAfter(root, lastId, "host start:%").length > 0;
  } catch {
    return false; // no journal yet, or busy
  }
}

/** The pids of processes whose command line names `needle` (cargo and rustc of a cache). */
function processesNaming(needle: string): number[] {
  const out: number[] = [];
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const cmd = Deno.readTextFileSync(`/proc/${e.name}/cmdline`);
      if (cmd.includes(needle)) out.push(Number(e.name));
    } catch {
      // gone
    }
  }
  return out;
}

async function sha256(path: string): Promise<string> {
  const bytes = await Deno.readFile(path);
  return [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))]
    .map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** The same component with a custom section added: another version of it. */
function anotherVersion(wasm: Uint8Array, tag: string): Uint8Array {
  const name = new TextEncoder().encode("sausage-faults");
  const payload = new TextEncoder().encode(tag);
  const body = [name.length, ...name, ...payload];
  return new Uint8Array([...wasm, 0, body.length, ...body]);
}

/** A world, its work and its checks for one kind. */
interface Scenario {
  root: string;
  cacheDir: string;
  /** The call whose work is cut by the kill, for round `i`. */
  work(i: number): Promise<{ method: string; params: unknown }>;
  /** When set, the kill's span starts when this is true, not at the host's start. */
  trigger?: () => boolean;
  /** The call that shows the world reopened, and whether its answer is right. */
  reopen(i: number): { method: string; params: unknown; check(out: string): string | undefined };
  /** More checks after the reopen. */
  after?(i: number): Promise<string | undefined>;
  /** Checks at the end of all rounds. */
  finish?(): Promise<string | undefined>;
  close(): Promise<void>;
}

async function baseWorld(agent = false): Promise<string> {
  const root = await Deno.makeTempDir({ prefix: "sausage-faults-crash-" });
  await initWorld(root, { installAgent: agent });
  await installPlugin(root, "hostile", "hostile");
  await installPlugin(root, "other", "hostile");
  return root;
}

const echoBack = (i: number) => ({
  method: "other.echo",
  params: { round: i },
  check: (out: string) => {
    try {
      return JSON.parse(out).round === i ? undefined : `other.echo answered ${out.slice(0, 100)}`;
    } catch {
      return `other.echo answered ${out.slice(0, 100)}`;
    }
  },
});

async function scenario(kind: string): Promise<Scenario> {
  switch (kind) {
    case "journal": {
      const root = await baseWorld();
      return {
        root,
        cacheDir: TEST_CACHE_DIR,
        work: () => Promise.resolve({ method: "hostile.tree", params: { fan: 2, depth: 7 } }),
        reopen: echoBack,
        close: () => Deno.remove(root, { recursive: true }),
      };
    }
    case "activation": {
      const root = await baseWorld();
      const original = await Deno.readFile(await testPlugin("hostile"));
      await installPlugin(root, "target", "hostile");
      const known = new Set([await sha256(join(root, "plugins", "target", "plugin.wasm"))]);
      return {
        root,
        cacheDir: TEST_CACHE_DIR,
        async work(i) {
          const path = join(root, "state", `v${i}.wasm`);
          await Deno.writeFile(path, anotherVersion(original, `round ${i} ${crypto.randomUUID()}`));
          known.add(await sha256(path));
          return {
            method: "core.activate",
            params: { plugin: "target", wasm: `/state/v${i}.wasm`, force: true },
          };
        },
        reopen: (i) => ({
          method: "target.echo",
          params: { round: i },
          check: (out) => {
            try {
              return JSON.parse(out).round === i ? undefined : `target.echo: ${out.slice(0, 100)}`;
            } catch {
              return `target.echo: ${out.slice(0, 100)}`;
            }
          },
        }),
        async after() {
          for (const f of ["plugin.wasm", "plugin.prev.wasm"]) {
            const path = join(root, "plugins", "target", f);
            let hash: string;
            try {
              hash = await sha256(path);
            } catch {
              if (f === "plugin.wasm") return "plugins/target/plugin.wasm is missing";
              continue;
            }
            if (!known.has(hash)) return `plugins/target/${f} is none of the versions (torn?)`;
          }
          return undefined;
        },
        close: () => Deno.remove(root, { recursive: true }),
      };
    }
    case "build": {
      const root = await baseWorld();
      // a cache of its own: the cargo processes of this build are then told apart by its path
      const cacheDir = await Deno.makeTempDir({ prefix: "sausage-faults-cache-" });
      const source = join(root, "plugins", "built", "source");
      await Deno.mkdir(join(source, "src"), { recursive: true });
      await Deno.writeTextFile(
        join(source, "Cargo.toml"),
        '[package]\nname = "built"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n',
      );
      const main = (i: number) =>
        `fn main() {\n    // round ${i}\n    println!("{}", ${i});\n}\n\n` +
        `#[test]\nfn round() {\n    assert_eq!(${i} + 1, ${i + 1});\n}\n`;
      return {
        root,
        cacheDir,
        async work(i) {
          await Deno.writeTextFile(join(source, "src", "main.rs"), main(i));
          return { method: "cargo.build", params: { plugin: "built" } };
        },
        reopen: echoBack,
        async finish() {
          await Deno.writeTextFile(join(source, "src", "main.rs"), main(999_999));
          const r = await callOnce(root, cacheDir, "cargo.build", { plugin: "built" });
          if (r.code !== 0) return `a clean build after the kills failed: ${r.out.slice(0, 300)}`;
          const wasm = JSON.parse(r.out).wasm as string;
          await Deno.stat(join(root, wasm));
          return undefined;
        },
        async close() {
          await Deno.remove(root, { recursive: true });
          await Deno.remove(cacheDir, { recursive: true });
        },
      };
    }
    case "agent": {
      const root = await baseWorld(true);
      const script = (request: SeenRequest): Reply => {
        const messages = request.body.messages as { role: string }[];
        return messages.at(-1)?.role === "tool" ? { text: "done" } : {
          toolCalls: [{
            name: "call",
            arguments: { method: "other.sleep", params: { ms: 300 } },
          }],
        };
      };
      const server = await startModelServer({
        api: "openai-chat-completions",
        script,
        token: "test-key",
      });
      await Deno.writeTextFile(
        join(root, "config", "agent.yaml"),
        `api: openai-chat-completions\nbase_url: ${server.url}\nmodel: scripted\ntoken: test-key\n`,
      );
      let seen = 0;
      return {
        root,
        cacheDir: TEST_CACHE_DIR,
        work(i) {
          seen = server.requests.length;
          return Promise.resolve({ method: "agent.chat", params: { text: `round ${i}` } });
        },
        // the span starts when the agent asks the model: the turn and its tool call follow
        trigger: () => server.requests.length > seen,
        reopen: (i) => ({
          method: "agent.chat",
          params: { text: `after round ${i}` },
          check: (out) => {
            try {
              return typeof JSON.parse(out) === "string" ? undefined : `agent.chat: ${out}`;
            } catch {
              return `agent.chat: ${out.slice(0, 200)}`;
            }
          },
        }),
        async close() {
          await server.close();
          await Deno.remove(root, { recursive: true });
        },
      };
    }
  }
  throw new Error(`no crash kind ${kind}`);
}

/** Runs `work`, waits for the host's start (or the trigger), kills at `delay` ms after it. */
async function killedRun(
  s: Scenario,
  work: { method: string; params: unknown },
  before: Mark,
  delay: number | undefined,
): Promise<
  { started: boolean; spanMs: number; exit: Deno.CommandStatus; out: string; err: string }
> {
  const p = sausage([
    "call",
    "--timeout",
    "120",
    "--cache-dir",
    s.cacheDir,
    s.root,
    work.method,
    JSON.stringify(work.params),
  ]);
  const output = p.output();
  let done = false;
  output.then(() => done = true, () => done = true);
  const trigger = s.trigger ?? (() => startedAfter(s.root, before.lastId));
  let at: number | undefined;
  while (!done) {
    if (trigger()) {
      at = performance.now();
      break;
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  if (delay !== undefined && !done) {
    await new Promise((r) => setTimeout(r, delay));
    try {
      p.kill("SIGKILL");
    } catch {
      // it ended already
    }
  }
  const out = await output;
  return {
    started: at !== undefined,
    spanMs: at === undefined ? 0 : performance.now() - at,
    exit: { success: out.success, code: out.code, signal: out.signal },
    out: decoder.decode(out.stdout),
    err: decoder.decode(out.stderr),
  };
}

function integrity(root: string): string {
  return withJournal(root, (db) => {
    const rows = db.prepare("PRAGMA integrity_check").all() as Record<string, unknown>[];
    return rows.map((r) => String(Object.values(r)[0])).join("; ");
  });
}

/** Runs the rounds of every kind; each kind gets a world of its own. */
export async function crashRun(options: CrashOptions): Promise<CrashResult[]> {
  const rng = generator(options.seed ^ 0x5eed);
  const results: CrashResult[] = [];
  for (const kind of CRASH_KINDS.filter((k) => !options.kinds || options.kinds.includes(k.name))) {
    const started = performance.now();
    const r: CrashResult = {
      kind: kind.name,
      rounds: options.rounds,
      passed: 0,
      unclean: 0,
      beforeStart: 0,
      missed: 0,
      killAtMs: [],
      orphans: 0,
      problems: [],
      seconds: 0,
      ok: false,
    };
    const s = await scenario(kind.name);
    try {
      // calibration: the work to its end, twice for the build (the first one fills the cache)
      let span = 0;
      for (let c = 0; c < (kind.name === "build" ? 2 : 1); c++) {
        const calm = await killedRun(s, await s.work(-1 - c), mark(s.root), undefined);
        if (!calm.exit.success) {
          r.problems.push(
            `the work without a kill failed (${calm.exit.code}): ${calm.out}${calm.err}`
              .slice(0, 500),
          );
        }
        span = calm.spanMs;
      }
      options.progress?.(`crash ${kind.name}: the work takes ${span.toFixed(0)} ms after start`);
      for (let i = 0; i < options.rounds; i++) {
        const problems: string[] = [];
        let before = mark(s.root);
        let delay = Math.floor(rng() * span);
        let run = await killedRun(s, await s.work(i), before, delay);
        // the work can end sooner than it did at calibration: then again, with half the delay
        for (let again = 0; run.exit.signal !== "SIGKILL" && again < 4; again++) {
          r.missed++;
          if (run.exit.code !== 0) {
            problems.push(
              // the whole output: a build's failure shows only at its end
              `round ${i}: the work failed without a kill: ${run.out}${run.err}`.slice(0, 4000),
            );
          }
          span = Math.max(1, Math.min(span, run.spanMs));
          before = mark(s.root);
          delay = Math.floor(delay / 2);
          run = await killedRun(s, await s.work(i), before, delay);
        }
        r.killAtMs.push(delay);
        if (run.exit.signal !== "SIGKILL") {
          problems.push(`round ${i}: the host ended before every kill (${run.exit.code})`);
        }
        if (kind.name === "build") {
          // a moment for what would end by itself (a broken pipe) to end
          await new Promise((r) => setTimeout(r, 2000));
          const orphans = processesNaming(s.cacheDir);
          if (orphans.length > 0) {
            r.orphans += orphans.length;
            // they are this suite's own descendants: end them so that the next round starts clean
            for (const pid of orphans) {
              try {
                Deno.kill(pid, "SIGKILL");
              } catch {
                // gone
              }
            }
          }
        }
        const reopen = s.reopen(i);
        const again = await callOnce(s.root, s.cacheDir, reopen.method, reopen.params);
        if (again.code !== 0) {
          problems.push(
            `round ${i}: the world did not reopen: ${again.out}${again.err}`.slice(0, 400),
          );
        } else {
          const wrong = reopen.check(again.out.trim());
          if (wrong) problems.push(`round ${i}: ${wrong}`);
        }
        const check = integrity(s.root);
        if (check !== "ok") problems.push(`round ${i}: integrity_check: ${check}`);
        const kept = withJournal(s.root, (db) =>
          Number(
            (db.prepare("SELECT count(*) AS n FROM entries WHERE id <= ?").get(
              before.lastId ?? "",
            ) as { n: number }).n,
          ));
        if (kept !== before.count) {
          problems.push(`round ${i}: ${kept} of ${before.count} earlier entries left`);
        }
        const starts = linesAfter(s.root, before.lastId, "host start:%").length;
        const unclean = linesAfter(s.root, before.lastId, "%did not stop cleanly%").length;
        if (unclean > 0) r.unclean++;
        if (starts < 2) r.beforeStart++;
        if (starts >= 2 && unclean === 0) {
          problems.push(`round ${i}: killed after its start, but the next start did not say so`);
        }
        const more = await s.after?.(i);
        if (more) problems.push(`round ${i}: ${more}`);
        if (problems.length === 0) r.passed++;
        r.problems.push(...problems);
        if ((i + 1) % 10 === 0) {
          options.progress?.(`crash ${kind.name}: ${i + 1} of ${options.rounds} rounds`);
        }
      }
      const last = await s.finish?.();
      if (last) r.problems.push(last);
    } catch (e) {
      r.problems.push(`the kind failed: ${(e as Error).stack ?? e}`);
    } finally {
      await s.close().catch(() => {});
    }
    if (r.orphans > 0) {
      r.problems.push(`${r.orphans} cargo or rustc processes outlived a killed host`);
    }
    r.seconds = (performance.now() - started) / 1000;
    r.ok = r.problems.length === 0 && r.passed === r.rounds;
    results.push(r);
  }
  return results;
}
