/**
 * A front end's side of the control endpoint (`control.ts`, PROTOCOL
 * section 12): connects to the host that runs a world, sends calls and gets
 * their answers and notifications.
 *
 * @module
 */
import { join } from "node:path";
import { CONTROL_FOLDER, type HostInfo, SOCKET_NAME } from "./control.ts";
import { ErrorCode, type Id, idKey, type Request, type Response } from "./jsonrpc.ts";

/** The endpoint exists but must not be used; the message says why and what to do. */
export class ControlError extends Error {
  override name = "ControlError";
}

/** Options of one call through the endpoint. */
export interface ControlRequestOptions {
  /** Gets the `core.notify` notifications of this call. */
  onNotify?: (name: string, params: unknown) => void;
}

interface Pending {
  resolve: (response: Response) => void;
  onNotify?: (name: string, params: unknown) => void;
}

const encoder = new TextEncoder();

/** A connection to the host that runs a world. */
export class ControlClient {
  readonly #conn: Deno.Conn;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly #pending = new Map<string, Pending>();
  #nextId = 1;
  #closed = false;
  /** Resolves when the host closed the connection (or {@linkcode close} did). */
  readonly closed: Promise<void>;
  /** Notifications that belong to no call. */
  onNotification?: (message: Request) => void;

  private constructor(conn: Deno.Conn) {
    this.#conn = conn;
    this.#writer = conn.writable.getWriter();
    this.closed = this.#read().finally(() => this.#ended());
  }

  /**
   * Connects to the host that runs the world at `root`; `null` when no host
   * listens there (none runs it, or the one that did was killed). Throws a
   * {@linkcode ControlError} when the endpoint's folder could be reached by
   * other users: someone else may have made it.
   *
   * @example
   * ```ts ignore
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
    let conn: Deno.Conn;
    try {
      conn = await Deno.connect({ transport: "unix", path: join(folder, SOCKET_NAME) });
    } catch (e) {
      // no socket, or a socket nobody listens on: the host that made it is gone
      if (e instanceof Deno.errors.NotFound || e instanceof Deno.errors.ConnectionRefused) {
        return null;
      }
      throw e;
    }
    return new ControlClient(conn);
  }

  /** The host's world, process ID and start. */
  async info(): Promise<HostInfo> {
    const response = await this.request("host/info");
    if (response.error) throw new ControlError(response.error.message);
    return response.result as HostInfo;
  }

  /**
   * Sends a request; resolves with its response. When the connection closes
   * first, the response is a -32000 error that says the host went away.
   */
  request(
    method: string,
    params: Record<string, unknown> = {},
    options: ControlRequestOptions & { onId?: (id: Id) => void } = {},
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

  /** Stops the process a call started (its answer then comes as usual). */
  async cancel(id: Id): Promise<void> {
    await this.request("host/cancel", { id });
  }

  /** Closes the connection: the host stops what this connection called. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#writer.close().catch(() => {});
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
    try {
      for await (const chunk of this.#conn.readable) {
        buffer += decoder.decode(chunk, { stream: true });
        let nl: number;
        while ((nl = buffer.indexOf("\n")) >= 0) {
          const line = buffer.slice(0, nl);
          buffer = buffer.slice(nl + 1);
          if (line.trim() !== "") this.#receive(JSON.parse(line));
        }
      }
    } catch {
      // the host went away
    }
  }

  #receive(message: Record<string, unknown>): void {
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
