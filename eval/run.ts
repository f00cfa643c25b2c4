/**
 * Runs the evaluation: a fresh world with the agent the host ships, the
 * tasks in order (each in its own session), the checks after each, and
 * what each cost, read from the session's journal: model requests, tokens,
 * seconds of model time and of host time (the rest of the turns' time:
 * tools, builds, the agent itself).
 *
 * @module
 */
import { join } from "node:path";
import { Host } from "../core/host.ts";
import { initWorld } from "../core/init.ts";
import type { EvalTask, EvalWorld } from "./tasks.ts";

/** What one task did and cost. */
export interface TaskResult {
  name: string;
  passed: boolean;
  /** Why it failed. */
  why?: string;
  /** The agent's last answer. */
  answer: string;
  /** Model requests of its turns. */
  requests: number;
  inputTokens: number;
  outputTokens: number;
  /** Seconds the model took to answer, all requests together. */
  modelSeconds: number;
  /** Seconds of the turns that were not the model's. */
  hostSeconds: number;
}

/** Options of {@linkcode runEval}. */
export interface EvalOptions {
  /** The tasks to run, in order. */
  tasks: EvalTask[];
  /** The text of the world's `config/agent.yaml`. */
  agentYaml: string;
  /** The host's cache of compiled components and crates. */
  cacheDir: string;
  /** Called with each task's result as it ends. */
  onResult?: (result: TaskResult) => void;
}

/** One line of a session's `journal.jsonl`. */
interface Entry {
  time: string;
  kind: string;
  data: { op?: number; type?: string; detail?: { input_tokens?: number; output_tokens?: number } };
}

/** The model requests of a session, their tokens and seconds, from its journal. */
async function modelCost(root: string, session: string) {
  const path = join(root, "state", "agent", session, "journal.jsonl");
  const text = await Deno.readTextFile(path).catch(() => "");
  const entries = text.split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l) as Entry);
  const started = new Map<number, number>();
  const cost = { requests: 0, inputTokens: 0, outputTokens: 0, modelSeconds: 0 };
  for (const e of entries) {
    if (e.kind === "agent.op.v1" && e.data.type === "model") {
      cost.requests++;
      started.set(e.data.op!, Date.parse(e.time));
    } else if (e.kind === "agent.op-result.v1" && started.has(e.data.op!)) {
      cost.modelSeconds += (Date.parse(e.time) - started.get(e.data.op!)!) / 1000;
      cost.inputTokens += e.data.detail?.input_tokens ?? 0;
      cost.outputTokens += e.data.detail?.output_tokens ?? 0;
    }
  }
  return cost;
}

/** Runs the tasks in a fresh world; the world is removed at the end. */
export async function runEval(options: EvalOptions): Promise<TaskResult[]> {
  const root = await Deno.makeTempDir({ prefix: "sausage-eval-" });
  await initWorld(root, { installAgent: true });
  await Deno.writeTextFile(join(root, "config", "agent.yaml"), options.agentYaml);
  const start = async () => {
    const host = await Host.start({ world: root, cacheDir: options.cacheDir, installAgent: true });
    await host.discovered;
    return host;
  };
  let host = await start();
  const call = async (method: string, params: Record<string, unknown> = {}) => {
    const response = await host.client("console").request(method, params);
    if (response.error) {
      throw new Error(`${method}: error ${response.error.code}: ${response.error.message}`);
    }
    return response.result;
  };
  const world: EvalWorld = {
    root,
    call,
    async imports() {
      await host.graph.update();
      const plugins = host.graph.view.plugins;
      return Object.fromEntries(Object.entries(plugins).map(([name, p]) => [name, p.imports]));
    },
    async restart() {
      await host.shutdown();
      host = await start();
      await host.servicesStarted;
    },
  };
  const results: TaskResult[] = [];
  try {
    for (const task of options.tasks) {
      const began = performance.now();
      const answers: string[] = [];
      let why: string | undefined;
      for (const text of task.messages) {
        const response = await host.client("console").request("agent.chat", {
          text,
          session: task.name,
        });
        if (response.error) {
          why = `the turn of "${text.slice(0, 40)}…" failed: ${response.error.message}`;
          break;
        }
        answers.push(String(response.result));
      }
      const turnsSeconds = (performance.now() - began) / 1000;
      if (!why) {
        why = await task.check(world, answers).catch((e) => `the check failed: ${e.message}`);
      }
      const cost = await modelCost(root, task.name);
      const result: TaskResult = {
        name: task.name,
        passed: why === undefined,
        ...(why === undefined ? {} : { why }),
        answer: answers.at(-1) ?? "",
        ...cost,
        hostSeconds: Math.max(0, turnsSeconds - cost.modelSeconds),
      };
      results.push(result);
      options.onResult?.(result);
    }
  } finally {
    await host.shutdown();
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
  return results;
}

/** The results as a table for a terminal. */
export function formatResults(results: TaskResult[]): string {
  const rows = [["task", "passed", "requests", "tokens in", "tokens out", "model s", "host s"]];
  for (const r of results) {
    rows.push([
      r.name,
      r.passed ? "yes" : "no",
      String(r.requests),
      String(r.inputTokens),
      String(r.outputTokens),
      r.modelSeconds.toFixed(1),
      r.hostSeconds.toFixed(1),
    ]);
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)));
  const lines = rows.map((row) =>
    row.map((cell, i) => cell.padEnd(widths[i])).join("  ").trimEnd()
  );
  const passed = results.filter((r) => r.passed).length;
  lines.push(`${passed} of ${results.length} tasks passed`);
  for (const r of results) {
    if (r.why) {
      lines.push(`${r.name}: ${r.why}\n  the agent's last answer: ${r.answer.slice(0, 2000)}`);
    }
  }
  return lines.join("\n");
}
