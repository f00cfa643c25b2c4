import assert from "node:assert/strict";
import { testPlugin } from "../../tests/setup.ts";
import { strictStrings, transpileComponent } from "./transpile.ts";

Deno.test("the glue of a real component decodes the strings a plugin passes strictly", async () => {
  const bytes = await Deno.readFile(await testPlugin("probe"));
  const { js } = await transpileComponent(bytes, "probe");
  assert.match(js, /const TEXT_DECODER_UTF8 = new TextDecoder\("utf-8", \{ fatal: true \}\);/);
  assert.doesNotMatch(js, /new TextDecoder\(\);/);
});

Deno.test("strictStrings changes only the decoder of strings", () => {
  const glue = "const a = 1;\nconst TEXT_DECODER_UTF8 = new TextDecoder();\nconst b = 2;";
  assert.equal(
    strictStrings(glue),
    'const a = 1;\nconst TEXT_DECODER_UTF8 = new TextDecoder("utf-8", { fatal: true });\nconst b = 2;',
  );
});
