/**
 * The evaluation's tasks: what a person asks the agent, in order, in one
 * world (each builds on the ones before), and the checks made through calls
 * after the turns. They hold for any model that did the task, not only for
 * the scripted one.
 *
 * @module
 */

/** What a check can do with the world. */
export interface EvalWorld {
  /** The world's folder on the host. */
  root: string;
  /** A call as the console makes it; throws on an error answer. */
  call(method: string, params?: Record<string, unknown>): Promise<unknown>;
  /** The imports of each plugin, by provider, with their status (`/proc/core/graph.json`). */
  imports(): Promise<Record<string, Record<string, { status: string }>>>;
  /** Stops the host and starts a new one on the world (its services start again). */
  restart(): Promise<void>;
}

/** One task: messages to the agent, in one session, then checks. */
export interface EvalTask {
  /** Its name, also the session's. */
  name: string;
  /** The person's messages, one turn each. */
  messages: string[];
  /** Why the task failed, or undefined when it passed; `answers` are the turns' final texts. */
  check(w: EvalWorld, answers: string[]): Promise<string | undefined>;
}

/** The signature the agent is asked to give itself. */
export const SIGNATURE = "— your agent";

/** Fails with `why` unless `ok`. */
function expect(ok: boolean, why: string): string | undefined {
  return ok ? undefined : why;
}

/** The tasks, in the order they run. */
export const TASKS: EvalTask[] = [
  {
    name: "todo",
    messages: [
      "Make a plugin `todo`: `add {text}` adds an item and returns its number (from 1), `list` returns " +
      "the items as {id, text, done}, and `done {id}` marks one as done. Build it, activate it and try it.",
    ],
    async check(w) {
      const id = await w.call("todo.add", { text: "eval item" });
      if (typeof id !== "number") return `todo.add returned ${JSON.stringify(id)}, not a number`;
      await w.call("todo.done", { id });
      const items = await w.call("todo.list") as { id: number; text: string; done: boolean }[];
      const item = items.find((i) => i.id === id);
      return expect(
        item?.text === "eval item" && item.done === true,
        `todo.list has ${JSON.stringify(item)} for item ${id}`,
      );
    },
  },
  {
    name: "import",
    messages: [
      "Make a plugin `report` with a method `summary` that returns {open, done}: how many items of " +
      "`todo` are open and how many are done. Use a typed import of `todo`.",
    ],
    async check(w) {
      await w.call("todo.add", { text: "one more" });
      const items = await w.call("todo.list") as { done: boolean }[];
      const done = items.filter((i) => i.done).length;
      const summary = await w.call("report.summary") as { open: number; done: number };
      if (summary?.open !== items.length - done || summary.done !== done) {
        return `report.summary is ${
          JSON.stringify(summary)
        }; todo has ${items.length} items, ${done} done`;
      }
      const imports = (await w.imports()).report ?? {};
      return expect(imports.todo?.status === "ok", `report's imports: ${JSON.stringify(imports)}`);
    },
  },
  {
    name: "upgrade",
    messages: [
      "Make a plugin `counter`: `add {by}` adds to one total and returns the new total, `total` returns " +
      "it. Build it, activate it and add 5.",
      "Change `counter` to keep a total per name: `add {by, name?}` and `total {name?}`, the name " +
      "`default` when none is given, and `reset {name?}` sets a total back to 0. The total kept so " +
      "far must become the total of `default`.",
    ],
    async check(w) {
      const kept = await w.call("counter.total", { name: "default" }) as number;
      if (typeof kept !== "number" || kept < 5) {
        return `the total of default is ${kept}, not 5 or more`;
      }
      const unnamed = await w.call("counter.total", {});
      if (unnamed !== kept) return `counter.total {} is ${unnamed}, the total of default ${kept}`;
      const before = await w.call("counter.total", { name: "eval" }) as number;
      await w.call("counter.add", { by: 2, name: "eval" });
      const after = await w.call("counter.total", { name: "eval" });
      return expect(after === before + 2, `the total of eval went from ${before} to ${after} by 2`);
    },
  },
  {
    name: "compatibility",
    messages: [
      "Make a plugin `dash` that imports `counter` (typed) and has a method `show` that returns " +
      "`total: N` with the total of `default`.",
      "Remove the method `reset` from `counter`: nobody may reset a total.",
    ],
    async check(w) {
      const document = await w.call("counter.rpc.discover") as { methods: { name: string }[] };
      const methods = document.methods.map((m) => m.name);
      if (methods.includes("reset")) return `counter still has reset: ${methods.join(", ")}`;
      const total = await w.call("counter.total", {});
      const shown = await w.call("dash.show");
      if (shown !== `total: ${total}`) {
        return `dash.show is ${JSON.stringify(shown)}, the total ${total}`;
      }
      const imports = (await w.imports()).dash ?? {};
      return expect(imports.counter?.status === "ok", `dash's imports: ${JSON.stringify(imports)}`);
    },
  },
  {
    name: "service",
    messages: [
      "Make a plugin `clock` with a service: `serve` listens at /run/clock with an endpoint `time` whose " +
      "method `now` returns the milliseconds since 1970, and the plugin's method `now` asks that " +
      "endpoint. Put the service in /config/boot.yaml and start it now.",
    ],
    async check(w) {
      const now = async () => Math.abs(Number(await w.call("clock.now")) - Date.now()) < 60_000;
      if (!(await now())) return "clock.now is not the time";
      await w.restart();
      return expect(await now(), "after a restart, clock.now is not the time (boot.yaml)");
    },
  },
  {
    name: "self",
    messages: [
      `Change your own system prompt so that you end every answer with the words "${SIGNATURE}". ` +
      "Build yourself and activate the new version.",
      "Hello!",
    ],
    async check(w, answers) {
      const last = answers.at(-1) ?? "";
      if (!last.includes(SIGNATURE)) {
        return `the answer after the change is ${JSON.stringify(last)}`;
      }
      const prompt = await Deno.readTextFile(`${w.root}/plugins/agent/source/src/prompt.rs`);
      return expect(prompt.includes(SIGNATURE), "the agent's source does not have the signature");
    },
  },
];
