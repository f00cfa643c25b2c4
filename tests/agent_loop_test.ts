/**
 * The whole loop, as a person would use it: the (scripted) model writes a
 * counter plugin, builds it with `cargo.build`, activates it with
 * `core.activate`, calls it, and answers. Afterwards the plugin really works.
 */
import assert from "node:assert/strict";
import { agentWorld, history } from "./agent_world.ts";
import type { Reply, SeenRequest } from "./model_server.ts";

/** The counter plugin the scripted model writes. */
export const COUNTER_CARGO = `[package]
name = "counter"
version = "0.1.0"
edition = "2024"

[dependencies]
sausage-plugin = "0.1"
`;

/** Its source, with a test (cargo.build runs it). */
export const COUNTER_MAIN = `//! A counter, kept in /state/counter/count.json.

use sausage_plugin::{Result, lock, rpc, state_dir, write_atomic};

/// The counter plugin.
struct Counter;

#[rpc]
impl Counter {
    /// Add one to the counter.
    ///
    /// Returns the new value.
    async fn increment(&self) -> Result<u64> {
        let file = state_dir().join("count.json");
        let _lock = lock(&file).await?;
        let n = read() + 1;
        write_atomic(&file, n.to_string())?;
        Ok(n)
    }

    /// The value of the counter (0 before the first increment).
    fn get(&self) -> Result<u64> {
        Ok(read())
    }
}

fn read() -> u64 {
    let file = state_dir().join("count.json");
    std::fs::read_to_string(file).ok().and_then(|t| t.trim().parse().ok()).unwrap_or(0)
}

fn main() {
    sausage_plugin::run(Counter);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[sausage_plugin::test]
    async fn increments() {
        assert_eq!(Counter.increment().await.unwrap(), 1);
        assert_eq!(Counter.get().unwrap(), 1);
    }
}
`;

/** The last tool result the model got, parsed as JSON. */
function lastToolResult(request: SeenRequest): Record<string, unknown> {
  const messages = (request.body as { messages: { role: string; content: string }[] }).messages;
  const tool = messages.findLast((m) => m.role === "tool");
  return JSON.parse(tool!.content);
}

/** The model's side of the whole loop, one reply per request. */
export function counterScript(request: SeenRequest): Reply {
  switch (request.n) {
    case 1:
      return {
        text: "I will write a counter plugin.",
        toolCalls: [
          {
            name: "write_file",
            arguments: { path: "/plugins/counter/source/Cargo.toml", content: COUNTER_CARGO },
          },
          {
            name: "write_file",
            arguments: { path: "/plugins/counter/source/src/main.rs", content: COUNTER_MAIN },
          },
        ],
      };
    case 2:
      return {
        toolCalls: [{
          name: "call",
          arguments: { method: "cargo.build", params: { plugin: "counter" } },
        }],
      };
    case 3: {
      const { wasm } = lastToolResult(request);
      return {
        toolCalls: [{
          name: "call",
          arguments: { method: "core.activate", params: { plugin: "counter", wasm } },
        }],
      };
    }
    case 4:
      return { toolCalls: [{ name: "call", arguments: { method: "counter.increment" } }] };
    default:
      return { text: `The counter works: it is now ${JSON.stringify(lastToolResult(request))}.` };
  }
}

Deno.test({
  name: "the agent writes, builds, activates and calls a counter plugin, which then works",
  // cargo.build compiles the SDK's dependencies once per cache
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await using w = await agentWorld({ script: counterScript });
    const chat = await w.chat("Make me a counter plugin and try it.");
    assert.equal(chat.response.error, undefined, JSON.stringify(chat.response.error));
    assert.equal(chat.response.result, "The counter works: it is now 1.");
    const tools = chat.steps.filter((s) => (s.blocks as string[]).includes("toolResponse"));
    assert.deepEqual(tools.map((s) => s.ok), [true, true, true, true, true]);
    assert.match(String(tools[2].text), /ok, 1 tests passed/);
    assert.ok(chat.progress.length > 0, "cargo.build's progress reached the caller");
    // the plugin is real: called directly, by the person, it goes on counting
    assert.equal(await w.call("counter.increment"), 2);
    assert.equal(await w.call("counter.get"), 2);
    const steps = await history(w);
    assert.equal(steps.at(-1)?.text, "The counter works: it is now 1.");
    assert.ok((steps.at(-1)?.ms ?? 0) > 0);
  },
});

Deno.test({
  name: "the agent rebuilds itself from its source in the world and activates the result",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await using w = await agentWorld({
      installAgent: true, // with its source in /plugins/agent/source/
      script: (request) => {
        if (request.n === 1) {
          return {
            toolCalls: [{
              name: "edit_file",
              arguments: {
                path: "/plugins/agent/source/src/prompt.rs",
                old_text: "Act with your tools; answer briefly.",
                new_text: "Act with your tools; answer briefly and kindly.",
              },
            }],
          };
        }
        if (request.n === 2) {
          return {
            toolCalls: [{
              name: "call",
              arguments: { method: "cargo.build", params: { plugin: "agent" } },
            }],
          };
        }
        if (request.n === 3) {
          const { wasm } = lastToolResult(request);
          return {
            toolCalls: [{
              name: "call",
              arguments: { method: "core.activate", params: { plugin: "agent", wasm } },
            }],
          };
        }
        return { text: `done ${request.n}` };
      },
    });
    const chat = await w.chat("Be kinder, and rebuild yourself.");
    assert.equal(chat.response.result, "done 4", JSON.stringify(chat.steps));
    const system = (request: number) =>
      String(
        (w.server.requests[request - 1].body as { messages: { content: string }[] }).messages[0]
          .content,
      );
    assert.doesNotMatch(system(4), /kindly/, "the turn finishes on the version it started with");
    assert.equal((await w.chat("hello again")).response.result, "done 5");
    assert.match(system(5), /answer briefly and kindly/, "the next message runs the new version");
  },
});
