/**
 * The scripted model of the evaluation: for each message of the tasks, the
 * tool calls a capable model makes, one reply per request, with the sources
 * in `eval/answers/`. Against it the evaluation is a regression test of the
 * agent, its tools, `cargo.build`, activation, the compatibility check and
 * upgrades; it reads the results it needs (a build's `wasm`) from the
 * conversation, as a model does, and it obeys its system prompt's signature.
 *
 * @module
 */
import type { Reply, SeenRequest } from "../tests/model_server.ts";
import { SIGNATURE, TASKS } from "./tasks.ts";

const ANSWERS = new URL("./answers/", import.meta.url);

/** A plugin's source file as the scripted model writes it. */
function source(name: string): string {
  return Deno.readTextFileSync(new URL(`${name}.rs`, ANSWERS));
}

/** The `Cargo.toml` of a plugin. */
function manifest(plugin: string): string {
  return `[package]\nname = "${plugin}"\nversion = "0.1.0"\nedition = "2024"\n\n[dependencies]\nsausage-plugin = "0.1"\n`;
}

/** What a step sees: the results of this turn's tool calls so far, and the system prompt. */
interface Seen {
  results: string[];
  system: string;
}

type Step = (seen: Seen) => Reply;

const write = (path: string, content: string) => ({
  name: "write_file",
  arguments: { path, content },
});
const call = (method: string, params: Record<string, unknown> = {}) => ({
  name: "call",
  arguments: { method, params },
});
const tools = (...calls: { name: string; arguments: unknown }[]): Step => () => ({
  toolCalls: calls,
});
const say = (text: string): Step => () => ({ text });

/** The `wasm` of the `n`th tool result of the turn (a build's). */
function wasm(seen: Seen, n: number): string {
  return (JSON.parse(seen.results[n]) as { wasm: string }).wasm;
}

/** Writes a new plugin, builds it, activates it and calls it. */
function newPlugin(
  plugin: string,
  file: string,
  first: { name: string; arguments: unknown }[],
  check: Step,
): Step[] {
  return [
    tools(
      write(`/plugins/${plugin}/source/Cargo.toml`, manifest(plugin)),
      write(`/plugins/${plugin}/source/src/main.rs`, source(file)),
      ...first,
    ),
    tools(call("cargo.build", { plugin })),
    (seen) =>
      tools(call("core.activate", { plugin, wasm: wasm(seen, seen.results.length - 1) }))(seen),
    check,
  ];
}

const RESET =
  source("counter_v2").match(/\n {4}\/\/\/ Set a total back to 0\.\n[\s\S]*?\n {4}\}\n/)![0];

/** The steps of each message of the tasks. */
const STEPS: string[][] = TASKS.map((t) => t.messages);
const SCRIPTS: Step[][] = [
  // todo
  [...newPlugin("todo", "todo", [], tools(call("todo.add", { text: "try" }))), say("todo works.")],
  // import
  [
    ...newPlugin("report", "report", [{
      name: "make_import",
      arguments: { plugin: "report", provider: "todo", methods: ["list"] },
    }], tools(call("report.summary"))),
    say("report works."),
  ],
  // upgrade, first message
  [
    ...newPlugin("counter", "counter_v1", [], tools(call("counter.add", { by: 5 }))),
    say("The total is 5."),
  ],
  // upgrade, second message
  [
    tools(write("/plugins/counter/source/src/main.rs", source("counter_v2"))),
    tools(call("cargo.build", { plugin: "counter" })),
    (seen) => tools(call("core.activate", { plugin: "counter", wasm: wasm(seen, 1) }))(seen),
    tools(call("counter.total", {})),
    say("Totals by name; the old total is default's."),
  ],
  // compatibility, first message
  [
    ...newPlugin("dash", "dash", [{
      name: "make_import",
      arguments: { plugin: "dash", provider: "counter" },
    }], tools(call("dash.show"))),
    say("dash works."),
  ],
  // compatibility, second message: refused while dash imports reset, then done right
  [
    tools({
      name: "edit_file",
      arguments: { path: "/plugins/counter/source/src/main.rs", old_text: RESET, new_text: "\n" },
    }),
    tools(call("cargo.build", { plugin: "counter" })),
    (seen) => tools(call("core.activate", { plugin: "counter", wasm: wasm(seen, 1) }))(seen),
    tools({
      name: "make_import",
      arguments: { plugin: "dash", provider: "counter", methods: ["total"] },
    }),
    tools(call("cargo.build", { plugin: "dash" })),
    (seen) =>
      tools(call("core.activate", {
        plugins: [{ plugin: "counter", wasm: wasm(seen, 1) }, {
          plugin: "dash",
          wasm: wasm(seen, 4),
        }],
      }))(seen),
    tools(call("dash.show")),
    say("reset is gone; dash imports only total now."),
  ],
  // service
  [
    ...newPlugin(
      "clock",
      "clock",
      [],
      tools(write("/config/boot.yaml", "- method: clock.serve\n  params: {}\n")),
    ),
    tools({ name: "call", arguments: { method: "clock.serve", params: {}, detach: true } }),
    tools(call("clock.now")),
    say("The clock runs as a service."),
  ],
  // self, first message
  [
    tools({
      name: "edit_file",
      arguments: {
        path: "/plugins/agent/source/src/prompt.rs",
        old_text: "Act with your tools; answer briefly.",
        new_text:
          `Act with your tools; answer briefly, and end every answer with the words ${SIGNATURE}.`,
      },
    }),
    tools(call("cargo.build", { plugin: "agent" })),
    (seen) => tools(call("core.activate", { plugin: "agent", wasm: wasm(seen, 1) }))(seen),
    say("Done: the next message runs the new version."),
  ],
  // self, second message: the model obeys its system prompt
  [(seen) => ({ text: seen.system.includes(SIGNATURE) ? `Hello! ${SIGNATURE}` : "Hello!" })],
];

/** The scripted model: the next step of the message the conversation is at. */
export function scriptedModel(request: SeenRequest): Reply {
  const messages = request.body.messages as { role: string; content: string | null }[];
  const user = messages.findLastIndex((m) => m.role === "user");
  const text = String(messages[user]?.content ?? "");
  const index = STEPS.flat().indexOf(text);
  const steps = SCRIPTS[index];
  if (!steps) return { text: `The scripted model has no script for: ${text}` };
  const after = messages.slice(user + 1);
  const step = steps[after.filter((m) => m.role === "assistant").length];
  if (!step) return { text: "The scripted model's script is over." };
  const results = after.filter((m) => m.role === "tool").map((m) => String(m.content));
  try {
    return step({ results, system: String(messages[0]?.content ?? "") });
  } catch {
    // a build that failed: the script cannot go on, and says what it read
    return { text: `The scripted model stops here: ${results.at(-1)?.slice(0, 4000)}` };
  }
}
