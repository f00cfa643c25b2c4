import assert from "node:assert/strict";
import { LocalHostView } from "../core/host_view.ts";
import { plugin } from "../sdk/build.ts";
import { eventually, startWorld } from "../tests/world.ts";
import { callEndpoint, EndpointError, parseEndpointFile } from "./endpoint_call.ts";
import { commandsOn } from "./_testing.ts";

Deno.test("an endpoint file: its address, owner and interface, or an error that shows the form", () => {
  assert.deepEqual(parseEndpointFile("tcp:127.0.0.1:41234 www-0197 control\n", "/p"), {
    hostname: "127.0.0.1",
    port: 41234,
    owner: "www-0197",
    interface: "control",
  });
  assert.throws(() => parseEndpointFile("hello", "/p"), /\/p is not an endpoint file/);
  assert.throws(() => parseEndpointFile("tcp:10.0.0.1:1 a b", "/p"), EndpointError);
});

Deno.test("the console calls the vault's endpoint; a stale file and a file that is no endpoint are refused", async () => {
  await using w = await startWorld({
    plugins: {},
    wasm: { secrets: await Deno.readFile(await plugin("secrets")) },
    files: { "config/boot.yaml": "- method: secrets.serve\n" },
  });
  await w.host.servicesStarted;
  const view = new LocalHostView(w.host);
  try {
    await eventually(async () => {
      try {
        return (await view.read("/run/secrets")).size > 0;
      } catch {
        return false;
      }
    }, 10_000);
    assert.deepEqual(
      await callEndpoint(view, "/run/secrets", "set", { name: "k", value: "v" }),
      { jsonrpc: "2.0", id: 2, result: null },
    );
    assert.equal((await callEndpoint(view, "/run/secrets", "get", { name: "k" })).result, "v");

    // through the console's own line: `call <file> <method> [params]`
    const console = commandsOn(w);
    assert.match(await console.output("call /run/secrets names {}"), /\[\s*"k"\s*\]/);
    assert.match(await console.output('call /run/secrets get {"name": 1}'), /-32602/);
    assert.match(
      await console.output("call /run/nothing names"),
      /\/run\/nothing/,
      "a missing file is an error that names it",
    );

    const line = new TextDecoder().decode((await view.read("/run/secrets")).bytes);
    const stale = line.replace(
      /secrets-[0-9a-f-]{36}/,
      "secrets-0197f3a2-7c1e-7d2b-9a41-5f0c2e8b1d34",
    );
    await Deno.writeTextFile(`${w.root}/state/stale`, stale);
    await assert.rejects(
      callEndpoint(view, "/state/stale", "names", {}),
      /\/state\/stale is stale: it names secrets-0197f3a2/,
    );
    await Deno.writeTextFile(`${w.root}/state/plain`, "hello\n");
    await assert.rejects(callEndpoint(view, "/state/plain", "names", {}), /not an endpoint file/);
    const closed = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = closed.addr.port;
    closed.close();
    await Deno.writeTextFile(`${w.root}/state/gone`, `tcp:127.0.0.1:${port} secrets-x vault\n`);
    await assert.rejects(callEndpoint(view, "/state/gone", "names", {}), /nothing answers/);
  } finally {
    await view.close();
  }
});
