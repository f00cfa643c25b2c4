import assert from "node:assert/strict";
import { needs, onPath, TOOLS } from "./tools.ts";

const ROOT = new URL("../", import.meta.url);

Deno.test("README's Install names every program of the tests, and .ci/run installs each", async () => {
  const readme = await Deno.readTextFile(new URL("README.md", ROOT));
  const install = readme.slice(
    readme.indexOf("## Install"),
    readme.indexOf("\n## ", readme.indexOf("## Install") + 1),
  );
  const ci = await Deno.readTextFile(new URL(".ci/run", ROOT));
  for (const [name, tool] of Object.entries(TOOLS)) {
    assert.ok(install.includes(`\`${name}\``), `README's Install does not name ${name}`);
    const command = tool.install.split(" (")[0];
    assert.ok(install.includes(command), `README's Install does not say ${command}`);
    assert.ok(ci.includes(`command -v ${name} `), `.ci/run does not install ${name}`);
  }
});

Deno.test("a missing program makes an ignored test that says what installs it", () => {
  const saved = Deno.env.get("CHROMIUM");
  Deno.env.set("CHROMIUM", "/no/such/chromium");
  try {
    // looked up afresh: the tools module remembers only what it found for real tests
    const found = TOOLS.chromium.find();
    assert.deepEqual(found, { missing: "CHROMIUM=/no/such/chromium does not run" });
  } finally {
    if (saved === undefined) Deno.env.delete("CHROMIUM");
    else Deno.env.set("CHROMIUM", saved);
  }
  assert.deepEqual(needs([], "nothing needed"), { name: "nothing needed", ignore: false });
  assert.equal(onPath("no-such-program-anywhere"), undefined);
  assert.ok(onPath("sh"));
});

Deno.test("the tests name no folder of one machine: what lies outside the checkout is relative to it or in a variable", async () => {
  const found: string[] = [];
  for (const dir of ["tests", "faults", "bench"]) {
    for await (const entry of Deno.readDir(new URL(`${dir}/`, ROOT))) {
      if (!entry.isFile || !entry.name.endsWith(".ts")) continue;
      const text = await Deno.readTextFile(new URL(`${dir}/${entry.name}`, ROOT));
      for (const m of text.matchAll(/["'`](\/(?:work|home|Users|root)\/[^"'`]*)["'`]/g)) {
        if (entry.name !== "tools_test.ts") found.push(`${dir}/${entry.name}: ${m[1]}`);
      }
    }
  }
  assert.deepEqual(found, []);
});
