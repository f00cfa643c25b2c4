import assert from "node:assert/strict";
import { join } from "node:path";
import { DEFAULT_PAGER, pagerCommand, pagerFound, runPager, screenRows } from "./pager.ts";

Deno.test("the pager is $PAGER, less -FRX without it, and none when it is empty or cat", () => {
  assert.equal(pagerCommand(undefined), DEFAULT_PAGER);
  assert.equal(DEFAULT_PAGER, "less -FRX");
  assert.equal(pagerCommand("most -s"), "most -s");
  assert.equal(pagerCommand(""), null);
  assert.equal(pagerCommand(" cat "), null);
});

Deno.test("screenRows counts wrapped rows, without colour codes", () => {
  assert.equal(screenRows("a\nb\nc", 80), 3);
  assert.equal(screenRows("x".repeat(100), 40), 3);
  assert.equal(screenRows(`\x1b[2m${"x".repeat(40)}\x1b[22m`, 40), 1);
  assert.equal(screenRows("", 80), 1);
});

Deno.test("runPager gives the text to the pager's stdin, and says when it cannot start", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const out = join(dir, "paged.txt");
    assert.equal(await runPager(`cat > '${out}'`, "one\ntwo"), true);
    assert.equal(await Deno.readTextFile(out), "one\ntwo\n");
    assert.equal(await runPager("no-such-pager-anywhere", "x"), false);
    assert.equal(await pagerFound("LESS=R no-such-pager-anywhere -x"), false);
    assert.equal(await pagerFound("LESS=R cat"), true);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
