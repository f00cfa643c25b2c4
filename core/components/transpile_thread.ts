/**
 * Runs `transpile.ts` in a worker of its own (see `transpile_worker.ts`),
 * started on the first miss of the cache and stopped after a minute without
 * work.
 *
 * @module
 */
import { TRANSPILE_WORKER } from "../embedded.ts";
import { ComponentError, type TranspiledComponent } from "./format.ts";
import type { TranspileJob, TranspileResult } from "./transpile_worker.ts";
import { JcoShapes } from "./jco_shape.ts";

const IDLE_MS = 60_000;

interface Job {
  /** The key of the component's shape, when it has one. */
  shape: string | undefined;
  resolve: (c: TranspiledComponent) => void;
  reject: (e: Error) => void;
}

/** Transpiles off the host's thread. */
export class Transpiler {
  #worker: Worker | undefined;
  #ready: Promise<void> | undefined;
  #cancelReady: ((e: Error) => void) | undefined;
  #jobs = new Map<number, Job>();
  #nextId = 1;
  #idle: ReturnType<typeof setTimeout> | undefined;
  /** jco's glues by shape: kept here, they outlive the worker's idle stops. */
  readonly #shapes = new JcoShapes();

  /** Transpiles and instruments `bytes` (a component); `name` labels errors. */
  async transpile(bytes: Uint8Array, name: string): Promise<TranspiledComponent> {
    const shape = await this.#shapes.keyOf(bytes);
    const worker = this.#start();
    if (this.#idle !== undefined) clearTimeout(this.#idle);
    const id = this.#nextId++;
    const { promise, resolve, reject } = Promise.withResolvers<TranspiledComponent>();
    this.#jobs.set(id, { shape, resolve, reject });
    promise.catch(() => {}); // a close() while the worker starts rejects it before we wait on it
    try {
      await this.#ready;
    } catch (e) {
      this.#jobs.delete(id);
      throw e;
    }
    const glue = shape === undefined ? undefined : this.#shapes.get(shape);
    if (this.#jobs.has(id)) worker.postMessage({ id, bytes, name, glue } satisfies TranspileJob);
    return await promise;
  }

  /** Stops the worker (pending jobs fail). */
  close(): void {
    if (this.#idle !== undefined) clearTimeout(this.#idle);
    this.#worker?.terminate();
    this.#worker = undefined;
    this.#cancelReady?.(new Error("the transpiler was stopped"));
    this.#ready = undefined;
    for (const job of this.#jobs.values()) job.reject(new Error("the transpiler was stopped"));
    this.#jobs.clear();
  }

  #start(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(TRANSPILE_WORKER, {
      type: "module",
      name: "sausage-transpiler",
    });
    const ready = Promise.withResolvers<void>();
    this.#ready = ready.promise;
    this.#cancelReady = ready.reject;
    ready.promise.catch(() => {}); // the jobs carry the error
    worker.onmessage = (event: MessageEvent<TranspileResult>) => {
      if ("ready" in event.data) ready.resolve();
      else this.#done(event.data);
    };
    worker.onerror = (event) => {
      event.preventDefault();
      const error = new Error(`the transpiler failed: ${event.message}`);
      ready.reject(error);
      for (const job of this.#jobs.values()) job.reject(error);
      this.#jobs.clear();
      this.#worker?.terminate();
      this.#worker = undefined;
    };
    this.#worker = worker;
    return worker;
  }

  #done(result: Exclude<TranspileResult, { ready: true }>): void {
    const job = this.#jobs.get(result.id);
    if (!job) return;
    this.#jobs.delete(result.id);
    if (result.ok) {
      if (result.glue && job.shape !== undefined) this.#shapes.set(job.shape, result.glue);
      job.resolve(result.component);
    } else {
      const { message } = result;
      job.reject(result.componentError ? new ComponentError(message) : new Error(message));
    }
    if (this.#jobs.size === 0) {
      this.#idle = setTimeout(() => this.close(), IDLE_MS);
      Deno.unrefTimer(this.#idle);
    }
  }
}
