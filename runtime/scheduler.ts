/**
 * Preemption inside a plugin worker.
 *
 * Instrumented guests check their interrupt cell at every loop header (see
 * `core/components/instrument.ts`). The host sets `Yield` on cells every
 * 10 ms and `Kill` to end a process. A guest that has kept the worker's
 * thread for a whole slice suspends (JSPI) into a run queue. The queue is
 * drained one guest per timer task, so that messages from the host, timers
 * and I/O completions of other processes run between two slices: a process
 * that computes never delays one that answers a call.
 *
 * @module
 */
import { HEARTBEAT_SLOT, Interrupt, SLICE_MS } from "./messages.ts";

/** Thrown into a guest that was killed; unwinds its stack. */
export class KilledSignal extends Error {
  override name = "KilledSignal";
}

/** What the scheduler knows of one process. */
export interface InstanceControl {
  /**
   * Index of the process's cell in the interrupt memory. An instance reused
   * by another process gets that process's: the `cell` global of its
   * imports moves with it ({@linkcode Scheduler.moveCell}).
   */
  cell: number;
  /** True while the guest runs `wasi:cli/run` (only then can it suspend). */
  running: boolean;
  /** Why the process was killed, once it was. */
  killed: string | null;
}

interface Waiting {
  control: InstanceControl;
  resume: () => void;
  fail: (e: Error) => void;
}

/** One per worker. */
export class Scheduler {
  readonly #memory: WebAssembly.Memory;
  readonly #cells: Int32Array;
  #queue: Waiting[] = [];
  #pumpScheduled = false;
  #lastTurn = performance.now();

  constructor(memory: WebAssembly.Memory) {
    this.#memory = memory;
    this.#cells = new Int32Array(memory.buffer);
  }

  /** Notes that the worker's event loop has control. Call it at the start of every task. */
  turn(): void {
    this.#lastTurn = performance.now();
  }

  /** True when no guest waits in the run queue for its next slice. */
  get idle(): boolean {
    return this.#queue.length === 0;
  }

  /** The `sausage` imports of an instrumented core module, for one process. */
  imports(control: InstanceControl): Record<string, unknown> {
    const cells = this.#cells;
    return {
      interrupts: this.#memory,
      cell: new WebAssembly.Global({ value: "i32", mutable: true }, control.cell * 4),
      interrupted: (inHost: number): number => {
        const cell = control.cell;
        const value = Atomics.load(cells, cell);
        if (value === Interrupt.Kill || control.killed !== null) {
          throw new KilledSignal(control.killed ?? "killed");
        }
        if (value === Interrupt.Yield) {
          Atomics.compareExchange(cells, cell, Interrupt.Yield, Interrupt.None);
        }
        if (inHost !== 0 || !control.running) return 0;
        return performance.now() - this.#lastTurn >= SLICE_MS ? 1 : 0;
      },
      // deno-lint-ignore no-explicit-any
      yield: new (WebAssembly as any).Suspending(() => this.#yield(control)),
    };
  }

  /** Gives `control` and the imports made for it (by {@linkcode Scheduler.imports}) `cell`. */
  moveCell(control: InstanceControl, imports: Record<string, unknown>, cell: number): void {
    control.cell = cell;
    (imports.cell as WebAssembly.Global).value = cell * 4;
  }

  /** Removes a killed process from the run queue; its pending yield throws. */
  cancel(control: InstanceControl, reason: string): void {
    const keep: Waiting[] = [];
    for (const w of this.#queue) {
      if (w.control === control) w.fail(new KilledSignal(reason));
      else keep.push(w);
    }
    this.#queue = keep;
  }

  #yield(control: InstanceControl): Promise<void> {
    Atomics.add(this.#cells, HEARTBEAT_SLOT, 1); // tells the host: this worker computes
    return new Promise((resume, fail) => {
      this.#queue.push({ control, resume, fail });
      this.#schedulePump();
    });
  }

  #schedulePump(): void {
    if (this.#pumpScheduled) return;
    this.#pumpScheduled = true;
    setTimeout(this.#pump, 0);
  }

  #pump = (): void => {
    this.#pumpScheduled = false;
    this.turn();
    const next = this.#queue.shift();
    if (this.#queue.length > 0) this.#schedulePump();
    next?.resume();
  };
}
