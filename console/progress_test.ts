/**
 * A build's progress in the console: `cargo.build` notifications go to the
 * one status line above the prompt (each replaces the last, one line each),
 * never into the printed output, and the line is cleared before the result.
 */
import { LocalHostView } from "../core/host_view.ts";
import assert from "node:assert/strict";
import { join } from "node:path";
import { startWorld } from "../tests/world.ts";
import { Commands, progressText } from "./commands.ts";
import { PLAIN } from "./format.ts";
import { parseLine } from "./parse.ts";

Deno.test("progressText is one line: the text, the crates compiled, and the call's label when shared", () => {
  assert.equal(
    progressText({ step: "compile", crates: 3, text: "compiled serde" }, undefined),
    "… compiled serde (3 crates compiled)",
  );
  assert.equal(
    progressText({ step: "test", text: "running the tests" }, "b"),
    "b: … running the tests",
  );
  assert.equal(progressText({ step: 1 }, undefined), '… {"step":1}');
});

Deno.test("a cargo.build in the console shows its progress on the status line, then clears it for the result", async () => {
  await using w = await startWorld();
  const src = join(w.root, "plugins", "notes", "source");
  await Deno.mkdir(join(src, "src"), { recursive: true });
  await Deno.copyFile(
    new URL("../plugins/notes/src/main.rs", import.meta.url).pathname,
    join(src, "src", "main.rs"),
  );
  await Deno.writeTextFile(
    join(src, "Cargo.toml"),
    `[package]\nname = "notes"\nversion = "0.1.0"\nedition = "2024"\n\n[dependencies]\nsausage-plugin = "0.1"\n`,
  );
  // what the terminal gets, in order
  const events: ({ status: string | null } | { print: string })[] = [];
  const commands = new Commands({
    view: new LocalHostView(w.host),
    style: PLAIN,
    print: (text) => events.push({ print: text }),
    status: (text) => events.push({ status: text }),
  });
  const line = 'cargo.build {"plugin": "notes"}';
  await commands.run(parseLine(line), line);

  const statuses = events.flatMap((e) => "status" in e && e.status !== null ? [e.status] : []);
  assert.ok(
    statuses.includes("… compiling the tests and the release component"),
    statuses.join("\n"),
  );
  assert.ok(statuses.includes("… running unittests src/main.rs"), statuses.join("\n"));
  assert.ok(statuses.some((s) => s.startsWith("… test result: ok.")), statuses.join("\n"));
  assert.ok(statuses.every((s) => !s.includes("\n")), "each progress is one line");
  // the status line is cleared before the result is printed, and nothing of the progress is printed
  const cleared = events.findIndex((e) => "status" in e && e.status === null);
  const printed = events.flatMap((e, i) => "print" in e ? [[i, e.print] as const] : []);
  assert.equal(printed.length, 1, JSON.stringify(printed));
  assert.ok(cleared >= 0 && cleared < printed[0][0]);
  assert.match(printed[0][1], /\/state\/cargo\/builds\/\d+\/notes\.wasm/);
  assert.doesNotMatch(printed[0][1], /running unittests/);
});
