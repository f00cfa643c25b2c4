/**
 * One turn of the agent as an NDJSON stream, in the shape of the peer
 * system's agent protocol: `delta` lines as the model writes, a `step` for
 * each whole message, then `done` or `failed`. The turn runs as a call of
 * `agent.chat` on a {@linkcode HostView}; when the stream is cancelled (the
 * connection dropped, or the page's Stop) the call's process gets
 * `core.stop`, and the agent journals the turn as cancelled.
 *
 * @module
 */
import { parse as parseYaml } from "yaml";
import { chatErrorHint } from "../core/chat_hint.ts";
import type { HostView } from "../core/host_view.ts";

/** The limits of one turn (seed 001: 10 minutes, 8 MB a line, 64 MB a turn). */
export interface TurnLimits {
  /** Wall clock, not an idle timeout. */
  turnMs: number;
  lineBytes: number;
  turnBytes: number;
}

/** The protocol's limits. */
export const TURN_LIMITS: TurnLimits = {
  turnMs: 10 * 60 * 1000,
  lineBytes: 8 * 1000 * 1000,
  turnBytes: 64 * 1000 * 1000,
};

/** One line of the stream. */
export type TurnLine =
  | { type: "delta"; text: string }
  | { type: "step"; role: string; text: string; blocks: string[]; tools: string[] }
    & Record<
      string,
      unknown
    >
  | {
    type: "done";
    answer: string;
    input_tokens?: number;
    output_tokens?: number;
    model: { alias: string; provider?: string; resolved?: string };
  }
  | { type: "failed"; error: string; hint?: string };

/** A field of a step that is kept when the step is cut (bytes of its JSON). */
const SMALL_FIELD = 4096;

/** Text cut to at most `bytes` of UTF-8, whole characters only. */
export function clipUtf8(text: string, bytes: number): string {
  const encoded = new TextEncoder().encode(text);
  if (encoded.byteLength <= bytes) return text;
  let end = bytes;
  while (end > 0 && (encoded[end] & 0xc0) === 0x80) end--; // not inside a character
  return new TextDecoder().decode(encoded.subarray(0, end));
}

/**
 * The lines of `line` that each fit in `limit` bytes: a long delta splits
 * into several, a long step's text is cut with a note.
 */
export function fitLine(line: TurnLine, limit: number): string[] {
  const text = JSON.stringify(line);
  if (new TextEncoder().encode(text).byteLength + 1 <= limit) return [text];
  if (line.type === "delta") {
    // JSON escaping can grow a character to 6 bytes (\uXXXX)
    const piece = Math.max(1, Math.floor((limit - 64) / 6));
    const out: string[] = [];
    let at = 0;
    while (at < line.text.length) {
      let end = Math.min(line.text.length, at + piece);
      const last = line.text.charCodeAt(end - 1);
      if (end < line.text.length && last >= 0xd800 && last <= 0xdbff) end--; // keep surrogate pairs
      out.push(JSON.stringify({ type: "delta", text: line.text.slice(at, end) }));
      at = end;
    }
    return out;
  }
  const note = "\n\n[cut: the message was over the 8 MB line limit]";
  const room = Math.max(0, Math.floor((limit - 1024) / 6));
  if ("text" in line && typeof line.text === "string") {
    const cut = JSON.stringify({ ...line, text: clipUtf8(line.text, room) + note });
    if (new TextEncoder().encode(cut).byteLength + 1 <= limit) return [cut];
    // other fields of the step are large too: only the small ones stay beside the text
    const kept: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(line)) {
      if (key !== "text" && (JSON.stringify(value) ?? "").length <= SMALL_FIELD) kept[key] = value;
    }
    const text = clipUtf8(line.text, Math.max(0, Math.floor((limit - 1024) / 6) - SMALL_FIELD));
    return [JSON.stringify({ ...kept, text: text + note + " (and large fields were left out)" })];
  }
  if (line.type === "failed") {
    return [JSON.stringify({ ...line, error: clipUtf8(line.error, room) })];
  }
  return [JSON.stringify({ ...line, answer: clipUtf8(String(line.answer), room) })];
}

/** The model of the agent's configuration, for the `done` line; best effort. */
async function modelOf(view: HostView): Promise<{ provider?: string; resolved?: string }> {
  try {
    const file = await view.read("/config/agent.yaml", 64 * 1024);
    const config = parseYaml(new TextDecoder().decode(file.bytes)) as Record<string, unknown>;
    return {
      provider: typeof config?.api === "string" ? config.api : undefined,
      resolved: typeof config?.model === "string" ? config.model : undefined,
    };
  } catch {
    return {};
  }
}

/** The tokens of the session's last step, when it is the final step of a turn. */
async function usageOf(
  view: HostView,
  session: string | undefined,
): Promise<{ input_tokens?: number; output_tokens?: number }> {
  const response = await view.request("agent.history", {
    limit: 1,
    ...(session === undefined ? {} : { session }),
  });
  const last = (response.result as Record<string, unknown>[] | undefined)?.at(-1);
  if (!last || typeof last.input_tokens !== "number") return {};
  return { input_tokens: last.input_tokens, output_tokens: last.output_tokens as number };
}

/**
 * Runs one turn and gives its NDJSON stream. The stream ends after `done` or
 * `failed`; cancelling it stops the turn.
 */
export function turnStream(
  view: HostView,
  task: string,
  session: string | undefined,
  limits: TurnLimits = TURN_LIMITS,
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let id: number | string | null | undefined;
  let over = false; // the turn ended here (a limit, or the stream was cancelled)
  let written = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const stop = () => {
    over = true;
    clearTimeout(timer);
    if (id !== undefined && id !== null) view.cancel(id).catch(() => {});
  };
  return new ReadableStream<Uint8Array>({
    start(controller) {
      const send = (line: TurnLine): boolean => {
        if (over) return false;
        for (const text of fitLine(line, limits.lineBytes)) {
          const bytes = encoder.encode(text + "\n");
          if (written + bytes.byteLength > limits.turnBytes && line.type !== "failed") {
            send({
              type: "failed",
              error:
                `the turn wrote more than ${limits.turnBytes} bytes (the limit of one turn): it was stopped`,
            });
            stop();
            controller.close();
            return false;
          }
          written += bytes.byteLength;
          controller.enqueue(bytes);
        }
        return true;
      };
      const end = (line: TurnLine) => {
        if (over) return;
        send(line);
        over = true;
        clearTimeout(timer);
        controller.close();
      };
      timer = setTimeout(() => {
        end({
          type: "failed",
          error: `the turn ran past ${
            Math.round(limits.turnMs / 1000)
          } s (the limit of one turn): it was stopped`,
        });
        stop();
      }, limits.turnMs);
      const params: Record<string, unknown> = { text: task };
      if (session !== undefined) params.session = session;
      view.request("agent.chat", params, {
        onId: (sent) => {
          id = sent;
          if (over) stop(); // cancelled before the call had its ID
        },
        onNotify: (name, p) => {
          const { session: _s, ...fields } = (p ?? {}) as Record<string, unknown>;
          if (name === "text") send({ type: "delta", text: String(fields.text ?? "") });
          else if (name === "step") {
            send({
              type: "step",
              ...fields,
              role: String(fields.role ?? "assistant"),
              text: String(fields.text ?? ""),
              blocks: Array.isArray(fields.blocks) ? fields.blocks as string[] : [],
              tools: Array.isArray(fields.tools) ? fields.tools as string[] : [],
            });
          }
        },
      }).then(async (response) => {
        if (over) return;
        if (response.error) {
          // the console's hint too: the page's person edits the same file
          const hint = chatErrorHint(response.error, view.info.world);
          end({ type: "failed", error: response.error.message, ...(hint ? { hint } : {}) });
          return;
        }
        const answer = typeof response.result === "string"
          ? response.result
          : JSON.stringify(response.result);
        // the final message comes as a step, which replaces the deltas shown so far
        send({ type: "step", role: "assistant", text: answer, blocks: ["text"], tools: [] });
        const [usage, model] = await Promise.all([
          usageOf(view, session).catch(() => ({})),
          modelOf(view),
        ]);
        end({ type: "done", answer, ...usage, model: { alias: "default", ...model } });
      }, (e) => end({ type: "failed", error: (e as Error).message }));
    },
    cancel() {
      stop();
    },
  });
}
