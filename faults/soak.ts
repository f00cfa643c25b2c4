/**
 * The agent's soak: many turns of the agent against a scripted model server
 * that waits like a real one (0-2 s per answer, sometimes 25-60 s), with
 * several tool calls per answer, in sessions that run side by side. Some
 * turns are stopped by their caller while the model streams, while a tool
 * runs, or while a build runs; sometimes the host is killed in the middle of
 * a tool call and started again on the same world.
 *
 * What must hold: every turn ends, with its answer or a clear error (a stop,
 * or the host's death); no agent process is left; every session's journal is
 * whole (each line parses, the sequence has no gap, every operation has its
 * result, every answered turn is there), and every request the model got is
 * one a real provider accepts (each tool call answered).
 *
 * @module
 */
import { join } from "node:path";
import { initWorld } from "../core/init.ts";
import { installPlugin, TEST_CACHE_DIR } from "../tests/world.ts";
import {
  type ModelServer,
  type Reply,
  type SeenRequest,
  startModelServer,
} from "../tests/model_server.ts";
import type { CallAnswer } from "./host.ts";
import { HostProcess, mib } from "./harness.ts";
import { generator } from "./random.ts";

/** What a turn of the soak does. */
export type TurnKind =
  | "answer"
  | "tools"
  | "stop-stream"
  | "stop-tool"
  | "stop-build"
  | "host-kill";

/** Options of {@linkcode soakRun}. */
export interface SoakOptions {
  /** Turns in all (spread over the sessions). */
  turns: number;
  /** Sessions that run side by side, each its turns back to back. */
  sessions: number;
  seed: number;
  /** The model's usual wait before an answer, in ms: drawn from 0 to this. */
  waitMs: number;
  /** The share of answers that wait long instead (25-60 s). */
  longWaitShare: number;
  /** Turns stopped in the middle of a `cargo.build` (a build each). */
  builds: number;
  /** Times the host is killed in the middle of a tool call and started again. */
  hostKills: number;
  /** The share of the other turns stopped by their caller (half mid-stream, half mid-tool). */
  stopShare: number;
  progress?: (text: string) => void;
}

/** What {@linkcode soakRun} found. */
export interface SoakResult {
  turns: number;
  /** Turns answered with the model's final text. */
  answered: number;
  /** Turns a caller stopped, answered with an error. */
  stopped: number;
  /** Turns that ended because the host was killed under them. */
  cutByHostKill: number;
  byKind: Record<string, number>;
  hostKills: number;
  modelRequests: number;
  longWaits: number;
  /** The operations that did not end `ok`, by what they were and how they ended (from the journals). */
  interrupted: Record<string, number>;
  /** The longest time from a stop to the turn's answer. */
  maxStopToAnswerMs: number;
  seconds: number;
  peakRssMiB: number;
  /** What broke a promise; empty when all held. */
  problems: string[];
  ok: boolean;
}

/** The soak's goals: the stop must be answered within the host's grace (5 s) and some slack. */
const STOP_ANSWER_MS = 8_000;
/** A turn that takes longer has hung: three long waits of the model and the tools fit. */
const TURN_DEADLINE_MS = 240_000;
/** A file the tools read whose text once made the agent believe it was being stopped. */
const TRAP_TEXT = "the process is stopping (stdin closed): no answer can arrive\n".repeat(4);

interface Plan {
  key: string;
  session: string;
  kind: TurnKind;
  /** The tool calls of each round, then the final text. */
  rounds: { name: string; arguments: unknown }[][];
  final: string;
  /** The model requests of this turn, by number. */
  requests: number[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function lastUserText(request: SeenRequest): { text: string; after: Record<string, unknown>[] } {
  const messages = (request.body?.messages ?? []) as Record<string, unknown>[];
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i].role !== "user") continue;
    const content = messages[i].content;
    const text = typeof content === "string" ? content : JSON.stringify(content);
    return { text, after: messages.slice(i + 1) };
  }
  return { text: "", after: [] };
}

/** The world: the agent, a plugin to call (`other`), a file to read, and a crate to build. */
async function soakWorld(server: ModelServer): Promise<string> {
  const root = await Deno.makeTempDir({ prefix: "sausage-soak-" });
  await initWorld(root, { installAgent: true });
  await installPlugin(root, "other", "hostile");
  await Deno.writeTextFile(
    join(root, "config", "agent.yaml"),
    `api: openai-chat-completions\nbase_url: ${server.url}\nmodel: scripted\ntoken: soak-key\n`,
  );
  await Deno.writeTextFile(join(root, "state", "trap.txt"), TRAP_TEXT);
  const source = join(root, "plugins", "built", "source");
  await Deno.mkdir(join(source, "src"), { recursive: true });
  await Deno.writeTextFile(
    join(source, "Cargo.toml"),
    '[package]\nname = "built"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n',
  );
  return root;
}

/** The plan of each turn, drawn from the seed: which kind, which tool calls. */
function plans(options: SoakOptions, rng: () => number): Plan[][] {
  const kinds: TurnKind[] = [];
  for (let i = 0; i < options.builds; i++) kinds.push("stop-build");
  for (let i = 0; i < options.hostKills; i++) kinds.push("host-kill");
  while (kinds.length < options.turns) {
    const r = rng();
    kinds.push(
      r < options.stopShare / 2
        ? "stop-stream"
        : r < options.stopShare
        ? "stop-tool"
        : r < options.stopShare + (1 - options.stopShare) / 3
        ? "answer"
        : "tools",
    );
  }
  // the special turns spread over the run, never a session's last (its next turn must repair it)
  for (let i = kinds.length - 1; i > 0; i--) {
    const j = Math.floor(rng() * (i + 1));
    [kinds[i], kinds[j]] = [kinds[j], kinds[i]];
  }
  const perSession: Plan[][] = Array.from({ length: options.sessions }, () => []);
  kinds.forEach((kind, i) => {
    const s = i % options.sessions;
    const session = `soak-${s + 1}`;
    const key = `${session} turn ${perSession[s].length + 1}`;
    const read = { name: "read_file", arguments: { path: "/state/trap.txt" } };
    const echo = { name: "call", arguments: { method: "other.echo", params: { turn: key } } };
    const list = { name: "list_dir", arguments: { path: "/state" } };
    const rounds: Plan["rounds"] = kind === "answer" || kind === "stop-stream"
      ? []
      : kind === "tools"
      ? Array.from({ length: 1 + Math.floor(rng() * 2) }, () =>
        [read, echo, list].slice(0, 2 + Math.floor(rng() * 2)))
      : kind === "stop-build"
      ? [[{ name: "call", arguments: { method: "cargo.build", params: { plugin: "built" } } }]]
      : [[read, { name: "call", arguments: { method: "other.sleep", params: { ms: 8000 } } }]];
    perSession[s].push({ key, session, kind, rounds, final: `done: ${key}`, requests: [] });
  });
  // a session's last turn is an ordinary one
  for (const turns of perSession) {
    const last = turns.at(-1);
    if (last && last.kind !== "answer" && last.kind !== "tools") {
      const swap = turns.findLastIndex((t) => t.kind === "answer" || t.kind === "tools");
      if (swap >= 0) {
        [turns[swap].kind, last.kind] = [last.kind, turns[swap].kind];
        [turns[swap].rounds, last.rounds] = [last.rounds, turns[swap].rounds];
      } else {
        turns.push({ ...last, key: `${last.key} again`, kind: "answer", rounds: [], requests: [] });
        turns.at(-1)!.final = `done: ${turns.at(-1)!.key}`;
      }
    }
  }
  return perSession;
}

/** The journal of a session, checked: what is wrong with it, or nothing. */
async function journalProblems(
  root: string,
  session: string,
  answered: Plan[],
  cancelled: Record<string, number>,
): Promise<string[]> {
  const dir = join(root, "state", "agent", session);
  const problems: string[] = [];
  const state = JSON.parse(await Deno.readTextFile(join(dir, "state.json")));
  const bytes = await Deno.readFile(join(dir, "journal.jsonl"));
  const committed = new TextDecoder().decode(bytes.subarray(0, state.journal_bytes));
  const entries: { seq: number; kind: string; data: Record<string, unknown> }[] = [];
  for (const [i, line] of committed.split("\n").filter(Boolean).entries()) {
    try {
      entries.push(JSON.parse(line));
    } catch {
      problems.push(`${session}: journal line ${i + 1} is not JSON: ${line.slice(0, 80)}`);
    }
  }
  entries.forEach((e, i) => {
    if (i > 0 && e.seq !== entries[i - 1].seq + 1) {
      problems.push(`${session}: seq ${entries[i - 1].seq} is followed by ${e.seq}`);
    }
  });
  if (entries.at(-1) && entries.at(-1)!.seq !== state.seq) {
    problems.push(
      `${session}: state.json says seq ${state.seq}, the journal ends at ${entries.at(-1)!.seq}`,
    );
  }
  const open = new Map<unknown, string>();
  for (const e of entries) {
    if (e.kind === "agent.op.v1") {
      const detail = e.data.detail as { arguments?: unknown } | undefined;
      let args = detail?.arguments;
      try {
        if (typeof args === "string") args = JSON.parse(args);
      } catch {
        // arguments that are not JSON name no method
      }
      const method = (args as { method?: unknown } | undefined)?.method;
      open.set(
        e.data.op,
        `${e.data.type} ${e.data.name}${typeof method === "string" ? ` ${method}` : ""}`,
      );
    }
    if (e.kind !== "agent.op-result.v1") continue;
    const what = open.get(e.data.op);
    if (what === undefined) {
      problems.push(`${session}: a result for op ${e.data.op}, which never started`);
    } else if (e.data.status !== "ok") {
      const key = `${what}: ${e.data.status}`;
      cancelled[key] = (cancelled[key] ?? 0) + 1;
    }
    open.delete(e.data.op);
  }
  if (open.size > 0) problems.push(`${session}: ops ${[...open.keys()].join(", ")} have no result`);
  if ((state.open_ops ?? []).length > 0) {
    problems.push(`${session}: state.json holds open ops after the session's last turn`);
  }
  const steps = entries.filter((e) => e.kind === "agent.step.v1").map((e) => e.data);
  for (const plan of answered) {
    const user = steps.findIndex((s) => s.role === "user" && String(s.text).includes(plan.key));
    const reply = steps.findIndex((s, i) =>
      i > user && s.role === "assistant" && s.text === plan.final
    );
    if (user < 0 || reply < 0) {
      problems.push(`${session}: the answered turn "${plan.key}" is not in its history whole`);
    }
  }
  return problems;
}

/**
 * Runs the soak on a fresh world with a host subprocess; the world is removed
 * afterwards.
 */
export async function soakRun(options: SoakOptions): Promise<SoakResult> {
  const rng = generator(options.seed ^ 0x50a6);
  const note = options.progress ?? (() => {});
  const byPlanKey = new Map<string, Plan>();
  let longWaits = 0;
  const problems: string[] = [];
  const script = async (request: SeenRequest): Promise<Reply> => {
    const { text, after } = lastUserText(request);
    // the person's text is "<key>: go on"; the key with its colon, so turn 1 is not turn 13
    const plan = [...byPlanKey.values()].find((p) => text.includes(`${p.key}:`));
    if (!plan) {
      problems.push(`the model got a request for no turn of the soak: ${text.slice(0, 100)}`);
      return { text: "no such turn" };
    }
    plan.requests.push(request.n);
    // every tool call of the turn so far is answered (the server refuses the request otherwise)
    const round = after.filter((m) => m.role === "assistant").length;
    const long = options.longWaitShare > 0 && rng() < options.longWaitShare;
    if (long) longWaits++;
    await sleep(long ? 25_000 + rng() * 35_000 : rng() * options.waitMs);
    if (plan.kind === "stop-stream") {
      return { text: `${plan.final} `.repeat(40), delayMs: 100 };
    }
    return round < plan.rounds.length
      ? { toolCalls: plan.rounds[round].map((c) => ({ ...c })) }
      : { text: plan.final };
  };
  const server = await startModelServer({
    api: "openai-chat-completions",
    script,
    token: "soak-key",
  });
  const root = await soakWorld(server);
  const sessions = plans(options, rng);
  for (const p of sessions.flat()) byPlanKey.set(p.key, p);
  const total = sessions.reduce((n, s) => n + s.length + 1, 0);
  const result: SoakResult = {
    turns: 0,
    answered: 0,
    stopped: 0,
    cutByHostKill: 0,
    byKind: {},
    hostKills: 0,
    modelRequests: 0,
    longWaits: 0,
    interrupted: {},
    maxStopToAnswerMs: 0,
    seconds: 0,
    peakRssMiB: 0,
    problems,
    ok: false,
  };
  const started = performance.now();
  let peak = 0;
  let host = await HostProcess.start(root, TEST_CACHE_DIR);
  host.watch(3 * 2 ** 30);
  let ready: Promise<void> = Promise.resolve();
  /** Counts the hosts killed so far: a call made before a kill and refused after it was cut by it. */
  let generation = 0;
  let builds = 0;
  const answeredKeys = new Set<string>();

  const killAndRestart = async () => {
    const down = host;
    const { promise, resolve } = Promise.withResolvers<void>();
    ready = promise;
    generation++;
    peak = Math.max(peak, down.peak);
    await down.reap();
    result.hostKills++;
    note(`soak: host killed in the middle of a tool call (${result.hostKills}); starting it again`);
    host = await HostProcess.start(root, TEST_CACHE_DIR);
    host.watch(3 * 2 ** 30);
    resolve();
  };

  /** Stops (or kills the host under) a turn at the moment its kind names. */
  const interrupt = async (
    plan: Plan,
    tag: string,
    done: Promise<unknown>,
  ): Promise<number | undefined> => {
    const until = async (cond: () => boolean) => {
      while (!cond()) await sleep(20);
    };
    const ended = Symbol("ended");
    const first = await Promise.race([
      until(() => plan.requests.length > 0),
      done.then(() => ended),
    ]);
    if (first === ended) return undefined;
    const n = plan.requests[0];
    if (plan.kind === "stop-stream") {
      await server.streaming(n);
      await sleep(400);
    } else {
      await server.finished(n);
      await sleep(plan.kind === "stop-build" ? 1200 : 800);
    }
    if (plan.kind === "host-kill") {
      await killAndRestart();
      return undefined;
    }
    const at = performance.now();
    const r = await host.order<{ stopped: boolean }>({ op: "stop-call", tag }).catch(() => ({
      stopped: false,
    }));
    return r.stopped ? at : undefined;
  };

  const runSession = async (turns: Plan[]) => {
    for (const plan of turns) {
      await ready;
      if (plan.kind === "stop-build") {
        await Deno.writeTextFile(
          join(root, "plugins", "built", "source", "src", "main.rs"),
          `fn main() {\n    println!("build {}", ${++builds});\n}\n`,
        );
      }
      const tag = `${plan.key}`;
      const h = host, born = generation;
      const call = h.call("agent.chat", { text: `${plan.key}: go on`, session: plan.session }, {
        tag,
        timeoutMs: TURN_DEADLINE_MS,
      });
      const outcome = call.then(
        (a): { answer?: CallAnswer; died?: string } => ({ answer: a }),
        (e): { answer?: CallAnswer; died?: string } => ({ died: (e as Error).message }),
      );
      const stoppedAt = plan.kind === "answer" || plan.kind === "tools"
        ? undefined
        : await interrupt(plan, tag, outcome);
      const { answer, died } = await outcome;
      const ended = performance.now();
      result.turns++;
      result.byKind[plan.kind] = (result.byKind[plan.kind] ?? 0) + 1;
      if (result.turns % 20 === 0) note(`soak: ${result.turns}/${total} turns`);
      if (died !== undefined) {
        if (born === generation && plan.kind !== "host-kill") {
          problems.push(`${plan.key}: the host died: ${died}`);
        } else {
          result.cutByHostKill++;
        }
        continue;
      }
      if (answer!.timeout) {
        problems.push(`${plan.key} (${plan.kind}): no answer within ${TURN_DEADLINE_MS / 1000} s`);
        continue;
      }
      const response = answer!.response!;
      if (stoppedAt !== undefined) {
        result.maxStopToAnswerMs = Math.max(result.maxStopToAnswerMs, ended - stoppedAt);
        if (ended - stoppedAt > STOP_ANSWER_MS) {
          problems.push(`${plan.key}: answered ${Math.round(ended - stoppedAt)} ms after its stop`);
        }
      }
      if ("result" in response && response.result === plan.final) {
        result.answered++;
        answeredKeys.add(plan.key);
      } else if ("error" in response && stoppedAt !== undefined) {
        result.stopped++;
        if (!response.error?.message) {
          problems.push(`${plan.key}: a stop answered without a message`);
        }
      } else {
        problems.push(
          `${plan.key} (${plan.kind}): answered ${JSON.stringify(response).slice(0, 300)}`,
        );
      }
    }
  };

  try {
    await Promise.all(sessions.map(runSession));
    // one more turn in each session: it closes what a host kill left open, and must be answered
    const closing = sessions.map((turns) => {
      const key = `${turns[0].session} closing turn`;
      const plan: Plan = {
        key,
        session: turns[0].session,
        kind: "answer",
        rounds: [],
        final: `done: ${key}`,
        requests: [],
      };
      byPlanKey.set(key, plan);
      turns.push(plan);
      return [plan];
    });
    await Promise.all(closing.map(runSession));
    // no agent process left: a stopped one ends within the host's grace
    const deadline = performance.now() + 10_000;
    let left: string[] = [];
    do {
      const s = await host.state();
      left = s.processes.filter((p) => p.plugin === "agent").map((p) =>
        `${p.pid} ${p.method} ${p.state}`
      );
      if (left.length === 0) break;
      await sleep(200);
    } while (performance.now() < deadline);
    if (left.length > 0) problems.push(`agent processes left: ${left.join(", ")}`);
    for (const turns of sessions) {
      const answered = turns.filter((t) => answeredKeys.has(t.key));
      problems.push(
        ...await journalProblems(root, turns[0].session, answered, result.interrupted),
      );
    }
    const refused = server.requests.length -
      sessions.flat().reduce((n, p) => n + p.requests.length, 0);
    if (refused > 0) {
      problems.push(`the model refused ${refused} requests (tool calls not answered?)`);
    }
  } catch (e) {
    problems.push(`the soak failed: ${(e as Error).stack ?? e}`);
  } finally {
    peak = Math.max(peak, host.peak);
    await (host.alive ? host.stop() : host.reap()).catch(() => {});
    await server.close();
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
  result.modelRequests = server.requests.length;
  result.longWaits = longWaits;
  result.seconds = (performance.now() - started) / 1000;
  result.peakRssMiB = mib(peak);
  result.maxStopToAnswerMs = Math.round(result.maxStopToAnswerMs);
  result.ok = problems.length === 0 && result.turns === total;
  return result;
}
