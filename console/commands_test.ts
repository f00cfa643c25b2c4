import assert from "node:assert/strict";
import { eventually, startWorld, type TestWorld } from "../tests/world.ts";
import { commandsOn } from "./_testing.ts";
import { NO_AGENT_HINT } from "./commands.ts";
import { agentWorld } from "../tests/agent_world.ts";

/** Starts a detached `probe.linger` (it runs until stopped) and returns its pid. */
async function linger(w: TestWorld): Promise<string> {
  const before = new Set(w.host.processes.list().map((p) => p.pid));
  await w.call("core.call", { method: "probe.linger", params: {}, detach: true });
  const started = w.host.processes.list().find((p) => !before.has(p.pid));
  assert.ok(started, "the lingering process runs");
  return started.pid;
}

Deno.test("a call alone prints its result without a label", async () => {
  await using w = await startWorld();
  const c = commandsOn(w);
  await c.run('probe.echo {"a": 1}');
  assert.deepEqual(c.printed, ['  {\n    "a": 1\n  }']);
});

Deno.test("calls in flight together are labelled with the line that started them", async () => {
  await using w = await startWorld();
  const c = commandsOn(w);
  const slow = c.run('probe.sleep {"ms": 300}');
  await c.run('probe.echo {"n": 1}');
  await slow;
  assert.deepEqual(c.printed, [
    'probe.echo {"n": 1} →\n  {\n    "n": 1\n  }',
    'probe.sleep {"ms": 300} →\n  {\n    "slept": 300\n  }',
  ]);
});

Deno.test("notifications of a call come before its result", async () => {
  await using w = await startWorld();
  const c = commandsOn(w);
  await c.run('probe.progress {"count": 2}');
  assert.deepEqual(c.printed, [
    '  · progress {"step":0}',
    '  · progress {"step":1}',
    '  {\n    "steps": 2\n  }',
  ]);
});

Deno.test("errors show code, message, and the log of a crashed process", async () => {
  await using w = await startWorld();
  const c = commandsOn(w);
  await c.run("probe.fail");
  await c.run("probe.panic");
  assert.equal(c.printed[0], "  error 4711: probe failed on purpose");
  assert.match(c.printed[1], /^ {2}error -32002: probe\.panic: the process probe-.* ended/);
  assert.match(
    c.printed[1],
    /\n {2}last lines of its log:\n {4}start panic \{\} \(parent console\)\n/,
  );
  assert.match(c.printed[1], /probe: about to panic/);
});

Deno.test("a chat message without an agent shows the error and a hint", async () => {
  await using w = await startWorld();
  const c = commandsOn(w);
  await c.run("write me a plugin");
  assert.equal(c.printed.length, 1);
  assert.match(c.printed[0], /error -32001: there is no plugin "agent"/);
  assert.ok(c.printed[0].endsWith(`hint: ${NO_AGENT_HINT}`));
});

Deno.test("a line that is not valid sends nothing", async () => {
  await using w = await startWorld();
  const c = commandsOn(w);
  await c.run("probe.echo [1]");
  assert.match(c.printed[0], /must be a JSON object/);
  const entries = w.host.journal.query({ plugin: "probe" });
  assert.deepEqual(entries, [], "no process was started");
});

Deno.test("ps lists running processes with their parent", async () => {
  await using w = await startWorld();
  const c = commandsOn(w);
  await c.run("ps");
  assert.equal(c.printed[0], "  no processes");
  const pid = await linger(w);
  const slow = c.run('probe.sleep {"ms": 300}');
  await eventually(() => w.host.processes.list().some((p) => p.method === "sleep"));
  await c.run("ps");
  const table = c.printed[1].split("\n");
  assert.match(table[0], /^ {2}PID +CALL +STATE +PARENT +AGE$/);
  assert.ok(table.some((r) => r.includes(pid) && /probe\.linger +running +detached +\d+s/.test(r)));
  assert.ok(table.some((r) => /probe-\S+ +probe\.sleep +running +console +\d+s/.test(r)));
  await slow;
});

Deno.test("stop and kill take a unique start of a process ID", async () => {
  await using w = await startWorld();
  const c = commandsOn(w);
  const a = await linger(w);
  const b = await linger(w);
  await c.run("kill probe-");
  assert.match(c.printed[0], /"probe-" is the start of 2 process IDs/);
  assert.equal(w.host.processes.get(a)?.state, "running", "nothing was killed");
  await c.run(`stop ${a.slice(0, -3)}`);
  assert.equal(c.printed[1], `  stopped ${a}`);
  assert.equal(w.host.processes.get(a), undefined);
  await c.run(`kill ${b}`);
  assert.equal(c.printed[2], `  killed ${b}`);
  await c.run("stop probe-0197f3a2-7c1e-7d2b-9a41-5f0c2e8b1d34");
  assert.match(c.printed[3], /error -32602: core\.stop: there is no running process/);
});

Deno.test("log shows journal entries of a plugin or a process, newest last", async () => {
  await using w = await startWorld();
  const c = commandsOn(w);
  await c.run('probe.log {"lines": 3, "text": "hello"}');
  const pid = w.host.journal.query({ plugin: "probe" })[0].pid!;
  await eventually(() => w.host.processes.get(pid) === undefined);
  await c.run("log probe -n 3");
  const lines = c.printed[1].split("\n");
  assert.equal(lines.length, 3);
  assert.match(
    lines[0],
    new RegExp(`^ {2}\\d\\d:\\d\\d:\\d\\d\\.\\d{3} {2}${pid} {2}stderr {2}hello 1$`),
  );
  assert.match(lines[1], /stderr {2}hello 2$/);
  assert.match(lines[2], /core {4}exit status 0$/);
  await c.run(`log ${pid} -n 1`);
  assert.match(c.printed[2], /^ {2}\d\d:\d\d:\d\d\.\d{3} {2}core {4}exit status 0$/);
  await c.run("log nothing-here");
  assert.equal(c.printed[3], "  no journal entries");
});

Deno.test("a chat prints the agent's tool steps as short lines, then its answer", async () => {
  await using w = await agentWorld({
    files: { "state/demo/a.txt": "A\nB\n" },
    script: [
      {
        text: "Let me read it.",
        toolCalls: [{ name: "read_file", arguments: { path: "/state/demo/a.txt" } }],
      },
      { toolCalls: [{ name: "read_file", arguments: { path: "/state/demo/none" } }] },
      { text: "It says A and B." },
    ],
  });
  const c = commandsOn(w);
  await c.run("what does a.txt say?");
  assert.deepEqual(c.printed, [
    "  Let me read it.",
    "  ▸ read_file /state/demo/a.txt … lines 1-2 of 2",
    "  ▸ read_file /state/demo/none … cannot read /state/demo/none: No such file or directory (os error 44)",
    "  It says A and B.",
  ]);
});

Deno.test("sessions, history and reset show and reset the agent's conversations", async () => {
  await using w = await agentWorld({
    script: [
      { toolCalls: [{ name: "list_dir", arguments: { path: "/state" } }] },
      { text: "There is a folder.", usage: { input: 10, output: 3 } },
    ],
  });
  const c = commandsOn(w);
  assert.match(await c.output("history"), /no steps yet/);
  await c.run("what is in /state?");
  assert.match(
    await c.output("sessions"),
    /SESSION +STEPS +LAST +FIRST MESSAGE\n {2}default +4 +\S+ +what is in \/state\?/,
  );
  const history = (await c.output("history")).split("\n").map((l) =>
    l.replace(/\d\d:\d\d:\d\d\.\d{3}/, "T")
  );
  assert.deepEqual(history, [
    "  T  > what is in /state?",
    "  T  ▸ list_dir /state … 2 entries",
    "  T",
    history[3],
  ]);
  assert.match(history[3], /^ {4}There is a folder\. \(\d+ \+ \d+ tokens, \d+\.\d s\)$/);
  assert.equal((await c.output("history -n 1")).split("\n").length, 2);
  assert.equal(await c.output("reset"), "  default starts afresh");
  assert.match(await c.output("history -n 1"), /A fresh context: agent\.reset/);
});

Deno.test("a typo of a command gets did you mean, and nothing is called", async () => {
  await using w = await startWorld();
  const c = commandsOn(w);
  const before = w.host.processes.list().length;
  assert.equal(
    await c.output("psx"),
    "  did you mean `ps`? (psx is not a command; to send it to the agent, add a word or a ?)",
  );
  assert.match(await c.output("lg -n 5"), /did you mean `log`\?/);
  assert.equal(w.host.processes.list().length, before);
});

Deno.test("params that are not JSON get an example made from the method's own params", async () => {
  await using w = await startWorld();
  const c = commandsOn(w);
  const text = await c.output("cargo.build [1]");
  assert.match(text, /must be a JSON object/);
  assert.match(text, /for example: cargo\.build \{"plugin": "notes"\}$/);
  assert.match(await c.output("probe.echo {oops"), /for example: probe\.echo \{\}$/);
  assert.match(await c.output("nothere.do {oops"), /for example: nothere\.do \{\}$/);
});

Deno.test("graph shows the world's plugins, and an import of a missing plugin", async () => {
  // agent_v1 imports notes, which this world lacks
  await using w = await startWorld({ plugins: { probe: "probe", agent: "agent_v1" } });
  await eventually(() => w.host.graph.view.plugins.agent?.imports.notes?.status === "missing");
  const c = commandsOn(w);
  const text = await c.output("graph");
  assert.match(text, /^ {2}cargo\s+built in$/m);
  assert.match(text, /^ {2}probe\s+[0-9a-f]{8}$/m);
  assert.match(text, /^ {2}agent\s+[0-9a-f]{8}\n {4}└─ notes\s+missing\s+\S+/m);
  assert.match(text, /there is no plugin notes/);
  assert.match(text, /\d+ plugins, 1 import: 1 missing$/);
});

Deno.test("stopCalls stops the calls in flight, and their answers print as stopped", async () => {
  await using w = await startWorld();
  const c = commandsOn(w);
  const sleeping = c.run('probe.sleep {"ms": 60000}');
  const echo = c.run("probe.echo");
  await echo;
  await eventually(() => w.host.processes.list().some((p) => p.method === "sleep"));
  const stopped = await c.commands.stopCalls();
  assert.equal(stopped.length, 1);
  assert.equal(stopped[0].label, 'probe.sleep {"ms": 60000}');
  assert.match(stopped[0].pid ?? "", /^probe-/);
  assert.equal(stopped[0].killed, false);
  // a second time: what still runs is killed at once, without its 5 s of grace
  const started = performance.now();
  const again = await c.commands.stopCalls();
  assert.deepEqual(again.map((s) => s.killed), [true]);
  await sleeping;
  assert.ok(performance.now() - started < 4000, "killed, not left to its grace period");
  assert.equal(c.commands.inFlight, 0);
  assert.match(c.printed.at(-1) ?? "", /stopped$/);
});
