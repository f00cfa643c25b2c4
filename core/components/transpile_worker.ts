/**
 * A worker that transpiles and instruments components, so that the host's
 * thread keeps routing calls while a large plugin is prepared (seconds, the
 * first time a version is used).
 *
 * @module
 */
/// <reference lib="deno.worker" />
import { ComponentError } from "./format.ts";
import { transpileComponent } from "./transpile.ts";
import type { JcoGlue } from "./jco_shape.ts";

/** A job for the worker. */
export interface TranspileJob {
  id: number;
  bytes: Uint8Array;
  name: string;
  /** jco's glue of the component's shape, when the host has it. */
  glue?: JcoGlue;
}

/** The worker's answer to a job (or `{ready: true}` once, when it can take jobs). */
export type TranspileResult =
  | { ready: true }
  | {
    id: number;
    ok: true;
    component: Awaited<ReturnType<typeof transpileComponent>>;
    /** The glue jco made, for the next component of this shape. */
    glue?: JcoGlue;
    /** jco ran: the worker holds its memory (some 200 MB) until it ends. */
    ranJco?: boolean;
  }
  | { id: number; ok: false; message: string; componentError: boolean; ranJco?: boolean };

self.onmessage = async (event: MessageEvent<TranspileJob>) => {
  const { id, bytes, name, glue } = event.data;
  let result: Exclude<TranspileResult, { ready: true }>;
  let ranJco = false;
  try {
    let made: JcoGlue | undefined;
    const component = await transpileComponent(bytes, name, {
      glue,
      onGlue: (g) => made = g,
      onJco: () => ranJco = true,
    });
    result = { id, ok: true, component, ...(made ? { glue: made } : {}), ranJco };
  } catch (e) {
    result = {
      id,
      ok: false,
      message: e instanceof Error ? e.message : String(e),
      componentError: e instanceof ComponentError,
      ranJco,
    };
  }
  const transfer = result.ok
    ? Object.values(result.component.modules).map((m) => m.buffer as ArrayBuffer)
    : [];
  self.postMessage(result, transfer);
};

// Messages that arrive while the module still evaluates are lost, so the
// host waits for this before it sends a job.
self.postMessage({ ready: true });
