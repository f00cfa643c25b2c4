/**
 * The Wasmtime baseline (`bench/wasmtime/`, a small Rust program on the
 * crates `wasmtime` and `wasmtime-wasi`) and the benchmark's own plugin
 * `pinger` (`bench/wasmtime/pinger/`): built on first use, then cached by
 * cargo. The baseline runs as a child process that takes commands on stdin,
 * so that its calls interleave with the measurements of Sausage.
 *
 * @example
 * ```ts ignore
 * import { buildBaseline, WasmtimeBaseline } from "./baseline.ts";
 * const built = await buildBaseline(console.error);
 * if ("skipped" in built) console.error(built.skipped);
 * else {
 *   await using wt = WasmtimeBaseline.start(built.path);
 *   await wt.load({ name: "probe", path: "probe.wasm", request: "{...}" });
 *   const calls = await wt.run("probe", 100);
 *   console.log(calls.total.length); // 100
 * }
 * ```
 *
 * @module
 */
import { findWasmToolchain, WASM_TARGET } from "../../core/cargo/toolchain.ts";

const DIR = new URL("./", import.meta.url).pathname;
/** The baseline's executable, once built. */
export const BASELINE_BIN = `${DIR}target/release/sausage-wasmtime-bench`;
const PINGER_DIR = `${DIR}pinger/`;
/** The `pinger` plugin, once built. */
export const PINGER_WASM = `${PINGER_DIR}target/${WASM_TARGET}/release/pinger.wasm`;

/** A build that worked, or why there is none. */
export type Built = { path: string } | { skipped: string };

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

/** `nice -n 19` when there is `nice`: the first build of wasmtime takes minutes of both cores. */
async function niceCargo(args: string[], cwd: string, env?: Record<string, string>) {
  const hasNice = await exists("/usr/bin/nice") || await exists("/bin/nice");
  const [cmd, ...rest] = hasNice ? ["nice", "-n", "19", "cargo", ...args] : ["cargo", ...args];
  return await new Deno.Command(cmd, {
    args: rest,
    cwd,
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
}

function lastLines(bytes: Uint8Array, n: number): string {
  const lines = new TextDecoder().decode(bytes).trimEnd().split("\n");
  return lines.slice(-n).map((l) => `    ${l}`).join("\n");
}

async function hasCargo(): Promise<boolean> {
  try {
    return (await new Deno.Command("cargo", { args: ["--version"], stdout: "null", stderr: "null" })
      .output()).success;
  } catch {
    return false; // not on PATH
  }
}

/**
 * Builds the baseline with the machine's own cargo (`cargo build --release`
 * in `bench/wasmtime/`); cargo does nothing when it is up to date.
 */
export async function buildBaseline(progress: (text: string) => void): Promise<Built> {
  const built = await exists(BASELINE_BIN);
  if (!await hasCargo()) {
    if (built) return { path: BASELINE_BIN };
    return {
      skipped: "no Wasmtime baseline: cargo is not on PATH (install Rust from https://rustup.rs " +
        "to build bench/wasmtime)",
    };
  }
  if (!built) {
    progress(
      "wasmtime: building the baseline (cargo build --release in bench/wasmtime; " +
        "the first build takes several minutes)",
    );
  }
  const out = await niceCargo(["build", "--release", "--quiet", "--locked"], DIR);
  if (!out.success) {
    if (built) return { path: BASELINE_BIN }; // offline with a build from before
    return {
      skipped: "no Wasmtime baseline: cargo build --release in bench/wasmtime failed " +
        "(offline, and the crates are not in cargo's cache?):\n" + lastLines(out.stderr, 8),
    };
  }
  return { path: BASELINE_BIN };
}

/** Builds `pinger` for wasm32-wasip2 with the toolchain the host uses for plugins. */
export async function buildPinger(): Promise<Built> {
  let env: Record<string, string>;
  try {
    env = (await findWasmToolchain()).env;
  } catch (e) {
    return { skipped: `no pinger plugin: ${(e as Error).message}` };
  }
  const out = await niceCargo(
    ["build", "--release", "--quiet", "--locked", "--target", WASM_TARGET],
    PINGER_DIR,
    env,
  );
  if (!out.success) {
    return {
      skipped: `no pinger plugin: cargo build in ${PINGER_DIR} failed:\n` +
        lastLines(out.stderr, 8),
    };
  }
  return { path: PINGER_WASM };
}

/** A component for the baseline, and the one request each of its calls gets. */
export interface BaselineComponent {
  name: string;
  path: string;
  /** One JSON-RPC request (one line). */
  request: string;
  /** Text its stdout must contain, checked on every call. */
  expect?: string;
  env?: [string, string][];
}

/** Microseconds of each call, in all and by stage. */
export interface BaselineCalls {
  total: number[];
  instantiate: number[];
  run: number[];
  drop: number[];
}

/** The running baseline program. */
export class WasmtimeBaseline implements AsyncDisposable {
  readonly #child: Deno.ChildProcess;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly #lines: AsyncIterator<string>;

  private constructor(child: Deno.ChildProcess) {
    this.#child = child;
    this.#writer = child.stdin.getWriter();
    this.#lines = lines(child.stdout)[Symbol.asyncIterator]();
  }

  /** Starts the program at `path` (from {@linkcode buildBaseline}). */
  static start(path: string): WasmtimeBaseline {
    const child = new Deno.Command(path, {
      stdin: "piped",
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    return new WasmtimeBaseline(child);
  }

  async #ask(command: unknown): Promise<Record<string, unknown>> {
    await this.#writer.write(new TextEncoder().encode(JSON.stringify(command) + "\n"));
    const next = await this.#lines.next();
    if (next.done) throw new Error("the Wasmtime baseline ended without an answer");
    const answer = JSON.parse(next.value) as Record<string, unknown>;
    if (typeof answer.error === "string") throw new Error(`Wasmtime baseline: ${answer.error}`);
    return answer;
  }

  /** Compiles a component and makes one checked call; returns the compile time in ms. */
  async load(component: BaselineComponent): Promise<number> {
    const answer = await this.#ask({ load: component });
    return answer.compileMs as number;
  }

  /** Runs `calls` calls of a loaded component one after the other. */
  async run(name: string, calls: number): Promise<BaselineCalls> {
    const answer = await this.#ask({ run: name, calls });
    return answer.micros as BaselineCalls;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.#writer.close().catch(() => {});
    await this.#child.status;
  }
}

async function* lines(stream: ReadableStream<Uint8Array>): AsyncIterable<string> {
  let buffer = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
    buffer += chunk;
    let nl;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      yield buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
    }
  }
}
