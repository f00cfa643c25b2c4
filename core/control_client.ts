/**
 * A front end's side of the control endpoint (`control.ts`, PROTOCOL
 * section 12): connects to the host that runs a world, sends calls and gets
 * their answers and notifications.
 *
 * @module
 */
import { join } from "node:path";
import { Buffer } from "node:buffer";
import {
  CONTROL_FOLDER,
  HELLO_TIMEOUT_MS,
  helloProof,
  SOCKET_NAME,
  TCP_ENDPOINT_NAME,
  type TcpEndpointFile,
} from "./control.ts";
import {
  type HostInfo,
  type HostView,
  type ProcessInfo,
  type ViewEnd,
  ViewError,
  type ViewRequestOptions,
} from "./host_view.ts";
import { ConnWriter, readChunks } from "./conn_io.ts";
import { ErrorCode, type Id, idKey, type Request, type Response } from "./jsonrpc.ts";
import type { Entry } from "./journal.ts";
import type { FileContent, Listing } from "./view_files.ts";

/** The endpoint exists but must not be used; the message says why and what to do. */
export class ControlError extends Error {
  override name = "ControlError";
}

interface Pending {
  resolve: (response: Response) => void;
  onNotify?: (name: string, params: unknown) => void;
}

const encoder = new TextEncoder();

/** A connection to the host that runs a world: the {@linkcode HostView} over the socket. */
export class ControlClient implements HostView {
  readonly #conn: Deno.Conn;
  readonly #writer: ConnWriter;
  readonly #pending = new Map<string, Pending>();
  #nextId = 1;
  #closed = false;
  /** Resolves when the host closed the connection (or {@linkcode close} did). */
  readonly closed: Promise<void>;
  /** Notifications that belong to no call. */
  onNotification?: (message: Request) => void;
  /** The host's notes (service failures, journal trouble), as `host/note {"text"}`. */
  onNote?: (text: string) => void;
  readonly #followers = new Set<(entry: Entry) => void>();
  /** Set by {@linkcode connect} from `host/info`. */
  info: HostInfo = { world: "", pid: 0, started: "", coreMethods: [] };
  /** The services were started before the endpoint listened. */
  readonly ready: Promise<void> = Promise.resolve();
  readonly ended: Promise<ViewEnd>;

  private constructor(conn: Deno.Conn) {
    this.#conn = conn;
    this.#writer = new ConnWriter(conn);
    this.closed = this.#read().finally(() => this.#ended());
    this.ended = this.closed.then(() => ({
      code: 1,
      why: "the host closed the connection: it stopped or was killed",
    }));
  }

  /**
   * Connects to the host that runs the world at `root`; `null` when no host
   * listens there (none runs it, or the one that did was killed). Throws a
   * {@linkcode ControlError} when the endpoint's folder could be reached by
   * other users: someone else may have made it.
   *
   * @example
   * ```ts
   * const host = await ControlClient.connect("/srv/world");
   * if (host) console.log(await host.request("notes.list"));
   * ```
   */
  static async connect(root: string): Promise<ControlClient | null> {
    const folder = join(root, "state", "core", CONTROL_FOLDER);
    let info: Deno.FileInfo;
    try {
      info = await Deno.lstat(folder);
    } catch (e) {
      if (e instanceof Deno.errors.NotFound) return null;
      throw e;
    }
    const uid = Deno.uid();
    if (!info.isDirectory) {
      throw new ControlError(`${folder} is not a folder: remove it, and start the host again`);
    }
    if (uid !== null && info.uid !== null && info.uid !== uid) {
      throw new ControlError(
        `${folder} belongs to the user ${info.uid}, not to you (${uid}): refusing to connect ` +
          "to a host another user runs",
      );
    }
    if (info.mode !== null && (info.mode & 0o077) !== 0) {
      throw new ControlError(
        `${folder} can be entered by other users (mode ${(info.mode & 0o777).toString(8)}); ` +
          "a host makes it 0700, so refusing to connect: remove the folder and start the host again",
      );
    }
    const tcp = await readTcpEndpoint(join(folder, TCP_ENDPOINT_NAME), uid);
    let conn: Deno.Conn;
    try {
      conn = tcp
        ? await Deno.connect({ transport: "tcp", hostname: tcp.hostname, port: tcp.port })
        : await connectUnix(join(folder, SOCKET_NAME));
    } catch (e) {
      // no socket, or a socket or port nobody listens on: the host that made it is gone
      if (e instanceof Deno.errors.NotFound || e instanceof Deno.errors.ConnectionRefused) {
        return null;
      }
      throw e;
    }
    const client = new ControlClient(conn);
    if (tcp) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      // the token never goes to the port: whoever listens there must prove it knows it too
      const nonce = crypto.randomUUID();
      const hello = await Promise.race([
        client.request("host/hello", { nonce, proof: helloProof(tcp.token, "client", nonce) }),
        new Promise<null>((resolve) => timer = setTimeout(() => resolve(null), HELLO_TIMEOUT_MS)),
      ]).finally(() => clearTimeout(timer));
      if (hello === null || hello.error) {
        await client.close();
        throw new ControlError(
          `127.0.0.1:${tcp.port}, the port of ${join(folder, TCP_ENDPOINT_NAME)}, ` +
            (hello === null
              ? `did not answer within ${HELLO_TIMEOUT_MS / 1000} s`
              : `refused its token: ${hello.error!.message}`) +
            "; if no host runs the world, remove that file",
        );
      }
      const proof = (hello.result as { proof?: unknown } | undefined)?.proof;
      if (proof !== helloProof(tcp.token, "host", nonce)) {
        await client.close();
        throw new ControlError(
          `127.0.0.1:${tcp.port}, the port of ${join(folder, TCP_ENDPOINT_NAME)}, is not the ` +
            "host that wrote that file (it cannot prove it knows its token): the host was killed " +
            "and another program has its port; remove the file, and start the host again",
        );
      }
    }
    const answer = await client.request("host/info");
    if (answer.error) {
      await client.close();
      throw new ControlError(`the host did not say what it runs: ${answer.error.message}`);
    }
    client.info = answer.result as HostInfo;
    return client;
  }

  /**
   * Sends a request; resolves with its response. When the connection closes
   * first, the response is a -32000 error that says the host went away.
   */
  request(
    method: string,
    params: Record<string, unknown> = {},
    options: ViewRequestOptions = {},
  ): Promise<Response> {
    const id = this.#nextId++;
    options.onId?.(id);
    const { promise, resolve } = Promise.withResolvers<Response>();
    if (this.#closed) {
      resolve(hostGone(id));
      return promise;
    }
    this.#pending.set(idKey(id), { resolve, onNotify: options.onNotify });
    this.#write({ jsonrpc: "2.0", id, method, params });
    return promise;
  }

  /** Stops the process a call started (its answer then comes as usual); gives its ID or null. */
  async cancel(id: Id): Promise<string | null> {
    const r = await this.#host("host/cancel", { id }) as { stopped: string | null };
    return r.stopped;
  }

  async processes(): Promise<ProcessInfo[]> {
    return await this.#host("host/processes") as ProcessInfo[];
  }

  async plugins(): Promise<string[]> {
    return await this.#host("host/plugins") as string[];
  }

  async list(path: string): Promise<Listing> {
    return await this.#host("host/ls", { path }) as Listing;
  }

  async read(path: string, limit?: number): Promise<FileContent> {
    const r = await this.#host("host/cat", limit === undefined ? { path } : { path, limit }) as {
      path: string;
      size: number;
      base64: string;
    };
    return { path: r.path, size: r.size, bytes: new Uint8Array(Buffer.from(r.base64, "base64")) };
  }

  async names(folder: string): Promise<string[]> {
    return await this.#host("host/names", { folder }) as string[];
  }

  async version(plugin: string): Promise<string | null> {
    return await this.#host("host/version", { plugin }) as string | null;
  }

  async discover(plugin: string): Promise<void> {
    await this.#host("host/discover", { plugin });
  }

  async follow(onEntry: (entry: Entry) => void): Promise<{ close(): void }> {
    this.#followers.add(onEntry);
    if (this.#followers.size === 1) await this.#host("host/follow");
    return {
      close: () => {
        if (!this.#followers.delete(onEntry) || this.#followers.size > 0) return;
        this.request("host/unfollow").catch(() => {});
      },
    };
  }

  /** A `host/…` method's result; its error as a {@linkcode ViewError}. */
  async #host(method: string, params: Record<string, unknown> = {}): Promise<unknown> {
    const response = await this.request(method, params);
    if (response.error) {
      const data = response.error.data as { code?: unknown } | undefined;
      throw new ViewError(
        response.error.message,
        typeof data?.code === "string" ? data.code : undefined,
      );
    }
    return response.result;
  }

  /** Closes the connection: the host stops what this connection called. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#writer.flushed();
    try {
      this.#conn.close();
    } catch {
      // closed already
    }
    await this.closed;
  }

  #write(message: unknown): void {
    this.#writer.write(encoder.encode(JSON.stringify(message) + "\n")).catch(() => {});
  }

  async #read(): Promise<void> {
    let buffer = "";
    const decoder = new TextDecoder();
    await readChunks(this.#conn, (chunk) => {
      buffer += decoder.decode(chunk, { stream: true });
      let nl: number;
      while ((nl = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        if (line.trim() !== "") this.#receive(JSON.parse(line));
      }
    });
  }

  #receive(message: Record<string, unknown>): void {
    if (message.method === "host/note") {
      const text = (message.params as { text?: unknown } | undefined)?.text;
      if (typeof text === "string") this.onNote?.(text);
      return;
    }
    if (message.method === "host/entry") {
      const entry = (message.params as { entry?: Entry } | undefined)?.entry;
      if (entry) { for (const f of this.#followers) f(entry); }
      return;
    }
    if (typeof message.method === "string") {
      const p = message.params as { call?: Id; name?: string; params?: unknown } | undefined;
      const pending = p?.call !== undefined ? this.#pending.get(idKey(p.call)) : undefined;
      if (message.method === "core.notify" && pending) {
        pending.onNotify?.(String(p!.name), p!.params);
      } else {
        this.onNotification?.(message as unknown as Request);
      }
      return;
    }
    const key = idKey(message.id as Id);
    const pending = this.#pending.get(key);
    if (!pending) return;
    this.#pending.delete(key);
    pending.resolve(message as unknown as Response);
  }

  #ended(): void {
    this.#closed = true;
    for (const [key, pending] of this.#pending) pending.resolve(hostGone(JSON.parse(key)));
    this.#pending.clear();
  }
}

/**
 * The endpoint on loopback TCP, when `endpoint.json` is there; refuses one
 * that others could read (its token would no longer be a secret) or that
 * another user wrote.
 */
async function readTcpEndpoint(path: string, uid: number | null): Promise<TcpEndpointFile | null> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.lstat(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
  if (uid !== null && info.uid !== null && info.uid !== uid) {
    throw new ControlError(
      `${path} belongs to the user ${info.uid}, not to you (${uid}): refusing to connect`,
    );
  }
  if (info.mode !== null && (info.mode & 0o077) !== 0) {
    throw new ControlError(
      `${path} can be read by other users (mode ${(info.mode & 0o777).toString(8)}); ` +
        "a host makes it 0600, so refusing to use its token: remove it and start the host again",
    );
  }
  let file: Partial<TcpEndpointFile>;
  try {
    file = JSON.parse(await Deno.readTextFile(path));
  } catch (e) {
    throw new ControlError(
      `${path} is not an endpoint's file (${(e as Error).message}): remove it`,
    );
  }
  if (
    file.transport !== "tcp" || file.hostname !== "127.0.0.1" ||
    !Number.isInteger(file.port) || typeof file.token !== "string"
  ) {
    throw new ControlError(`${path} does not name a port on 127.0.0.1 and a token: remove it`);
  }
  return file as TcpEndpointFile;
}

function hostGone(id: Id): Response {
  return {
    jsonrpc: "2.0",
    id,
    error: {
      code: ErrorCode.ServerError,
      message: "the host closed the control connection before answering: it stopped or was killed",
    },
  };
}

/** How long a connect waits for room in a full queue of the endpoint's socket, in ms. */
export const CONNECT_PATIENCE_MS = 5000;

/**
 * Connects to a Unix socket, trying again while its queue of connections
 * not yet accepted is full (`EAGAIN`: a host busy accepting a flood of them).
 *
 * @example
 * ```ts
 * const conn = await connectUnix("/world/state/core/control/socket");
 * conn.close();
 * ```
 */
export async function connectUnix(path: string): Promise<Deno.UnixConn> {
  const until = performance.now() + CONNECT_PATIENCE_MS;
  for (let wait = 10;; wait = Math.min(wait * 2, 200)) {
    try {
      return await Deno.connect({ transport: "unix", path });
    } catch (e) {
      if (!(e instanceof Deno.errors.WouldBlock) || performance.now() > until) throw e;
      await new Promise((r) => setTimeout(r, wait));
    }
  }
}
