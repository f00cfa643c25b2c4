/**
 * `wasi:clocks` 0.2: the monotonic clock with timers, and the wall clock.
 *
 * @module
 */
import { abortable, Pollable } from "./io.ts";

/** Nanoseconds on the monotonic clock (`performance.now()`, a bigint). */
export function monotonicNow(): bigint {
  return BigInt(Math.round(performance.now() * 1e6));
}

/** Options of the clocks of one process. */
export interface ClockOptions {
  /** Runs when a timer wakes the process (the worker notes a new task). */
  onTimer?: () => void;
  /** Aborts every wait (the process was killed). */
  kill?: AbortSignal;
}

/** A pollable that becomes ready at `deadline` (monotonic nanoseconds). */
export function deadlinePollable(deadline: bigint, options: ClockOptions = {}): Pollable {
  let timer: Promise<void> | undefined;
  const isReady = () => monotonicNow() >= deadline;
  return new Pollable(isReady, () => {
    timer ??= new Promise<void>((resolve) => {
      const ms = Math.max(0, Number(deadline - monotonicNow()) / 1e6);
      const id = setTimeout(() => {
        options.onTimer?.();
        resolve();
      }, Math.ceil(ms));
      options.kill?.addEventListener("abort", () => clearTimeout(id), { once: true });
    });
    return abortable(timer, options.kill);
  });
}

/** The `wasi:clocks` interfaces of one process. */
export function clocksImports(options: ClockOptions = {}): Record<string, Record<string, unknown>> {
  return {
    "wasi:clocks/monotonic-clock": {
      now: monotonicNow,
      resolution: () => 1000n,
      subscribeInstant: (when: bigint) => deadlinePollable(when, options),
      subscribeDuration: (duration: bigint) => deadlinePollable(monotonicNow() + duration, options),
    },
    "wasi:clocks/wall-clock": {
      now() {
        const ms = performance.timeOrigin + performance.now();
        const seconds = Math.floor(ms / 1000);
        return { seconds: BigInt(seconds), nanoseconds: Math.floor((ms - seconds * 1000) * 1e6) };
      },
      resolution: () => ({ seconds: 0n, nanoseconds: 1000 }),
    },
  };
}
