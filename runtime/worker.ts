/**
 * A plugin worker: runs many processes (component instances) on one thread.
 *
 * The host starts a few of these, about one per core, and sends them
 * {@linkcode ToWorker} messages. Output is batched per process and posted
 * once per microtask turn.
 *
 * @module
 */
/// <reference lib="deno.worker" />
import { Instance, type InstanceHost, type Preparation } from "./instance.ts";
import { dropLinked, type Glue } from "./linked.ts";
import { type FromWorker, SLICE_MS, type ToWorker } from "./messages.ts";
import { Scheduler } from "./scheduler.ts";
import { SyncChannel } from "../vfs/mod.ts";
import { setHostFileBudget } from "./wasi/filesystem.ts";
import { setHostSocketBudget } from "./wasi/network_process.ts";
import type { OutputPort } from "./stdio.ts";
import { enableProfile, mark, profiling } from "./profile.ts";
import { type AnswerBody, answerOf, answerResponse, mayReachCaller } from "../protocol/answer.ts";

interface Pending {
  messages: unknown[];
  discarded: number;
  lines: string[];
  dropped: number;
  /** One of `messages` answers a caller on this worker. */
  answer?: { to: Caller; body: AnswerBody };
}

/** A process on this worker that waits for the answer of another (`answerTo` of a spawn). */
type Caller = NonNullable<Extract<ToWorker, { t: "spawn" }>["answerTo"]>;

// jco's glue checks `process.env.JCO_DEBUG` on every call; Deno's `process`
// would make that a permission-checked lookup each time. Plugin workers use
// no Node APIs, so they get a plain object.
Object.defineProperty(globalThis, "process", {
  value: { env: {} },
  configurable: true,
  writable: true,
});

let index = -1;
let scheduler: Scheduler;
let cells: Int32Array;
let files: SyncChannel;
/** Whether processes may run on instances earlier ones left (the init says). */
let reuse = true;
const glues = new Map<string, Promise<Glue>>();
const instances = new Map<string, Instance>();
/** Instances made ahead of their processes (or to be made when idle), by the cell they were given. */
const ahead = new Map<number, { preparation: Preparation; instance?: Instance }>();

/** Drops the instances made ahead for version `hash`, and those its processes left. */
function dropAhead(hash: string): void {
  for (const [cell, a] of ahead) if (a.preparation.hash === hash) ahead.delete(cell);
  dropLinked((key) => key.startsWith(`${hash} `));
}
let aheadQueued = false;
const pending = new Map<string, Pending>();
/**
 * Callers on this worker, by the process whose answer they wait for: until
 * that answer, or a message that may reach the caller through the host.
 */
const callers = new Map<string, Caller>();
const encoder = new TextEncoder();
let flushQueued = false;
let flushTimer: ReturnType<typeof setTimeout> | undefined;

function post(message: FromWorker): void {
  self.postMessage(message);
}

/**
 * The batch of a process. Messages go out at the end of the current
 * microtask turn (a caller waits for them); log lines wait for the next task,
 * so that a process that logs a lot sends one batch, not one post per line.
 */
function pendingFor(pid: string, urgent: boolean): Pending {
  let p = pending.get(pid);
  if (!p) {
    p = { messages: [], discarded: 0, lines: [], dropped: 0 };
    pending.set(pid, p);
  }
  if (urgent && !flushQueued) {
    flushQueued = true;
    queueMicrotask(flush);
  } else if (!urgent && !flushTimer) {
    flushTimer = setTimeout(flush, 0);
  }
  return p;
}

function flush(): void {
  flushQueued = false;
  if (flushTimer) clearTimeout(flushTimer);
  flushTimer = undefined;
  for (const [pid, p] of pending) {
    // logs first: a line logged before an answer is journaled before the answer is routed
    if (p.lines.length > 0 || p.dropped > 0) {
      post({ t: "stderr", pid, lines: p.lines, dropped: p.dropped });
    }
    if (p.messages.length > 0 || p.discarded > 0) {
      mark(pid, "w.post");
      const caller = p.answer && instances.get(p.answer.to.pid);
      const answered = caller?.takesInput === true;
      post({ t: "stdout", pid, messages: p.messages, discarded: p.discarded, answered });
      // after the post: whatever the caller writes next reaches the host after the answer
      if (answered) answerCaller(caller, p.answer!);
    }
  }
  pending.clear();
}

/** Writes an answer to the stdin of its caller, as the host would have. */
function answerCaller(caller: Instance, { to, body }: NonNullable<Pending["answer"]>): void {
  mark(to.pid, "w.answer");
  caller.stdin(encoder.encode(JSON.stringify(answerResponse(to.id, body)) + "\n"));
}

/** A stdout message of process `pid`: its answer may go to a caller on this worker. */
function message(pid: string, m: unknown): void {
  mark(pid, "w.message");
  const p = pendingFor(pid, true);
  const caller = callers.get(pid);
  if (caller) {
    const body = answerOf(m, pid);
    if (body) p.answer = { to: caller, body };
    if (body || mayReachCaller(m)) callers.delete(pid);
  }
  p.messages.push(m);
}

const host: InstanceHost = {
  get scheduler() {
    return scheduler;
  },
  get cells() {
    return cells;
  },
  get files() {
    return files;
  },
  reuses: (hash) => reuse && glues.has(hash),
  output(owner): OutputPort {
    return {
      message: (m) => message(owner.pid, m),
      discarded: () => pendingFor(owner.pid, false).discarded++,
      logLine: (line) => pendingFor(owner.pid, false).lines.push(line),
      logDropped: (n) => pendingFor(owner.pid, false).dropped += n,
    };
  },
  raw(pid, fd, data) {
    post({ t: "raw", pid, fd, data });
  },
  flush,
  post,
};

async function loadGlue(
  js: string,
  jsUrl: string | undefined,
  modules: Record<string, WebAssembly.Module>,
): Promise<Glue> {
  if (jsUrl) {
    try {
      // a file import keeps its compiled code between workers and runs
      return { instantiate: (await import(jsUrl)).instantiate, modules };
    } catch {
      // not readable from here: the source itself still works
    }
  }
  const url = URL.createObjectURL(new Blob([js], { type: "text/javascript" }));
  try {
    const mod = await import(url);
    return { instantiate: mod.instantiate, modules };
  } finally {
    URL.revokeObjectURL(url);
  }
}

async function spawn(message: Extract<ToWorker, { t: "spawn" }>): Promise<void> {
  const made = ahead.get(message.cell);
  let instance: Instance;
  if (made && made.preparation.hash === message.hash && made.preparation.stdio === message.stdio) {
    ahead.delete(message.cell);
    instance = made.instance ?? new Instance(made.preparation, host);
  } else {
    const { hash, cell, limits, stdio } = message;
    instance = new Instance({ hash, cell, limits, stdio }, host);
  }
  instance.claim(message.pid);
  instances.set(message.pid, instance);
  if (message.stdin) mark(message.pid, "w.stdin");
  for (const data of message.stdin ?? []) instance.stdin(data);
  if (message.eof) instance.eof();
  if (message.answerTo) callers.set(message.pid, message.answerTo);
  instance.onExit = () => {
    instances.delete(message.pid);
    callers.delete(message.pid);
  };
  const glue = glues.get(message.hash);
  if (!glue) {
    post({
      t: "exit",
      pid: message.pid,
      status: null,
      reason: "failed",
      detail: `worker ${index} has no component ${message.hash}`,
    });
    instances.delete(message.pid);
    return;
  }
  let loaded: Glue;
  try {
    loaded = await glue;
  } catch (e) {
    post({ t: "exit", pid: message.pid, status: null, reason: "failed", detail: String(e) });
    instances.delete(message.pid);
    return;
  }
  await instance.prepare(loaded);
  await instance.run(message);
}

/** Makes the instances asked for ahead, one per task, while no guest waits to compute. */
function queueAhead(): void {
  if (aheadQueued) return;
  aheadQueued = true;
  setTimeout(makeAhead, 0);
}

async function makeAhead(): Promise<void> {
  aheadQueued = false;
  const next = [...ahead.values()].find((a) => !a.instance);
  if (!next) return;
  if (!scheduler.idle) {
    // guests compute: their slices come first, an instance made ahead can wait
    aheadQueued = true;
    setTimeout(makeAhead, SLICE_MS);
    return;
  }
  const { hash, cell } = next.preparation;
  const instance = next.instance = new Instance(next.preparation, host);
  let failed: string | undefined;
  try {
    const glue = glues.get(hash);
    if (!glue) throw new Error(`worker ${index} has no component ${hash}`);
    await instance.prepare(await glue);
    failed = instance.failure;
  } catch (e) {
    failed = String(e);
  }
  if (failed !== undefined) {
    if (ahead.get(cell) === next) dropAhead(hash); // the others would fail the same way
    post({ t: "prepare-failed", hash, cell, failed });
  }
  if ([...ahead.values()].some((a) => !a.instance)) queueAhead();
}

self.onmessage = (event: MessageEvent<ToWorker>) => {
  scheduler?.turn();
  const message = event.data;
  if (profiling() && "pid" in message) mark(message.pid, `w.${message.t}`);
  switch (message.t) {
    case "init":
      index = message.index;
      cells = new Int32Array(message.interrupts.buffer);
      scheduler = new Scheduler(message.interrupts);
      files = SyncChannel.attach(message.files, () => post({ t: "vfs" }));
      setHostFileBudget(message.fileBudget);
      setHostSocketBudget(message.socketBudget);
      reuse = message.reuse ?? true;
      if (message.profile) enableProfile(true, `worker-${index}`);
      post({ t: "ready", index });
      break;
    case "load":
      if (!glues.has(message.hash)) {
        const loading = loadGlue(message.js, message.jsUrl, message.modules);
        loading.catch(() => {}); // reported by each spawn that needs it
        glues.set(message.hash, loading);
      }
      break;
    case "unload":
      glues.delete(message.hash);
      dropAhead(message.hash);
      break;
    case "prepare": {
      const { hash, cell, limits } = message;
      ahead.set(cell, { preparation: { hash, cell, limits, stdio: "rpc" } });
      queueAhead();
      break;
    }
    case "forget":
      dropAhead(message.hash);
      break;
    case "spawn":
      spawn(message).catch((e) => post({ t: "fault", message: `spawn ${message.pid}: ${e}` }));
      break;
    case "stdin":
      instances.get(message.pid)?.stdin(message.data);
      break;
    case "eof":
      instances.get(message.pid)?.eof();
      break;
    case "kill":
      instances.get(message.pid)?.kill(message.reason);
      break;
    case "crash":
      // a fault injected by a test host: escapes the handler like a bug would
      throw new Error(`injected crash: ${message.reason}`);
  }
};

self.addEventListener("unhandledrejection", (event) => {
  // jco's internal promises of a killed instance may reject after its exit
  event.preventDefault();
});
