/**
 * The fault suite's hold on a host: a world with the hostile plugin, the
 * host as a subprocess (`faults/host.ts`) driven over its stdin and stdout,
 * its memory and open files read from `/proc/<pid>/`, and a watchdog that
 * kills it before it can take the machine down.
 *
 * @module
 */
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { DEFAULT_LIMITS } from "../core/limits.ts";
import { initWorld } from "../core/init.ts";
import { installPlugin } from "../tests/world.ts";
import type { CallAnswer, HostState, Order, ServerAddresses } from "./host.ts";
import { SAUSAGE_FLAGS } from "../core/host.ts";
import { CONTROL_PREFIX } from "./host.ts";

const HOST_MAIN = new URL("./host.ts", import.meta.url).pathname;

/** The flags of the `sausage` task, and `gc()`: the checks collect garbage before they read the RSS. */
export const HOST_FLAGS: readonly string[] = ["run", ...SAUSAGE_FLAGS, "--v8-flags=--expose-gc"];

/** The world plugins of the suite: all of them the hostile test plugin. */
export const PLUGINS: Readonly<Record<string, string>> = {
  hostile: "hostile",
  other: "hostile",
  bystander: "hostile",
};

/** Creates a world for attacks, with `limits.yaml` and a boot service that holds a lock. */
export async function attackWorld(limitsYaml: string): Promise<string> {
  const root = await Deno.makeTempDir({ prefix: "sausage-faults-" });
  await initWorld(root, { installAgent: false });
  for (const [name, crate] of Object.entries(PLUGINS)) await installPlugin(root, name, crate);
  await Deno.writeTextFile(join(root, "config", "limits.yaml"), limitsYaml);
  await Deno.writeTextFile(
    join(root, "config", "boot.yaml"),
    "- method: bystander.hold_lock\n  params:\n    path: /state/bystander.lock\n",
  );
  return root;
}

/** The limits the suite's worlds get: small where a protection would otherwise let it grow. */
export function limitsYaml(): string {
  const lines = [
    "# the fault suite's world: small limits keep a 2-core machine safe",
    // a fan-out or a notification flood meets its limit sooner: the same refusal, fewer processes
    "processes_per_tree: 64",
    "notifications_per_sender: 20",
  ];
  for (const key of Object.keys(DEFAULT_LIMITS)) {
    // limits being added to the host: set them small when this host knows them
    if (/memory/.test(key)) lines.push(`${key}: ${/bytes/.test(key) ? 256 * 2 ** 20 : 256}`);
    if (/stdin/.test(key)) lines.push(`${key}: ${/bytes/.test(key) ? 64 * 2 ** 20 : 64}`);
  }
  return lines.join("\n") + "\n";
}

/** The RSS of a process in bytes, from `/proc/<pid>/status`; undefined once it is gone. */
export function rssOf(pid: number): number | undefined {
  try {
    const status = Deno.readTextFileSync(`/proc/${pid}/status`);
    const kb = status.match(/^VmRSS:\s+(\d+) kB/m);
    return kb ? Number(kb[1]) * 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** How many files a process holds open (`/proc/<pid>/fd`); undefined once it is gone. */
export function fdsOf(pid: number): number | undefined {
  try {
    let n = 0;
    for (const _ of Deno.readDirSync(`/proc/${pid}/fd`)) n++;
    return n;
  } catch {
    return undefined;
  }
}

/** How many threads a process has (`/proc/<pid>/task`): the plugin workers are threads. */
export function threadsOf(pid: number): number | undefined {
  try {
    let n = 0;
    for (const _ of Deno.readDirSync(`/proc/${pid}/task`)) n++;
    return n;
  } catch {
    return undefined;
  }
}

/** The number of journal entries and the newest id, read from the file (the host may be dead). */
export function journalMark(root: string): { count: number; lastId: string | null } {
  const db = new DatabaseSync(join(root, "state", "core", "journal.sqlite"), { readOnly: true });
  try {
    const row = db.prepare("SELECT count(*) AS n, max(id) AS last FROM entries").get() as {
      n: number;
      last: string | null;
    };
    return { count: Number(row.n), lastId: row.last };
  } finally {
    db.close();
  }
}

/** Entries up to and including `lastId` (the ones a mark counted). */
export function journalCountUpTo(root: string, lastId: string | null): number {
  if (lastId === null) return 0;
  const db = new DatabaseSync(join(root, "state", "core", "journal.sqlite"), { readOnly: true });
  try {
    const row = db.prepare("SELECT count(*) AS n FROM entries WHERE id <= ?").get(lastId) as {
      n: number;
    };
    return Number(row.n);
  } finally {
    db.close();
  }
}

/** Entries of `plugin` after `lastId`. */
export function journalCountAfter(root: string, lastId: string | null, plugin: string): number {
  const db = new DatabaseSync(join(root, "state", "core", "journal.sqlite"), { readOnly: true });
  try {
    const row = db.prepare("SELECT count(*) AS n FROM entries WHERE id > ? AND plugin = ?")
      .get(lastId ?? "", plugin) as { n: number };
    return Number(row.n);
  } finally {
    db.close();
  }
}

/** The last `n` journal lines of a process, oldest first. */
export function journalLines(root: string, pid: string, n: number): string[] {
  const db = new DatabaseSync(join(root, "state", "core", "journal.sqlite"), { readOnly: true });
  try {
    return db.prepare("SELECT stream, line FROM entries WHERE pid = ? ORDER BY id DESC LIMIT ?")
      .all(pid, n).map((r) => `${r.stream}: ${String(r.line).slice(0, 300)}`).reverse();
  } finally {
    db.close();
  }
}

/** Why a watchdog killed a host. */
export interface Tripped {
  reason: string;
}

/** A host subprocess and its control channel. */
export class HostProcess {
  readonly child: Deno.ChildProcess;
  readonly pid: number;
  readonly exited: Promise<Deno.CommandStatus>;
  /** The last lines the host wrote to stderr, for a report. */
  readonly stderrTail: string[] = [];
  #alive = true;
  #nextId = 1;
  readonly #pending = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly #ready = Promise.withResolvers<void>();
  #peak = 0;
  #sampler: ReturnType<typeof setInterval> | undefined;
  /** Set when the watchdog killed the host. */
  tripped: Tripped | undefined;
  /** Where its web server, `/mcp` and control endpoint listen (set when it is ready). */
  servers: ServerAddresses | undefined;

  private constructor(root: string, cacheDir: string) {
    this.child = new Deno.Command(Deno.execPath(), {
      args: [...HOST_FLAGS, HOST_MAIN, root, cacheDir],
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
      env: { NO_COLOR: "1" },
    }).spawn();
    this.pid = this.child.pid;
    this.#writer = this.child.stdin.getWriter();
    this.exited = this.child.status.then((s) => {
      this.#alive = false;
      this.#ready.reject(new Error(`the host exited (${describeStatus(s)}) before it was ready`));
      for (const p of this.#pending.values()) {
        p.reject(new Error(`the host died (${describeStatus(s)})`));
      }
      this.#pending.clear();
      return s;
    });
    this.#ready.promise.catch(() => {});
    this.#read();
    this.#drainStderr();
  }

  /** Starts a host on `root` and waits until it is ready (services started). */
  static async start(root: string, cacheDir: string, readyMs = 60_000): Promise<HostProcess> {
    const h = new HostProcess(root, cacheDir);
    const timer = setTimeout(() => h.kill(), readyMs);
    try {
      await h.#ready.promise;
    } catch (e) {
      throw new Error(`${(e as Error).message}\n${h.stderrTail.slice(-10).join("\n")}`);
    } finally {
      clearTimeout(timer);
    }
    return h;
  }

  /** Whether the process still runs. */
  get alive(): boolean {
    return this.#alive;
  }

  /** The highest RSS seen since {@linkcode HostProcess.resetPeak}. */
  get peak(): number {
    return this.#peak;
  }

  /** Starts the peak over from the RSS now. */
  resetPeak(): void {
    this.#peak = rssOf(this.pid) ?? 0;
  }

  /**
   * Samples the RSS every 100 ms, keeps the peak, and kills the host past
   * `maxRss` bytes: a host that grows without bound must not take the
   * machine with it.
   */
  watch(maxRss: number): void {
    this.#sampler ??= setInterval(() => {
      const rss = rssOf(this.pid);
      if (rss === undefined) return;
      if (rss > this.#peak) this.#peak = rss;
      if (rss > maxRss && this.#alive && !this.tripped) {
        this.tripped = {
          reason: `watchdog: host RSS ${mib(rss)} MiB passed ${mib(maxRss)} MiB, host killed`,
        };
        this.kill();
      }
    }, 100);
  }

  /** Kills the host with SIGKILL (the watchdog, a timeout). */
  kill(): void {
    if (!this.#alive) return;
    try {
      this.child.kill("SIGKILL");
    } catch {
      // already gone
    }
  }

  /** Sends an order and waits for its answer; rejects when the host dies or after `ms`. */
  async order<T = unknown>(order: Omit<Order, "id">, ms = 120_000): Promise<T> {
    if (!this.#alive) throw new Error("the host is down");
    const id = this.#nextId++;
    const { promise, resolve, reject } = Promise.withResolvers<unknown>();
    this.#pending.set(id, { resolve, reject });
    const timer = setTimeout(() => {
      this.#pending.delete(id);
      reject(new Error(`${order.op} ${order.method ?? ""}: no answer from the host in ${ms} ms`));
    }, ms);
    try {
      await this.#writer.write(new TextEncoder().encode(JSON.stringify({ ...order, id }) + "\n"));
      return await promise as T;
    } finally {
      clearTimeout(timer);
    }
  }

  /** A call from the suite's client (see `call` in `faults/host.ts`). */
  call(
    method: string,
    params: Record<string, unknown> = {},
    more: Partial<Order> = {},
  ): Promise<CallAnswer> {
    const ms = (more.timeoutMs ?? 60_000) + 10_000;
    return this.order<CallAnswer>({ op: "call", method, params, ...more }, ms);
  }

  /** The host's processes, locks and workers. */
  state(ms = 5000): Promise<HostState> {
    return this.order<HostState>({ op: "state" }, ms);
  }

  /** Stops the host as SIGTERM would, then the sampler; kills it if that takes over 20 s. */
  async stop(): Promise<void> {
    if (this.#sampler !== undefined) clearInterval(this.#sampler);
    this.#sampler = undefined;
    if (this.#alive) {
      const timer = setTimeout(() => this.kill(), 20_000);
      await this.order({ op: "shutdown" }, 25_000).catch(() => {});
      await this.exited;
      clearTimeout(timer);
    }
    await this.#writer.close().catch(() => {});
  }

  /** Stops the sampler after the host died. */
  async reap(): Promise<void> {
    if (this.#sampler !== undefined) clearInterval(this.#sampler);
    this.#sampler = undefined;
    this.kill();
    await this.exited;
    await this.#writer.close().catch(() => {});
  }

  async #read(): Promise<void> {
    let buffer = "";
    const decoder = new TextDecoder();
    try {
      for await (const chunk of this.child.stdout) {
        buffer += decoder.decode(chunk, { stream: true });
        let nl;
        while ((nl = buffer.indexOf("\n")) >= 0) {
          const line = buffer.slice(0, nl);
          buffer = buffer.slice(nl + 1);
          if (!line.startsWith(CONTROL_PREFIX)) continue;
          const msg = JSON.parse(line.slice(CONTROL_PREFIX.length));
          if (msg.event === "ready") {
            this.servers = msg.servers;
            this.#ready.resolve();
            continue;
          }
          const p = this.#pending.get(msg.id);
          if (!p) continue;
          this.#pending.delete(msg.id);
          if ("error" in msg) p.reject(new Error(msg.error));
          else p.resolve(msg.result);
        }
      }
    } catch {
      // the host died
    }
  }

  async #drainStderr(): Promise<void> {
    // always read: a full pipe would block the host's writes to stderr
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for await (const chunk of this.child.stderr) {
        buffer += decoder.decode(chunk, { stream: true });
        const lines = buffer.split("\n");
        buffer = lines.pop() ?? "";
        for (const l of lines) {
          this.stderrTail.push(l.slice(0, 500));
          if (this.stderrTail.length > 50) this.stderrTail.shift();
        }
      }
    } catch {
      // the host died
    }
  }
}

/** A status in words: `exit 0`, `signal SIGKILL`. */
export function describeStatus(s: Deno.CommandStatus): string {
  return s.signal ? `signal ${s.signal}` : `exit ${s.code}`;
}

/** Bytes in MiB, rounded. */
export function mib(bytes: number): number {
  return Math.round(bytes / 2 ** 20);
}

/** Waits until `check` is true, polling every 50 ms; false after `ms`. */
export async function eventually(
  check: () => boolean | Promise<boolean>,
  ms: number,
): Promise<boolean> {
  const until = performance.now() + ms;
  while (true) {
    try {
      if (await check()) return true;
    } catch {
      // not yet
    }
    if (performance.now() > until) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
}
