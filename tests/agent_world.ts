/**
 * Whole-world helpers for the agent's tests: a world that runs the shipped
 * agent against a scripted model server.
 *
 * @module
 */
import { join } from "node:path";
import { AGENT_DIST } from "../core/shipped_agent.ts";
import type { Response } from "../core/jsonrpc.ts";
import { type ModelApi, type ModelServer, type Reply, startModelServer } from "./model_server.ts";
import { startWorld, type TestWorld, type WorldOptions } from "./world.ts";

/** The shipped agent's component. */
export const AGENT_WASM: string = join(AGENT_DIST, "agent.wasm");

/** `config/agent.yaml` for a model server, with more lines. */
export function agentYaml(server: ModelServer, api: ModelApi, extra = ""): string {
  return [
    `api: ${api}`,
    `base_url: ${server.url}`,
    "model: scripted",
    "token: test-key",
    extra,
  ].join("\n") + "\n";
}

/** A world with the agent and a model server that plays `script`. */
export interface AgentWorld extends TestWorld {
  server: ModelServer;
  /** `agent.chat`, with the notifications it sent. */
  chat(text: string, session?: string): Promise<Chat>;
}

/** What one `agent.chat` gave. */
export interface Chat {
  response: Response;
  texts: string[];
  steps: Record<string, unknown>[];
  progress: unknown[];
}

/** Options of {@linkcode agentWorld}. */
export interface AgentWorldOptions extends WorldOptions {
  api?: ModelApi;
  script: Reply[] | ((request: import("./model_server.ts").SeenRequest) => Reply);
  /** More lines of agent.yaml. */
  yaml?: string;
  /** The whole agent.yaml instead. */
  config?: string;
  token?: string;
  models?: string[];
}

/** Starts a model server and a world whose agent talks to it. */
export async function agentWorld(options: AgentWorldOptions): Promise<AgentWorld> {
  const api = options.api ?? "openai-chat-completions";
  const server = await startModelServer({
    api,
    script: options.script,
    token: options.token ?? "test-key",
    models: options.models,
  });
  const { script: _s, yaml, config, api: _a, token: _t, models: _m, ...worldOptions } = options;
  let w: TestWorld;
  try {
    w = await startWorld({
      plugins: { probe: "probe" },
      ...worldOptions,
      wasm: { agent: await Deno.readFile(AGENT_WASM), ...worldOptions.wasm },
      files: { "config/agent.yaml": config ?? agentYaml(server, api, yaml), ...worldOptions.files },
    });
  } catch (e) {
    await server.close();
    throw e;
  }
  return {
    ...w,
    server,
    async chat(text, session) {
      const chat: Chat = {
        response: undefined as unknown as Response,
        texts: [],
        steps: [],
        progress: [],
      };
      chat.response = await w.client.request(
        "agent.chat",
        session === undefined ? { text } : { text, session },
        {
          onNotify(name, params) {
            if (name === "text") chat.texts.push((params as { text: string }).text);
            else if (name === "step") chat.steps.push(params as Record<string, unknown>);
            else chat.progress.push(params);
          },
        },
      );
      return chat;
    },
    async [Symbol.asyncDispose]() {
      await w[Symbol.asyncDispose]();
      await server.close();
    },
  };
}

/** One step of `agent.history`. */
export interface HistoryStep {
  seq: number;
  role: string;
  text: string;
  blocks: string[];
  tools: string[];
  args?: string | null;
  ok?: boolean | null;
  input_tokens?: number | null;
  output_tokens?: number | null;
  ms?: number | null;
}

/** The steps of a session. */
export async function history(w: TestWorld, session?: string): Promise<HistoryStep[]> {
  return await w.call("agent.history", session === undefined ? {} : { session }) as HistoryStep[];
}

/** The messages the model got in request `n` (1-based) of a server. */
export function messagesOf(server: ModelServer, n: number): Record<string, unknown>[] {
  return (server.requests[n - 1].body as { messages: Record<string, unknown>[] }).messages;
}
