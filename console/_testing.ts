/**
 * Helpers of the console's tests: the commands on a test world, with what
 * they print.
 *
 * @module
 */
import { LocalHostView } from "../core/host_view.ts";
import type { TestWorld } from "../tests/world.ts";
import { Commands } from "./commands.ts";
import { PLAIN } from "./format.ts";
import { parseLine } from "./parse.ts";

/** Commands on a test world, and the blocks they printed, in order. */
export interface CommandsOn {
  /** Parses and runs a line; resolves when its output was printed. */
  run(line: string): Promise<void>;
  printed: string[];
  /** Runs a line and returns what it printed. */
  output(line: string): Promise<string>;
  /** The commands themselves. */
  commands: Commands;
}

/** Commands on a test world, printing without colours. */
export function commandsOn(w: TestWorld): CommandsOn {
  const printed: string[] = [];
  const commands = new Commands({
    view: new LocalHostView(w.host),
    style: PLAIN,
    print: (text) => printed.push(text),
  });
  const run = (line: string) => commands.run(parseLine(line), line);
  return {
    run,
    printed,
    commands,
    async output(line) {
      const from = printed.length;
      await run(line);
      return printed.slice(from).join("\n");
    },
  };
}
