/**
 * Every refused call is in the journal with its error (PROTOCOL section 7):
 * what the host refuses before or instead of running a plugin, and the
 * errors plugins answer, each findable with `core.log`.
 */
import assert from "node:assert/strict";
import { startWorld, type TestWorld } from "./world.ts";

interface Entry {
  pid: string | null;
  plugin: string | null;
  stream: string;
  line: string;
}

/** The entries `core.log` finds, asked as a plugin would. */
async function log(w: TestWorld, query: Record<string, unknown>): Promise<Entry[]> {
  w.host.journal.flush();
  return ((await w.call("core.log", query)) as { entries: Entry[] }).entries;
}

Deno.test("calls the host refuses are journaled with the method, the params, the caller and the error", async () => {
  await using w = await startWorld();
  const cases: [string, Record<string, unknown>, number][] = [
    ["nosuch.add", { text: "milk" }, -32001], // no such plugin
    ["nodot", {}, -32601], // not a method name
    ["core.nosuch", {}, -32601], // no such core method
    ["core.lock", {}, -32602], // bad params of the core
    ["core.stop", { pid: "probe-none" }, -32602],
    ["core.call", { method: "nosuch.add" }, -32001],
  ];
  for (const [method, params, code] of cases) {
    const r = await w.request(method, params);
    assert.equal(r.error?.code, code, `${method}: ${JSON.stringify(r)}`);
  }
  const refused = await log(w, { grep: "^refused the call " });
  assert.equal(refused.length, cases.length, refused.map((e) => e.line).join("\n"));
  for (const [i, [method, params, code]] of cases.entries()) {
    const e = refused[i];
    assert.equal(e.stream, "core");
    assert.equal(e.pid, null, "a client's call has no process");
    assert.ok(
      e.line.startsWith(
        `refused the call ${method} ${JSON.stringify(params)} from console: error ${code}: `,
      ),
      e.line,
    );
  }
  // by the plugin called, as `log nosuch` in the console would ask
  const byPlugin = await log(w, { plugin: "nosuch" });
  assert.equal(byPlugin.length, 1);
  assert.match(byPlugin[0].line, /error -32001: there is no plugin "nosuch"/);
});

Deno.test("a process's refused calls are journaled under its own ID, an ID in flight too", async () => {
  await using w = await startWorld();
  const outcome = (await w.call("probe.call", { method: "nosuch.add", params: {} })) as {
    response: { error: { code: number } };
  };
  assert.equal(outcome.response.error.code, -32001);
  const [refused] = await log(w, { plugin: "nosuch" });
  assert.match(refused.pid!, /^probe-/);
  assert.match(
    refused.line,
    new RegExp(`^refused the call nosuch\\.add \\{\\} from ${refused.pid}: error -32001: `),
  );

  const line = [
    JSON.stringify({ jsonrpc: "2.0", id: 7, method: "probe.sleep", params: { ms: 200 } }),
    JSON.stringify({ jsonrpc: "2.0", id: 7, method: "probe.echo", params: {} }),
  ].join("\n");
  await w.call("probe.raw", { line });
  const inFlight = await log(w, { grep: "already in flight" });
  assert.equal(inFlight.length, 1);
  assert.match(
    inFlight[0].line,
    /^refused the call probe\.echo \{\} from probe-.*: error -32600: /,
  );
});

Deno.test("an error a plugin answers is journaled under its process with the caller; a native plugin's too", async () => {
  await using w = await startWorld();
  const failed = await w.request("probe.fail");
  assert.equal(failed.error?.code, 4711);
  const unknown = await w.request("probe.nosuch");
  assert.equal(unknown.error?.code, -32601);
  const build = await w.request("cargo.build", {});
  assert.equal(build.error?.code, -32602);

  const probe = await log(w, { plugin: "probe", grep: "^answered " });
  assert.deepEqual(
    probe.map((e) => e.line.replace(/:.*/, "")),
    [
      "answered probe.fail from console with error 4711",
      "answered probe.nosuch from console with error -32601",
    ],
  );
  assert.match(probe[0].line, /: probe failed on purpose$/);
  for (const e of probe) assert.match(e.pid!, /^probe-/);
  // the process's own lines tell the story: start, the error, the exit
  const story = (await log(w, { pid: probe[0].pid })).map((e) => e.line);
  assert.match(story[0], /^start fail /);
  assert.ok(story.some((l) => l.startsWith("answered probe.fail")));

  const [cargo] = await log(w, { plugin: "cargo", grep: "^answered " });
  assert.match(
    cargo.line,
    /^answered cargo\.build from console with error -32602: cargo\.build needs "plugin"/,
  );
  // a successful call adds nothing of the kind
  await w.call("probe.echo", { ok: true });
  assert.equal((await log(w, { grep: "^answered probe\\.echo" })).length, 0);
});
