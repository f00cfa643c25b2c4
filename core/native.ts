/**
 * Native plugins: plugins the host itself implements (`cargo`), with the
 * same face as any other: a call gets a process ID, a folder in `/proc`,
 * journal entries, `core.notify` progress to its caller, and `core.stop` and
 * `core.kill` end it.
 *
 * @module
 */

/** What a native method gets. */
export interface NativeContext {
  /** The process ID of this call. */
  pid: string;
  /** Writes a line to the journal, as a process's stderr. */
  log(line: string): void;
  /** Sends `core.notify` to the caller. */
  notify(name: string, params: unknown): void;
  /**
   * Aborts when the process is stopped (`reason` "stop") or killed ("kill"):
   * end every child process at once.
   */
  signal: AbortSignal;
  /**
   * When the call must be answered (a `Date.now()` time), if its caller set
   * a deadline (`timeout_ms` of `core.call`): work that waits on others
   * should give up by then. At the deadline the process is stopped anyway.
   */
  deadline?: number;
}

/** A method: its result, or a thrown `RpcError`. */
export type NativeMethod = (
  ctx: NativeContext,
  params: Record<string, unknown>,
) => Promise<unknown>;

/** A plugin implemented by the host. */
export interface NativePlugin {
  /** Its methods, including `rpc.discover`. */
  methods: Record<string, NativeMethod>;
  /** Its `rpc.discover` document (it does not change while the host runs). */
  document: Record<string, unknown>;
  /** Resolves when the work it does after its answers is done (the host waits when it stops). */
  settled?: () => Promise<void>;
}

/** Why a native process was aborted. */
export type AbortReason = "stop" | "kill";
