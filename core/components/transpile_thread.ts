/**
 * Runs `transpile.ts` in a worker of its own (see `transpile_worker.ts`),
 * started on the first miss of the cache and stopped after a minute without
 * work. The worker gets one job at a time, so that the host can give it up
 * between two: jco's memory (some 200 MB once it has run) stays with the
 * worker that ran it, so a job that needs no jco (its shape is known) goes
 * to a fresh worker rather than to one that ran jco.
 *
 * @module
 */
import { TRANSPILE_WORKER } from "../embedded.ts";
import { ComponentError, type TranspiledComponent } from "./format.ts";
import type { TranspileJob, TranspileResult } from "./transpile_worker.ts";
import { JcoShapes } from "./jco_shape.ts";

const IDLE_MS = 60_000;

interface Job {
  bytes: Uint8Array;
  name: string;
  /** The key of the component's shape, when it has one. */
  shape: string | undefined;
  resolve: (c: TranspiledComponent) => void;
  reject: (e: Error) => void;
}

/** Transpiles off the host's thread. */
export class Transpiler {
  #worker: Worker | undefined;
  #ready: Promise<void> | undefined;
  /** Jobs not yet sent, in order. */
  readonly #queue: Job[] = [];
  /** The job the worker has, by its id. */
  #running: { id: number; job: Job } | undefined;
  #nextId = 1;
  /** The worker ran jco: it holds jco's memory. */
  #holdsJco = false;
  #idle: ReturnType<typeof setTimeout> | undefined;
  /** jco's glues by shape: kept here, they outlive the worker's stops. */
  readonly #shapes = new JcoShapes();
  #started = 0;

  /** Jobs it has: the one its worker runs and those waiting. */
  get jobs(): number {
    return this.#queue.length + (this.#running ? 1 : 0);
  }

  /** How many workers it started so far. */
  get started(): number {
    return this.#started;
  }

  /** Transpiles and instruments `bytes` (a component); `name` labels errors. */
  async transpile(bytes: Uint8Array, name: string): Promise<TranspiledComponent> {
    const shape = await this.#shapes.keyOf(bytes);
    const { promise, resolve, reject } = Promise.withResolvers<TranspiledComponent>();
    this.#queue.push({ bytes, name, shape, resolve, reject });
    this.#next();
    return await promise;
  }

  /** Stops the worker (pending jobs fail). */
  close(): void {
    this.#stop();
    const error = new Error("the transpiler was stopped");
    this.#running?.job.reject(error);
    this.#running = undefined;
    for (const job of this.#queue.splice(0)) job.reject(error);
  }

  /** Sends the next job when the worker has none. */
  #next(): void {
    if (this.#running || this.#queue.length === 0) return;
    if (this.#idle !== undefined) clearTimeout(this.#idle);
    this.#idle = undefined;
    const job = this.#queue.shift()!;
    const id = this.#nextId++;
    this.#running = { id, job };
    const glue = job.shape === undefined ? undefined : this.#shapes.get(job.shape);
    if (glue && this.#holdsJco) this.#stop();
    const worker = this.#start();
    this.#ready!.then(() => {
      if (this.#running?.id !== id || this.#worker !== worker) return; // stopped meanwhile
      worker.postMessage({ id, bytes: job.bytes, name: job.name, glue } satisfies TranspileJob);
    }, (e) => this.#failAll(e));
  }

  #start(): Worker {
    if (this.#worker) return this.#worker;
    const worker = new Worker(TRANSPILE_WORKER, {
      type: "module",
      name: "sausage-transpiler",
    });
    this.#started++;
    const ready = Promise.withResolvers<void>();
    this.#ready = ready.promise;
    ready.promise.catch(() => {}); // the jobs carry the error
    worker.onmessage = (event: MessageEvent<TranspileResult>) => {
      if ("ready" in event.data) ready.resolve();
      else this.#done(event.data);
    };
    worker.onerror = (event) => {
      event.preventDefault();
      const error = new Error(`the transpiler failed: ${event.message}`);
      ready.reject(error);
      this.#failAll(error);
    };
    this.#worker = worker;
    return worker;
  }

  #stop(): void {
    if (this.#idle !== undefined) clearTimeout(this.#idle);
    this.#idle = undefined;
    this.#worker?.terminate();
    this.#worker = undefined;
    this.#ready = undefined;
    this.#holdsJco = false;
  }

  /** A worker that failed: its job and those waiting fail with it; the next job starts another. */
  #failAll(error: Error): void {
    this.#stop();
    this.#running?.job.reject(error);
    this.#running = undefined;
    for (const job of this.#queue.splice(0)) job.reject(error);
  }

  #done(result: Exclude<TranspileResult, { ready: true }>): void {
    const running = this.#running;
    if (!running || running.id !== result.id) return;
    this.#running = undefined;
    const { job } = running;
    if (result.ok) {
      if (result.glue && job.shape !== undefined) this.#shapes.set(job.shape, result.glue);
      job.resolve(result.component);
    } else {
      const { message } = result;
      job.reject(result.componentError ? new ComponentError(message) : new Error(message));
    }
    if (result.ranJco) this.#holdsJco = true;
    if (this.#queue.length > 0) this.#next();
    else if (this.#worker) {
      this.#idle = setTimeout(() => this.#stop(), IDLE_MS);
      Deno.unrefTimer(this.#idle);
    }
  }
}
