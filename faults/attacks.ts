/**
 * The attacks: each is what a hostile or broken plugin (or client) can do to
 * a host, run against a real host on a real world. An attack returns a short
 * note of what happened, or throws {@linkcode Unexpected} when the host's
 * answer was not the one the protocol promises; the checks of `checks.ts`
 * run after each.
 *
 * @module
 */
import { join } from "node:path";
import type { CallAnswer } from "./host.ts";
import { type HostProcess, journalCountAfter, journalMark } from "./harness.ts";

/** What an attack gets. */
export interface AttackContext {
  host: HostProcess;
  /** The world folder. */
  root: string;
  /** A folder beside the world, holding a canary file, that no process may reach. */
  outside: string;
  /** The canary's name and its secret content. */
  canary: { name: string; secret: string };
  quick: boolean;
}

/** One attack. */
export interface Attack {
  name: string;
  /** What it does, in a line. */
  summary: string;
  /** Runs the attack; returns a note, throws {@linkcode Unexpected} for a wrong answer. */
  run(ctx: AttackContext): Promise<string>;
}

/** The host answered, but not as the protocol says it must. */
export class Unexpected extends Error {
  override name = "Unexpected";
}

function expect(ok: boolean, what: string): void {
  if (!ok) throw new Unexpected(what);
}

const short = (v: unknown) => JSON.stringify(v)?.slice(0, 300);

/** The error of an answer, or a description of why there is none. */
function errorOf(a: CallAnswer): { code?: number; reason?: string; text: string } {
  if (a.timeout) return { text: `no answer within ${a.ms.toFixed(0)} ms` };
  const e = a.response?.error;
  if (!e) return { text: `result ${short(a.response?.result)}` };
  const data = e.data as { reason?: string; limit?: string } | undefined;
  return { code: e.code, reason: data?.reason ?? data?.limit, text: `${e.code} ${e.message}` };
}

function expectEnded(a: CallAnswer, reasons: string[], what: string): string {
  const e = errorOf(a);
  expect(
    e.code === -32002 && reasons.includes(e.reason ?? ""),
    `${what}: wanted -32002 (${reasons.join(" or ")}), got ${e.text.slice(0, 200)}`,
  );
  return e.reason!;
}

function nested(depth: number): unknown {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = i % 2 ? { v } : [v];
  return v;
}

/** Every attack, in the order they run. */
export const ATTACKS: Attack[] = [
  {
    name: "fan-out",
    summary: "a plugin that calls itself twice per call, 20 deep (2^20 leaves)",
    // the world's processes_per_tree is 64 (harness.ts): the same refusal, sooner
    async run({ host }) {
      const a = await host.call("hostile.tree", { fan: 2, depth: 20 }, { timeoutMs: 45_000 });
      const r = a.response?.result as { leaves: number; failed: number; limit: string } | undefined;
      expect(r !== undefined, `no result: ${errorOf(a).text}`);
      expect(r!.failed > 0 && r!.limit !== null, `no limit met: ${short(r)}`);
      return `${r!.leaves} leaves, ${r!.failed} refused at ${r!.limit}`;
    },
  },
  {
    name: "notification flood",
    summary: "100,000 notifications without waiting, from a plugin and from a client",
    async run({ host }) {
      const params = { method: "hostile.sleep", params: { ms: 100 }, count: 100_000 };
      const a = await host.call("hostile.notify_flood", params, { timeoutMs: 45_000 });
      expect(a.response?.result === "sent", `the flooder: ${errorOf(a).text}`);
      const client = performance.now();
      await host.order({
        op: "notify",
        method: "hostile.sleep",
        params: { ms: 100 },
        count: 100_000,
      }, 45_000);
      const live = (await host.state()).live;
      const ms = performance.now() - client;
      return `a plugin's in ${(a.ms / 1000).toFixed(1)} s, a client's in ${
        (ms / 1000).toFixed(1)
      } s; ` +
        `${live} live right after`;
    },
  },
  {
    name: "memory growth",
    summary: "four processes at once, each growing its memory to 4 GiB",
    async run({ host }) {
      const answers = await Promise.all(
        Array.from(
          { length: 4 },
          () => host.call("hostile.grow", { mb: 4096 }, { timeoutMs: 50_000 }),
        ),
      );
      const got = answers.map((a) =>
        a.response?.result
          ? `${(a.response.result as { mb: number }).mb} MiB`
          : (errorOf(a).reason ?? errorOf(a).text)
      );
      // a limit ends them (-32002) or an allocation fails inside; an answer must come either way
      expect(answers.every((a) => !a.timeout), `not every grower was answered: ${got.join(", ")}`);
      return got.join(", ");
    },
  },
  {
    name: "backtracking grep",
    summary: 'core.log {"grep": "^(a+)+$"} over 1,000 lines of 40 `a` and `!`',
    async run({ host }) {
      await host.order({ op: "fill", count: 1000, line: `${"a".repeat(40)}!` });
      const [log, echo] = await Promise.all([
        host.call("core.log", { grep: "^(a+)+$", limit: 10 }, { timeoutMs: 10_000 }),
        host.call("other.echo", { x: 1 }, { timeoutMs: 10_000 }),
      ]);
      expect(!log.timeout && log.ms < 2000, `core.log took ${log.ms.toFixed(0)} ms`);
      expect(!echo.timeout && echo.ms < 2000, `another call took ${echo.ms.toFixed(0)} ms`);
      return `core.log ${log.ms.toFixed(0)} ms, another call ${echo.ms.toFixed(0)} ms`;
    },
  },
  {
    name: "deep nesting",
    summary: "messages nested 4,000 deep, from a plugin's stdout and from a client",
    async run({ host }) {
      const a = await host.call("hostile.deep", { depth: 4000, method: "other.echo" }, {
        timeoutMs: 20_000,
      });
      expect(
        JSON.stringify(a.response?.result) === '{"after":{"after":true}}',
        `the plugin after its deep lines: ${errorOf(a).text}`,
      );
      const b = await host.call("other.echo", { x: nested(4000) }, { timeoutMs: 20_000 });
      expect(errorOf(b).code === -32600, `a client's deep message: ${errorOf(b).text}`);
      return "discarded (plugin), -32600 (client)";
    },
  },
  {
    name: "unread answers",
    summary: "60 core.log answers of 10,000 long lines that a process never reads",
    async run({ host, quick }) {
      await host.order({ op: "fill", count: 10_000, line: "L".repeat(quick ? 600 : 1200) }, 60_000);
      const a = await host.call("hostile.unread_logs", { count: 60, limit: 10_000, deaf: true }, {
        timeoutMs: 40_000,
        stopAfterMs: 5000,
      });
      expectEnded(a, ["killed"], "the reader that never reads");
      const detail = (a.response?.error?.data as { detail?: string })?.detail ?? "";
      return `killed after ${(a.ms / 1000).toFixed(1)} s: ${detail.slice(0, 160)}`;
    },
  },
  {
    name: "/self fill",
    summary: "32 processes writing 64 MiB each to /self, held at once",
    async run({ host }) {
      const answers = await Promise.all(
        Array.from(
          { length: 32 },
          () => host.call("hostile.self_write", { mb: 64 }, { timeoutMs: 50_000 }),
        ),
      );
      const results = answers.map((a) =>
        a.response?.result as { written: number; error: unknown; pid: string } | undefined
      );
      const total = results.reduce((n, r) => n + (r?.written ?? 0), 0);
      const refused = results.filter((r) => r?.error).length;
      await Promise.all(
        results.filter((r) => r?.pid).map((r) => host.call("core.stop", { pid: r!.pid })),
      );
      expect(results.every((r) => r !== undefined), "not every writer answered");
      return `${(total / 2 ** 20).toFixed(0)} MiB written in all, ${refused} writers refused space`;
    },
  },
  {
    name: "stdout flood",
    summary: "256 MiB of lines that are not JSON-RPC on stdout, then an answer",
    async run({ host, quick }) {
      const mb = quick ? 64 : 256;
      const a = await host.call("hostile.stdout_flood", { mb }, { timeoutMs: 50_000 });
      expect(a.response?.result !== undefined, `the flooder: ${errorOf(a).text}`);
      return `${mb} MiB in ${(a.ms / 1000).toFixed(1)} s, answered`;
    },
  },
  {
    name: "stderr flood",
    summary: "200,000 lines on stderr as fast as it can, then an answer",
    async run({ host, root, quick }) {
      const before = journalMark(root).lastId;
      const a = await host.call("hostile.stderr_flood", {
        lines: quick ? 50_000 : 200_000,
        len: 200,
      }, {
        timeoutMs: 50_000,
      });
      expect(a.response?.result !== undefined, `the flooder: ${errorOf(a).text}`);
      await host.order({ op: "flush" });
      const rows = journalCountAfter(root, before, "hostile");
      // about 1000 lines a second, bursts of 2000 (PROTOCOL 3.1), and a few notes
      const most = 2000 + 1100 * (a.ms / 1000) + 100;
      expect(rows <= most, `${rows} journal rows in ${(a.ms / 1000).toFixed(1)} s of flood`);
      return `answered in ${(a.ms / 1000).toFixed(1)} s, ${rows} journal rows`;
    },
  },
  {
    name: "huge lines",
    summary: "a 64 MiB line on stdout (past the 16 MiB limit) and one on stderr",
    async run({ host }) {
      const a = await host.call("hostile.huge_line", { mb: 64 }, { timeoutMs: 50_000 });
      const reason = expectEnded(a, ["killed"], "a 64 MiB stdout line");
      const b = await host.call("hostile.huge_line", { mb: 64, stderr: true }, {
        timeoutMs: 50_000,
      });
      expect(b.response?.result === "survived", `a 64 MiB stderr line: ${errorOf(b).text}`);
      return `stdout: ${reason}; stderr: cut, answered`;
    },
  },
  {
    name: "garbage",
    summary: "invalid JSON, batches, bad ids and params, duplicate ids, bytes that are not UTF-8",
    async run({ host }) {
      const a = await host.call("hostile.garbage", { ms: 500 }, { timeoutMs: 20_000 });
      const r = a.response?.result as { answers: number } | undefined;
      expect(r !== undefined, `the garbage writer: ${errorOf(a).text}`);
      // a client's garbage too: a batch, a request without a method, a bad version
      for (
        const m of [
          [{ jsonrpc: "2.0", id: 1, method: "other.echo" }],
          { jsonrpc: "2.0", id: 2 },
          {
            jsonrpc: "1.0",
            id: 3,
            method: "other.echo",
          },
          "text",
          null,
          42,
        ]
      ) {
        await host.order({ op: "send", message: m });
      }
      return `answered; it got ${r!.answers} error answers back`;
    },
  },
  {
    name: "plugin crash",
    summary: "a plugin that panics (a trap) and one that exits 1 before it answers",
    async run({ host }) {
      const a = await host.call("hostile.panic", {}, { timeoutMs: 20_000 });
      const r1 = expectEnded(a, ["trapped"], "a panic");
      const b = await host.call("hostile.exit", { code: 1 }, { timeoutMs: 20_000 });
      const r2 = expectEnded(b, ["exited"], "an exit");
      return `${r1}, ${r2}`;
    },
  },
  {
    name: "hang",
    summary: "a process that never answers and ignores EOF: stopped, then killed after 5 s",
    async run({ host }) {
      const [a, b] = await Promise.all([
        host.call("hostile.hang", { deaf: true }, { timeoutMs: 20_000, stopAfterMs: 200 }),
        host.call("hostile.hang", {}, { timeoutMs: 20_000, stopAfterMs: 200 }),
      ]);
      const r1 = expectEnded(a, ["killed"], "a deaf hang after a stop");
      expect(a.ms > 4500 && a.ms < 9000, `the deaf hang ended after ${a.ms.toFixed(0)} ms`);
      const r2 = expectEnded(b, ["exited"], "a hang that hears EOF");
      return `deaf: ${r1} after ${(a.ms / 1000).toFixed(1)} s; the other ${r2}`;
    },
  },
  {
    name: "kill under a lock",
    summary: "core.kill of a process writing a file under a lock, mid-write",
    async run({ host, root }) {
      const path = "/state/locked.bin";
      const a = await host.call("hostile.locked_writer", { path }, {
        timeoutMs: 20_000,
        killAfterMs: 300,
      });
      const reason = expectEnded(a, ["killed"], "the writer");
      const next = await host.call("hostile.lock_cycle", { path }, { timeoutMs: 10_000 });
      expect(
        (next.response?.result as { held?: boolean })?.held === true,
        `the next process's lock: ${errorOf(next).text}`,
      );
      const size = (await Deno.stat(join(root, path))).size;
      await new Promise((r) => setTimeout(r, 300));
      const later = (await Deno.stat(join(root, path))).size;
      expect(size === later, `the file grew from ${size} to ${later} after the lock passed on`);
      return `${reason}; ${(size / 2 ** 20).toFixed(1)} MiB written, nothing after the lock moved`;
    },
  },
  {
    name: "orphaned calls",
    summary:
      "50 processes, one after another, that each call a plugin that waits, then end at once",
    async run({ host }) {
      // one after another: each caller then ends before its callee has started
      const answers = [];
      for (let i = 0; i < 50; i++) {
        answers.push(
          await host.call("hostile.call_and_exit", { method: "other.hang", params: {} }, {
            timeoutMs: 20_000,
          }),
        );
      }
      expect(answers.every((a) => a.response?.result === "gone"), "not every caller answered");
      // the callees are attached to callers that ended: each must be stopped with its caller
      return "50 callers answered and ended";
    },
  },
  {
    name: "escape",
    summary: "reads and writes out of the world: .., links in and out, /proc, info.json",
    async run({ host, outside, canary }) {
      const before = [...Deno.readDirSync(outside)].map((e) => e.name).sort();
      const a = await host.call("hostile.escape", { outside, name: canary.name }, {
        timeoutMs: 20_000,
      });
      const r = a.response?.result as Record<string, unknown> | undefined;
      expect(r !== undefined, `the escaper: ${errorOf(a).text}`);
      const text = JSON.stringify(r);
      expect(!text.includes(canary.secret), `read the canary: ${text.slice(0, 300)}`);
      const after = [...Deno.readDirSync(outside)].map((e) => e.name).sort();
      expect(
        JSON.stringify(before) === JSON.stringify(after),
        `files appeared outside: ${after.filter((n) => !before.includes(n)).join(", ")}`,
      );
      const content = await Deno.readTextFile(join(outside, canary.name));
      expect(content === canary.secret, "the canary was changed");
      const done = Object.entries(r!).filter(([, v]) => !(v as { error?: string }).error)
        .map(([k]) => k);
      return `${Object.keys(r!).length - done.length} of ${Object.keys(r!).length} refused; ` +
        `done inside the world: ${done.join(", ") || "none"}; nothing outside reached`;
    },
  },
];
