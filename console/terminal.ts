/**
 * The interactive console: a prompt with line editing, history, tab
 * completion and Ctrl-R search (`node:readline`). Calls run in the
 * background; their results and notifications are printed above the prompt
 * (see `screen.ts`), and long output goes through the pager (`pager.ts`).
 *
 * Keys:
 * - Ctrl-C with text on the line clears the line.
 * - Ctrl-C on an empty line while calls of this console run (an agent's turn
 *   included) stops all of them (EOF, a kill 5 s later), and prints what it
 *   stopped; a second Ctrl-C kills those still running.
 * - Ctrl-C on an empty line with nothing running prints a hint; a second one
 *   in a row leaves (as the prompts of Node and Python do).
 * - Ctrl-D on an empty line, `quit` and `exit` leave.
 *
 * @module
 */
import process from "node:process";
import * as readline from "node:readline";
import { type HostView, worldPaths } from "../core/host_view.ts";
import { Commands, internalError, type StoppedCall } from "./commands.ts";
import { complete, type CompletionContext } from "./complete.ts";
import { methodNames } from "./discovered.ts";
import type { Style } from "./format.ts";
import { History, historyPath, MAX_HISTORY } from "./history.ts";
import { pagerCommand, runPager, screenRows } from "./pager.ts";
import { parseLine } from "./parse.ts";
import { Screen } from "./screen.ts";
import { HistorySearch } from "./search.ts";
import { trapSignals } from "./signals.ts";

export { fitLine } from "./screen.ts";

/** What the interactive console needs. */
export interface TerminalOptions {
  view: HostView;
  style: Style;
  /** A second Ctrl-C while leaving: kill what still runs (the console's own host). */
  interrupt?: () => void;
  /** Draw the agent's answers from Markdown (when colours are on). */
  markdown?: boolean;
}

/** A key as `node:readline` reports it. */
interface Key {
  name?: string;
  ctrl?: boolean;
  meta?: boolean;
  sequence?: string;
}

/** What the console touches of readline's interface beyond its typed surface. */
type Editable = readline.Interface & {
  line: string;
  cursor: number;
  history: string[];
  terminal: boolean;
};

/** Runs the interactive console until the person leaves; returns the exit code. */
export async function runTerminal(options: TerminalOptions): Promise<number> {
  const { view, style } = options;
  const history = await History.load(historyPath(worldPaths(view.info.world).coreState));
  const output = process.stdout;
  let plugins: string[] = await view.plugins().catch(() => []);
  const refreshPlugins = () => {
    view.plugins().then((p) => plugins = p, () => {});
  };

  const prompt = style.bold(style.cyan("> "));
  const rl = readline.createInterface({
    input: process.stdin,
    output,
    terminal: Deno.stdout.isTerminal(),
    prompt,
    history: history.newestFirst(),
    historySize: MAX_HISTORY,
    completer: (line: string, callback: (e: Error | null, r?: [string[], string]) => void) => {
      completeLine(line, view, plugins).then((r) => callback(null, r), (e) => callback(e));
    },
  }) as Editable;
  const screen = new Screen({ rl, output, prompt });
  const print = (text: string) => screen.print(text);

  /** Long output: through the pager when it does not fit on the screen. */
  const page = async (text: string) => {
    const pager = pagerCommand();
    if (
      !rl.terminal || pager === null ||
      screenRows(text, output.columns || 80) < (output.rows || 24) - 1
    ) {
      print(text);
      return;
    }
    let shown = false;
    await screen.hold(async () => {
      // the pager reads the keys now; readline gets them back after it
      rl.pause();
      process.stdin.setRawMode?.(false);
      try {
        shown = await runPager(pager, text);
      } finally {
        process.stdin.setRawMode?.(true);
        rl.resume();
      }
    });
    if (!shown) {
      print(
        style.dim(`(the pager \`${pager}\` cannot run: set PAGER to one, or PAGER=cat for none)`),
      );
      print(text);
    }
  };

  let closed = false;
  history.onWriteError = (message) => print(style.dim(message));
  view.onNote = (text) => print(style.dim(`sausage: ${text}`));
  const commands = new Commands({
    view,
    style,
    print,
    status: (text) => screen.progress(text),
    markdown: options.markdown,
    page,
  });
  const done = Promise.withResolvers<number>();

  const finish = (code: number, note?: string) => {
    if (closed) return;
    if (screen.promptShown) screen.write("\n");
    if (note) screen.write(`${style.dim(note)}\n`);
    if (commands.inFlight > 0) {
      const n = commands.inFlight;
      screen.write(`${style.dim(`stopping ${n} running call${n === 1 ? "" : "s"}`)}\n`);
    }
    closed = true;
    screen.close();
    rl.close();
    done.resolve(code);
  };

  let armed = false;
  const interrupt = async () => {
    if (rl.line.length > 0) {
      armed = false;
      rl.write("", { ctrl: true, name: "e" });
      rl.write("", { ctrl: true, name: "u" });
      return;
    }
    if (commands.inFlight > 0) {
      armed = false;
      print(stoppedText(await commands.stopCalls(), style));
      return;
    }
    if (armed) {
      finish(0);
      return;
    }
    armed = true;
    print(style.dim("(nothing runs: press Ctrl-C again or Ctrl-D to leave, or type quit)"));
  };
  rl.on("SIGINT", () => {
    interrupt().catch((e) => print(internalError(e, style)));
  });
  const onKeypress = (_text: string, key: Key | undefined) => {
    if (!(key?.ctrl && key.name === "c")) armed = false;
  };
  process.stdin.on("keypress", onKeypress);
  if (rl.terminal) searchHistory(rl, prompt);

  rl.on("line", (line: string) => {
    screen.entered(line);
    armed = false;
    history.add(line);
    const command = parseLine(line);
    if (command.kind === "quit") {
      finish(0);
      return;
    }
    if (command.kind === "clear") {
      screen.clear();
      screen.showPrompt();
      return;
    }
    commands.run(command, line).catch((e) => print(internalError(e, style)));
    refreshPlugins();
    screen.showPrompt();
  });
  rl.on("close", () => finish(0));
  view.ended.then((end) => finish(end.code, end.why));
  const untrap = trapSignals(
    (signal, code) => finish(code, `${signal}: the console ends`),
    () => options.interrupt?.(),
  );

  screen.write(banner(view.info.world, plugins, style) + "\n");
  screen.showPrompt();
  try {
    return await done.promise;
  } finally {
    untrap();
    process.stdin.off("keypress", onKeypress);
    view.onNotification = undefined;
    await history.flushed();
  }
}

/** What Ctrl-C stopped, dimmed. */
function stoppedText(stopped: StoppedCall[], style: Style): string {
  if (stopped.length === 0) return style.dim("  the calls are ending already");
  const lines = stopped.map((s) =>
    `  ${s.killed ? "killed" : "stopping"} ${s.label}${s.pid ? ` (${s.pid})` : ""}`
  );
  if (stopped.some((s) => !s.killed)) lines.push("  (Ctrl-C again kills what has not ended)");
  return style.dim(lines.join("\n"));
}

/**
 * Ctrl-R: a reverse incremental search of the history (see `search.ts`),
 * on readline's own key handling. Enter runs the match, Ctrl-G or Ctrl-C
 * gives the line back as it was, any other key keeps the match to edit.
 */
function searchHistory(rl: Editable, prompt: string): void {
  const target = rl as unknown as Record<string, unknown>;
  const key = ttyWriteKey(rl);
  if (key === undefined) return; // an unknown readline: no search, the rest works
  const original = (target[key] as (s: string | undefined, k: Key | undefined) => void).bind(rl);
  let search: { s: HistorySearch; saved: string } | null = null;

  const show = (line: string, cursor: number, shownPrompt: string) => {
    rl.setPrompt(shownPrompt);
    rl.line = line;
    rl.cursor = cursor;
    rl.prompt(true);
  };
  const end = (line: string) => {
    search = null;
    show(line, line.length, prompt);
  };

  target[key] = (s: string | undefined, k: Key | undefined) => {
    if (search === null) {
      if (k?.ctrl && k.name === "r") {
        search = { s: new HistorySearch(rl.history), saved: rl.line };
        show("", 0, search.s.prompt);
        return;
      }
      original(s, k);
      return;
    }
    const current = search.s;
    if (k?.ctrl && k.name === "r") {
      current.older();
    } else if ((k?.ctrl && (k.name === "g" || k.name === "c")) || k?.name === "escape") {
      end(search.saved);
      return;
    } else if (k?.name === "backspace") {
      current.backspace();
    } else if (k?.name === "return" || k?.name === "enter") {
      end(current.match);
      original(s, k);
      return;
    } else if (s && !k?.ctrl && !k?.meta && isPrintable(s)) {
      current.type(s);
    } else {
      end(current.match);
      original(s, k);
      return;
    }
    show(current.match, current.offset, current.prompt);
  };
}

/** Whether typed text has no control characters (a key to search for, not a command). */
function isPrintable(text: string): boolean {
  return [...text].every((ch) => ch >= " " && ch !== "\x7f");
}

/**
 * The key under which readline keeps its handler of typed keys. Node's
 * readline (and Deno's copy) reaches it through `_ttyWrite`, kept for old
 * code, so a function put there gets every key.
 */
function ttyWriteKey(rl: readline.Interface): string | undefined {
  return typeof (rl as unknown as Record<string, unknown>)._ttyWrite === "function"
    ? "_ttyWrite"
    : undefined;
}

/**
 * Completions of a line: the host is asked for the process IDs, for the
 * names in the one folder that the path being typed is in, for the methods
 * of the plugin being typed (its `discover.json`), and for the agent's
 * sessions after `history` and `reset`.
 */
async function completeLine(
  line: string,
  view: HostView,
  plugins: string[],
): Promise<[string[], string]> {
  const folders = new Map<string, readonly string[]>();
  const methods = new Map<string, readonly string[]>();
  const context: CompletionContext = {
    plugins,
    pids: (await view.processes().catch(() => [])).map((p) => p.pid),
    methods: view.info.coreMethods,
    names: (folder) => folders.get(folder) ?? (folders.set(folder, []), []),
    pluginMethods: (plugin) => methods.get(plugin) ?? (methods.set(plugin, []), []),
  };
  complete(line, context); // learns which folder and which plugin it wants
  for (const folder of folders.keys()) {
    folders.set(folder, await view.names(folder).catch(() => []));
  }
  for (const plugin of methods.keys()) {
    if (plugins.includes(plugin)) methods.set(plugin, await pluginMethods(view, plugin));
  }
  if (/^\s*(history|reset)\s/.test(line)) context.sessions = await sessions(view);
  return complete(line, context);
}

/** The methods of a plugin from its `discover.json`; none when it cannot be read. */
async function pluginMethods(view: HostView, plugin: string): Promise<string[]> {
  try {
    const file = await view.read(`/proc/core/plugins/${plugin}/discover.json`);
    return methodNames(plugin, JSON.parse(new TextDecoder().decode(file.bytes)));
  } catch {
    return [];
  }
}

/** The names of the agent's sessions; none when there is no agent. */
async function sessions(view: HostView): Promise<string[]> {
  const response = await view.request("agent.sessions", {}).catch(() => null);
  const result = response?.result;
  if (!Array.isArray(result)) return [];
  return result.map((s) => (s as { session?: unknown }).session)
    .filter((s): s is string => typeof s === "string");
}

function banner(world: string, plugins: string[], style: Style): string {
  const installed = plugins.length === 0 ? "no plugins yet" : `plugins: ${plugins.join(", ")}`;
  return style.dim(
    `Sausage console on ${world} (${installed}).\n` +
      "Type help for the commands; any other text goes to the agent. Ctrl-C stops what runs, " +
      "Ctrl-D leaves.",
  );
}
