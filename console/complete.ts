/**
 * Tab completion of a console line: the commands, `<plugin>.` and the
 * methods of the plugin being typed (`notes.` offers `notes.add`, …) for the
 * first word; process IDs after `stop` and `kill`; plugins
 * and process IDs after `log`; plugins after `methods`, `activate` and
 * `revert`; sessions after `history` and `reset`; paths after `ls`, `cat`
 * and for the file of `activate`. A single candidate that is a whole word
 * gets a space after it, as in a shell.
 *
 * @module
 */
import { COMMAND_NAMES } from "./parse.ts";

/** What completion can offer. */
export interface CompletionContext {
  /** Installed plugins. */
  plugins: readonly string[];
  /** Running processes. */
  pids: readonly string[];
  /** Full method names known without asking a plugin, e.g. `core.log`. */
  methods: readonly string[];
  /**
   * The names in a folder as a process sees it (`/plugins/`), folders with a
   * final `/`; empty when it cannot be read. Without it, paths complete to
   * nothing.
   */
  names?: (folder: string) => readonly string[];
  /**
   * The methods of a plugin, as full names (`notes.add`), from its
   * `rpc.discover` document; empty when unknown.
   */
  pluginMethods?: (plugin: string) => readonly string[];
  /** The agent's sessions. */
  sessions?: readonly string[];
}

/** The command words of the console that completion offers (`exit` is `quit`'s twin: not offered). */
export const COMMAND_WORDS: readonly string[] = COMMAND_NAMES.filter((name) => name !== "exit");

/**
 * Completions of the text before the cursor, in the form `node:readline`
 * wants: the candidates and the word they complete.
 */
export function complete(before: string, context: CompletionContext): [string[], string] {
  const [candidates, word] = candidatesOf(before, context);
  if (candidates.length === 1 && !/[./=]$/.test(candidates[0])) {
    return [[`${candidates[0]} `], word];
  }
  return [candidates, word];
}

function candidatesOf(before: string, context: CompletionContext): [string[], string] {
  const words = before.trimStart().split(/\s+/);
  const word = words.at(-1) ?? "";
  const matching = (candidates: readonly string[]) =>
    [...new Set(candidates)].filter((c) => c.startsWith(word)).sort();
  if (words.length <= 1) {
    const plugin = word.slice(0, word.indexOf("."));
    const candidates = word.includes(".")
      ? [...context.methods, ...(context.pluginMethods?.(plugin) ?? [])]
      : [...COMMAND_WORDS, ...context.plugins.map((p) => `${p}.`), "core."];
    return [matching(candidates), word];
  }
  const command = words[0];
  const second = words.length === 2;
  /** The words between the command and this one, without options. */
  const previous = words.slice(1, -1).filter((w) => !w.startsWith("-"));
  switch (command) {
    case "stop":
    case "kill":
      return [second ? matching(context.pids) : [], word];
    case "log":
      if (words.at(-2) === "-n" || word.startsWith("-")) return [[], word];
      return [matching([...context.plugins, ...context.pids]), word];
    case "methods":
      return [second ? matching(context.plugins) : [], word];
    case "history":
    case "reset":
      if (word.startsWith("-") || words.at(-2) === "-n") return [[], word];
      return [previous.length === 0 ? matching(context.sessions ?? []) : [], word];
    case "revert":
      if (word.startsWith("-")) return [matching(["--force"]), word];
      return [previous.length === 0 ? matching(context.plugins) : [], word];
    case "activate": {
      if (word.startsWith("-")) return [matching(["--force"]), word];
      const equals = word.indexOf("=");
      if (equals >= 0) {
        const plugin = word.slice(0, equals + 1);
        const paths = completePath(word.slice(equals + 1), context, isWasmOrFolder);
        return [paths.map((p) => plugin + p), word];
      }
      if (previous.length === 0) return [matching(context.plugins), word];
      if (previous.length === 1 && !previous[0].includes("=")) {
        return [completePath(word, context, isWasmOrFolder), word];
      }
      return [[], word];
    }
    case "ls":
      if (word.startsWith("-")) return [matching(["-l"]), word];
      return [completePath(word, context), word];
    case "cat":
      return [second ? completePath(word, context) : [], word];
  }
  return [[], word];
}

function isWasmOrFolder(name: string): boolean {
  return name.endsWith("/") || name.endsWith(".wasm");
}

/** The paths that complete `word`: the names in its folder that start with its last part. */
function completePath(
  word: string,
  context: CompletionContext,
  keep: (name: string) => boolean = () => true,
): string[] {
  if (!context.names) return [];
  const slash = word.lastIndexOf("/");
  const folder = word.slice(0, slash + 1);
  const start = word.slice(slash + 1);
  return context.names(folder === "" ? "/" : folder)
    .filter((name) => name.startsWith(start) && (start.startsWith(".") || !name.startsWith(".")))
    .filter(keep)
    .map((name) => folder + name)
    .sort();
}
