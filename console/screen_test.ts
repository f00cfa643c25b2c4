import assert from "node:assert/strict";
import { fitLine, wrapLine } from "./screen.ts";

const dim = (t: string) => `\x1b[2m${t}\x1b[22m`;

Deno.test("wrapLine cuts a line into rows of the width; each row starts with the codes before it", () => {
  assert.deepEqual(wrapLine("abcdefg", 3), ["abc", "def", "g"]);
  assert.deepEqual(wrapLine("", 3), [""]);
  // the first row ends with a reset, the second opens the dim again
  assert.deepEqual(wrapLine(dim("abcd"), 2), ["\x1b[2mab\x1b[0m", "\x1b[2mcd\x1b[22m"]);
});

Deno.test("fitLine keeps the first visible characters and all colour codes", () => {
  assert.equal(fitLine(dim("… half way there"), 10), dim("… half way"));
  assert.equal(fitLine("short", 10), "short");
});
