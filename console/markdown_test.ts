import assert from "node:assert/strict";
import { renderMarkdown, visibleLength } from "./markdown.ts";

// deno-lint-ignore no-control-regex
const strip = (text: string) => text.replace(/\x1b\[[0-9;]*m/g, "");
const ESC = "\x1b[";

const SAMPLE = [
  "# Plan",
  "",
  "Build **notes** with *care*, see `cargo.build` and [the docs](https://example.org/d).",
  "",
  "- first",
  "- second",
  "  - nested",
  "",
  "1. one",
  "2. two",
  "",
  "```rust",
  "fn main() {}",
  "```",
  "",
  "> a quote",
  "",
  "| name | size |",
  "| --- | ---: |",
  "| a | 1 |",
  "| bbb | 22 |",
  "",
  "Fish & chips < 3.",
].join("\n");

Deno.test("without colours the Markdown is given back as written", () => {
  assert.equal(renderMarkdown(SAMPLE + "\n\n", { colors: false }), SAMPLE);
});

Deno.test("headings, emphasis, code and links are drawn with terminal codes, their markup gone", () => {
  const out = renderMarkdown(SAMPLE, { colors: true });
  const plain = strip(out).split("\n");
  assert.equal(plain[0], "Plan");
  assert.ok(out.includes(`${ESC}1m`), "bold");
  assert.ok(out.includes(`${ESC}3mcare`), "italic");
  assert.ok(out.includes(`${ESC}36mcargo.build`), "code span in cyan");
  assert.equal(
    plain[2],
    "Build notes with care, see cargo.build and the docs (https://example.org/d).",
  );
  assert.ok(!strip(out).includes("**") && !strip(out).includes("`"));
  assert.ok(plain.includes("Fish & chips < 3."), "entities are not escaped");
});

Deno.test("lists get bullets and numbers, nested items indented under their parent", () => {
  const plain = strip(renderMarkdown(SAMPLE, { colors: true })).split("\n");
  const at = plain.indexOf("• first");
  assert.ok(at > 0, plain.join("\n"));
  assert.deepEqual(plain.slice(at, at + 3), ["• first", "• second", "  • nested"]);
  assert.ok(plain.includes("1. one") && plain.includes("2. two"));
});

Deno.test("a code block keeps its lines, indented and coloured, under its language", () => {
  const out = renderMarkdown(SAMPLE, { colors: true });
  const plain = strip(out).split("\n");
  const at = plain.indexOf("  rust");
  assert.ok(at > 0);
  assert.equal(plain[at + 1], "  fn main() {}");
  assert.ok(out.includes(`${ESC}36mfn main() {}`));
});

Deno.test("quotes get a bar and tables aligned columns (right-aligned where asked)", () => {
  const plain = strip(renderMarkdown(SAMPLE, { colors: true })).split("\n");
  assert.ok(plain.includes("│ a quote"));
  const head = plain.findIndex((l) => l.startsWith("name"));
  assert.deepEqual(plain.slice(head, head + 4), [
    "name  size",
    "────  ────",
    "a        1",
    "bbb     22",
  ]);
});

Deno.test("task items and a rule", () => {
  const plain = strip(renderMarkdown("- [x] done\n- [ ] todo\n\n---", { colors: true, width: 5 }))
    .split("\n");
  assert.deepEqual(plain, ["• [x] done", "• [ ] todo", "", "─────"]);
});

Deno.test("visibleLength does not count colour codes", () => {
  assert.equal(visibleLength(`${ESC}1mab${ESC}22m`), 2);
});
