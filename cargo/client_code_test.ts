/**
 * `/proc/core/plugins/<name>/client.rs` comes from the SDK's own generator,
 * run by the host as a component.
 */
import assert from "node:assert/strict";
import { eventually, startWorld } from "../tests/world.ts";

Deno.test("client.rs shows the code import! generates from the plugin's document", async () => {
  await using w = await startWorld({ plugins: { probe: "probe", notes: "notes_v1" } });
  const read = async () =>
    ((await w.call("probe.read_file", { path: "/proc/core/plugins/notes/client.rs" })) as {
      text: string;
    }).text;
  assert.match(await read(), /being generated|fn add/);
  let text = "";
  await eventually(async () => !/being generated/.test(text = await read()), 120_000);
  assert.match(text, /fn add/, text);
  assert.match(text, /text/, "the params keep their names");
  assert.doesNotMatch(text, /could not be generated/, text);
});
