/**
 * Runs the console's commands against a host and prints what they give.
 * Calls run side by side: {@linkcode Commands.run} resolves when the
 * command's output was printed, and the caller decides whether to wait.
 *
 * @module
 */
import { type HostView, ViewError, worldPaths } from "../core/host_view.ts";
import { ErrorCode, type ErrorObject, type Response } from "../core/jsonrpc.ts";
import type { Entry } from "../core/journal.ts";
import { CORE } from "../core/names.ts";
import { formatFile, formatListing } from "./file_text.ts";
import {
  callLabel,
  formatClock,
  formatError,
  formatHelp,
  formatHistory,
  formatLog,
  formatNotification,
  formatProcesses,
  formatResult,
  formatStep,
  formatTable,
  formatText,
  formatUnsolicited,
  formatUsage,
  type HistoryStep,
  indent,
  type Style,
} from "./format.ts";
import { formatActivated, formatMethods } from "./methods.ts";
import { activateParams, CHAT_METHOD, type Command, resolvePid } from "./parse.ts";

/** The largest JSON file the console reads: the largest message (PROTOCOL 3.1). */
const MAX_JSON_BYTES = 16 * 1024 * 1024;

/** Prints a block of text (without a final newline). */
export type Print = (text: string) => void;

/** What {@linkcode Commands} works with. */
export interface CommandsOptions {
  /** The host, and the console's calls (parent `console`). */
  view: HostView;
  style: Style;
  print: Print;
  /**
   * Shows one line of progress that the next one replaces (`null` clears
   * it). Without it, progress notifications print like any other.
   */
  status?: (text: string | null) => void;
}

/** A call in flight. */
interface InFlight {
  label: string;
  /** Another call ran at the same time: its output carries the label. */
  shared: boolean;
}

/** Renders a successful result. */
type Render = (result: unknown, label: string | undefined) => string | Promise<string>;

/** The hint for a chat message while there is no agent. */
export const NO_AGENT_HINT =
  "the agent is not installed yet (plugins/agent/plugin.wasm); type help for the commands";

/** Runs commands and prints their output. */
export class Commands {
  readonly #view: HostView;
  readonly #style: Style;
  readonly #print: Print;
  readonly #status?: (text: string | null) => void;
  readonly #inFlight = new Set<InFlight>();

  constructor(options: CommandsOptions) {
    this.#view = options.view;
    this.#style = options.style;
    this.#print = options.print;
    this.#status = options.status;
    this.#view.onNotification = (message) => {
      this.#print(formatUnsolicited(message.method, message.params, this.#style));
    };
  }

  /** How many calls are waiting for an answer. */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  /** Runs a command typed as `line`; resolves when its output was printed. */
  async run(command: Command, line: string): Promise<void> {
    const style = this.#style;
    switch (command.kind) {
      case "empty":
      case "quit":
        return;
      case "help":
        this.#print(formatHelp(style));
        return;
      case "invalid":
        this.#print(formatUsage(command.message, command.example, style));
        return;
      case "ps":
        this.#print(await this.#ps());
        return;
      case "call":
        return await this.#request(
          line,
          command.method,
          command.params,
          (result, label) => formatResult(result, { label, style }),
        );
      case "chat":
        return await this.#request(
          line,
          CHAT_METHOD,
          { text: command.text },
          (result, label) => chatAnswer(result, label, style),
          (error) => {
            if (error.code === ErrorCode.NoSuchPlugin) return NO_AGENT_HINT;
            // the agent names the file as a process sees it; a person edits it on the host
            if (error.message.includes("/config/agent.yaml")) {
              return `the file is ${worldPaths(this.#view.info.world).agentConfig} on this machine`;
            }
            return undefined;
          },
        );
      case "log": {
        const params: Record<string, unknown> = { limit: command.limit };
        if (command.plugin !== undefined) params.plugin = command.plugin;
        if (command.pid !== undefined) params.pid = command.pid;
        return await this.#request(line, "core.log", params, (result, label) => {
          const entries = (result as { entries?: Entry[] } | null)?.entries;
          if (!Array.isArray(entries)) return formatResult(result, { label, style });
          const text = formatLog(entries, { showPid: command.pid === undefined, style });
          return label === undefined ? text : `${style.bold(`${label} →`)}\n${text}`;
        });
      }
      case "sessions":
        return await this.#request(line, "agent.sessions", {}, (result, label) => {
          if (!Array.isArray(result)) return formatResult(result, { label, style });
          const rows =
            (result as { session: string; steps: number; updated: string; title: string }[])
              .map((
                s,
              ) => [
                s.session,
                String(s.steps),
                s.updated ? formatClock(new Date(s.updated)) : "",
                s.title,
              ]);
          return rows.length === 0
            ? indent(style.dim("no sessions yet: type a message for the agent"))
            : formatTable(["SESSION", "STEPS", "LAST", "FIRST MESSAGE"], rows, style);
        });
      case "history": {
        const params: Record<string, unknown> = { limit: command.limit };
        if (command.session !== undefined) params.session = command.session;
        return await this.#request(line, "agent.history", params, (result, label) => {
          if (!Array.isArray(result)) return formatResult(result, { label, style });
          const text = formatHistory(result as HistoryStep[], { style });
          return label === undefined ? text : `${style.bold(`${label} →`)}\n${text}`;
        });
      }
      case "reset":
        return await this.#request(
          line,
          "agent.reset",
          command.session === undefined ? {} : { session: command.session },
          (result, label) =>
            formatText(
              `${(result as { session?: string } | null)?.session ?? "the session"} starts afresh`,
              {
                label,
                style,
              },
            ),
        );
      case "methods":
        this.#print(await this.#methods(command.plugin));
        return;
      case "activate":
      case "revert":
        return await this.#activate(command, line);
      case "ls":
        this.#print(await this.#ls(command.path, command.long));
        return;
      case "cat":
        this.#print(await this.#cat(command.path));
        return;
      case "stop":
      case "kill": {
        const pids = (await this.#view.processes()).map((p) => p.pid);
        const match = resolvePid(command.pid, pids);
        if ("ambiguous" in match) {
          this.#print(formatUsage(
            `"${command.pid}" is the start of ${match.ambiguous.length} process IDs: ` +
              match.ambiguous.join(", "),
            `${command.kind} ${match.ambiguous[0]}`,
            style,
          ));
          return;
        }
        const done = command.kind === "stop" ? "stopped" : "killed";
        return await this.#request(
          line,
          `core.${command.kind}`,
          { pid: match.pid },
          (_result, label) => formatText(style.green(`${done} ${match.pid}`), { label, style }),
        );
      }
    }
  }

  /** `core.activate` or `core.revert`, and what changed. */
  async #activate(
    command: Extract<Command, { kind: "activate" | "revert" }>,
    line: string,
  ): Promise<void> {
    const style = this.#style;
    const plugins = command.kind === "activate"
      ? command.items.map((i) => i.plugin)
      : [command.plugin];
    const before = new Map<string, string | null>();
    for (const plugin of plugins) before.set(plugin, await this.#view.version(plugin));
    const params = command.kind === "activate"
      ? activateParams(command)
      : { plugin: command.plugin, ...(command.force ? { force: true } : {}) };
    await this.#request(line, `core.${command.kind}`, params, async (result, label) => {
      if (typeof result !== "object" || result === null) {
        return formatResult(result, { label, style });
      }
      const after = new Map<string, string | null>();
      for (const plugin of Object.keys(result)) after.set(plugin, await this.#view.version(plugin));
      const text = formatActivated(
        Object.entries(result).map(([plugin, document]) => ({
          plugin,
          document,
          changed: before.get(plugin) !== after.get(plugin),
        })),
        { reverted: command.kind === "revert", force: command.force, style },
      );
      return label === undefined ? text : `${style.bold(`${label} →`)}\n${text}`;
    });
  }

  /** Reads a JSON file of `/proc` (at most the size of a message); throws. */
  async #readJson(path: string): Promise<unknown> {
    const file = await this.#view.read(path, MAX_JSON_BYTES);
    return JSON.parse(new TextDecoder().decode(file.bytes));
  }

  async #methods(plugin: string): Promise<string> {
    const style = this.#style;
    if (plugin === CORE) {
      return indent(
        `core is the host, not a plugin: its methods are ${
          this.#view.info.coreMethods.join(", ")
        }` +
          `\n${style.dim("PROTOCOL section 9 describes them: cat /proc/core/PROTOCOL.md")}`,
      );
    }
    const path = `/proc/core/plugins/${plugin}/discover.json`;
    let discovered: unknown;
    try {
      discovered = await this.#readJson(path);
    } catch (e) {
      if (!(await this.#view.plugins()).includes(plugin)) return await this.#noPlugin(plugin);
      return indent(style.red(`cannot read ${errorText(e)}`));
    }
    if (discovered === null) {
      // not known yet: ask for it now (a discovery in progress is joined, not repeated)
      try {
        await this.#view.discover(plugin);
        discovered = await this.#readJson(path);
      } catch (e) {
        return indent(
          style.red(`the plugin.wasm of ${plugin} cannot be loaded: ${errorText(e)}`),
        );
      }
    }
    const imports = (await this.#graph()).plugins?.[plugin]?.imports ?? {};
    const importStatus = Object.fromEntries(
      Object.entries(imports).map(([provider, i]) => [provider, i.status]),
    );
    return formatMethods(plugin, discovered, { style, importStatus });
  }

  /** `graph.json`, or nothing when it cannot be read (the graph is then not shown). */
  async #graph(): Promise<GraphFile> {
    try {
      return await this.#readJson("/proc/core/graph.json") as GraphFile;
    } catch {
      return {};
    }
  }

  async #noPlugin(plugin: string): Promise<string> {
    const plugins = await this.#view.plugins().catch(() => [] as string[]);
    const known = plugins.length === 0
      ? "there are no plugins yet"
      : `the plugins are ${plugins.join(", ")}`;
    return indent(
      `${this.#style.red(`there is no plugin "${plugin}"`)} (no /plugins/${plugin}/plugin.wasm); ` +
        known,
    );
  }

  async #ls(path: string, long: boolean): Promise<string> {
    try {
      return formatListing(await this.#view.list(path), { long, style: this.#style });
    } catch (e) {
      return indent(this.#style.red(`ls: ${errorText(e)}`));
    }
  }

  async #cat(path: string): Promise<string> {
    try {
      return formatFile(await this.#view.read(path), this.#style);
    } catch (e) {
      return indent(this.#style.red(`cat: ${errorText(e)}`));
    }
  }

  async #ps(): Promise<string> {
    const rows = (await this.#view.processes())
      .filter((p) => p.state !== "ended")
      .map((p) => ({
        pid: p.pid,
        plugin: p.plugin,
        method: p.method,
        state: p.state,
        parent: p.detached ? null : p.parent,
        startedAt: new Date(p.started),
      }));
    return formatProcesses(rows, new Date(), this.#style);
  }

  async #request(
    line: string,
    method: string,
    params: Record<string, unknown>,
    render: Render,
    hint?: (error: ErrorObject) => string | undefined,
  ): Promise<void> {
    const style = this.#style;
    const call: InFlight = { label: callLabel(line), shared: this.#inFlight.size > 0 };
    for (const other of this.#inFlight) other.shared = true;
    this.#inFlight.add(call);
    const label = () => call.shared ? call.label : undefined;
    try {
      let response: Response;
      try {
        // the agent's answer streams on the progress line; its steps print as they happen
        const chat = method === "agent.chat";
        let streamed = "";
        response = await this.#view.request(method, params, {
          onNotify: (name, p) => {
            if (chat && name === "text") {
              streamed += String((p as { text?: unknown } | null)?.text ?? "");
              this.#status?.(style.dim(lastLine(streamed)));
            } else if (chat && name === "step") {
              const blocks = (p as { blocks?: string[] } | null)?.blocks ?? [];
              if (blocks.includes("toolRequest")) {
                // the call shows while it runs; its result line replaces it
                this.#status?.(formatStep(p, { label: label(), style }).trimStart() + " …");
              } else if (blocks.includes("text")) {
                // a message before tool calls: it streamed on the progress line, now it stays
                this.#print(
                  formatText(String((p as { text?: unknown }).text ?? ""), {
                    label: label(),
                    style,
                  }),
                );
              } else {
                this.#print(formatStep(p, { label: label(), style }));
              }
              streamed = "";
            } else if (name === "progress" && this.#status) {
              this.#status(style.dim(progressText(p, label())));
            } else {
              this.#print(formatNotification(name, p, { label: label(), style }));
            }
          },
        });
      } catch (e) {
        response = {
          jsonrpc: "2.0",
          id: null,
          error: { code: ErrorCode.InternalError, message: `internal error: ${errorText(e)}` },
        };
      }
      this.#status?.(null);
      if (response.error) {
        this.#print(
          formatError(response.error, { label: label(), style, hint: hint?.(response.error) }),
        );
      } else {
        this.#print(await render(response.result, label()));
      }
    } finally {
      this.#inFlight.delete(call);
    }
  }
}

/** One line for a progress notification: its `text`, or its params as JSON. */
export function progressText(params: unknown, label: string | undefined): string {
  const p = params as { text?: unknown; crates?: unknown } | null;
  const text = typeof p?.text === "string" ? p.text : JSON.stringify(params);
  const crates = typeof p?.crates === "number" ? ` (${p.crates} crates compiled)` : "";
  return `${label ? `${label}: ` : ""}… ${text}${crates}`;
}

/** The last line of a text that streams in (the part the progress line shows). */
function lastLine(text: string): string {
  const lines = text.trimEnd().split("\n");
  return `… ${lines[lines.length - 1]}`;
}

/** The agent's answer: a string, or an object's `text`, as text; anything else as JSON. */
function chatAnswer(result: unknown, label: string | undefined, style: Style): string {
  if (typeof result === "string") return formatText(result, { label, style });
  const text = (result as { text?: unknown } | null)?.text;
  if (typeof text === "string") return formatText(text, { label, style });
  return formatResult(result, { label, style });
}

function errorText(e: unknown): string {
  return e instanceof ViewError || e instanceof Error ? e.message : String(e);
}

/** What the console reads of `graph.json` (PROTOCOL 10.4). */
interface GraphFile {
  plugins?: Record<string, { imports?: Record<string, { status: string }> }>;
}

/** Text for an unexpected failure of the console itself. */
export function internalError(e: unknown, style: Style): string {
  return indent(style.red(`console error: ${errorText(e)}`));
}
