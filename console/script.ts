/**
 * The console reading a script: stdin is not a terminal. There is no prompt
 * and no line editing. Each line is one command, run in order; a command
 * waits for its answer before the next line is read, so the output is the
 * same every time. Empty lines and lines that start with `#` are skipped.
 *
 * @module
 */
import type { HostView } from "../core/host_view.ts";
import { Commands, internalError } from "./commands.ts";
import type { Style } from "./format.ts";
import { parseLine } from "./parse.ts";
import { trapSignals } from "./signals.ts";

/** What the script mode needs. */
export interface ScriptOptions {
  view: HostView;
  style: Style;
  /** A second signal: kill what still runs (the console's own host). */
  interrupt?: () => void;
  /** The script (default: stdin). */
  input?: ReadableStream<Uint8Array>;
  /** Where the output goes (default: stdout). */
  write?: (text: string) => void;
  /** Draw the agent's answers from Markdown (when colours are on). */
  markdown?: boolean;
}

/** Whether a script line is skipped: empty, or a comment. */
export function isSkipped(line: string): boolean {
  const text = line.trim();
  return text === "" || text.startsWith("#");
}

/**
 * Runs the script to its end. Returns 0 at EOF (or at `quit`), the code of
 * `core.exit` (75) when a plugin called it, or 130/143 after SIGINT/SIGTERM.
 */
export async function runScript(options: ScriptOptions): Promise<number> {
  const { view, style } = options;
  const write = options.write ?? writeStdout;
  let ended = false;
  const print = (text: string) => {
    if (!ended) write(`${text}\n`);
  };
  const commands = new Commands({ view, style, print, markdown: options.markdown });
  const reader = new LineReader(options.input ?? Deno.stdin.readable);

  let stopCode: number | undefined;
  const stopped = Promise.withResolvers<void>();
  const stop = (code: number) => {
    stopCode ??= code;
    stopped.resolve();
  };
  view.ended.then((end) => {
    if (stopCode === undefined) console.error(`sausage: ${end.why}`);
    stop(end.code);
  });
  const untrap = trapSignals((_signal, code) => stop(code), () => options.interrupt?.());
  /** Waits for `promise` unless the console must stop first. */
  const until = async <T>(promise: Promise<T>): Promise<T | undefined> => {
    const value = await Promise.race([promise, stopped.promise.then(() => undefined)]);
    return stopCode === undefined ? value : undefined;
  };

  try {
    await until(view.ready);
    while (stopCode === undefined) {
      const line = await until(reader.next());
      if (stopCode !== undefined) break;
      if (line === null || line === undefined) return 0;
      if (isSkipped(line)) continue;
      const command = parseLine(line);
      if (command.kind === "quit") return 0;
      await until(commands.run(command, line).catch((e) => print(internalError(e, style))));
      // core.exit answers first and stops the host right after: let that happen before the next line
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
    return stopCode ?? 0;
  } finally {
    ended = true; // answers that come during the shutdown are not printed
    untrap();
    reader.cancel();
    view.onNotification = undefined;
  }
}

/** Reads lines from a byte stream; `\r\n` and a last line without newline count. */
class LineReader {
  readonly #reader: ReadableStreamDefaultReader<string>;
  #buffer = "";
  #done = false;

  constructor(input: ReadableStream<Uint8Array>) {
    this.#reader = input.pipeThrough(new TextDecoderStream()).getReader();
  }

  /** The next line, or null at the end. */
  async next(): Promise<string | null> {
    while (true) {
      const newline = this.#buffer.indexOf("\n");
      if (newline >= 0) {
        const line = this.#buffer.slice(0, newline).replace(/\r$/, "");
        this.#buffer = this.#buffer.slice(newline + 1);
        return line;
      }
      if (this.#done) {
        if (this.#buffer === "") return null;
        const last = this.#buffer;
        this.#buffer = "";
        return last;
      }
      const { value, done } = await this.#reader.read();
      if (done) this.#done = true;
      else this.#buffer += value;
    }
  }

  /** Stops reading. */
  cancel(): void {
    this.#reader.cancel().catch(() => {});
  }
}

const encoder = new TextEncoder();

/** Writes all of `text` to stdout now (so nothing is lost when the host exits). */
function writeStdout(text: string): void {
  const data = encoder.encode(text);
  try {
    let written = 0;
    while (written < data.length) written += Deno.stdout.writeSync(data.subarray(written));
  } catch {
    // stdout was closed: nobody reads the output any more
  }
}
