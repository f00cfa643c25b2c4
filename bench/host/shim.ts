/**
 * Runs a `wasi:cli/command` component the way jco runs it on its own:
 * transpiled without `instantiation`, so that its WASI imports come from
 * `@bytecodealliance/preview2-shim`, on Node.js. The baseline that the
 * host's WASI is held against.
 *
 * {@linkcode ShimRunner.prepare} makes a temporary folder with a
 * `package.json`, installs the shim there with `npm install` (from the
 * registry or npm's own cache), writes the transpiled component and a
 * runner script. {@linkcode ShimRunner.call} then starts `node` with one
 * JSON-RPC request on stdin and a folder as the guest's `/`, and returns
 * the result of the response the component writes on stdout.
 *
 * @module
 */
import { join } from "node:path";

/** The version of the shim the host is compared with. */
export const SHIM_VERSION = "0.26.1";
const SHIM_PACKAGE = "@bytecodealliance/preview2-shim";

/**
 * The runner: sets the guest's preopens with the shim's `_setPreopens`
 * (the shim has none by default), imports the glue (which instantiates the
 * component at import) and calls `wasi:cli/run`. A guest that returns from
 * `main` leaves the shim's I/O worker running: the runner exits itself.
 */
const RUNNER = `import { _setPreopens } from "${SHIM_PACKAGE}/filesystem";
_setPreopens({ "/": process.argv[2] });
const { run } = await import(process.argv[3]);
try {
  run.run();
  process.exit(0);
} catch (e) {
  console.error(e);
  process.exit(1);
}
`;

const encoder = new TextEncoder();

/** Raised when node or npm is missing or fails. */
export class ShimUnavailable extends Error {
  override name = "ShimUnavailable";
}

async function runTool(
  command: string,
  args: string[],
  cwd: string,
  stdin?: string,
): Promise<{ stdout: string; stderr: string }> {
  let child;
  try {
    child = new Deno.Command(command, {
      args,
      cwd,
      stdin: stdin === undefined ? "null" : "piped",
      stdout: "piped",
      stderr: "piped",
      env: { NO_COLOR: "1", NODE_NO_WARNINGS: "1" },
    }).spawn();
  } catch (e) {
    throw new ShimUnavailable(`cannot start ${command}: ${(e as Error).message}`);
  }
  if (stdin !== undefined) {
    const writer = child.stdin.getWriter();
    await writer.write(encoder.encode(stdin));
    await writer.close();
  }
  const out = await child.output();
  const decoder = new TextDecoder();
  const result = { stdout: decoder.decode(out.stdout), stderr: decoder.decode(out.stderr) };
  if (!out.success) {
    throw new ShimUnavailable(
      `${command} ${args.join(" ")} exited with ${out.code}\n${result.stdout}\n${result.stderr}`,
    );
  }
  return result;
}

/** A component transpiled for the shim, ready to run with `node`. */
export class ShimRunner implements AsyncDisposable {
  /** The temporary folder (package, glue, runner). */
  readonly dir: string;
  /** `node --version`. */
  readonly node: string;
  #next = 0;

  private constructor(dir: string, node: string) {
    this.dir = dir;
    this.node = node;
  }

  /** Installs the shim in a temporary folder and transpiles `wasmPath` for it. */
  static async prepare(wasmPath: string): Promise<ShimRunner> {
    const dir = await Deno.makeTempDir({ prefix: "sausage-bench-shim-" });
    try {
      const node = (await runTool("node", ["--version"], dir)).stdout.trim();
      await Deno.writeTextFile(
        join(dir, "package.json"),
        JSON.stringify({ private: true, type: "module" }) + "\n",
      );
      await runTool(
        "npm",
        [
          "install",
          "--no-audit",
          "--no-fund",
          "--prefer-offline",
          "--loglevel=error",
          `${SHIM_PACKAGE}@${SHIM_VERSION}`,
        ],
        dir,
      );
      // jco's own transpile, as jco's users run it (the host's jco-transpile always instantiates)
      const { transpile } = await import("@bytecodealliance/jco");
      const result = await transpile(await Deno.readFile(wasmPath), {
        name: "plugin",
        noTypescript: true,
      });
      await Deno.mkdir(join(dir, "component"));
      for (const [file, content] of Object.entries(result.files)) {
        if (file.endsWith(".d.ts")) continue; // types, for nobody here
        await Deno.writeFile(join(dir, "component", file), content as Uint8Array);
      }
      await Deno.writeTextFile(join(dir, "run.mjs"), RUNNER);
      return new ShimRunner(dir, node);
    } catch (e) {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      throw e;
    }
  }

  /**
   * Runs the component with `root` as its `/` and one request on stdin;
   * returns the result of its response (throws on an error response).
   */
  async call(root: string, method: string, params: Record<string, unknown>): Promise<unknown> {
    const id = `shim-${this.#next++}`;
    const request = JSON.stringify({ jsonrpc: "2.0", id, method, params }) + "\n";
    const { stdout, stderr } = await runTool(
      "node",
      [join(this.dir, "run.mjs"), root, "./component/plugin.js"],
      this.dir,
      request,
    );
    for (const line of stdout.split("\n")) {
      if (!line.trim().startsWith("{")) continue;
      const message = JSON.parse(line) as { id?: unknown; result?: unknown; error?: unknown };
      if (message.id !== id) continue;
      if (message.error !== undefined) {
        throw new Error(`${method} under the shim: ${JSON.stringify(message.error)}\n${stderr}`);
      }
      return message.result;
    }
    throw new Error(`${method} under the shim gave no answer\n${stdout}\n${stderr}`);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await Deno.remove(this.dir, { recursive: true }).catch(() => {});
  }
}
