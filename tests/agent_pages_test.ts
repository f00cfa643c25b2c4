/**
 * Long tool results as the model reads them: a file, a folder's list, a
 * search and a call's result come in pages of whole lines from the top, each
 * ending with the exact offset of the next; a model that follows the offsets
 * reads the whole, and a long Markdown file starts with its contents.
 */
import assert from "node:assert/strict";
import { agentWorld, messagesOf } from "./agent_world.ts";
import type { SeenRequest } from "./model_server.ts";
import type { Reply } from "./model_server.ts";

/** The newest tool result of a request (OpenAI's form). */
function lastResult(r: SeenRequest): string {
  const messages = r.body.messages as { role: string; content: string }[];
  return messages.findLast((m) => m.role === "tool")?.content ?? "";
}

/** The offset that a page names for the next one. */
function nextOffset(text: string): number | undefined {
  const found = /with offset (\d+)(?:, or narrow[^\]]*)?\]\n?$/.exec(text);
  return found ? Number(found[1]) : undefined;
}

/** A script that calls `tool` with `args`, then again with each offset the result names. */
function follow(tool: string, args: Record<string, unknown>): (r: SeenRequest) => Reply {
  return (r) => {
    if (r.n === 1) return { toolCalls: [{ name: tool, arguments: args }] };
    const offset = nextOffset(lastResult(r));
    if (offset === undefined) return { text: "read it all" };
    return { toolCalls: [{ name: tool, arguments: { ...args, offset } }] };
  };
}

/** The tool results of the turn, in order. */
function results(w: { server: { requests: SeenRequest[] } }): string[] {
  const n = w.server.requests.length;
  return (messagesOf(w.server as never, n) as { role: string; content: string }[])
    .filter((m) => m.role === "tool").map((m) => m.content);
}

Deno.test("read_file: a long document in pages that name the next offset; the pages make the whole", async () => {
  const lines = ["# A long guide"];
  for (let s = 1; s <= 30; s++) {
    lines.push(`## ${s}. Section ${s}`);
    for (let i = 0; i < 50; i++) lines.push(`Section ${s}, line ${i}: ${"text ".repeat(8)}`);
  }
  const doc = lines.join("\n") + "\n";
  await using w = await agentWorld({
    files: { "state/guide.md": doc },
    script: follow("read_file", { path: "/state/guide.md" }),
  });
  assert.equal((await w.chat("read the guide")).response.result, "read it all");
  const pages = results(w);
  assert.ok(pages.length >= 3, `${pages.length} pages`);
  // the first page starts with the contents: each section's line in the whole file
  assert.match(pages[0], /^\[contents of this 1531-line file/);
  assert.match(pages[0], /\n {3}53 {2}## 2\. Section 2\n/);
  let whole = "";
  for (const [i, page] of pages.entries()) {
    const body = i === 0 ? page.split("[the file from line 1:]\n")[1] : page;
    const next = nextOffset(body);
    const text = next === undefined ? body : body.slice(0, body.lastIndexOf("[lines "));
    if (next !== undefined) {
      assert.match(
        body,
        new RegExp(`\\[lines \\d+-${next - 1} of 1531 shown; the next page: read_file`),
      );
      assert.equal(
        next,
        whole.split("\n").length + text.split("\n").length - 1,
        "an absolute line",
      );
    }
    whole += text;
  }
  assert.equal(whole, doc);
});

Deno.test("list_dir and search: pages that name the next offset", async () => {
  const files: Record<string, string> = {};
  for (let i = 0; i < 1200; i++) {
    files[`state/many/f${String(i).padStart(4, "0")}.txt`] = "needle\n";
  }
  {
    await using w = await agentWorld({
      files,
      script: follow("list_dir", { path: "/state/many" }),
    });
    await w.chat("list");
    const pages = results(w);
    assert.equal(pages.length, 2);
    assert.match(
      pages[0],
      /\[entries 1-1000 of 1200 shown; the next page: list_dir with offset 1001\]$/,
    );
    assert.match(pages[1], /^f1000\.txt \(7 bytes\)\n/);
    assert.match(pages[1], /f1199\.txt \(7 bytes\)$/);
  }
  {
    await using w = await agentWorld({
      files,
      script: follow("search", { pattern: "needle", path: "/state/many" }),
    });
    await w.chat("search");
    const pages = results(w);
    assert.equal(pages.length, 6);
    assert.match(pages[0], /\[matches 1-200 of 1200 shown; the next page: search with offset 201/);
    assert.match(pages[5], /^\/state\/many\/f1000\.txt:1: needle\n/);
    assert.doesNotMatch(pages[5], /\[matches/);
  }
});

Deno.test("a call's long result: its first page, and the whole kept for read_file", async () => {
  const items = Array.from({ length: 3000 }, (_, i) => `item ${i}`);
  await using w = await agentWorld({
    script: (r) => {
      if (r.n === 1) {
        return {
          toolCalls: [{ name: "call", arguments: { method: "probe.echo", params: { items } } }],
        };
      }
      const found = /kept whole in (\S+): the next page is read_file of \S+ with offset (\d+)\]/
        .exec(lastResult(r));
      if (r.n === 2 && found) {
        return {
          toolCalls: [{
            name: "read_file",
            arguments: { path: found[1], offset: Number(found[2]) },
          }],
        };
      }
      return { text: "done" };
    },
  });
  assert.equal((await w.chat("echo")).response.result, "done");
  const [first, rest] = results(w);
  const whole = JSON.stringify({ items }, null, 2);
  const note = first.trimEnd().split("\n").at(-1)!;
  assert.match(note, new RegExp(`^\\[probe\\.echo's result is ${whole.length} bytes, 3004 lines`));
  const shown = first.slice(0, first.lastIndexOf("[probe.echo"));
  assert.ok(whole.startsWith(shown), "the first page is whole lines of the result");
  assert.ok(
    rest.startsWith(whole.slice(shown.length).split("\n")[0]),
    "the next page goes on from there",
  );
});
