/**
 * The host under attack: a subprocess that runs a real {@linkcode Host} on a
 * world, as `sausage --headless` does, and takes orders from the fault suite
 * on stdin (one JSON object a line). It answers on stdout, each line behind
 * {@linkcode CONTROL_PREFIX}, so that nothing else the host might print is
 * taken for an answer.
 *
 * A subprocess, not the suite's own process, because an attack may take the
 * host down: the suite then sees it die, reads its RSS and open files in
 * `/proc/<pid>/`, and can kill it (the watchdog).
 *
 * ```text
 * deno run --allow-all --unstable-worker-options --v8-flags=--expose-gc faults/host.ts WORLD CACHE
 * ```
 *
 * Orders (`{"id": n, "op": ...}`), each answered with `{"id": n, "result"}` or
 * `{"id": n, "error"}`:
 *
 * - `call {method, params, timeoutMs?, stopAfterMs?, killAfterMs?}`: a request
 *   from the client `faults`; the answer is `{response, ms}`, or `{timeout}`.
 *   With `stopAfterMs` or `killAfterMs`, the core stops or kills the callee
 *   that long after it announced its pid (`core.notify` `pid`).
 * - `notify {method, params, count?}`: notifications, `count` of them at once.
 * - `send {message}`: any value, as a message from the client.
 * - `state`: processes, locks, workers.
 * - `flush`: writes the journal's pending entries.
 * - `fill {count, line}`: journal entries written by the core (setup of an attack).
 * - `gc`: a full garbage collection, when the flag allows it.
 * - `shutdown`: stops the host and exits 0.
 *
 * @module
 */
import { ControlEndpoint, controlPaths } from "../core/control.ts";
import { Host } from "../core/host.ts";
import { LocalHostView } from "../core/host_view.ts";
import type { Response } from "../core/jsonrpc.ts";
import { McpHttp } from "../mcp/http.ts";
import { startWebServer, type WebServer } from "../web/server.ts";

/** What starts each line of the control channel on stdout. */
export const CONTROL_PREFIX = "@@faults ";

/** One order of the suite. */
export interface Order {
  id: number;
  op: "call" | "stop-call" | "notify" | "send" | "state" | "flush" | "fill" | "gc" | "shutdown";
  method?: string;
  params?: Record<string, unknown>;
  message?: unknown;
  count?: number;
  line?: string;
  timeoutMs?: number;
  stopAfterMs?: number;
  killAfterMs?: number;
  /** A `call`'s name for a later `stop-call`, which stops it as its caller would (`core.stop`). */
  tag?: string;
}

/** The answer of a `call` order. */
export interface CallAnswer {
  response?: Response;
  /** The call got no answer within `timeoutMs`. */
  timeout?: boolean;
  ms: number;
  /** The pid the callee announced, if it did. */
  pid?: string;
}

/** What the `state` order answers. */
export interface HostState {
  processes: { pid: string; plugin: string; method: string; state: string; detached: boolean }[];
  live: number;
  locks: { path: string; holder: string; waiting: string[] }[];
  workers: number;
  running: number;
  limits: Record<string, number>;
  /** The host's servers, as `faults/http_attacks.ts` attacks them. */
  servers: ServerCounts;
}

/** What the host's servers hold open. */
export interface ServerCounts {
  /** HTTP connections of the web server. */
  httpConnections: number;
  /** Its event streams. */
  eventStreams: number;
  /** MCP sessions at `/mcp`. */
  mcpSessions: number;
  /** Connections of the control endpoint. */
  controlConnections: number;
}

/** Where the host's servers listen: in the `ready` event. */
export interface ServerAddresses {
  /** The web server's port on 127.0.0.1 and its token (`/mcp` is on it too). */
  http: { port: number; token: string };
  /** The control endpoint's Unix socket. */
  control: string;
}

/** The host's servers, started beside it as `sausage --headless --http` does. */
interface Servers {
  web: WebServer;
  mcp: McpHttp;
  control: ControlEndpoint;
  view: LocalHostView;
}

const encoder = new TextEncoder();

function emit(value: unknown): void {
  // one write per line: a line never interleaves with another
  Deno.stdout.writeSync(encoder.encode(CONTROL_PREFIX + JSON.stringify(value) + "\n"));
}

async function serve(host: Host, servers: Servers): Promise<void> {
  const client = host.client("faults");
  const handle = async (order: Order): Promise<unknown> => {
    switch (order.op) {
      case "call":
        return await call(host, order);
      case "stop-call":
        return await stopCall(host, order.tag!);
      case "notify":
        for (let i = 0; i < (order.count ?? 1); i++) {
          client.notify(order.method!, order.params ?? {});
        }
        return {};
      case "send":
        client.send(order.message);
        return {};
      case "state":
        return state(host, servers);
      case "flush":
        return { flushed: host.journal.flush() };
      case "fill":
        for (let i = 0; i < (order.count ?? 0); i++) {
          host.journal.event(null, null, `${i} ${order.line ?? ""}`);
        }
        return { flushed: host.journal.flush() };
      case "gc": {
        const gc = (globalThis as { gc?: () => void }).gc;
        gc?.();
        return { gc: gc !== undefined };
      }
      case "shutdown":
        await closeServers(servers);
        await host.shutdown();
        emit({ id: order.id, result: {} });
        Deno.exit(0);
    }
  };
  let buffer = "";
  const decoder = new TextDecoder();
  for await (const chunk of Deno.stdin.readable) {
    buffer += decoder.decode(chunk, { stream: true });
    let nl;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, nl);
      buffer = buffer.slice(nl + 1);
      if (!line.trim()) continue;
      const order = JSON.parse(line) as Order;
      handle(order).then(
        (result) => emit({ id: order.id, result }),
        (e) => emit({ id: order.id, error: String((e as Error)?.stack ?? e) }),
      );
    }
  }
  // the suite went away: stop as a host stops on SIGTERM
  await closeServers(servers);
  await host.shutdown();
  Deno.exit(0);
}

let callerCount = 0;

/** The clients of the calls made with a `tag`, for `stop-call`. */
const tagged = new Map<string, ReturnType<Host["client"]>>();

/**
 * Stops a tagged call as its caller would: `core.stop` of the process that
 * answers it (found by its origin, so the callee need not announce its pid).
 * `{stopped: false}` when the call has ended.
 */
async function stopCall(host: Host, tag: string): Promise<{ stopped: boolean }> {
  const client = tagged.get(tag);
  const process = host.processes.list().find((p) =>
    client !== undefined && p.origin?.peer === client && p.state === "running"
  );
  if (process === undefined) return { stopped: false };
  const response = await client!.request("core.stop", { pid: process.pid });
  return { stopped: !("error" in response) };
}

async function call(host: Host, order: Order): Promise<CallAnswer> {
  // one client per call: a stop or kill below must not reach the calls of others
  const client = host.client(`faults-${++callerCount}`);
  if (order.tag !== undefined) tagged.set(order.tag, client);
  const started = performance.now();
  let pid: string | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const after = order.stopAfterMs ?? order.killAfterMs;
  const how = order.stopAfterMs !== undefined ? "core.stop" : "core.kill";
  const onNotify = (name: string, params: unknown) => {
    if (name !== "pid" || pid !== undefined) return;
    pid = (params as { pid: string }).pid;
    if (after !== undefined) {
      timer = setTimeout(() => client.request(how, { pid }), after);
    }
  };
  try {
    const response = await client.request(order.method!, order.params ?? {}, {
      onNotify,
      timeoutMs: order.timeoutMs,
    });
    return { response, ms: performance.now() - started, pid };
  } catch (e) {
    if ((e as Error).name !== "TimeoutError") throw e;
    return { timeout: true, ms: performance.now() - started, pid };
  } finally {
    clearTimeout(timer);
    if (order.tag !== undefined) tagged.delete(order.tag);
  }
}

async function closeServers(s: Servers): Promise<void> {
  await s.mcp.close();
  await s.web.close();
  await s.view.close("the web server stopped");
  await s.control.close();
}

function state(host: Host, servers: Servers): HostState {
  return {
    processes: host.processes.list().map((p) => ({
      pid: p.pid,
      plugin: p.plugin,
      method: p.method,
      state: p.state,
      detached: p.detached,
    })),
    live: host.processes.live,
    locks: host.locks.snapshot().map((l) => ({
      path: l.path,
      holder: l.holder,
      waiting: l.waiting,
    })),
    workers: host.pool.workers,
    running: host.pool.size,
    limits: { ...host.processes.limits } as unknown as Record<string, number>,
    servers: {
      httpConnections: servers.web.connections,
      eventStreams: servers.web.eventStreams,
      mcpSessions: servers.mcp.sessions,
      controlConnections: servers.control.connections,
    },
  };
}

if (import.meta.main) {
  const [world, cacheDir] = Deno.args;
  const host = await Host.start({
    world,
    cacheDir,
    installAgent: false,
    onNote: (text) => console.error(`sausage: ${text}`),
  });
  await host.discovered;
  await host.servicesStarted;
  // the servers of `sausage --headless --http 127.0.0.1:0`, with their default bounds
  const control = await ControlEndpoint.listen(host);
  if (!control) throw new Error("the control endpoint did not start");
  const view = new LocalHostView(host, control.started);
  const mcp = new McpHttp(() => new LocalHostView(host, control.started));
  const web = await startWebServer(view, { hostname: "127.0.0.1", port: 0, mcp });
  const servers: Servers = { web, mcp, control, view };
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    Deno.addSignalListener(
      signal,
      () => closeServers(servers).then(() => host.shutdown()).then(() => Deno.exit(0)),
    );
  }
  const addresses: ServerAddresses = {
    http: { port: web.port, token: web.token },
    control: controlPaths(host.world).socket,
  };
  emit({ event: "ready", pid: Deno.pid, servers: addresses });
  await serve(host, servers);
}
