/**
 * `sausage run`: runs any `wasi:cli/command` component outside a world, with
 * Sausage's WASI implementation, as `wasmtime run` does. Useful to debug a
 * plugin, and to hold Sausage's WASI against other runtimes'.
 *
 * @module
 */
import { basename, resolve } from "node:path";
import { ComponentCache } from "../core/components/cache.ts";
import { WorkerPool } from "../core/pool.ts";
import type { DirectoryMount } from "../runtime/messages.ts";
import { type FileSystem, FileSystemServer, HostFileSystem } from "../vfs/mod.ts";

/** Options of `sausage run`. */
export interface RunOptions {
  file: string;
  args: string[];
  /** `HOST::GUEST` or `DIR` (the same path in both). */
  dirs: string[];
  /** `NAME=VALUE`. */
  env: string[];
  cacheDir: string;
}

/** Exit status of a trapped guest, as Wasmtime reports it on Unix (128 + SIGABRT). */
export const TRAP_EXIT_STATUS = 134;

/** Parses `--dir HOST::GUEST` values. */
export function parseDirs(dirs: string[]): DirectoryMount[] {
  return dirs.map((d) => {
    const [host, guest] = d.includes("::") ? d.split("::", 2) : [d, d];
    if (!host || !guest) throw new Error(`--dir ${d}: expected HOST::GUEST or DIR`);
    return { hostPath: resolve(host), guestPath: guest };
  });
}

/** Parses `--env NAME=VALUE` values. */
export function parseEnv(env: string[]): [string, string][] {
  return env.map((e) => {
    const eq = e.indexOf("=");
    if (eq <= 0) throw new Error(`--env ${e}: expected NAME=VALUE`);
    return [e.slice(0, eq), e.slice(eq + 1)];
  });
}

/** Runs the component and returns its exit status (134 for a trap). */
export async function runComponent(options: RunOptions): Promise<number> {
  // each folder is also a layer of this thread, which makes the links the worker cannot
  const mounts = parseDirs(options.dirs).map((m, i) => ({ ...m, layer: `dir:${i}` }));
  const env = parseEnv(options.env);
  const cache = new ComponentCache(options.cacheDir);
  cache.onWarning = (m) => console.error(`sausage: ${m}`);
  const bytes = await Deno.readFile(options.file);
  const component = await cache.load(bytes, options.file).finally(() => cache.close());
  const pool = new WorkerPool({
    size: 1,
    maxSize: 1,
    permissions: {
      read: [...mounts.map((m) => m.hostPath), options.cacheDir],
      write: mounts.map((m) => m.hostPath),
      net: true,
    },
    onFault: (m) => console.error(`sausage: worker fault: ${m}`),
    files: mountLayers(mounts),
  });
  await pool.start();
  const pid = `run-${crypto.randomUUID()}`;
  const stdout = Deno.stdout;
  const stderr = Deno.stderr;
  const exited = Promise.withResolvers<number>();
  let writes = Promise.resolve();
  pool.spawn(component, {
    pid,
    env,
    args: [basename(options.file), ...options.args],
    cwd: mounts.find((m) => m.guestPath === "/") ? "/" : (mounts[0]?.guestPath ?? "/"),
    files: { mounts },
    stdio: "raw",
  }, {
    raw(fd, data) {
      const out = fd === 1 ? stdout : stderr;
      writes = writes.then(() => writeAll(out, data));
    },
    exit(report) {
      if (report.reason === "exited") exited.resolve(report.status ?? 1);
      else {
        const what = report.reason === "trapped" ? "" : `${report.reason}: `;
        writes = writes.then(() =>
          writeAll(stderr, new TextEncoder().encode(`sausage: ${what}${report.detail ?? ""}\n`))
        );
        exited.resolve(TRAP_EXIT_STATUS);
      }
    },
  });
  const pump = pumpStdin(pid, pool);
  const status = await exited.promise;
  await writes;
  pump.stop();
  pool.close();
  return status;
}

/** Serves each `--dir` folder as a layer, opened at its first use. */
function mountLayers(mounts: Required<DirectoryMount>[]): FileSystemServer {
  const layers = new Map<string, FileSystem>();
  return new FileSystemServer((name) => {
    const mount = mounts.find((m) => m.layer === name);
    if (!mount) return undefined;
    let fs = layers.get(name);
    if (!fs) {
      // the same options as the worker's layer: links stay as they are on the host
      fs = new HostFileSystem(mount.hostPath, { keepHostLinks: true });
      layers.set(name, fs);
    }
    return fs;
  });
}

async function writeAll(out: { write(p: Uint8Array): Promise<number> }, data: Uint8Array) {
  let at = 0;
  while (at < data.length) at += await out.write(data.subarray(at));
}

/** Forwards our stdin to the process until EOF. */
function pumpStdin(pid: string, pool: WorkerPool): { stop(): void } {
  let stopped = false;
  const reader = Deno.stdin.readable.getReader();
  (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (stopped) return;
        if (done) break;
        pool.write(pid, value);
      }
      pool.closeStdin(pid);
    } catch {
      if (!stopped) pool.closeStdin(pid);
    }
  })();
  return {
    stop() {
      stopped = true;
      reader.cancel().catch(() => {});
    },
  };
}
