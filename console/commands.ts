/**
 * Runs the console's commands against a host and prints what they give.
 * Calls run side by side: {@linkcode Commands.run} resolves when the
 * command's output was printed, and the caller decides whether to wait.
 *
 * @module
 */
import { chatErrorHint, NO_AGENT } from "../core/chat_hint.ts";
import { type HostView, ViewError } from "../core/host_view.ts";
import { ErrorCode, type ErrorObject, type Id, type Response } from "../core/jsonrpc.ts";
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
import { exampleParams } from "./discovered.ts";
import { formatGraph, type GraphFile } from "./graph.ts";
import { renderMarkdown } from "./markdown.ts";
import { type ActivationReport, formatActivated, formatMethods } from "./methods.ts";
import { callEndpoint } from "./endpoint_call.ts";
import { activateParams, CHAT_METHOD, type Command, resolvePid } from "./parse.ts";

/** The code of a call whose process ended without an answer (PROTOCOL 3.9). */
const PROCESS_ENDED = -32002;

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
  /** Draw the agent's answers from Markdown (with colours; see `markdown.ts`). */
  markdown?: boolean;
  /**
   * Shows long output (`cat`, `log`, `history`, `graph`): through a pager
   * when it is longer than the screen. Without it, long output prints like
   * any other.
   */
  page?: (text: string) => Promise<void>;
}

/** A call in flight. */
interface InFlight {
  label: string;
  /** Another call ran at the same time: its output carries the label. */
  shared: boolean;
  /** The ID of the request, once sent (for {@linkcode HostView.cancel}). */
  id?: Id;
  /** The person stopped it (Ctrl-C): its answer is shown as stopped. */
  stopped: boolean;
  /** The process that was stopped. */
  pid?: string | null;
}

/** A call that {@linkcode Commands.stopCalls} stopped. */
export interface StoppedCall {
  /** The line that started it, shortened. */
  label: string;
  /** The process that was stopped; null when it had none any more (it was ending). */
  pid: string | null;
  /** It had been stopped before and still ran: it was killed. */
  killed: boolean;
}

/** Renders a successful result. */
type Render = (result: unknown, label: string | undefined) => string | Promise<string>;

/** The hint for a chat message while there is no agent. */
export const NO_AGENT_HINT = `${NO_AGENT}; type help for the commands`;

/** Runs commands and prints their output. */
export class Commands {
  readonly #view: HostView;
  readonly #style: Style;
  readonly #print: Print;
  readonly #status?: (text: string | null) => void;
  readonly #markdown: boolean;
  readonly #page?: (text: string) => Promise<void>;
  readonly #inFlight = new Set<InFlight>();

  constructor(options: CommandsOptions) {
    this.#view = options.view;
    this.#style = options.style;
    this.#print = options.print;
    this.#status = options.status;
    this.#markdown = options.markdown ?? false;
    this.#page = options.page;
    this.#view.onNotification = (message) => {
      this.#print(formatUnsolicited(message.method, message.params, this.#style));
    };
  }

  /** How many calls are waiting for an answer. */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  /**
   * Stops every call of this console that waits for an answer (an agent's
   * turn included: the agent journals it as cancelled): its process gets
   * EOF, and is killed 5 s later if it has not ended. A call stopped before
   * whose process still runs is killed now. Gives what was stopped; the
   * answers then print as stopped.
   */
  async stopCalls(): Promise<StoppedCall[]> {
    const stopped: StoppedCall[] = [];
    for (const call of [...this.#inFlight]) {
      if (call.id === undefined) continue;
      if (!call.stopped) {
        call.stopped = true;
        call.pid = await this.#view.cancel(call.id).catch(() => null);
        stopped.push({ label: call.label, pid: call.pid, killed: false });
      } else if (call.pid) {
        await this.#view.request("core.kill", { pid: call.pid }).catch(() => {});
        stopped.push({ label: call.label, pid: call.pid, killed: true });
      }
    }
    return stopped;
  }

  /** Prints output that may be long: through the pager when there is one. */
  async #printLong(text: string): Promise<void> {
    if (this.#page) await this.#page(text);
    else this.#print(text);
  }

  /** Runs a command typed as `line`; resolves when its output was printed. */
  async run(command: Command, line: string): Promise<void> {
    const style = this.#style;
    switch (command.kind) {
      case "empty":
      case "quit":
      case "clear": // the terminal clears its screen; a script has none
        return;
      case "help":
        this.#print(formatHelp(style));
        return;
      case "invalid": {
        const example = command.method === undefined
          ? command.example
          : `${command.method} ${await this.#exampleParams(command.method)}`;
        this.#print(formatUsage(command.message, example, style));
        return;
      }
      case "suggest":
        this.#print(indent(
          `${style.bold(`did you mean \`${command.command}\`?`)} ${
            style.dim(
              `(${command.typed} is not a command; to send it to the agent, add a word or a ?)`,
            )
          }`,
        ));
        return;
      case "graph":
        await this.#printLong(formatGraph(await this.#graph(), style));
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
          (result, label) => chatAnswer(result, label, style, this.#markdown),
          (error) => {
            if (error.code === ErrorCode.NoSuchPlugin) return NO_AGENT_HINT;
            return chatErrorHint(error, this.#view.info.world);
          },
        );
      case "log": {
        const params: Record<string, unknown> = { limit: command.limit };
        if (command.plugin !== undefined) params.plugin = command.plugin;
        if (command.pid !== undefined) params.pid = command.pid;
        return await this.#request(
          line,
          "core.log",
          params,
          (result, label) => {
            const entries = (result as { entries?: Entry[] } | null)?.entries;
            if (!Array.isArray(entries)) return formatResult(result, { label, style });
            const text = formatLog(entries, { showPid: command.pid === undefined, style });
            return label === undefined ? text : `${style.bold(`${label} →`)}\n${text}`;
          },
          undefined,
          true,
        );
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
        return await this.#request(
          line,
          "agent.history",
          params,
          (result, label) => {
            if (!Array.isArray(result)) return formatResult(result, { label, style });
            const text = formatHistory(result as HistoryStep[], { style });
            return label === undefined ? text : `${style.bold(`${label} →`)}\n${text}`;
          },
          undefined,
          true,
        );
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
        await this.#printLong(await this.#cat(command.path));
        return;
      case "endpoint": {
        try {
          const response = await callEndpoint(
            this.#view,
            command.path,
            command.method,
            command.params,
          );
          this.#print(
            response.error
              ? formatError(response.error, { style })
              : formatResult(response.result, { style }),
          );
        } catch (e) {
          this.#print(
            formatError({ code: ErrorCode.ServerError, message: errorText(e) }, { style }),
          );
        }
        return;
      }
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
      // a plugin's name never has `$`: `$report` is what the answer says beside the documents
      const { $report: report, ...documents } = result as Record<string, unknown>;
      const after = new Map<string, string | null>();
      for (const plugin of Object.keys(documents)) {
        after.set(plugin, await this.#view.version(plugin));
      }
      const text = formatActivated(
        Object.entries(documents).map(([plugin, document]) => ({
          plugin,
          document,
          changed: before.get(plugin) !== after.get(plugin),
        })),
        {
          reverted: command.kind === "revert",
          force: command.force,
          report: report as ActivationReport | undefined,
          style,
        },
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

  /**
   * Example params of a method, from its plugin's `rpc.discover` document
   * (`{"plugin": "notes"}` for `cargo.build`); `{}` when it is not known.
   */
  async #exampleParams(method: string): Promise<string> {
    const plugin = method.slice(0, method.indexOf("."));
    try {
      const document = await this.#readJson(`/proc/core/plugins/${plugin}/discover.json`);
      return exampleParams(document, method.slice(plugin.length + 1)) ?? "{}";
    } catch {
      return "{}";
    }
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
    long = false,
  ): Promise<void> {
    const style = this.#style;
    const call: InFlight = {
      label: callLabel(line),
      shared: this.#inFlight.size > 0,
      stopped: false,
    };
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
          onId: (id) => call.id = id,
          onNotify: (name, p) => {
            if (chat && name === "text") {
              streamed += String((p as { text?: unknown } | null)?.text ?? "");
              this.#status?.(lastLines(streamed).map((l) => style.dim(l)).join("\n"));
            } else if (chat && name === "step") {
              const blocks = (p as { blocks?: string[] } | null)?.blocks ?? [];
              if (blocks.includes("toolRequest")) {
                // the call shows while it runs; its result line replaces it
                this.#status?.(formatStep(p, { label: label(), style }).trimStart() + " …");
              } else if (blocks.includes("text")) {
                // a message before tool calls: it streamed on the progress line, now it stays
                this.#print(
                  chatAnswer((p as { text?: unknown }).text ?? "", label(), style, this.#markdown),
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
      if (call.stopped && response.error) {
        // a process that ended on the stop has no more to say than that it stopped
        const why = response.error.code === PROCESS_ENDED ? "" : `: ${response.error.message}`;
        this.#print(formatText(style.dim(`stopped${why}`), { label: label(), style }));
      } else if (response.error) {
        this.#print(
          formatError(response.error, { label: label(), style, hint: hint?.(response.error) }),
        );
      } else if (long) {
        await this.#printLong(await render(response.result, label()));
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

/** How many lines of an answer that streams in the progress area shows at most. */
const STREAM_LINES = 40;

/** The last lines of a text that streams in (what the progress area shows; it keeps the bottom). */
function lastLines(text: string): string[] {
  const lines = text.replace(/^\n+/, "").split("\n").slice(-STREAM_LINES);
  lines[0] = `… ${lines[0]}`;
  return lines;
}

/**
 * The agent's answer: a string, or an object's `text`, as text (drawn from
 * Markdown when `markdown`); anything else as JSON.
 */
function chatAnswer(
  result: unknown,
  label: string | undefined,
  style: Style,
  markdown: boolean,
): string {
  const text = typeof result === "string" ? result : (result as { text?: unknown } | null)?.text;
  if (typeof text !== "string") return formatResult(result, { label, style });
  return formatText(renderMarkdown(text, { colors: markdown }), { label, style });
}

function errorText(e: unknown): string {
  return e instanceof ViewError || e instanceof Error ? e.message : String(e);
}

/** Text for an unexpected failure of the console itself. */
export function internalError(e: unknown, style: Style): string {
  return indent(style.red(`console error: ${errorText(e)}`));
}
