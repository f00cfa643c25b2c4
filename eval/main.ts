/**
 * `deno task eval`: the agent on tasks a person would ask, each checked
 * through calls after its turns; per task it prints whether it passed, the
 * model requests, tokens in and out, and seconds of model time and of host
 * time.
 *
 *     deno task eval                      the scripted model (a regression test)
 *     deno task eval --world WORLD        the model of WORLD/config/agent.yaml
 *     deno task eval --tasks todo,import  only these tasks (the later ones build on the earlier)
 *
 * Each run makes a fresh world; `--world` only lends its `config/agent.yaml`.
 *
 * @module
 */
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { resolveCacheDir } from "../core/components/cache.ts";
import { startModelServer } from "../tests/model_server.ts";
import { formatResults, runEval } from "./run.ts";
import { scriptedModel } from "./scripted.ts";
import { TASKS } from "./tasks.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    world: { type: "string" },
    tasks: { type: "string" },
    "cache-dir": { type: "string" },
  },
});
const names = values.tasks?.split(",");
const unknown = names?.filter((n) => !TASKS.some((t) => t.name === n)) ?? [];
if (unknown.length) {
  console.error(
    `no task ${unknown.join(", ")}: the tasks are ${TASKS.map((t) => t.name).join(", ")}`,
  );
  Deno.exit(2);
}
const tasks = names ? TASKS.filter((t) => names.includes(t.name)) : TASKS;
const server = values.world ? undefined : await startModelServer({
  api: "openai-chat-completions",
  script: scriptedModel,
  token: "eval",
});
try {
  const agentYaml = values.world
    ? await Deno.readTextFile(join(values.world, "config", "agent.yaml"))
    : `api: openai-chat-completions\nbase_url: ${server!.url}\nmodel: scripted\ntoken: eval\n`;
  console.log(
    `model: ${values.world ? `${values.world}/config/agent.yaml` : "the scripted model"}`,
  );
  const results = await runEval({
    tasks,
    agentYaml,
    cacheDir: resolve(resolveCacheDir(values["cache-dir"])),
    onResult: (r) => console.log(`${r.name}: ${r.passed ? "passed" : `failed: ${r.why}`}`),
  });
  console.log(`\n${formatResults(results)}`);
  if (results.some((r) => !r.passed)) Deno.exitCode = 1;
} finally {
  await server?.close();
}
