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

const IDLE_MS = 60_000;

interface Job {
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

  /** Transpiles and instruments `bytes` (a component); `name` labels errors. */
  async transpile(bytes: Uint8Array, name: string): Promise<TranspiledComponent> {
    const worker = this.#start();
    if (this.#idle !== undefined) clearTimeout(this.#idle);
    const id = this.#nextId++;
    const { promise, resolve, reject } = Promise.withResolvers<TranspiledComponent>();
    this.#jobs.set(id, { resolve, reject });
    promise.catch(() => {}); // a close() while the worker starts rejects it before we wait on it
    try {
      await this.#ready;
    } catch (e) {
      this.#jobs.delete(id);
      throw e;
    }
    if (this.#jobs.has(id)) worker.postMessage({ id, bytes, name } satisfies TranspileJob);
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
    if (result.ok) job.resolve(result.component);
    else {job.reject(
        result.componentError ? new ComponentError(result.message) : new Error(result.message),
      );}
    if (this.#jobs.size === 0) {
      this.#idle = setTimeout(() => this.close(), IDLE_MS);
      Deno.unrefTimer(this.#idle);
    }
  }
}
