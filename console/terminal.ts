/**
 * The interactive console: a prompt with line editing, history and tab
 * completion (`node:readline`). Calls run in the background; their results
 * and notifications are printed above the prompt, and the prompt is drawn
 * again with what was typed so far.
 *
 * Ctrl-C clears a line that has text; on an empty line it prints a hint, and
 * a second Ctrl-C leaves. Ctrl-D on an empty line, `quit` and `exit` leave.
 *
 * @module
 */
import process from "node:process";
import * as readline from "node:readline";
import { type HostView, worldPaths } from "../core/host_view.ts";
import { Commands, internalError } from "./commands.ts";
import { complete, type CompletionContext } from "./complete.ts";
import type { Style } from "./format.ts";
import { History, historyPath, MAX_HISTORY } from "./history.ts";
import { parseLine } from "./parse.ts";
import { trapSignals } from "./signals.ts";

/** What the interactive console needs. */
export interface TerminalOptions {
  view: HostView;
  style: Style;
  /** A second Ctrl-C while leaving: kill what still runs (the console's own host). */
  interrupt?: () => void;
}

/** Runs the interactive console until the person leaves; returns the exit code. */
export async function runTerminal(options: TerminalOptions): Promise<number> {
  const { view, style } = options;
  const history = await History.load(historyPath(worldPaths(view.info.world).coreState));
  const output = process.stdout;
  let plugins: string[] = await view.plugins().catch(() => []);
  const refreshPlugins = () => {
    view.plugins().then((p) => plugins = p, () => {});
  };

  const rl = readline.createInterface({
    input: process.stdin,
    output,
    terminal: Deno.stdout.isTerminal(),
    prompt: style.bold(style.cyan("> ")),
    history: history.newestFirst(),
    historySize: MAX_HISTORY,
    completer: (line: string, callback: (e: Error | null, r?: [string[], string]) => void) => {
      completeLine(line, view, plugins).then((r) => callback(null, r), (e) => callback(e));
    },
  });

  let promptShown = false;
  let closed = false;
  const write = (text: string) =>
    output.write(rl.terminal ? text.replaceAll(/\r?\n/g, "\r\n") : text);
  /** The progress line above the prompt, if any (see `status`). */
  let statusLine: string | null = null;
  /**
   * Clears the prompt (and the progress line) so that text can go where they
   * were. Returns the rows of the typed line above the cursor: that many
   * newlines after the text give readline the rows it moves up over when it
   * draws the prompt again.
   */
  const clearBottom = () => {
    const lineRows = rl.getCursorPos().rows;
    readline.moveCursor(output, 0, -(lineRows + (statusLine === null ? 0 : 1)));
    readline.cursorTo(output, 0);
    readline.clearScreenDown(output);
    return lineRows;
  };
  /** Prints a block above the prompt, keeping the line being typed. */
  const print = (text: string) => {
    if (closed) return;
    if (!promptShown || !rl.terminal) {
      write(`${text}\n`);
      return;
    }
    const lineRows = clearBottom();
    const status = statusLine === null ? "" : `${statusLine}\n`;
    write(`${text}\n${status}${"\n".repeat(lineRows)}`);
    rl.prompt(true);
  };
  /** Shows (or clears) one line of progress above the prompt; the next one replaces it. */
  const status = (text: string | null) => {
    if (closed || !promptShown || !rl.terminal) return;
    const lineRows = clearBottom();
    statusLine = text === null
      ? null
      : fitLine(text.split("\n")[0], Math.max(10, (output.columns || 80) - 1));
    write(`${statusLine === null ? "" : `${statusLine}\n`}${"\n".repeat(lineRows)}`);
    rl.prompt(true);
  };
  const showPrompt = () => {
    if (closed) return;
    promptShown = true;
    rl.prompt();
  };

  history.onWriteError = (message) => print(style.dim(message));
  view.onNote = (text) => print(style.dim(`sausage: ${text}`));
  const commands = new Commands({ view, style, print, status });
  const done = Promise.withResolvers<number>();

  const finish = (code: number, note?: string) => {
    if (closed) return;
    if (promptShown) write("\n");
    if (note) write(`${style.dim(note)}\n`);
    if (commands.inFlight > 0) {
      const n = commands.inFlight;
      write(`${style.dim(`stopping ${n} running call${n === 1 ? "" : "s"}`)}\n`);
    }
    closed = true;
    rl.close();
    done.resolve(code);
  };

  let armed = false;
  rl.on("SIGINT", () => {
    if (rl.line.length > 0) {
      armed = false;
      rl.write("", { ctrl: true, name: "e" });
      rl.write("", { ctrl: true, name: "u" });
      return;
    }
    if (armed) {
      finish(0);
      return;
    }
    armed = true;
    print(style.dim("(press Ctrl-C again to leave, or type quit)"));
  });
  const onKeypress = (_text: string, key: { ctrl?: boolean; name?: string } | undefined) => {
    if (!(key?.ctrl && key.name === "c")) armed = false;
  };
  process.stdin.on("keypress", onKeypress);

  rl.on("line", (line: string) => {
    promptShown = false;
    armed = false;
    history.add(line);
    const command = parseLine(line);
    if (command.kind === "quit") {
      finish(0);
      return;
    }
    commands.run(command, line).catch((e) => print(internalError(e, style)));
    refreshPlugins();
    showPrompt();
  });
  rl.on("close", () => finish(0));
  view.ended.then((end) => finish(end.code, end.why));
  const untrap = trapSignals(
    (signal, code) => finish(code, `${signal}: the console ends`),
    () => options.interrupt?.(),
  );

  write(banner(view.info.world, plugins, style) + "\n");
  showPrompt();
  try {
    return await done.promise;
  } finally {
    untrap();
    process.stdin.off("keypress", onKeypress);
    view.onNotification = undefined;
    await history.flushed();
  }
}

/**
 * Completions of a line: the host is asked for the process IDs, and for
 * the names in the one folder that the path being typed is in.
 */
async function completeLine(
  line: string,
  view: HostView,
  plugins: string[],
): Promise<[string[], string]> {
  const folders = new Map<string, readonly string[]>();
  const context: CompletionContext = {
    plugins,
    pids: (await view.processes().catch(() => [])).map((p) => p.pid),
    methods: view.info.coreMethods,
    names: (folder) => folders.get(folder) ?? (folders.set(folder, []), []),
  };
  complete(line, context); // learns which folder it wants
  for (const folder of folders.keys()) {
    folders.set(folder, await view.names(folder).catch(() => []));
  }
  return complete(line, context);
}

function banner(world: string, plugins: string[], style: Style): string {
  const installed = plugins.length === 0 ? "no plugins yet" : `plugins: ${plugins.join(", ")}`;
  return style.dim(
    `Sausage console on ${world} (${installed}).\n` +
      "Type help for the commands; any other text goes to the agent. Ctrl-D leaves.",
  );
}

/**
 * The first `width` visible characters of a line: colour codes take no
 * room, and all of them are kept, so a cut never leaves a colour on.
 */
export function fitLine(text: string, width: number): string {
  let visible = 0;
  let out = "";
  // deno-lint-ignore no-control-regex
  for (const part of text.split(/(\x1b\[[0-9;]*m)/)) {
    if (part.startsWith("\x1b[")) {
      out += part;
    } else {
      out += part.slice(0, Math.max(0, width - visible));
      visible += part.length;
    }
  }
  return out;
}
