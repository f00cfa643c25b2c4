/**
 * SIGINT and SIGTERM while the console runs: the first one ends the console
 * (the host then stops every process), a second one kills every process.
 *
 * @module
 */

/** The exit code after a signal: 128 + its number, as shells report it. */
export const SIGNAL_EXIT_CODES = { SIGINT: 130, SIGTERM: 143 } as const;

/** A signal the console handles. */
export type ConsoleSignal = keyof typeof SIGNAL_EXIT_CODES;

/**
 * Calls `onFirst` at the first SIGINT or SIGTERM and `onSecond` at each later
 * one. Returns a function that removes the listeners.
 */
export function trapSignals(
  onFirst: (signal: ConsoleSignal, code: number) => void,
  onSecond: () => void = () => {},
): () => void {
  const signals: ConsoleSignal[] = Deno.build.os === "windows" ? ["SIGINT"] : ["SIGINT", "SIGTERM"];
  let count = 0;
  const listeners = signals.map((signal) => {
    const listener = () => {
      count++;
      if (count === 1) onFirst(signal, SIGNAL_EXIT_CODES[signal]);
      else onSecond();
    };
    Deno.addSignalListener(signal, listener);
    return () => Deno.removeSignalListener(signal, listener);
  });
  return () => listeners.forEach((remove) => remove());
}
