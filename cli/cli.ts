/**
 * The `sausage` command line.
 *
 * ```text
 * sausage [WORLD]                      the console (default world: created when missing)
 * sausage --headless WORLD             no console; until SIGTERM/SIGINT (0) or core.exit (75)
 *                                      (--http [ADDR:]PORT also serves the web page)
 * sausage web [WORLD]                  the console and the web page together
 * sausage init [WORLD]                 create a world, never overwriting a file
 * sausage call WORLD METHOD [PARAMS]   one call; the result or the error object as JSON
 *                                      (--params-file FILE, or - for stdin, in place of PARAMS);
 *                                      through the control endpoint when a host runs WORLD
 * sausage attach WORLD                 the console on the host that runs WORLD
 * sausage mcp [WORLD]                  an MCP server on stdin and stdout (the world's host, or its own)
 * sausage ps|log|stop|kill WORLD ...   the processes and journal of the host that runs WORLD
 * sausage run [--dir H::G] [--env N=V] FILE.wasm [ARGS]   any wasi:cli/command component
 * ```
 *
 * @module
 */
import { Command, CommanderError, Option } from "commander";
import { join, resolve } from "node:path";
import pc from "picocolors";
import { resolveCacheDir } from "../core/components/cache.ts";
import { ComponentError } from "../core/components/format.ts";
import { EXIT_CODE_CORE_EXIT, Host } from "../core/host.ts";
import { TimeoutError } from "../core/client.ts";
import { ControlEndpoint, removeStaleSocket } from "../core/control.ts";
import { defaultPoolSize } from "../core/pool.ts";
import { ControlClient, ControlError } from "../core/control_client.ts";
import { type HostView, LocalHostView } from "../core/host_view.ts";
import { ErrorCode, type Response } from "../core/jsonrpc.ts";
import { type Entry, Journal, type LogAnswer, type LogQuery, QueryError } from "../core/journal.ts";
import { LOG_FORMATS, type LogFormat, searchAll, writeEntries } from "./log_query.ts";
import { runComponent } from "./run_command.ts";
import { registerOpsCommands } from "./ops_commands.ts";
import { startFailure } from "./preflight.ts";
import type { HttpAddress, WebServer } from "../web/server.ts";
import { WorldError } from "../core/world.ts";
import { initWorld } from "../core/init.ts";
import { MAX_TIMEOUT_MS } from "../protocol/limits.ts";

/** Exit codes of `sausage` (also in the README). */
export const ExitCode = {
  Ok: 0,
  /** `sausage call` got an error object; a command failed. */
  Error: 1,
  /** Bad command-line arguments. */
  Usage: 2,
  /** The world cannot be run: missing, locked by another host, or with a mount point name. */
  World: 3,
  /** A process asked the host to stop (`core.exit`). */
  CoreExit: EXIT_CODE_CORE_EXIT,
} as const;

/** The world `sausage` without arguments runs: `$XDG_DATA_HOME/sausage/world` or `~/.local/share/sausage/world`. */
export function defaultWorld(): string {
  const xdg = Deno.env.get("XDG_DATA_HOME");
  if (xdg) return join(xdg, "sausage", "world");
  const home = Deno.env.get("HOME") ?? Deno.env.get("USERPROFILE") ?? ".";
  return join(home, ".local", "share", "sausage", "world");
}

class Exit extends Error {
  constructor(readonly code: number) {
    super(`exit ${code}`);
  }
}

function fail(message: string, code: number = ExitCode.Error): never {
  console.error(`${pc.red("sausage:")} ${message}`);
  throw new Exit(code);
}

/** `--cache-dir` of a command, or of `sausage` itself when it came before the command. */
function cacheDirOf(command: Command): string | undefined {
  return command.opts().cacheDir ?? command.parent?.opts().cacheDir;
}

function cacheOption(): Option {
  return new Option(
    "--cache-dir <dir>",
    "component cache (default: $XDG_CACHE_HOME/sausage or ~/.cache/sausage)",
  );
}

function errorCode(e: unknown): number {
  if (e instanceof WorldError) return ExitCode.World;
  return ExitCode.Error;
}

async function startHost(
  world: string,
  cacheDir: string | undefined,
  options: { services?: boolean; workers?: number; maxWorkers?: number } = {},
) {
  try {
    return await Host.start({
      world,
      cacheDir: resolveCacheDir(cacheDir),
      services: options.services,
      workers: options.workers,
      maxWorkers: options.maxWorkers,
      onNote: (text) => console.error(pc.dim(`sausage: ${text}`)),
    });
  } catch (e) {
    fail(startFailure(e, world, resolveCacheDir(cacheDir)), errorCode(e));
  }
}

/**
 * Resolves at the first SIGINT or SIGTERM; a second one calls `onAgain`
 * (kill every process at once). Listening starts at once, so a signal that
 * comes while the host starts is not lost.
 */
function listenForStop(): { stopped: Promise<void>; onAgain: (f: () => void) => void } {
  const { promise, resolve } = Promise.withResolvers<void>();
  let again = () => {};
  let count = 0;
  const onSignal = () => {
    count++;
    if (count === 1) resolve();
    else again();
  };
  const signals: Deno.Signal[] = Deno.build.os === "windows" ? ["SIGINT"] : ["SIGINT", "SIGTERM"];
  for (const s of signals) Deno.addSignalListener(s, onSignal);
  return { stopped: promise, onAgain: (f) => again = f };
}

/** `--http [ADDR:]PORT`, parsed before the host starts (a typo is exit 2). */
async function httpAddress(text: string | undefined): Promise<HttpAddress | undefined> {
  if (text === undefined) return undefined;
  const { AddressError, parseHttpAddress } = await import("../web/server.ts");
  try {
    return parseHttpAddress(text);
  } catch (e) {
    if (e instanceof AddressError) fail(e.message, ExitCode.Usage);
    throw e;
  }
}

/**
 * The web page on its own view of `host`; prints where it is. A port that
 * cannot be had shuts the host down and ends the command (exit 1).
 */
async function serveWeb(
  host: Host,
  address: HttpAddress,
  started?: Date,
): Promise<{ close(): Promise<void> }> {
  const { startWebServer } = await import("../web/server.ts");
  const { McpHttp } = await import("../mcp/http.ts");
  // the page's calls have a parent of their own, `web`, in ps and the journal
  const view = new LocalHostView(host, started, "web");
  // each MCP session is a front end of its own: what it called stops when it ends
  const mcp = new McpHttp(() => new LocalHostView(host, started), {
    log: (text) => console.error(pc.dim(`sausage mcp: ${text}`)),
  });
  let server: WebServer;
  try {
    server = await startWebServer(view, { ...address, mcp });
  } catch (e) {
    await view.close();
    await host.shutdown();
    fail((e as Error).message);
  }
  console.error(
    `sausage: the web page is at ${server.url}` +
      `\nsausage: MCP clients reach the world at ${server.origin}/mcp (Streamable HTTP) with ` +
      `the header Authorization: Bearer ${server.token}`,
  );
  return {
    async close() {
      await mcp.close();
      await server.close();
      await view.close("the web server stopped");
    },
  };
}

async function headless(
  world: string,
  cacheDir: string | undefined,
  http?: HttpAddress,
): Promise<number> {
  const signals = listenForStop();
  const host = await startHost(world, cacheDir);
  signals.onAgain(() => host.killAll());
  const endpoint = await ControlEndpoint.listen(host);
  // one message each: a log record's event comes from its message's first line
  console.error(`sausage: running ${host.world.root} (headless). Stop with SIGTERM or Ctrl-C.`);
  if (endpoint) {
    console.error(`sausage: reach it with sausage attach|call|ps|log|stop|kill ${host.world.root}`);
  }
  const web = http ? await serveWeb(host, http, endpoint?.started) : undefined;
  const code = await Promise.race([
    signals.stopped.then(() => ExitCode.Ok as number),
    host.exitRequested,
  ]);
  console.error(`sausage: stopping${code === ExitCode.CoreExit ? " (core.exit)" : ""}…`);
  await web?.close();
  await endpoint?.close();
  await host.shutdown();
  return code;
}

async function consoleMode(
  world: string | undefined,
  cacheDir: string | undefined,
  http?: HttpAddress,
): Promise<number> {
  let root = world;
  if (root === undefined) {
    root = defaultWorld();
    const report = await initWorld(root, { installAgent: true });
    for (const note of report.notes) console.error(pc.dim(`sausage: ${note}`));
    for (const warning of report.warnings) console.error(pc.yellow(`warning: ${warning}`));
    if (report.created.length > 0) {
      console.error(
        pc.dim(
          `sausage: created the world ${report.root}; configure the agent in ${
            join(report.root, "config", "agent.yaml")
          }`,
        ),
      );
    }
  }
  const host = await startHost(root, cacheDir);
  const endpoint = await ControlEndpoint.listen(host);
  const web = http ? await serveWeb(host, http, endpoint?.started) : undefined;
  const view = new LocalHostView(host, endpoint?.started);
  const { runConsole } = await import("../console/console.ts");
  const code = await runConsole(view, { interrupt: () => host.killAll() });
  await view.close("the console ended");
  await web?.close();
  await endpoint?.close();
  await host.shutdown();
  return code;
}

async function callOnce(
  world: string,
  method: string,
  paramsText: string | undefined,
  options: { timeout?: string; cacheDir?: string; services: boolean; paramsFile?: string },
): Promise<number> {
  let params: unknown = {};
  let what = "PARAMS";
  if (options.paramsFile !== undefined) {
    if (paramsText !== undefined) fail("give PARAMS or --params-file, not both", ExitCode.Usage);
    // a file or stdin: params past the OS's limit on arguments (128 KiB) still go
    const file = options.paramsFile;
    what = file === "-" ? "the params on stdin" : `the params in ${file}`;
    try {
      paramsText = file === "-"
        ? await new Response(Deno.stdin.readable).text()
        : await Deno.readTextFile(file);
    } catch (e) {
      fail(`--params-file: cannot read ${file}: ${(e as Error).message}`, ExitCode.Usage);
    }
  }
  if (paramsText !== undefined) {
    try {
      params = JSON.parse(paramsText);
    } catch (e) {
      fail(
        `${what} is not JSON: ${(e as Error).message}. Example: '{"text": "milk"}'`,
        ExitCode.Usage,
      );
    }
  }
  // params that are JSON but not an object go on: the call gets -32602 like any other
  let timeoutMs: number | undefined;
  if (options.timeout !== undefined) {
    const seconds = Number(options.timeout);
    if (!Number.isFinite(seconds) || seconds <= 0 || seconds * 1000 > MAX_TIMEOUT_MS) {
      fail(
        `--timeout takes a positive number of seconds, at most ${
          Math.floor(MAX_TIMEOUT_MS / 1000)
        }`,
        ExitCode.Usage,
      );
    }
    timeoutMs = Math.ceil(seconds * 1000);
  }
  // --timeout covers the wait for the services of boot.yaml too
  const deadline = timeoutMs === undefined ? undefined : performance.now() + timeoutMs;
  const within = <T>(promise: Promise<T>, what: string) =>
    beforeDeadline(promise, deadline, `${what} within ${options.timeout} s (--timeout)`);
  const remote = await connect(world);
  if (remote) {
    const hostSilent = timeoutMs === undefined ? undefined : deadline! + HOST_DEADLINE_MARGIN_MS;
    const withinHost = <T>(promise: Promise<T>, what: string) =>
      beforeDeadline(
        promise,
        hostSilent,
        `${what} within ${options.timeout} s (--timeout), nor the host's -32006`,
      );
    // the host keeps the deadline (core.call's timeout_ms: -32006, the callee stopped); this side
    // gives up a little later only if the host itself does not answer
    const sent = withDeadline(method, params as Record<string, unknown>, timeoutMs);
    return await callThrough(remote, sent.method, sent.params, withinHost);
  }
  // one worker to start with: a second would take 20 to 30 ms of this thread to start, and sit
  // idle while one call runs; the pool adds workers when the ones it has compute, up to its usual
  // ceiling (a call that calls others has its callees on its own worker until then)
  const host = await startHost(world, options.cacheDir, {
    services: options.services,
    workers: 1,
    maxWorkers: 4 * defaultPoolSize(),
  });
  // a one-shot host does not listen; the socket of a killed host goes now
  await removeStaleSocket(host.world).catch(() => {});
  try {
    const client = host.client("console");
    try {
      await within(host.servicesStarted, "the services of boot.yaml did not start");
      // the services' wait spent part of the time: the call gets what is left
      const left = deadline === undefined
        ? undefined
        : Math.max(1, Math.ceil(deadline - performance.now()));
      const sent = withDeadline(method, params as Record<string, unknown>, left);
      const response = await beforeDeadline(
        client.request(sent.method, sent.params, {
          onNotify: (name, p) => console.error(pc.dim(`${name} ${JSON.stringify(p)}`)),
        }),
        deadline === undefined ? undefined : deadline + HOST_DEADLINE_MARGIN_MS,
        `${method}: no answer within ${options.timeout} s (--timeout), nor the host's -32006`,
      );
      if (response.error) {
        console.log(JSON.stringify(response.error, null, 2));
        if (response.error.code === ErrorCode.Deadline) {
          // giving up means now for the call's own processes; the services stop as usual
          await host.killCallsOf("console", "sausage call gave up (--timeout)");
        }
        return ExitCode.Error;
      }
      console.log(JSON.stringify(response.result, null, 2));
      return ExitCode.Ok;
    } catch (e) {
      if (!(e instanceof TimeoutError)) throw e;
      console.log(JSON.stringify({ code: -32000, message: e.message }, null, 2));
      // giving up means now for the call's own processes; the services stop as usual
      await host.killCallsOf("console", "sausage call gave up (--timeout)");
      return ExitCode.Error;
    }
  } finally {
    await host.shutdown();
  }
}

/**
 * The host that runs `world`, over its control endpoint; null when none
 * listens. An endpoint that is not safe to use ends the command (exit 3).
 */
async function connect(world: string): Promise<ControlClient | null> {
  try {
    return await ControlClient.connect(resolve(world));
  } catch (e) {
    if (e instanceof ControlError) fail(e.message, ExitCode.World);
    throw e;
  }
}

/** `sausage attach`: the console on the host that runs `world`; it goes on when the console ends. */
async function attach(world: string): Promise<number> {
  const remote = await runningHost(world, "there is nothing to attach to");
  try {
    const { runConsole } = await import("../console/console.ts");
    return await runConsole(remote);
  } finally {
    await remote.close(); // the host stops what this console called, and goes on
  }
}

/**
 * `sausage mcp`: an MCP server on stdin and stdout. It serves the host that
 * runs `world` through its control endpoint, or starts one as the console
 * does (with an endpoint, so a console can attach). Logs go to stderr: stdout
 * is the protocol. Ends with 0 when the client closes stdin (or on SIGINT or
 * SIGTERM), 1 when the host it served went away, 75 on core.exit.
 */
async function mcpMode(
  world: string | undefined,
  opts: { cacheDir?: string; plugins?: string },
): Promise<number> {
  // nothing but the protocol may reach stdout, whatever prints
  console.log = console.error;
  console.info = console.error;
  console.debug = console.error;
  const log = (text: string) => console.error(pc.dim(`sausage mcp: ${text}`));
  const { exposedPlugins, McpConfigError, parsePluginList } = await import("../mcp/config.ts");
  if (opts.plugins !== undefined) {
    try {
      parsePluginList(opts.plugins);
    } catch (e) {
      if (e instanceof McpConfigError) fail(e.message, ExitCode.Usage);
      throw e;
    }
  }
  let root = world;
  if (root === undefined) {
    root = defaultWorld();
    const report = await initWorld(root, { installAgent: true });
    for (const note of report.notes) log(note);
    for (const warning of report.warnings) log(`warning: ${warning}`);
  }
  const signals = listenForStop();
  let view: HostView;
  let finish: () => Promise<void>;
  const remote = await connect(root);
  if (remote) {
    log(`serving the host that runs ${remote.info.world} (pid ${remote.info.pid})`);
    view = remote;
    finish = () => remote.close(); // that host stops what this client called, and goes on
  } else {
    const host = await startHost(root, opts.cacheDir);
    signals.onAgain(() => host.killAll());
    const endpoint = await ControlEndpoint.listen(host);
    const local = new LocalHostView(host, endpoint?.started);
    log(
      `running ${host.world.root}` +
        (endpoint ? `; a console can attach with: sausage attach ${host.world.root}` : ""),
    );
    view = local;
    finish = async () => {
      await local.close("the MCP client went away");
      await endpoint?.close();
      await host.shutdown();
    };
  }
  try {
    view.onNote = log;
    let plugins: string[] | undefined;
    try {
      plugins = await exposedPlugins(view, opts.plugins);
    } catch (e) {
      if (e instanceof McpConfigError) fail(e.message, ExitCode.Usage);
      throw e;
    }
    const { createMcpServer } = await import("../mcp/server.ts");
    const { StdioTransport } = await import("../mcp/stdio.ts");
    const server = createMcpServer(view, { plugins, log });
    await server.connect(new StdioTransport());
    const code = await Promise.race([
      server.closed.then(() => ExitCode.Ok as number),
      signals.stopped.then(() => ExitCode.Ok as number),
      view.ended.then((end) => {
        log(end.why);
        return end.code;
      }),
    ]);
    await server.close();
    return code;
  } finally {
    await finish();
  }
}

/** The host that runs `world`, or the end of the command with a note that none does. */
async function runningHost(world: string, what: string): Promise<ControlClient> {
  const remote = await connect(world);
  if (!remote) {
    fail(
      `no host runs ${world}, so ${what}. Start one with: sausage --headless ${world}`,
      ExitCode.World,
    );
  }
  return remote;
}

async function listProcesses(world: string, json: boolean): Promise<number> {
  const remote = await connect(world);
  if (!remote) {
    if (json) console.log("[]");
    else console.error(pc.dim(`sausage: no host runs ${world}: no processes`));
    return ExitCode.Ok;
  }
  try {
    const processes = await remote.processes();
    if (json) {
      console.log(JSON.stringify(processes, null, 2));
      return ExitCode.Ok;
    }
    const { formatProcesses, makeStyle } = await import("../console/format.ts");
    const rows = processes.map((p) => ({
      pid: p.pid,
      plugin: p.plugin,
      method: p.method,
      state: p.state,
      parent: p.detached ? null : p.parent,
      startedAt: new Date(p.started),
    }));
    console.log(formatProcesses(rows, new Date(), makeStyle(colorsOn())));
    return ExitCode.Ok;
  } finally {
    await remote.close();
  }
}

interface LogOptions {
  follow?: boolean;
  lines: string;
  plugin?: string;
  pid?: string;
  grep?: string;
  since?: string;
  until?: string;
  json?: boolean;
  format?: string;
  all?: boolean;
}

async function printLog(world: string, opts: LogOptions): Promise<number> {
  const limit = Number(opts.lines);
  if (!Number.isInteger(limit) || limit < 1) fail("-n takes a positive integer", ExitCode.Usage);
  const format = (opts.format ?? (opts.json ? "json" : "text")) as LogFormat;
  if (!LOG_FORMATS.includes(format)) {
    fail(`--format takes ${LOG_FORMATS.join(", ")}, not "${opts.format}"`, ExitCode.Usage);
  }
  if (opts.all && opts.follow) fail("--all and -f do not go together", ExitCode.Usage);
  if (opts.until !== undefined && opts.follow) {
    fail("--until and -f do not go together: -f prints entries as they come", ExitCode.Usage);
  }
  const query: LogQuery = { limit };
  if (opts.plugin !== undefined) query.plugin = opts.plugin;
  if (opts.pid !== undefined) query.pid = opts.pid;
  if (opts.grep !== undefined) query.grep = opts.grep;
  if (opts.since !== undefined) query.since = opts.since;
  if (opts.until !== undefined) query.until = opts.until;
  const { formatLog, makeStyle } = await import("../console/format.ts");
  const style = makeStyle(colorsOn());
  if (opts.all) {
    // the file itself, oldest first, however many: SQLite lets the host write meanwhile
    const journal = openJournalFile(world);
    try {
      const { limit: _all, ...range } = query;
      await writeEntries(journal.each(range), format, Deno.stdout, (b) => formatLog(b, { style }));
    } catch (e) {
      fail((e as Error).message, e instanceof QueryError ? ExitCode.Usage : ExitCode.Error);
    } finally {
      journal.close();
    }
    return ExitCode.Ok;
  }
  const progress = searchProgress();
  let answer: LogAnswer;
  const remote = await connect(world);
  if (opts.follow && !remote) {
    fail(
      `no host runs ${world}, so no entry comes to follow; start one with: sausage --headless ${world}`,
      ExitCode.World,
    );
  }
  if (remote) {
    // followed from before the query, so no entry falls between the two
    const early: Entry[] = [];
    let print: (entry: Entry) => void = (entry) => early.push(entry);
    const following = opts.follow ? await remote.follow((entry) => print(entry)) : undefined;
    try {
      answer = await searchAll(
        async (q) => {
          const response = await remote.request("core.log", { ...q });
          if (response.error) {
            progress.done();
            fail(
              response.error.message,
              response.error.code === ErrorCode.InvalidParams ? ExitCode.Usage : ExitCode.Error,
            );
          }
          return response.result as LogAnswer;
        },
        query,
        progress.show,
      );
      progress.done();
      if (following) {
        const shown = await logPrinter(opts, answer);
        const last = answer.entries.at(-1)?.id ?? "";
        print = (entry) => shown(entry);
        for (const entry of early) if (entry.id > last) shown(entry);
        return await followUntilStopped(remote);
      }
    } finally {
      following?.close();
      await remote.close();
    }
  } else {
    // no host: the journal file itself (SQLite lets a host start meanwhile)
    const journal = openJournalFile(world);
    try {
      answer = await searchAll((q) => Promise.resolve(journal.search(q)), query, progress.show);
    } catch (e) {
      fail((e as Error).message, e instanceof QueryError ? ExitCode.Usage : ExitCode.Error);
    } finally {
      progress.done();
      journal.close();
    }
  }
  await writeEntries(answer.entries, format, Deno.stdout, (b) => formatLog(b, { style }));
  if (answer.cut !== undefined) {
    console.error(pc.dim(
      `sausage: older entries were left out (the answer reached its size bound); ` +
        `for them: --until ${answer.cut.until}`,
    ));
  }
  return ExitCode.Ok;
}

/** The journal file of a world, opened for reading (a clear error when there is none). */
function openJournalFile(world: string): Journal {
  const path = join(resolve(world), "state", "core", "journal.sqlite");
  try {
    Deno.statSync(path);
  } catch {
    fail(`${world} has no journal (${path}): is it a world?`, ExitCode.World);
  }
  return new Journal(path);
}

/** A line on stderr that says how far back a long search is, on a terminal only. */
function searchProgress(): { show: (before: string) => void; done: () => void } {
  const terminal = Deno.stderr.isTerminal();
  let shown = false;
  return {
    show: (before) => {
      if (!terminal) return;
      shown = true;
      Deno.stderr.writeSync(
        new TextEncoder().encode(`\r\x1b[2K${pc.dim(`searching the entries before ${before}…`)}`),
      );
    },
    done: () => {
      if (shown) Deno.stderr.writeSync(new TextEncoder().encode("\r\x1b[2K"));
      shown = false;
    },
  };
}

/** `log -f`: prints the entries of `answer`, then gives what prints each new one that matches. */
async function logPrinter(
  opts: LogOptions,
  answer: { entries: Entry[] },
): Promise<(entry: Entry) => void> {
  const { formatLog, makeStyle } = await import("../console/format.ts");
  const style = makeStyle(colorsOn());
  const grep = opts.grep === undefined ? undefined : new RegExp(opts.grep);
  const matches = (e: Entry) =>
    (opts.plugin === undefined || e.plugin === opts.plugin) &&
    (opts.pid === undefined || e.pid === opts.pid) && (grep === undefined || grep.test(e.line));
  const print = (entries: Entry[]) => {
    if (entries.length === 0) return;
    if (opts.json || opts.format === "json" || opts.format === "ndjson") {
      for (const e of entries) console.log(JSON.stringify(e));
    } else console.log(formatLog(entries, { style }));
  };
  print(answer.entries);
  return (entry) => {
    if (matches(entry)) print([entry]);
  };
}

/** Waits for Ctrl-C (exit 0) or the end of the host (exit 1). */
async function followUntilStopped(remote: ControlClient): Promise<number> {
  const stopped = Promise.withResolvers<number>();
  const onSignal = () => stopped.resolve(ExitCode.Ok);
  Deno.addSignalListener("SIGINT", onSignal);
  try {
    return await Promise.race([
      stopped.promise,
      remote.ended.then((end) => {
        console.error(pc.dim(`sausage: ${end.why}`));
        return ExitCode.Error as number;
      }),
    ]);
  } finally {
    Deno.removeSignalListener("SIGINT", onSignal);
  }
}

async function signalProcess(world: string, kind: "stop" | "kill", pid: string): Promise<number> {
  const remote = await runningHost(world, `no process runs to ${kind}`);
  try {
    const pids = (await remote.processes()).map((p) => p.pid);
    const { resolvePid } = await import("../console/parse.ts");
    const match = resolvePid(pid, pids);
    if ("ambiguous" in match) {
      fail(
        `"${pid}" is the start of ${match.ambiguous.length} process IDs: ${
          match.ambiguous.join(", ")
        }`,
        ExitCode.Usage,
      );
    }
    const response = await remote.request(`core.${kind}`, { pid: match.pid });
    if (response.error) return printResponse(response);
    console.error(`sausage: ${kind === "stop" ? "stopped" : "killed"} ${match.pid}`);
    return ExitCode.Ok;
  } finally {
    await remote.close();
  }
}

/** Colours on stdout: a terminal, and no `NO_COLOR`. */
function colorsOn(): boolean {
  return pc.isColorSupported && Deno.stdout.isTerminal();
}

/** Prints a response as `sausage call` does: the result (exit 0) or the error object (exit 1). */
function printResponse(response: Response): number {
  if (response.error) {
    console.log(JSON.stringify(response.error, null, 2));
    return ExitCode.Error;
  }
  console.log(JSON.stringify(response.result, null, 2));
  return ExitCode.Ok;
}

/**
 * One call through the control endpoint of a running host. Ctrl-C or
 * `--timeout` stop the call's process; the host and its other callers go on.
 */
async function callThrough(
  remote: ControlClient,
  method: string,
  params: Record<string, unknown>,
  within: <T>(promise: Promise<T>, what: string) => Promise<T>,
): Promise<number> {
  let id: unknown;
  const interrupted = Promise.withResolvers<number>();
  const onSignal = () => interrupted.resolve(130);
  Deno.addSignalListener("SIGINT", onSignal);
  try {
    const call = remote.request(method, params, {
      onId: (sent) => id = sent,
      onNotify: (name, p) => console.error(pc.dim(`${name} ${JSON.stringify(p)}`)),
    });
    const answered = within(call, `${method}: no answer`).then(printResponse);
    return await Promise.race([answered, interrupted.promise]);
  } catch (e) {
    if (!(e instanceof TimeoutError)) throw e;
    console.log(JSON.stringify({ code: -32000, message: e.message }, null, 2));
    if (id !== undefined) await remote.cancel(id as number);
    return ExitCode.Error;
  } finally {
    Deno.removeSignalListener("SIGINT", onSignal);
    await remote.close(); // the host stops what is still running of this call
  }
}

/** How long after its deadline `sausage call --timeout` waits for the host's own -32006. */
const HOST_DEADLINE_MARGIN_MS = 2_000;

/**
 * The call as sent: with a timeout, `core.call {"method", "params",
 * "timeout_ms"}`, so that the host keeps the deadline (PROTOCOL 3.4); the
 * `host/…` methods of the control endpoint go as they are.
 */
function withDeadline(
  method: string,
  params: Record<string, unknown>,
  timeoutMs: number | undefined,
): { method: string; params: Record<string, unknown> } {
  if (timeoutMs === undefined || method.includes("/")) return { method, params };
  return { method: "core.call", params: { method, params, timeout_ms: timeoutMs } };
}

/** `promise`, or a {@linkcode TimeoutError} with `message` at `deadline` (never when undefined). */
async function beforeDeadline<T>(
  promise: Promise<T>,
  deadline: number | undefined,
  message: string,
): Promise<T> {
  if (deadline === undefined) return await promise;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new TimeoutError(message)),
      Math.max(0, deadline - performance.now()),
    );
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Builds the command line parser; `run` receives each command's exit code. */
export function buildProgram(done: (code: number) => void): Command {
  const program = new Command("sausage")
    .description(
      "Sausage runs a world of small WebAssembly programs (plugins) that talk JSON-RPC.\n" +
        "Without a command it opens the console on WORLD (default: " + defaultWorld() +
        ", created when missing).",
    )
    .argument("[world]", "the world folder")
    .option(
      "--headless",
      "run without a console until SIGTERM or SIGINT (exit 0) or core.exit (exit 75)",
    )
    .option(
      "--http <[addr:]port>",
      "also serve the web page and its API (address default 127.0.0.1; every address needs the printed token, loopback too)",
    )
    .addOption(cacheOption())
    .enablePositionalOptions()
    .exitOverride() // before the commands: they inherit it
    .showHelpAfterError("(run sausage --help for the commands)")
    .addHelpText(
      "after",
      `
Exit codes: 0 ok; 1 a call failed or a command failed; 2 bad arguments;
3 the world cannot be run (missing, run by another host, or containing proc,
run or self); 75 a plugin called core.exit; 130 and 143 when the console
ends on SIGINT or SIGTERM. \`sausage run\` exits with the component's status
(134 when it trapped); \`sausage test\` with libtest's (101 when a test failed).
NO_COLOR=1 turns colours off.
Limits (live processes, per call tree, call depth, notifications in flight,
the memory of a process, its unread stdin, /self and /run together) are
raised in WORLD/config/limits.yaml, read at start (PROTOCOL 3.10).
A console or headless host listens on WORLD/state/core/control/socket:
attach, call, ps, log, stop and kill reach it there (PROTOCOL section 12).`,
    )
    .action(
      async (
        world: string | undefined,
        opts: { headless?: boolean; cacheDir?: string; http?: string },
      ) => {
        const http = await httpAddress(opts.http);
        if (opts.headless) {
          if (!world) {
            fail("--headless needs a WORLD folder: sausage --headless WORLD", ExitCode.Usage);
          }
          done(await headless(world, opts.cacheDir, http));
        } else {
          done(await consoleMode(world, opts.cacheDir, http));
        }
      },
    );

  program.command("web")
    .description(
      "the console and the web page together (the page at http://127.0.0.1:" +
        "7411/ unless --http says otherwise)",
    )
    .argument("[world]", "the world folder (default: " + defaultWorld() + ")")
    .option(
      "--http <[addr:]port>",
      "where the page listens (default 127.0.0.1:7411; every address needs the printed token, loopback too)",
      "127.0.0.1:7411",
    )
    .addOption(cacheOption())
    .action(async (world: string | undefined, opts: { http: string }, command: Command) => {
      const http = await httpAddress(opts.http);
      done(await consoleMode(world, cacheDirOf(command), http));
    });

  program.command("init")
    .description("create a world (folders and commented config files); never overwrites a file")
    .argument("[world]", "the world folder", defaultWorld())
    .addOption(cacheOption())
    .option("--examples", "also install the sources of the example plugins notes, www and secrets")
    .action(async (world: string, opts: { examples?: boolean }) => {
      const report = await initWorld(world, { installAgent: true, examples: opts.examples })
        .catch((e) => fail((e as Error).message, errorCode(e)));
      for (const path of report.created) console.log(`created ${path}`);
      for (const path of report.kept) console.log(`kept    ${path} (already there)`);
      for (const note of report.notes) console.log(`note:   ${note}`);
      for (const warning of report.warnings) console.error(pc.yellow(`warning: ${warning}`));
      console.log(`\nThe world is ${report.root}.`);
      console.log(
        `Edit ${join(report.root, "config", "agent.yaml")} to choose the agent's model and key.`,
      );
      done(ExitCode.Ok);
    });

  program.command("call")
    .description(
      "make one call with the parent `console`; print the result (exit 0) or the error object (exit 1) as JSON",
    )
    .argument("<world>", "the world folder")
    .argument("<method>", "<plugin>.<method> or core.<method>")
    .argument("[params]", "params as a JSON object", undefined)
    .option("--timeout <seconds>", "give up after this many seconds")
    .option(
      "--params-file <file>",
      "read the params (a JSON object) from a file, or from stdin when it is -, in place of PARAMS",
    )
    .option("--no-services", "do not start the services of config/boot.yaml first")
    .addOption(cacheOption())
    .action(async (world: string, method: string, params: string | undefined, opts, command) => {
      done(await callOnce(world, method, params, { ...opts, cacheDir: cacheDirOf(command) }));
    });

  program.command("attach")
    .description(
      "open the console on the host that runs WORLD (headless, or another console); " +
        "leaving stops only what this console called",
    )
    .argument("<world>", "the world folder")
    .action(async (world: string) => {
      done(await attach(world));
    });

  program.command("mcp")
    .description(
      "serve WORLD to an MCP client on stdin and stdout (claude mcp add sausage -- sausage mcp " +
        "WORLD): the host that runs it, or a host of its own",
    )
    .argument("[world]", "the world folder (default: " + defaultWorld() + ")")
    .option(
      "--plugins <names>",
      "only these plugins' methods are tools, in this order (comma-separated; default: the " +
        "plugins: list of WORLD/config/mcp.yaml, else all); the core's tools are always there",
    )
    .addOption(cacheOption())
    .addHelpText(
      "after",
      `
Tools are <plugin>_<method> (title <plugin>.<method>), after core_activate,
core_revert, core_log, core_stop, core_kill and cargo_build. Resources are the
world's files, sausage:///<path>. Logs go to stderr; stdout is the protocol.
Exit codes: 0 the client closed stdin (or SIGINT, SIGTERM); 1 the host it
served went away, or a failure; 2 bad arguments or config/mcp.yaml; 3 the
world cannot be run; 75 a plugin called core.exit.`,
    )
    .action(async (world: string | undefined, opts: { plugins?: string }, command: Command) => {
      done(await mcpMode(world, { plugins: opts.plugins, cacheDir: cacheDirOf(command) }));
    });

  program.command("ps")
    .description("list the processes of the host that runs WORLD (none when no host runs it)")
    .argument("<world>", "the world folder")
    .option("--json", "print the processes' info.json objects as a JSON array")
    .action(async (world: string, opts: { json?: boolean }) => {
      done(await listProcesses(world, opts.json ?? false));
    });

  program.command("log")
    .description(
      "print the journal of WORLD, from its host when one runs it, else from the file",
    )
    .argument("<world>", "the world folder")
    .option("-n, --lines <n>", "the most recent N entries", "20")
    .option("--plugin <name>", "only the entries of this plugin")
    .option("--pid <pid>", "only the entries of this process")
    .option("--grep <regex>", "only lines that match (RE2 syntax, linear time)")
    .option("--since <time>", "only entries at or after: ISO 8601, ms since 1970, or an entry ID")
    .option("--until <time>", "only entries before: like --since")
    .option("--format <format>", "text, json (an array) or ndjson (one JSON entry a line)")
    .option("--json", "the same as --format json (with -f: one JSON entry a line)")
    .option(
      "--all",
      "every matching entry, oldest first, not only the last N: with --since and --until, " +
        "a range to archive before retention prunes it",
    )
    .option("-f, --follow", "then print each new entry as it comes, until Ctrl-C (exit 0)")
    .action(async (world: string, opts: LogOptions) => {
      done(await printLog(world, opts));
    });

  for (const kind of ["stop", "kill"] as const) {
    program.command(kind)
      .description(
        kind === "stop"
          ? "stop a process of the host that runs WORLD (EOF, then a kill after 5 s)"
          : "kill a process of the host that runs WORLD at once",
      )
      .argument("<world>", "the world folder")
      .argument("<pid>", "the process ID, or the start of it")
      .action(async (world: string, pid: string) => {
        done(await signalProcess(world, kind, pid));
      });
  }

  program.command("test")
    .description(
      "run a cargo-built wasm32-wasip2 binary: each test in its own instance (set " +
        'CARGO_TARGET_WASM32_WASIP2_RUNNER="sausage test")',
    )
    .argument("<file>", "the .wasm cargo built")
    .argument("[args...]", "what cargo passes: test name filters, --ignored, --list, ...")
    .addOption(cacheOption())
    .passThroughOptions()
    .action(async (file: string, args: string[], _opts: unknown, command: Command) => {
      try {
        const { runTests } = await import("../core/cargo/test_run.ts");
        const cacheDir = resolveCacheDir(cacheDirOf(command));
        done(await runTests({ file: resolve(file), args, cacheDir }));
      } catch (e) {
        if (e instanceof Deno.errors.NotFound) fail(`no such file: ${file}`);
        fail((e as Error).message);
      }
    });

  program.command("run")
    .description(
      "run a wasi:cli/command component with Sausage's WASI, outside a world (like `wasmtime run`)",
    )
    .argument("<file>", "the component (.wasm)")
    .argument("[args...]", "arguments for the component")
    .option(
      "--dir <host::guest>",
      "give the component a host folder at a guest path (repeatable)",
      collect,
      [],
    )
    .option("--env <name=value>", "set an environment variable (repeatable)", collect, [])
    .addOption(cacheOption())
    .passThroughOptions()
    .action(
      async (
        file: string,
        args: string[],
        opts: { dir: string[]; env: string[] },
        command: Command,
      ) => {
        try {
          done(
            await runComponent({
              file: resolve(file),
              args,
              dirs: opts.dir,
              env: opts.env,
              cacheDir: resolveCacheDir(cacheDirOf(command)),
            }),
          );
        } catch (e) {
          if (e instanceof Deno.errors.NotFound) fail(`no such file: ${file}`);
          if (e instanceof ComponentError) fail(e.message);
          fail((e as Error).message);
        }
      },
    );

  registerOpsCommands(program, done); // --version, help, --log-format, doctor, cache, health
  return program;
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** Runs `sausage` with `args` and returns the exit code. */
export async function main(args: string[]): Promise<number> {
  let code: number = ExitCode.Ok;
  const program = buildProgram((c) => code = c);
  try {
    await program.parseAsync(args, { from: "user" });
  } catch (e) {
    if (e instanceof Exit) return e.code;
    if (e instanceof CommanderError) {
      // commander reports its own usage errors with exit code 1
      const shown = ["commander.helpDisplayed", "commander.help", "commander.version"];
      return shown.includes(e.code) ? ExitCode.Ok : ExitCode.Usage;
    }
    console.error(`${pc.red("sausage:")} ${(e as Error).stack ?? e}`);
    return ExitCode.Error;
  }
  return code;
}
