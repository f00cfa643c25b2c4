/**
 * Tab completion of a console line: the commands, `<plugin>.` and the core's
 * methods for the first word, process IDs after `stop` and `kill`, plugins
 * and process IDs after `log`.
 *
 * @module
 */

/** What completion can offer. */
export interface CompletionContext {
  /** Installed plugins. */
  plugins: readonly string[];
  /** Running processes. */
  pids: readonly string[];
  /** Full method names known without asking a plugin, e.g. `core.log`. */
  methods: readonly string[];
}

/** The command words of the console. */
export const COMMAND_WORDS = ["help", "kill", "log", "ps", "quit", "stop"] as const;

/**
 * Completions of the text before the cursor, in the form `node:readline`
 * wants: the candidates and the word they complete.
 */
export function complete(before: string, context: CompletionContext): [string[], string] {
  const words = before.trimStart().split(/\s+/);
  const word = words.at(-1) ?? "";
  const matching = (candidates: readonly string[]) =>
    [...new Set(candidates)].filter((c) => c.startsWith(word)).sort();
  if (words.length <= 1) {
    const candidates = word.includes(".")
      ? context.methods
      : [...COMMAND_WORDS, ...context.plugins.map((p) => `${p}.`), "core."];
    return [matching(candidates), word];
  }
  const command = words[0];
  if ((command === "stop" || command === "kill") && words.length === 2) {
    return [matching(context.pids), word];
  }
  if (command === "log" && words.at(-2) !== "-n" && !word.startsWith("-")) {
    return [matching([...context.plugins, ...context.pids]), word];
  }
  return [[], word];
}
