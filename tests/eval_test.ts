/**
 * `deno task eval` against the scripted model, as a regression test: every
 * task passes (a todo plugin, a typed import, an upgrade that migrates its
 * state, a change the compatibility check refuses and then done right, an
 * endpoint service in boot.yaml, the agent changing its own source), and
 * the journal's figures are there.
 */
import assert from "node:assert/strict";
import { formatResults, runEval } from "../eval/run.ts";
import { scriptedModel } from "../eval/scripted.ts";
import { TASKS } from "../eval/tasks.ts";
import { startModelServer } from "./model_server.ts";
import { TEST_CACHE_DIR } from "./world.ts";

Deno.test({
  name: "the evaluation's tasks pass against the scripted model",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await using server = await startModelServer({
      api: "openai-chat-completions",
      script: scriptedModel,
      token: "eval",
    });
    const results = await runEval({
      tasks: TASKS,
      agentYaml:
        `api: openai-chat-completions\nbase_url: ${server.url}\nmodel: scripted\ntoken: eval\n`,
      cacheDir: TEST_CACHE_DIR,
    });
    const table = formatResults(results);
    assert.deepEqual(results.map((r) => r.name), TASKS.map((t) => t.name));
    assert.ok(results.every((r) => r.passed), table);
    for (const r of results) {
      assert.ok(r.requests >= 1 && r.inputTokens > 0 && r.outputTokens > 0, table);
      assert.ok(r.hostSeconds > 0 && r.modelSeconds >= 0, table);
    }
    // the compatibility task met the refusal before it did it right
    const refused = server.requests.some((request) =>
      (request.body.messages as { role: string; content: string }[]).some((m) =>
        m.role === "tool" && m.content.startsWith("error -32003") && m.content.includes("reset")
      )
    );
    assert.ok(refused, "core.activate of counter without reset was refused while dash imported it");
    assert.match(table, /6 of 6 tasks passed/);
  },
});
