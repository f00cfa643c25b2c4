/**
 * The bottom of the interactive console's screen: a progress area (the
 * answer that streams, a build's progress) just above the prompt, and the
 * prompt with the line being typed. Everything else is printed above them:
 * the bottom is cleared, the text written, and the bottom drawn again, so
 * nothing printed while a progress line shows is lost or overwritten.
 *
 * @module
 */
import * as readline from "node:readline";
import { visibleLength } from "./markdown.ts";

/** The most rows the progress area takes. */
const MAX_PROGRESS_ROWS = 12;

/** What the screen draws on. */
export interface ScreenOptions {
  rl: readline.Interface;
  output: NodeJS.WriteStream;
  /** The prompt as shown (without colour codes its width is measured). */
  prompt: string;
}

/** The bottom of the screen; see the module's doc. */
export class Screen {
  readonly #rl: readline.Interface;
  readonly #output: NodeJS.WriteStream;
  readonly #prompt: string;
  /** The rows of the progress area, each fitted to the width. */
  #progress: string[] = [];
  /** Whether the prompt is drawn below the progress area. */
  #promptShown = false;
  #closed = false;
  /** While the pager runs: what to print after it, and the last progress asked for. */
  #held: { texts: string[]; progress: string | null | undefined } | null = null;

  constructor(options: ScreenOptions) {
    this.#rl = options.rl;
    this.#output = options.output;
    this.#prompt = options.prompt;
  }

  get #terminal(): boolean {
    return (this.#rl as unknown as { terminal: boolean }).terminal;
  }

  get #columns(): number {
    return this.#output.columns || 80;
  }

  /** Whether the prompt is drawn. */
  get promptShown(): boolean {
    return this.#promptShown;
  }

  /** Writes text as it is (newlines become `\r\n` on a terminal in raw mode). */
  write(text: string): void {
    this.#output.write(this.#terminal ? text.replaceAll(/\r?\n/g, "\r\n") : text);
  }

  /**
   * Clears the bottom (progress and prompt) so that text can go there.
   * Returns the rows of the typed line above the cursor: that many newlines
   * after the text give readline the rows it moves up over when it draws the
   * prompt again.
   */
  #clearBottom(): number {
    const lineRows = this.#promptShown ? this.#rl.getCursorPos().rows : 0;
    readline.moveCursor(this.#output, 0, -(lineRows + this.#progress.length));
    readline.cursorTo(this.#output, 0);
    readline.clearScreenDown(this.#output);
    return lineRows;
  }

  /** Draws the progress area and the prompt again after `text` (which ends with a newline). */
  #redraw(text: string, lineRows: number): void {
    const progress = this.#progress.map((row) => `${row}\n`).join("");
    this.write(`${text}${progress}${this.#promptShown ? "\n".repeat(lineRows) : ""}`);
    if (this.#promptShown) this.#rl.prompt(true);
  }

  /** Prints a block above the progress area and the prompt, keeping the line being typed. */
  print(text: string): void {
    if (this.#closed) return;
    if (this.#held) {
      this.#held.texts.push(text);
      return;
    }
    if (!this.#terminal) {
      this.write(`${text}\n`);
      return;
    }
    this.#redraw(`${text}\n`, this.#clearBottom());
  }

  /**
   * Shows `text` in the progress area (null clears it): its last rows, at
   * most a third of the screen; long lines wrap. The next call replaces it.
   */
  progress(text: string | null): void {
    if (this.#closed || !this.#terminal) return;
    if (this.#held) {
      this.#held.progress = text;
      return;
    }
    const lineRows = this.#clearBottom();
    const most = Math.max(
      1,
      Math.min(MAX_PROGRESS_ROWS, Math.floor((this.#output.rows || 24) / 3)),
    );
    this.#progress = text === null
      ? []
      : text.split("\n").flatMap((line) => wrapLine(line, this.#columns - 1)).slice(-most);
    this.#redraw("", lineRows);
  }

  /**
   * Clears the screen and its scrollback (`clear`); the progress area and the
   * prompt are drawn again at the top. Not a terminal: nothing.
   */
  clear(): void {
    if (this.#closed || !this.#terminal || this.#held) return;
    // erase the screen, then the scrollback, and go home
    this.#output.write("\x1b[2J\x1b[3J\x1b[H");
    this.#redraw("", 0);
  }

  /** Draws the prompt (with what is typed so far). */
  showPrompt(): void {
    if (this.#closed) return;
    this.#promptShown = true;
    this.#rl.prompt(true);
  }

  /**
   * After Enter: readline left the entered line above the cursor, below the
   * progress area. The area is drawn again below the line, where the next
   * prompt goes.
   */
  entered(line: string): void {
    this.#promptShown = false;
    if (this.#closed || !this.#terminal || this.#progress.length === 0) return;
    const rows = Math.max(
      1,
      Math.ceil((visibleLength(this.#prompt) + line.length) / this.#columns),
    );
    readline.moveCursor(this.#output, 0, -(rows + this.#progress.length));
    readline.cursorTo(this.#output, 0);
    readline.clearScreenDown(this.#output);
    this.#redraw(`${this.#prompt}${line}\n`, 0);
  }

  /**
   * Runs `show` (the pager) on a clear screen bottom: what is printed
   * meanwhile waits, and comes after it, with the prompt.
   */
  async hold(show: () => Promise<void>): Promise<void> {
    if (this.#closed || this.#held) return await show();
    const wasShown = this.#promptShown;
    this.#clearBottom();
    const progress = this.#progress;
    this.#progress = [];
    this.#promptShown = false;
    this.#held = { texts: [], progress: undefined };
    try {
      await show();
    } finally {
      const held = this.#held;
      this.#held = null;
      this.#progress = [];
      for (const text of held.texts) this.print(text);
      const next = held.progress === undefined ? progress.join("\n") : held.progress;
      if (next) this.progress(next);
      if (wasShown) this.showPrompt();
    }
  }

  /** Stops drawing: the console is leaving. */
  close(): void {
    this.#closed = true;
  }
}

/**
 * A line cut into rows of `width` visible characters. Colour codes take no
 * room; each row starts with the codes met before it, so it looks the same.
 */
export function wrapLine(text: string, width: number): string[] {
  const rows: string[] = [];
  let codes = "";
  let row = "";
  let visible = 0;
  // deno-lint-ignore no-control-regex
  for (const part of text.split(/(\x1b\[[0-9;]*m)/)) {
    if (part.startsWith("\x1b[")) {
      codes += part;
      row += part;
      continue;
    }
    for (const ch of part) {
      if (visible === width) {
        rows.push(codes === "" ? row : `${row}\x1b[0m`);
        row = codes;
        visible = 0;
      }
      row += ch;
      visible++;
    }
  }
  rows.push(row);
  return rows;
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
