/**
 * What a model reads stays short and its links lead somewhere: the SDK's
 * README (the guide the agent's system prompt points to) under 10 KB, and
 * every relative link of PROTOCOL.md and `docs/` to a file and heading that
 * exist; PROTOCOL.md, served in every world, under 30,000 bytes with a link
 * to each file of `docs/`.
 */
import assert from "node:assert/strict";
import { dirname, join } from "node:path";

const ROOT = new URL("../", import.meta.url).pathname;

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as `-`. */
function anchor(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N} _-]/gu, "").replace(/ /g, "-");
}

Deno.test("the plugin author's guide is under 10 KB, and the prompt points to it", async () => {
  const guide = await Deno.readFile(join(ROOT, "sdk/README.md"));
  assert.ok(guide.length < 10_000, `sdk/README.md is ${guide.length} bytes`);
  const prompt = await Deno.readTextFile(join(ROOT, "plugins/agent/src/prompt.rs"));
  assert.match(prompt, /read the guide \/plugins\/cargo\/sdk\/README\.md/);
  assert.match(prompt, /\/plugins\/cargo\/ is not a plugin folder/);
});

Deno.test("PROTOCOL.md and docs/: every relative link names a file and heading that exist", async () => {
  const files = [
    "PROTOCOL.md",
    ...[...Deno.readDirSync(join(ROOT, "docs"))].map((e) => `docs/${e.name}`),
  ];
  let links = 0;
  for (const file of files) {
    const text = await Deno.readTextFile(join(ROOT, file));
    for (const [, target] of text.matchAll(/\]\(([^)#:]+\.md)(?:#([^)]+))?\)/g)) {
      links++;
      const path = join(ROOT, dirname(file), target);
      const linked = await Deno.readTextFile(path).catch(() => undefined);
      assert.ok(linked !== undefined, `${file} links ${target}, which does not exist`);
    }
    for (const [, target, hash] of text.matchAll(/\]\(([^)#:]+\.md)#([^)]+)\)/g)) {
      const linked = await Deno.readTextFile(join(ROOT, dirname(file), target));
      const anchors = [...linked.matchAll(/^#+ (.+)$/gm)].map(([, h]) => anchor(h));
      assert.ok(anchors.includes(hash), `${file} links ${target}#${hash}: no such heading`);
    }
  }
  assert.ok(links >= 8, `${links} links`);
});

Deno.test("PROTOCOL.md stays under 30,000 bytes and links every file of docs/", async () => {
  const protocol = await Deno.readFile(join(ROOT, "PROTOCOL.md"));
  assert.ok(
    protocol.length < 30_000,
    `PROTOCOL.md is ${protocol.length} bytes: move what serves clients or the operator to docs/`,
  );
  const text = new TextDecoder().decode(protocol);
  for (const entry of Deno.readDirSync(join(ROOT, "docs"))) {
    assert.ok(
      text.includes(`](docs/${entry.name}`),
      `PROTOCOL.md does not link docs/${entry.name}: link it where its section is`,
    );
  }
});
