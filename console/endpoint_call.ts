/**
 * `call <endpoint file> <method> [params]`: the console as a client of a
 * process's endpoint (PROTOCOL section 5). It reads the endpoint file as a
 * process sees it, connects to the address, checks with `rpc.endpoint` that
 * the file is not stale, and makes one call.
 *
 * @module
 */
import type { HostView } from "../core/host_view.ts";
import type { Response } from "../core/jsonrpc.ts";
import { ConnWriter, readChunks } from "../core/conn_io.ts";

/** The longest wait for an answer of the endpoint. */
export const ENDPOINT_TIMEOUT_MS = 30_000;

/** An endpoint file that cannot be used, or an endpoint that did not answer; the message says why. */
export class EndpointError extends Error {
  override name = "EndpointError";
}

/** What an endpoint file says: `tcp:<host>:<port> <owner> <interface>`. */
export interface EndpointAddress {
  hostname: string;
  port: number;
  owner: string;
  interface: string;
}

/**
 * The address in the first line of an endpoint file; throws an
 * {@linkcode EndpointError} for another text.
 *
 * @example
 * ```ts
 * parseEndpointFile("tcp:127.0.0.1:41234 www-0197 control\n", "/proc/www-0197/control");
 * // { hostname: "127.0.0.1", port: 41234, owner: "www-0197", interface: "control" }
 * ```
 */
export function parseEndpointFile(text: string, path: string): EndpointAddress {
  const m = /^tcp:(127\.0\.0\.1):(\d{1,5}) (\S+) (\S+)$/.exec(text.split("\n")[0].trim());
  if (!m || Number(m[2]) > 65535) {
    throw new EndpointError(
      `${path} is not an endpoint file: it should be one line like ` +
        "`tcp:127.0.0.1:41234 www-0197… control` (PROTOCOL section 5)",
    );
  }
  return { hostname: m[1], port: Number(m[2]), owner: m[3], interface: m[4] };
}

/**
 * Calls `method` of the endpoint that the file `path` names; the answer is
 * the endpoint's response (a result or an error object).
 *
 * @example
 * ```ts
 * import type { HostView } from "../core/host_view.ts";
 * declare const view: HostView;
 * const answer = await callEndpoint(view, "/run/secrets", "names", {});
 * ```
 */
export async function callEndpoint(
  view: HostView,
  path: string,
  method: string,
  params: Record<string, unknown>,
  timeoutMs = ENDPOINT_TIMEOUT_MS,
): Promise<Response> {
  const file = await view.read(path, 4096);
  const address = parseEndpointFile(new TextDecoder().decode(file.bytes), path);
  let conn: Deno.TcpConn;
  try {
    conn = await Deno.connect({ hostname: address.hostname, port: address.port });
  } catch (e) {
    throw new EndpointError(
      `${path} names port ${address.port}, where nothing answers (${(e as Error).message}): ` +
        `its process ${address.owner} has ended, so the file is stale`,
    );
  }
  const answers = new Map<number, (message: Response) => void>();
  let buffer = "";
  const decoder = new TextDecoder();
  const reading = readChunks(conn, (chunk) => {
    buffer += decoder.decode(chunk, { stream: true });
    let nl: number;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, nl).trim();
      buffer = buffer.slice(nl + 1);
      if (line === "") continue; // the SDK writes a newline before each message
      try {
        const message = JSON.parse(line) as Response;
        if (typeof message.id === "number") answers.get(message.id)?.(message);
      } catch {
        // not JSON: not an answer
      }
    }
  });
  const writer = new ConnWriter(conn);
  const ask = (id: number, name: string, p: Record<string, unknown>) => {
    const { promise, resolve } = Promise.withResolvers<Response>();
    answers.set(id, resolve);
    writer.write(
      new TextEncoder().encode(
        JSON.stringify({ jsonrpc: "2.0", id, method: name, params: p }) + "\n",
      ),
    ).catch(() => {});
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() =>
        reject(
          new EndpointError(
            `${name} on ${path} got no answer in ${
              timeoutMs / 1000
            } s (${address.owner} is busy, ` +
              "or the port is not its endpoint)",
          ),
        ), timeoutMs);
    });
    const ended = reading.then(() => {
      throw new EndpointError(`${path}'s endpoint closed the connection before answering ${name}`);
    });
    return Promise.race([promise, timeout, ended]).finally(() => clearTimeout(timer));
  };
  try {
    const who = await ask(1, "rpc.endpoint", {});
    const said = who.result as { owner?: string; interface?: string } | undefined;
    if (said?.owner !== address.owner || said?.interface !== address.interface) {
      throw new EndpointError(
        `${path} is stale: it names ${address.owner} (${address.interface}), but the port is ` +
          `${said?.owner ?? "not an endpoint"}${said?.interface ? ` (${said.interface})` : ""}`,
      );
    }
    return await ask(2, method, params);
  } finally {
    try {
      conn.close();
    } catch {
      // closed by the other side
    }
    await reading;
  }
}
