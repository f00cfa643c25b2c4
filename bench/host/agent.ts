/**
 * The shipped agent (`plugins/agent`) against a scripted model server with no
 * think time (`tests/model_server.ts`, OpenAI chat completions), with warm
 * caches:
 *
 * - the whole turn of `counterScript` (`tests/agent_loop_test.ts`): the model
 *   writes a counter plugin, builds it with `cargo.build`, activates it with
 *   `core.activate`, calls it and answers (goal: 10 s or less). Each run is a
 *   fresh world; one run before them is not counted, so that cargo's target
 *   folder in the test cache is warm. Split by the times of the agent's tool
 *   steps, and against a `cargo.build` of the same source called directly in
 *   the same world (after the turn, or before it in every second run);
 * - the agent's own cost per model round trip: a turn of N round trips (N - 1
 *   replies that each call `list_dir` of a small folder, then a text answer),
 *   against the same N requests sent by `fetch` from the benchmark to the same
 *   server, each followed by the same listing with Deno's own calls (goal: the
 *   difference under 20 ms per round trip). A round trip is split by the
 *   times at which the server saw the request and ended its reply, and at
 *   which the caller got the agent's tool steps;
 * - the first text of a plain answer: from sending `agent.chat` to its first
 *   `text` notification, against the time to the first byte of the body of the
 *   same request by `fetch`.
 *
 * @module
 */
import { join } from "node:path";
import type { Figure } from "../figures.ts";
import { pick, type Section } from "../section.ts";
import { summarize } from "../stats.ts";
import { shuffled } from "./latency.ts";
import type { Response } from "../../core/jsonrpc.ts";
import { type AgentWorld, agentWorld } from "../../tests/agent_world.ts";
import type { ModelServer, Reply, SeenRequest } from "../../tests/model_server.ts";

/** The goal for the whole counter turn, in seconds. */
export const TURN_GOAL_S = 10;
/** The goal for the agent's overhead per model round trip, in milliseconds. */
export const OVERHEAD_GOAL_MS = 20;

/**
 * The counter scenario, `tests/agent_loop_test.ts`. It is imported when the
 * section runs, not with this module: it also declares its test, which would
 * otherwise join every test run that imports the benchmark's sections.
 */
type CounterScenario = typeof import("../../tests/agent_loop_test.ts");

/** The message of the counter turn, and the answer `counterScript` ends with. */
const COUNTER_TEXT = "Make me a counter plugin and try it.";
const COUNTER_ANSWER = "The counter works: it is now 1.";

/** The start of the message of a turn of round trips. */
const LOOP_TEXT = "List the folders";
/** The message of a plain answer. */
const HELLO_TEXT = "Hello";
/** The model's text answers. */
const LOOP_ANSWER = "Listed them.";
const HELLO_ANSWER = "Hello! I am the scripted model; ask me to grow the world.";
/** The small folders the model lists in turn (the same call three times in a row ends a turn). */
const FOLDERS = ["/config", "/plugins"];

/** A `step` notification of the agent, as far as the benchmark reads it. */
interface StepNote {
  blocks: string[];
  tools?: string[];
  args?: string;
  ok?: boolean;
}

/** One tool call of a turn, timed by its step notifications (`performance.now()`). */
interface ToolSpan {
  tool: string;
  args: string;
  /** The toolRequest step arrived. */
  requested: number;
  /** The toolResponse step arrived. */
  responded: number;
  ms: number;
}

/** What one `agent.chat` gave, with times from sending it, in milliseconds. */
interface TimedChat {
  response: Response;
  /** When it was sent (`performance.now()`). */
  start: number;
  total: number;
  /** The first `text` notification. */
  firstText?: number;
  tools: ToolSpan[];
}

/** `agent.chat` with times of its notifications. */
async function timedChat(w: AgentWorld, text: string, session?: string): Promise<TimedChat> {
  const tools: ToolSpan[] = [];
  let open: { args: string; t: number } | undefined;
  let firstText: number | undefined;
  let failed: string | undefined;
  const start = performance.now();
  const response = await w.client.request(
    "agent.chat",
    session === undefined ? { text } : { text, session },
    {
      onNotify(name, params) {
        const t = performance.now();
        if (name === "text") {
          firstText ??= t - start;
          return;
        }
        if (name !== "step") return;
        const step = params as StepNote;
        if (step.blocks.includes("toolRequest")) {
          open = { args: step.args ?? "", t };
        } else if (step.blocks.includes("toolResponse") && open) {
          failed ??= step.ok === true ? undefined : `the tool step ${open.args} failed`;
          tools.push({
            tool: step.tools?.[0] ?? "",
            args: open.args,
            requested: open.t,
            responded: t,
            ms: t - open.t,
          });
          open = undefined;
        }
      },
    },
  );
  const total = performance.now() - start;
  if (response.error) {
    throw new Error(`agent.chat: ${response.error.code} ${response.error.message}`);
  }
  if (failed) throw new Error(failed);
  return { response, start, total, firstText, tools };
}

/** The times of one counter turn, in milliseconds. */
interface CounterRun {
  total: number;
  build: number;
  activate: number;
  /** The other tools: the two writes and the call of the counter. */
  otherTools: number;
  modelRequests: number;
  /** `cargo.build` of the same source, called directly in the same world. */
  direct: number;
}

/**
 * One counter turn in a fresh world, and a `cargo.build` of the same source
 * called directly: after the turn, or (`directFirst`) before it, from files
 * written by the benchmark.
 */
async function counterRun(scenario: CounterScenario, directFirst: boolean): Promise<CounterRun> {
  await using w = await agentWorld({
    script: scenario.counterScript,
    files: directFirst
      ? {
        "plugins/counter/source/Cargo.toml": scenario.COUNTER_CARGO,
        "plugins/counter/source/src/main.rs": scenario.COUNTER_MAIN,
      }
      : {},
  });
  const directBuild = async () => {
    const t = performance.now();
    const r = await w.request("cargo.build", { plugin: "counter" });
    if (r.error) throw new Error(`cargo.build: ${r.error.message}`);
    return performance.now() - t;
  };
  const before = directFirst ? await directBuild() : 0;
  const chat = await timedChat(w, COUNTER_TEXT);
  if (chat.response.result !== COUNTER_ANSWER) {
    throw new Error(`the counter turn answered ${JSON.stringify(chat.response.result)}`);
  }
  const span = (method: string) => {
    const found = chat.tools.filter((s) => s.args.startsWith(method));
    if (found.length !== 1) throw new Error(`${found.length} tool steps of ${method}`);
    return found[0].ms;
  };
  const build = span("cargo.build");
  const activate = span("core.activate");
  return {
    total: chat.total,
    build,
    activate,
    otherTools: chat.tools.reduce((sum, s) => sum + s.ms, 0) - build - activate,
    modelRequests: w.server.requests.length,
    direct: directFirst ? before : await directBuild(),
  };
}

/** The last message of the person in a request, and how many tool results follow it. */
function turnOf(request: SeenRequest): { text: string; results: number } {
  const messages = (request.body as { messages: { role: string; content: unknown }[] }).messages;
  const last = messages.findLastIndex((m) => m.role === "user");
  return {
    text: String(messages[last]?.content ?? ""),
    results: messages.slice(last + 1).filter((m) => m.role === "tool").length,
  };
}

/** The model of the round-trip turns: N - 1 listings, then the answer; or a plain answer. */
function roundTripScript(n: number): (request: SeenRequest) => Reply {
  return (request) => {
    const { text, results } = turnOf(request);
    if (text.startsWith(LOOP_TEXT)) {
      if (results < n - 1) {
        return {
          toolCalls: [{ name: "list_dir", arguments: { path: FOLDERS[results % FOLDERS.length] } }],
        };
      }
      return { text: LOOP_ANSWER };
    }
    return { text: HELLO_ANSWER };
  };
}

/** Times of one request sent by `fetch`, in milliseconds. */
interface Fetched {
  /** Until the first bytes of the body. */
  firstByte: number;
  /** Until the end of the body. */
  total: number;
}

/** Sends a request the agent sent, as the agent sent it, and reads the whole stream. */
async function fetchReply(server: ModelServer, body: unknown): Promise<Fetched> {
  const start = performance.now();
  const response = await fetch(`${server.url}/chat/completions`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      accept: "text/event-stream",
      authorization: "Bearer test-key",
    },
    body: JSON.stringify(body),
  });
  if (!response.ok || !response.body) {
    throw new Error(`the model server answered ${response.status}: ${await response.text()}`);
  }
  let firstByte: number | undefined;
  let bytes = 0;
  for await (const chunk of response.body) {
    firstByte ??= performance.now() - start;
    bytes += chunk.length;
  }
  if (bytes === 0) throw new Error("the model server sent an empty body");
  return { firstByte: firstByte!, total: performance.now() - start };
}

/** What `list_dir` does, with Deno's own calls: the entries, a stat of each, sorted. */
async function listDir(path: string): Promise<number> {
  const entries: string[] = [];
  for await (const e of Deno.readDir(path)) {
    const info = await Deno.lstat(join(path, e.name));
    entries.push(e.isDirectory ? `${e.name}/` : `${e.name} (${info.size} bytes)`);
  }
  entries.sort();
  return entries.length;
}

/** When each request reached the server and when its reply ended (`performance.now()`). */
class ServerTimes {
  readonly arrived = new Map<number, number>();
  readonly ended = new Map<number, number>();
  server: ModelServer | undefined;

  /** `script`, noting the times of the requests it answers. */
  wrap(script: (request: SeenRequest) => Reply): (request: SeenRequest) => Reply {
    return (request) => {
      this.arrived.set(request.n, performance.now());
      this.server?.finished(request.n).then(() => this.ended.set(request.n, performance.now()));
      return script(request);
    };
  }

  /** Forgets the times before request `n`. */
  forgetBefore(n: number): void {
    for (const map of [this.arrived, this.ended]) {
      for (const k of map.keys()) if (k < n) map.delete(k);
    }
  }
}

/** Where the time of one round trip of a turn went, in milliseconds. */
interface Phases {
  /** From the request's arrival at the server to the end of its reply. */
  reply: number;
  /** From the end of the reply to the toolRequest step. */
  toTool: number;
  /** From the toolRequest step to the toolResponse step. */
  tool: number;
  /** From the toolResponse step to the arrival of the next request. */
  toRequest: number;
}

/** The phases of each round trip with a tool of a turn whose requests are `first`, `first + 1`, … */
function phasesOf(chat: TimedChat, times: ServerTimes, first: number): Phases[] {
  return chat.tools.map((tool, k) => {
    const at = (map: Map<number, number>, n: number) => {
      const t = map.get(n);
      if (t === undefined) throw new Error(`no time of request ${n}`);
      return t;
    };
    const arrived = at(times.arrived, first + k);
    const ended = at(times.ended, first + k);
    return {
      reply: ended - arrived,
      toTool: tool.requested - ended,
      tool: tool.ms,
      toRequest: at(times.arrived, first + k + 1) - tool.responded,
    };
  });
}

/** The measurements of one round of the round-trip part. */
type Kind = "loop" | "loopBaseline" | "hello" | "helloBaseline";

/** The agent section. */
export const agent: Section = {
  name: "agent",
  group: "agent",
  summary: "the agent with a scripted model: the whole counter turn, its cost per model round " +
    "trip, its first token",
  async run(ctx) {
    const turnRuns = pick(ctx, 3, 1);
    const roundTrips = pick(ctx, 20, 10);
    const warmupRounds = pick(ctx, 2, 1);
    const rounds = pick(ctx, 10, 3);
    const figures: Figure[] = [];

    // --- the whole counter turn ---------------------------------------------
    ctx.progress(
      `agent: the counter turn, 1 run not counted then ${turnRuns}, each in a fresh world`,
    );
    const scenario: CounterScenario = await import("../../tests/agent_loop_test.ts");
    await counterRun(scenario, false); // warms cargo's target folder and the agent's transpile
    const runs: CounterRun[] = [];
    for (let i = 0; i < turnRuns; i++) runs.push(await counterRun(scenario, i % 2 === 1));
    const seconds = (values: number[]) => values.map((ms) => ms / 1000);
    const turnFigure = (
      name: string,
      label: string,
      values: number[],
      unit: string,
      more: Partial<Figure> = {},
    ): Figure => ({
      name,
      label,
      unit,
      median: summarize(values).median,
      runs: values.length,
      warmup: 1,
      samples: values,
      ...more,
    });
    figures.push(
      turnFigure(
        "turn.total",
        "whole turn: write, build, activate, call a counter",
        seconds(runs.map((r) => r.total)),
        "s",
        {
          goal: { op: "<=", value: TURN_GOAL_S },
          method: "agent.chat with counterScript (tests/agent_loop_test.ts) in a fresh world, " +
            "until the answer: 5 model requests, 2 write_file, cargo.build, core.activate, " +
            "counter.increment",
          extra: { modelRequests: runs.map((r) => r.modelRequests) },
        },
      ),
      turnFigure(
        "turn.build",
        "  of which cargo.build (its tool step)",
        seconds(runs.map((r) => r.build)),
        "s",
        {
          method: "from the agent's toolRequest step notification of cargo.build to its " +
            "toolResponse, as the caller of agent.chat receives them",
        },
      ),
      turnFigure(
        "turn.activate",
        "  of which core.activate (its tool step)",
        runs.map((r) => r.activate),
        "ms",
        { method: "the same for core.activate" },
      ),
      turnFigure(
        "turn.rest",
        "  the rest: 5 model round trips, 3 small tools",
        runs.map((r) => r.total - r.build - r.activate),
        "ms",
        {
          method: "the whole turn minus the tool steps of cargo.build and core.activate: the " +
            "agent's process, the model requests, the two writes and counter.increment",
          extra: { otherToolsMs: runs.map((r) => r.otherTools) },
        },
      ),
      turnFigure(
        "turn.direct",
        "  baseline: cargo.build called directly",
        seconds(runs.map((r) => r.direct)),
        "s",
        {
          method: "cargo.build {plugin: counter} from the console in the same world, after the " +
            "turn (odd runs: before it, on the same files written by the benchmark); each " +
            "build compiles the counter again (a work copy of its own)",
        },
      ),
      turnFigure(
        "turn.build-share",
        "  cargo.build / whole turn",
        runs.map((r) => r.build / r.total),
        "x",
      ),
    );

    // --- round trips and the first token -------------------------------------
    const times = new ServerTimes();
    await using w = await agentWorld({ script: times.wrap(roundTripScript(roundTrips)) });
    times.server = w.server;
    let sessions = 0;
    let loopBodies: unknown[] = [];
    let helloBody: unknown;
    /** Runs a turn in a new session and keeps the requests it made, for the baselines. */
    const agentTurn = async (text: string, expected: string) => {
      const first = w.server.requests.length + 1;
      times.forgetBefore(first);
      const chat = await timedChat(w, text, `bench-${sessions++}`);
      if (chat.response.result !== expected) {
        throw new Error(`agent.chat answered ${JSON.stringify(chat.response.result)}`);
      }
      return { chat, first, bodies: w.server.requests.slice(first - 1).map((r) => r.body) };
    };
    const s = {
      loop: [] as number[],
      loopBaseline: [] as number[],
      loopFetch: [] as number[],
      phases: [] as Phases[],
      hello: [] as number[],
      helloRequest: [] as number[],
      helloTotal: [] as number[],
      helloBaseline: [] as number[],
      helloBaselineTotal: [] as number[],
    };
    const measure: Record<Kind, (into: boolean) => Promise<void>> = {
      loop: async (into) => {
        const text = `${LOOP_TEXT} ${FOLDERS.join(" and ")}`;
        const { chat, first, bodies } = await agentTurn(text, LOOP_ANSWER);
        if (bodies.length !== roundTrips || chat.tools.length !== roundTrips - 1) {
          throw new Error(`a turn of ${bodies.length} requests and ${chat.tools.length} tools`);
        }
        loopBodies = bodies;
        if (!into) return;
        s.loop.push(chat.total / roundTrips);
        s.phases.push(...phasesOf(chat, times, first));
      },
      loopBaseline: async (into) => {
        let fetching = 0;
        const start = performance.now();
        for (const [i, body] of loopBodies.entries()) {
          fetching += (await fetchReply(w.server, body)).total;
          if (i < loopBodies.length - 1) {
            await listDir(join(w.root, FOLDERS[i % FOLDERS.length].slice(1)));
          }
        }
        const total = performance.now() - start;
        if (!into) return;
        s.loopBaseline.push(total / roundTrips);
        s.loopFetch.push(fetching / roundTrips);
      },
      hello: async (into) => {
        const { chat, first, bodies } = await agentTurn(HELLO_TEXT, HELLO_ANSWER);
        if (chat.firstText === undefined) throw new Error("a plain answer without a text");
        helloBody = bodies[0];
        if (!into) return;
        s.hello.push(chat.firstText);
        s.helloRequest.push(times.arrived.get(first)! - chat.start);
        s.helloTotal.push(chat.total);
      },
      helloBaseline: async (into) => {
        const fetched = await fetchReply(w.server, helloBody);
        if (!into) return;
        s.helloBaseline.push(fetched.firstByte);
        s.helloBaselineTotal.push(fetched.total);
      },
    };
    ctx.progress(
      `agent: ${warmupRounds} + ${rounds} rounds of a turn of ${roundTrips} round trips, a ` +
        "plain answer, and their baselines by fetch",
    );
    // the baselines replay the requests of the agent's last turn of the same kind
    await measure.loop(false);
    await measure.hello(false);
    const kinds = Object.keys(measure) as Kind[];
    for (let i = 0; i < warmupRounds + rounds; i++) {
      for (const kind of shuffled(kinds, i)) await measure[kind](i >= warmupRounds);
    }

    const figure = (
      name: string,
      label: string,
      values: number[],
      unit: string,
      more: Partial<Figure> = {},
    ): Figure => {
      const sum = summarize(values);
      return {
        name,
        label,
        unit,
        median: sum.median,
        p99: sum.p99,
        runs: values.length,
        warmup: warmupRounds,
        samples: values,
        ...more,
      };
    };
    const phase = (key: keyof Phases) => s.phases.map((p) => p[key]);
    // what one more round trip adds to a turn, without the turn's fixed cost (a plain answer)
    const marginal = (summarize(s.loop).median * roundTrips - summarize(s.helloTotal).median) /
      (roundTrips - 1);
    figures.push(
      figure("loop.agent", `turn of ${roundTrips} round trips, per round trip`, s.loop, "ms", {
        method: `agent.chat in a new session, until the answer, / ${roundTrips}: ` +
          `${roundTrips - 1} replies that each call list_dir of /config or /plugins, then a ` +
          "text answer",
        extra: { roundTrips, marginalPerRoundTrip: marginal },
      }),
      figure(
        "loop.baseline",
        "  baseline: fetch + listing, per round trip",
        s.loopBaseline,
        "ms",
        {
          method: "the requests of the agent's last such turn, each sent by fetch from the " +
            "benchmark to the same server with its whole SSE body read, each but the last " +
            "followed by Deno.readDir and lstat of the same folder",
          extra: { fetchAlone: summarize(s.loopFetch) },
        },
      ),
      figure(
        "loop.overhead",
        "  the agent's overhead per round trip",
        s.loop.map((x, i) => x - s.loopBaseline[i]),
        "ms",
        {
          goal: { op: "<=", value: OVERHEAD_GOAL_MS },
          method: "per round: the agent's time per round trip minus the baseline's",
        },
      ),
      figure(
        "loop.ratio",
        "  agent / baseline",
        s.loop.map((x, i) => x / s.loopBaseline[i]),
        "x",
      ),
      figure("loop.reply", "  a round trip: the reply (at the server)", phase("reply"), "ms", {
        method: "each round trip with a tool: from the request's arrival at the server to the " +
          "end of its reply",
      }),
      figure("loop.to-tool", "  the reply's end to the tool step", phase("toTool"), "ms", {
        method: "from the end of the reply at the server to the toolRequest step at the caller",
      }),
      figure("loop.tool", "  the tool step (list_dir)", phase("tool"), "ms", {
        method: "from the toolRequest step to the toolResponse step, at the caller",
      }),
      figure("loop.to-request", "  the tool step to the next request", phase("toRequest"), "ms", {
        method: "from the toolResponse step at the caller to the next request's arrival at " +
          "the server",
      }),
      figure("first.agent", "first text of a plain answer", s.hello, "ms", {
        method: "from sending agent.chat (a new session) to its first text notification",
      }),
      figure(
        "first.request",
        "  of which until its request reaches the server",
        s.helloRequest,
        "ms",
        {
          method: "from sending agent.chat to the arrival of the model request at the server",
        },
      ),
      figure("first.baseline", "  baseline: first byte by fetch", s.helloBaseline, "ms", {
        method: "the agent's request for it, sent by fetch: until the first bytes of the body",
      }),
      figure(
        "first.overhead",
        "  difference",
        s.hello.map((x, i) => x - s.helloBaseline[i]),
        "ms",
        { method: "per round: the agent's first text minus the baseline's first byte" },
      ),
      figure("plain.agent", "a plain answer, agent.chat until its answer", s.helloTotal, "ms", {
        method: "the same turns until the answer: one model request, and the turn's own work",
      }),
      figure(
        "plain.baseline",
        "  baseline: its request by fetch, whole body",
        s.helloBaselineTotal,
        "ms",
      ),
    );
    return figures;
  },
};
