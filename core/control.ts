/**
 * The control endpoint of a running host (PROTOCOL section 12): how
 * `sausage call`, `ps`, `log`, `stop` and `kill` reach a world that a host
 * runs. It is a Unix socket, `state/core/control/socket`, in a folder that
 * only the world's owner can enter; where there is no Unix socket, a port on
 * loopback whose token is in that folder (`endpoint.json`). It speaks
 * JSON-RPC 2.0 lines: the
 * methods of the plugins and of the core, as the console calls them, plus a
 * few `host/…` methods for front ends (a `/` is never part of a plugin's
 * name, so they cannot collide).
 *
 * Each connection is one caller (parent `console`): what it calls is
 * stopped when it disconnects, and only what it called.
 *
 * @module
 */
import { join } from "node:path";
import { Buffer } from "node:buffer";
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import type { Host } from "./host.ts";
import { LocalHostView, ViewError } from "./host_view.ts";
import {
  classify,
  error,
  ErrorCode,
  type Id,
  idKey,
  type Message,
  notification,
  result,
  RpcError,
  tooDeep,
} from "./jsonrpc.ts";
import type { World } from "./world.ts";
import { jsonTextTooDeep } from "../runtime/json_depth.ts";
import { MAX_MESSAGE_BYTES } from "../runtime/messages.ts";
import { LineSplitter } from "../runtime/stdio.ts";
import { ConnWriter, readChunks } from "./conn_io.ts";
import {
  MAX_CAT_BYTES,
  MAX_SOCKET_PATH_BYTES,
  MAX_UNREAD_ANSWER_BYTES,
} from "../protocol/limits.ts";
export { MAX_CAT_BYTES, MAX_SOCKET_PATH_BYTES, MAX_UNREAD_ANSWER_BYTES };

/**
 * Connections open at once. One more closes the oldest connection that has
 * not sent a line yet, or is itself refused when every one has: either gets
 * an error line (-32000, `data.limit` `control_connections`) and is closed.
 * Each costs a file and a read buffer of 4 to 64 KiB; a front end opens one and
 * speaks at once.
 */
export const MAX_CONTROL_CONNECTIONS = 256;

/** Options of {@linkcode ControlEndpoint.listen}. */
export interface ControlOptions {
  /** Connections open at once (default {@linkcode MAX_CONTROL_CONNECTIONS}; tests lower it). */
  maxConnections?: number;
}

/** The folder of the endpoint in `state/core/`: mode 0700, so only the owner connects. */
export const CONTROL_FOLDER = "control";
/** The socket's name in that folder. */
export const SOCKET_NAME = "socket";
/** The file, in that folder, of an endpoint on loopback TCP: {@linkcode TcpEndpointFile}. */
export const TCP_ENDPOINT_NAME = "endpoint.json";
/** The environment variable that puts the endpoint on loopback TCP even where Unix sockets work. */
export const TRANSPORT_ENV = "SAUSAGE_CONTROL_TRANSPORT";
/** How long a connection on TCP has to send `host/hello` with the token. */
export const HELLO_TIMEOUT_MS = 5_000;

/** What `endpoint.json` holds (mode 0600): where the host listens, and the token it wants. */
export interface TcpEndpointFile {
  transport: "tcp";
  hostname: "127.0.0.1";
  port: number;
  /**
   * 32 random bytes, hex: the first message of a connection is `host/hello`
   * with `{"nonce", "proof"}` ({@linkcode helloProof}) or `{"token"}`.
   */
  token: string;
  /** The host's OS process. */
  pid: number;
}

/** The folder, the socket and the TCP endpoint's file of a world's endpoint. */
export function controlPaths(world: Pick<World, "coreStateDir">): {
  folder: string;
  socket: string;
  tcpFile: string;
} {
  const folder = join(world.coreStateDir, CONTROL_FOLDER);
  return { folder, socket: join(folder, SOCKET_NAME), tcpFile: join(folder, TCP_ENDPOINT_NAME) };
}

/**
 * Removes the socket (or the TCP endpoint's file) a killed host left behind.
 * Only a host that holds the world's lock calls it: no other host can be
 * listening on it then.
 */
export async function removeStaleSocket(world: Pick<World, "coreStateDir">): Promise<void> {
  const { socket, tcpFile } = controlPaths(world);
  for (const path of [socket, tcpFile]) {
    await Deno.remove(path).catch((e) => {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    });
  }
}

/** Owner-only modes are set where the platform has them (not on Windows). */
async function chmodOwnerOnly(path: string, mode: number): Promise<void> {
  if (Deno.build.os !== "windows") await Deno.chmod(path, mode);
}

/** The endpoint of one host. */
export class ControlEndpoint {
  readonly #host: Host;
  readonly #listener: Deno.Listener;
  /** The socket, or the TCP endpoint's file: removed at the end. */
  readonly #path: string;
  /** On TCP, what `host/hello` must bring; null on a Unix socket (its mode is the check). */
  readonly #token: string | null;
  readonly #connections = new Set<Connection>();
  readonly #accepting: Promise<void>;
  readonly started = new Date();
  readonly #max: number;
  #closed = false;
  /**
   * Connections refused, or closed to make room, since the start because
   * {@linkcode MAX_CONTROL_CONNECTIONS} were open.
   */
  refused = 0;

  private constructor(
    host: Host,
    listener: Deno.Listener,
    path: string,
    token: string | null,
    options: ControlOptions,
  ) {
    this.#max = options.maxConnections ?? MAX_CONTROL_CONNECTIONS;
    this.#host = host;
    this.#listener = listener;
    this.#path = path;
    this.#token = token;
    this.#accepting = this.#accept();
  }

  /** `unix`, or `tcp` (loopback, with a token). */
  get transport(): "unix" | "tcp" {
    return this.#token === null ? "unix" : "tcp";
  }

  /**
   * Listens on the world's socket, replacing a stale one; gives `null` (and
   * journals why) when the platform or the path's length does not allow it.
   *
   * @example
   * ```ts
   * import type { Host } from "./host.ts";
   * declare const host: Host; // a started host
   * const endpoint = await ControlEndpoint.listen(host);
   * // … `sausage call WORLD notes.add '{"text": "milk"}'` goes through it
   * await endpoint?.close();
   * ```
   */
  static async listen(host: Host, options: ControlOptions = {}): Promise<ControlEndpoint | null> {
    const { folder, socket, tcpFile } = controlPaths(host.world);
    const say = (text: string) => {
      host.journal.event(null, null, text);
      host.note(text);
    };
    await Deno.mkdir(folder, { recursive: true, mode: 0o700 });
    await chmodOwnerOnly(folder, 0o700); // also when it existed with another mode
    await removeStaleSocket(host.world);
    const why = unixUnavailable(socket);
    if (why === null) {
      try {
        const listener = Deno.listen({ transport: "unix", path: socket });
        await chmodOwnerOnly(socket, 0o600);
        host.journal.event(null, null, `control endpoint: listening on ${socket}`);
        return new ControlEndpoint(host, listener, socket, null, options);
      } catch (e) {
        return await ControlEndpoint.#listenTcp(
          host,
          tcpFile,
          `cannot listen on ${socket}: ${(e as Error).message}`,
          say,
          options,
        );
      }
    }
    return await ControlEndpoint.#listenTcp(host, tcpFile, why, say, options);
  }

  /** The fallback: a port on loopback, its token in `endpoint.json` that only the owner reads. */
  static async #listenTcp(
    host: Host,
    tcpFile: string,
    why: string,
    say: (text: string) => void,
    options: ControlOptions,
  ): Promise<ControlEndpoint | null> {
    let listener: Deno.TcpListener;
    try {
      listener = Deno.listen({ transport: "tcp", hostname: "127.0.0.1", port: 0 });
    } catch (e) {
      say(
        `the control endpoint is off: ${why}, and loopback TCP failed too ` +
          `(${
            (e as Error).message
          }); \`sausage call\` and \`sausage attach\` cannot reach this host`,
      );
      return null;
    }
    const token = randomBytes(32).toString("hex");
    const file: TcpEndpointFile = {
      transport: "tcp",
      hostname: "127.0.0.1",
      port: listener.addr.port,
      token,
      pid: Deno.pid,
    };
    // written whole under another name, then renamed: a front end never reads half a token
    const partial = `${tcpFile}.${Deno.pid}.partial`;
    await Deno.writeTextFile(partial, JSON.stringify(file) + "\n", { mode: 0o600 });
    await chmodOwnerOnly(partial, 0o600);
    await Deno.rename(partial, tcpFile);
    host.journal.event(
      null,
      null,
      `control endpoint: listening on 127.0.0.1:${file.port} (${why}); its token is in ${tcpFile}`,
    );
    return new ControlEndpoint(host, listener, tcpFile, token, options);
  }
  /** How many connections are open. */
  get connections(): number {
    return this.#connections.size;
  }

  /** Stops listening, closes every connection (stopping its calls) and removes the socket. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#listener.close();
    await this.#accepting;
    await Promise.all([...this.#connections].map((c) => c.close()));
    await Deno.remove(this.#path).catch(() => {});
  }

  async #accept(): Promise<void> {
    let failing = false;
    while (!this.#closed) {
      let conn: Deno.Conn;
      try {
        conn = await this.#listener.accept();
      } catch (e) {
        if (this.#closed || e instanceof Deno.errors.BadResource) return;
        // out of files (EMFILE) or a connection reset before it was taken: the endpoint stays
        if (!failing) {
          this.#host.journal.event(null, null, `control endpoint: accept failed: ${e}`);
        }
        failing = true;
        await new Promise((r) => setTimeout(r, 100));
        continue;
      }
      failing = false;
      if (this.#connections.size >= this.#max) {
        // the oldest connection that never said a thing makes room; one that did is never cut
        let silent: Connection | undefined;
        for (const c of this.#connections) {
          if (!c.spoke && (!silent || c.opened < silent.opened)) silent = c;
        }
        if (!silent) {
          this.#refuse(conn);
          continue;
        }
        this.#connections.delete(silent);
        this.#count();
        silent.shed(this.#fullError());
      }
      const connection = new Connection(this.#host, conn, this.started, this.#token);
      this.#connections.add(connection);
      connection.closed.then(() => this.#connections.delete(connection));
    }
  }

  /** One connection past the bound: an error line that says why, then the end. */
  #refuse(conn: Deno.Conn): void {
    this.#count();
    const line = JSON.stringify(this.#fullError()) + "\n";
    new ConnWriter(conn).write(encoder.encode(line)).catch(() => {}).finally(() => {
      try {
        conn.close();
      } catch {
        // gone already
      }
    });
  }

  /** Counts a connection refused or closed for room, journaling the first and every 1,000th. */
  #count(): void {
    this.refused++;
    if (this.refused === 1 || this.refused % 1000 === 0) {
      this.#host.journal.event(
        null,
        null,
        `control endpoint: ${this.#max} connections are open; ${this.refused} refused or closed ` +
          "for room in all",
      );
    }
  }

  #fullError(): Message {
    return error(null, {
      code: ErrorCode.ServerError,
      message: `the control endpoint has ${this.#max} connections open, the most it keeps: ` +
        "close one (an idle `sausage attach`?) or try again",
      data: { limit: "control_connections", max: this.#max },
    });
  }
}

/** Why the endpoint cannot be a Unix socket here, or null when it can. */
function unixUnavailable(socket: string): string | null {
  if (Deno.env.get(TRANSPORT_ENV) === "tcp") return `${TRANSPORT_ENV}=tcp`;
  if (Deno.build.os === "windows") return "Unix sockets are not supported here";
  if (new TextEncoder().encode(socket).length > MAX_SOCKET_PATH_BYTES) {
    return `the socket's path ${socket} is longer than a Unix socket allows ` +
      `(${MAX_SOCKET_PATH_BYTES} bytes)`;
  }
  return null;
}

/**
 * What `host/hello` exchanges instead of the token: HMAC-SHA-256 of
 * `<side>:<nonce>` keyed by the token, in hex. The client proves it knows
 * the token without sending it, and the host proves it back.
 *
 * @example
 * ```ts
 * helloProof("a1b2", "client", "nonce"); // 64 hex digits
 * ```
 */
export function helloProof(token: string, side: "client" | "host", nonce: string): string {
  return createHmac("sha256", token).update(`${side}:${nonce}`).digest("hex");
}

/** Compares tokens in a time that does not depend on where they differ. */
function sameToken(given: unknown, expected: string): boolean {
  if (typeof given !== "string") return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

/** The `host/…` methods, for the message of an unknown one. */
const HOST_METHODS = [
  "host/hello",
  "host/info",
  "host/processes",
  "host/cancel",
  "host/plugins",
  "host/ls",
  "host/cat",
  "host/names",
  "host/version",
  "host/discover",
  "host/follow",
  "host/unfollow",
];

/** One front end on the socket: one caller, served by its own {@linkcode LocalHostView}. */
class Connection {
  readonly #host: Host;
  readonly #conn: Deno.Conn;
  /** Made at the first line: a connection that never speaks (a flood of them) costs no view. */
  #viewMade: LocalHostView | undefined;
  readonly #started: Date;
  readonly #writer: ConnWriter;
  /** The connection's request IDs in flight → the IDs its view sent them with. */
  readonly #calls = new Map<string, Id | undefined>();
  readonly closed: Promise<void>;
  /** When it was accepted (`performance.now()`). */
  readonly opened = performance.now();
  /** Whether a line came from it: a connection that spoke is never closed for room. */
  spoke = false;
  #unread = 0;
  #closing = false;
  #following: { close(): void } | undefined;
  /** On TCP, the token that `host/hello` must bring first; null once it did (or on a socket). */
  #token: string | null;
  #helloTimer: ReturnType<typeof setTimeout> | undefined;
  #unwatchNotes: (() => void) | undefined;

  constructor(host: Host, conn: Deno.Conn, started: Date, token: string | null) {
    this.#host = host;
    this.#conn = conn;
    this.#token = token;
    this.#started = started;
    this.#writer = new ConnWriter(conn);
    if (token === null) this.#welcome();
    else this.#helloTimer = setTimeout(() => this.close(), HELLO_TIMEOUT_MS);
    this.closed = this.#read().finally(() => this.close());
  }

  /** The connection's own view of the host, one caller. */
  get #view(): LocalHostView {
    if (!this.#viewMade) {
      this.#viewMade = new LocalHostView(this.#host, this.#started);
      this.#viewMade.onNotification = (message) => this.#send(message);
    }
    return this.#viewMade;
  }

  /** From here on the connection is a front end: it gets the host's notes too. */
  #welcome(): void {
    this.#token = null;
    clearTimeout(this.#helloTimer);
    this.#unwatchNotes = this.#host.watchNotes((text) =>
      this.#send(notification("host/note", { text }))
    );
  }

  /** Closes the connection and stops what it called. */
  async close(): Promise<void> {
    if (this.#closing) return;
    this.#closing = true;
    clearTimeout(this.#helloTimer);
    this.#unwatchNotes?.();
    await this.#writer.flushed();
    try {
      this.#conn.close();
    } catch {
      // closed by the other side already
    }
    await this.#viewMade?.close("its caller disconnected from the control endpoint");
  }

  async #read(): Promise<void> {
    const splitter = new LineSplitter(
      MAX_MESSAGE_BYTES,
      (line) => this.#receive(line),
      () =>
        this.#send(error(null, {
          code: ErrorCode.InvalidRequest,
          message: `a line longer than ${MAX_MESSAGE_BYTES} bytes was discarded`,
        })),
    );
    await readChunks(this.#conn, (chunk) => splitter.push(chunk));
  }

  /** Sends `message` (the reason) and closes the connection. */
  shed(message: Message): void {
    this.#send(message);
    this.close();
  }

  #receive(bytes: Uint8Array): void {
    if (this.#closing) return; // lines that came in the same chunk as the one that closed it
    this.spoke = true;
    let text: string;
    try {
      text = decoder.decode(bytes).trim();
    } catch {
      this.#send(error(null, { code: ErrorCode.ParseError, message: "the line is not UTF-8" }));
      return;
    }
    if (text === "") return;
    if (jsonTextTooDeep(text)) {
      this.#send(error(null, tooDeep(null).error));
      return;
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (e) {
      this.#send(error(null, {
        code: ErrorCode.ParseError,
        message: `the line is not JSON: ${(e as Error).message}`,
      }));
      return;
    }
    const message = classify(value);
    if (this.#token !== null) {
      // on TCP, anyone on this machine can connect: nothing is served before the token
      const params = message.kind === "request" ? message.params : {};
      if (message.kind === "request" && message.method === "host/hello") {
        const token = this.#token;
        const nonce = typeof params.nonce === "string" ? params.nonce : undefined;
        // the token itself, or a proof of it that does not give it to whoever listens
        const knows = sameToken(params.token, token) ||
          (nonce !== undefined && sameToken(params.proof, helloProof(token, "client", nonce)));
        if (knows) {
          this.#welcome();
          // and the host proves it too: a stale endpoint.json's port may be someone else's
          this.#send(
            result(
              message.id,
              nonce === undefined ? {} : { proof: helloProof(token, "host", nonce) },
            ),
          );
          return;
        }
      }
      const id = message.kind === "request" ? message.id : null;
      this.#send(error(id, {
        code: ErrorCode.InvalidRequest,
        message: "this endpoint is on loopback TCP: the first message must be " +
          '`host/hello {"token"}` with the token of state/core/control/endpoint.json',
      }));
      this.#host.journal.event(
        null,
        null,
        "control endpoint: refused a connection without the token",
      );
      this.close();
      return;
    }
    switch (message.kind) {
      case "invalid":
        if (message.id !== undefined) this.#send(error(message.id, message.error));
        return;
      case "response":
        this.#send(error(null, {
          code: ErrorCode.InvalidRequest,
          message: "the control endpoint takes requests and notifications, not responses",
        }));
        return;
      case "notification":
        if (!message.method.startsWith("host/")) {
          this.#view.request(message.method, message.params); // no id: its answer is dropped
        }
        return;
      case "request":
        this.#request(message.id, message.method, message.params);
    }
  }

  #request(id: Id, method: string, params: Record<string, unknown>): void {
    const key = idKey(id);
    if (this.#calls.has(key)) {
      this.#send(error(id, {
        code: ErrorCode.InvalidRequest,
        message: `the id ${key} is already used by a call of this connection that has not ended`,
      }));
      return;
    }
    this.#calls.set(key, undefined);
    const answer = method.startsWith("host/")
      ? this.#hostMethod(method, params).then((value) => result(id, value), (e) =>
        error(
          id,
          e instanceof RpcError ? e : new RpcError(
            ErrorCode.InvalidParams,
            (e as Error).message,
            // a path's filesystem code, so a front end tells "no such file" apart by it
            e instanceof ViewError && e.code !== undefined ? { code: e.code } : undefined,
          ),
        ))
      : this.#view.request(method, params, {
        onId: (sent) => this.#calls.set(key, sent),
        onNotify: (name, p) =>
          this.#send(notification("core.notify", { call: id, name, params: p ?? {} })),
      }).then((response) => ({ ...response, id }));
    answer.then((response) => {
      this.#calls.delete(key);
      this.#send(response);
    });
  }

  async #hostMethod(method: string, params: Record<string, unknown>): Promise<unknown> {
    const view = this.#view;
    const text = (name: string) => {
      const value = params[name];
      if (typeof value !== "string") {
        throw new RpcError(ErrorCode.InvalidParams, `${method} needs "${name}", a string`);
      }
      return value;
    };
    switch (method) {
      case "host/hello":
        return {};
      case "host/info":
        return view.info;
      case "host/processes":
        return await view.processes();
      case "host/plugins":
        return await view.plugins();
      case "host/cancel": {
        const key = idKey(params.id as Id);
        if (!this.#calls.has(key)) {
          throw new RpcError(
            ErrorCode.InvalidParams,
            `host/cancel: no call of this connection has the id ${key}`,
          );
        }
        const sent = this.#calls.get(key);
        return { stopped: sent === undefined ? null : await view.cancel(sent) };
      }
      case "host/ls":
        return await view.list(text("path"));
      case "host/cat": {
        const limit = params.limit === undefined ? undefined : Number(params.limit);
        if (limit !== undefined && !(Number.isSafeInteger(limit) && limit >= 0)) {
          throw new RpcError(ErrorCode.InvalidParams, "host/cat: limit must be a byte count");
        }
        const file = await view.read(text("path"), Math.min(limit ?? Infinity, MAX_CAT_BYTES));
        return {
          path: file.path,
          size: file.size,
          base64: Buffer.from(file.bytes).toString("base64"),
        };
      }
      case "host/names":
        return await view.names(text("folder"));
      case "host/version":
        return await view.version(text("plugin"));
      case "host/discover":
        await view.discover(text("plugin"));
        return null;
      case "host/follow":
        // each entry from now on, as `host/entry {entry}`, until host/unfollow or the end
        this.#following ??= await view.follow((entry) =>
          this.#send(
            notification("host/entry", { entry: entry as unknown as Record<string, unknown> }),
          )
        );
        return {};
      case "host/unfollow":
        this.#following?.close();
        this.#following = undefined;
        return {};
      default:
        throw new RpcError(
          ErrorCode.MethodNotFound,
          `the control endpoint has no method ${method} (it has ${HOST_METHODS.join(", ")}, ` +
            "and the methods of the plugins and of the core)",
        );
    }
  }

  /** Queues a message; a connection that stops reading its answers is closed. */
  #send(message: Message): void {
    if (this.#closing) return;
    const bytes = encoder.encode(JSON.stringify(message) + "\n");
    this.#unread += bytes.length;
    if (this.#unread > MAX_UNREAD_ANSWER_BYTES) {
      this.#host.journal.event(
        null,
        null,
        `control endpoint: closed a connection that left ${this.#unread} bytes of answers unread`,
      );
      this.close();
      return;
    }
    this.#writer.write(bytes).then(
      () => this.#unread -= bytes.length,
      () => this.close(),
    );
  }
}
