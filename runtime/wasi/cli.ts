/**
 * `wasi:cli` 0.2: environment, exit, the standard streams and terminals.
 *
 * @module
 */
import { type InputStream, type OutputStream } from "./io.ts";

/** Thrown by `exit`: unwinds the guest and carries the status. */
export class ExitSignal extends Error {
  override name = "ExitSignal";
  readonly status: number;
  constructor(status: number) {
    super(`exit with status ${status}`);
    this.status = status;
  }
}

/** What a process sees through `wasi:cli`. */
export interface CliContext {
  env: [string, string][];
  args: string[];
  cwd: string | undefined;
  stdin: InputStream;
  stdout: OutputStream;
  stderr: OutputStream;
}

/** `wasi:cli/terminal-input.terminal-input`: never handed out (stdio is not a terminal). */
export class TerminalInput {}
/** `wasi:cli/terminal-output.terminal-output`: never handed out. */
export class TerminalOutput {}

/** The `wasi:cli` interfaces for one process. */
export function cliImports(ctx: CliContext): Record<string, Record<string, unknown>> {
  return {
    "wasi:cli/environment": {
      getEnvironment: () => ctx.env,
      getArguments: () => ctx.args,
      initialCwd: () => ctx.cwd,
    },
    "wasi:cli/exit": {
      exit(status: { tag: "ok" | "err" }): never {
        throw new ExitSignal(status.tag === "ok" ? 0 : 1);
      },
      exitWithCode(code: number): never {
        throw new ExitSignal(code & 0xff);
      },
    },
    "wasi:cli/stdin": { getStdin: () => ctx.stdin },
    "wasi:cli/stdout": { getStdout: () => ctx.stdout },
    "wasi:cli/stderr": { getStderr: () => ctx.stderr },
    "wasi:cli/terminal-input": { TerminalInput },
    "wasi:cli/terminal-output": { TerminalOutput },
    "wasi:cli/terminal-stdin": { getTerminalStdin: () => undefined },
    "wasi:cli/terminal-stdout": { getTerminalStdout: () => undefined },
    "wasi:cli/terminal-stderr": { getTerminalStderr: () => undefined },
  };
}
