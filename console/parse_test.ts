import assert from "node:assert/strict";
import {
  activateParams,
  type Command,
  DEFAULT_LOG_LIMIT,
  isMethodName,
  isProcessId,
  nearCommand,
  parseLine,
  resolvePid,
} from "./parse.ts";

const PID = "probe-0197f3a2-7c1e-7d2b-9a41-5f0c2e8b1d34";

function invalid(command: Command): { message: string; example: string; method?: string } {
  assert.equal(command.kind, "invalid", JSON.stringify(command));
  return command as { message: string; example: string; method?: string };
}

Deno.test("an empty or blank line is nothing", () => {
  assert.deepEqual(parseLine(""), { kind: "empty" });
  assert.deepEqual(parseLine("   \t "), { kind: "empty" });
});

Deno.test("a method name with or without params is a call", () => {
  assert.deepEqual(parseLine("probe.echo"), { kind: "call", method: "probe.echo", params: {} });
  assert.deepEqual(parseLine('  probe.echo {"a": 1, "b": [2]}  '), {
    kind: "call",
    method: "probe.echo",
    params: { a: 1, b: [2] },
  });
  assert.deepEqual(parseLine("notes.rpc.discover"), {
    kind: "call",
    method: "notes.rpc.discover",
    params: {},
  });
  assert.deepEqual(parseLine('core.log {"limit": 5}'), {
    kind: "call",
    method: "core.log",
    params: { limit: 5 },
  });
  assert.deepEqual(parseLine('my-plugin_2.do_it {"x":{"y":null}}'), {
    kind: "call",
    method: "my-plugin_2.do_it",
    params: { x: { y: null } },
  });
});

Deno.test("params that are not a JSON object are refused with an example", () => {
  for (const params of ["[1, 2]", '"milk"', "42", "null", "true"]) {
    const command = invalid(parseLine(`probe.echo ${params}`));
    assert.match(command.message, /must be a JSON object/);
    // the console makes the example from the method's own params
    assert.equal(command.method, "probe.echo");
  }
  assert.match(invalid(parseLine("probe.echo [1]")).message, /not an array/);
  for (const params of ["{a: 1}", "{'a': 1}", '{"a": 1', "milk"]) {
    const command = invalid(parseLine(`probe.echo ${params}`));
    assert.match(command.message, /are not JSON/);
    assert.equal(command.method, "probe.echo");
  }
});

Deno.test("method names have the form <plugin>.<method>", () => {
  assert.ok(isMethodName("probe.echo"));
  assert.ok(isMethodName("a.b.c"));
  assert.ok(!isMethodName("e.g."));
  assert.ok(!isMethodName("Hello.world"));
  assert.ok(!isMethodName(".echo"));
  assert.ok(!isMethodName("probe."));
  assert.ok(!isMethodName("probe"));
});

Deno.test("any other text is a message for the agent", () => {
  assert.deepEqual(parseLine("  write a plugin  "), { kind: "chat", text: "write a plugin" });
  assert.deepEqual(parseLine("e.g. a list"), { kind: "chat", text: "e.g. a list" });
  assert.deepEqual(parseLine("Hello.World"), { kind: "chat", text: "Hello.World" });
  assert.deepEqual(parseLine("# a heading"), { kind: "chat", text: "# a heading" });
});

Deno.test("command words are commands only when the rest fits", () => {
  assert.deepEqual(parseLine("ps"), { kind: "ps" });
  assert.deepEqual(parseLine(" help "), { kind: "help" });
  assert.deepEqual(parseLine("clear"), { kind: "clear" });
  assert.equal(parseLine("clear the list").kind, "chat");
  assert.deepEqual(parseLine("quit"), { kind: "quit" });
  assert.deepEqual(parseLine("exit"), { kind: "quit" });
  assert.equal(parseLine("help me write a plugin").kind, "chat");
  assert.equal(parseLine("ps is a command").kind, "chat");
  assert.equal(parseLine("exit the loop when done").kind, "chat");
  assert.equal(parseLine("stop the web server").kind, "chat");
  assert.equal(parseLine("log every request of www").kind, "chat");
  assert.equal(parseLine("Help me").kind, "chat");
  assert.equal(parseLine("graph").kind, "graph");
});

Deno.test("a typo of a command gets did-you-mean, not the agent", () => {
  assert.deepEqual(parseLine("psx"), { kind: "suggest", typed: "psx", command: "ps" });
  assert.deepEqual(parseLine("lg -n 5"), { kind: "suggest", typed: "lg", command: "log" });
  assert.deepEqual(parseLine("Help"), { kind: "suggest", typed: "Help", command: "help" });
  assert.deepEqual(parseLine("histroy -n 3"), {
    kind: "suggest",
    typed: "histroy",
    command: "history",
  });
  assert.deepEqual(parseLine("sesions"), {
    kind: "suggest",
    typed: "sesions",
    command: "sessions",
  });
  // a sentence, or a word near no command, goes to the agent
  for (const line of ["hello", "hi", "thanks", "lg is short for log", "yes", "psx?", "cot"]) {
    assert.equal(parseLine(line).kind, line === "cot" ? "suggest" : "chat", line);
  }
  assert.equal(nearCommand("ps"), null);
  assert.equal(nearCommand("stpo"), "stop");
});

Deno.test("stop and kill take one process ID", () => {
  assert.deepEqual(parseLine(`stop ${PID}`), { kind: "stop", pid: PID });
  assert.deepEqual(parseLine(`kill ${PID}`), { kind: "kill", pid: PID });
  assert.deepEqual(parseLine("kill probe-0197"), { kind: "kill", pid: "probe-0197" });
  const { message, example } = invalid(parseLine("stop"));
  assert.match(message, /needs a process ID/);
  assert.match(example, /^stop agent-/);
});

Deno.test("log takes a plugin or a process ID and -n N", () => {
  assert.deepEqual(parseLine("log"), { kind: "log", limit: DEFAULT_LOG_LIMIT });
  assert.deepEqual(parseLine("log probe"), { kind: "log", plugin: "probe", limit: 20 });
  assert.deepEqual(parseLine(`log ${PID}`), { kind: "log", pid: PID, limit: 20 });
  assert.deepEqual(parseLine("log probe -n 5"), { kind: "log", plugin: "probe", limit: 5 });
  assert.deepEqual(parseLine("log -n 5 probe"), { kind: "log", plugin: "probe", limit: 5 });
  assert.deepEqual(parseLine("log -n7"), { kind: "log", limit: 7 });
  for (const line of ["log -n", "log -n x", "log -n 0", "log -n 1.5", "log probe -n 99999"]) {
    assert.match(invalid(parseLine(line)).message, /-n takes a number/, line);
  }
  assert.match(invalid(parseLine("log -x")).message, /no option -x/);
  assert.match(invalid(parseLine("log Probe!")).message, /neither a plugin name/);
  assert.equal(invalid(parseLine("log -x")).example, "log agent -n 5");
});

Deno.test("process IDs have the form <plugin>-<uuidv7>", () => {
  assert.ok(isProcessId(PID));
  assert.ok(isProcessId("my-plugin-0197f3a2-7c1e-7d2b-9a41-5f0c2e8b1d34"));
  assert.ok(!isProcessId("probe"));
  assert.ok(!isProcessId("probe-0197f3a2"));
  assert.ok(!isProcessId("probe-0197f3a2-7c1e-4d2b-9a41-5f0c2e8b1d34")); // a v4 UUID
});

Deno.test("a pid argument may be a unique start of a running process ID", () => {
  const a = "probe-0197f3a2-7c1e-7d2b-9a41-5f0c2e8b1d34";
  const b = "probe-0197f3a2-8888-7d2b-9a41-5f0c2e8b1d34";
  assert.deepEqual(resolvePid(a, [a, b]), { pid: a });
  assert.deepEqual(resolvePid("probe-0197f3a2-7", [a, b]), { pid: a });
  assert.deepEqual(resolvePid("probe-0197", [a, b]), { ambiguous: [a, b] });
  assert.deepEqual(resolvePid("nope-1", [a, b]), { pid: "nope-1" });
  assert.deepEqual(resolvePid("x", []), { pid: "x" });
});

Deno.test("methods takes one plugin name", () => {
  assert.deepEqual(parseLine("methods notes"), { kind: "methods", plugin: "notes" });
  assert.deepEqual(parseLine("methods core"), { kind: "methods", plugin: "core" });
  assert.match(invalid(parseLine("methods")).message, /needs a plugin name/);
  assert.match(invalid(parseLine("methods Notes")).message, /not a plugin name/);
  assert.equal(parseLine("methods of sorting a list").kind, "chat");
  assert.equal(parseLine("methods?").kind, "chat");
});

Deno.test("activate takes a plugin and a file, or pairs, and --force", () => {
  const one = parseLine("activate notes /state/cargo/builds/7/notes.wasm");
  assert.deepEqual(one, {
    kind: "activate",
    items: [{ plugin: "notes", wasm: "/state/cargo/builds/7/notes.wasm" }],
    pairs: false,
    force: false,
  });
  assert.deepEqual(activateParams(one as Parameters<typeof activateParams>[0]), {
    plugin: "notes",
    wasm: "/state/cargo/builds/7/notes.wasm",
  });
  const forced = parseLine("activate --force notes /run/n.wasm");
  assert.deepEqual(activateParams(forced as Parameters<typeof activateParams>[0]), {
    plugin: "notes",
    wasm: "/run/n.wasm",
    force: true,
  });
  const pairs = parseLine("activate notes=/b/notes.wasm agent=/b/agent.wasm --force");
  assert.deepEqual(pairs, {
    kind: "activate",
    items: [{ plugin: "notes", wasm: "/b/notes.wasm" }, { plugin: "agent", wasm: "/b/agent.wasm" }],
    pairs: true,
    force: true,
  });
  assert.deepEqual(activateParams(pairs as Parameters<typeof activateParams>[0]), {
    plugins: [{ plugin: "notes", wasm: "/b/notes.wasm" }, {
      plugin: "agent",
      wasm: "/b/agent.wasm",
    }],
    force: true,
  });
  assert.deepEqual(
    activateParams({ items: [{ plugin: "a", wasm: "/a.wasm" }], pairs: true, force: false }),
    {
      plugins: [{ plugin: "a", wasm: "/a.wasm" }],
    },
  );
});

Deno.test("activate refuses what it cannot send, and leaves sentences to the agent", () => {
  assert.match(invalid(parseLine("activate")).message, /needs a plugin and its new \.wasm/);
  assert.match(invalid(parseLine("activate notes")).message, /needs the new \.wasm file/);
  assert.match(invalid(parseLine("activate notes state/n.wasm")).message, /starts with \//);
  assert.match(invalid(parseLine("activate Notes /n.wasm")).message, /not a plugin name/);
  assert.match(invalid(parseLine("activate notes /n.wasm -f")).message, /no option -f/);
  assert.match(invalid(parseLine("activate notes=/n.wasm agent /a.wasm")).message, /either/);
  assert.match(invalid(parseLine("activate notes=/a.wasm notes=/b.wasm")).message, /twice/);
  assert.match(invalid(parseLine("activate notes=")).message, /needs the path/);
  assert.match(invalid(parseLine("activate Bad=/b.wasm")).message, /not a plugin name/);
  assert.match(invalid(parseLine("activate a=b.wasm")).message, /starts with \//);
  assert.equal(parseLine("activate the new notes please").kind, "chat");
  assert.equal(parseLine("activate notes now").kind, "chat");
});

Deno.test("revert takes one plugin and --force", () => {
  assert.deepEqual(parseLine("revert notes"), { kind: "revert", plugin: "notes", force: false });
  assert.deepEqual(parseLine("revert notes --force"), {
    kind: "revert",
    plugin: "notes",
    force: true,
  });
  assert.match(invalid(parseLine("revert")).message, /needs a plugin name/);
  assert.match(invalid(parseLine("revert --force")).message, /needs a plugin name/);
  assert.match(invalid(parseLine("revert notes -x")).message, /no option -x; it has --force/);
  assert.match(invalid(parseLine("revert NOTES")).message, /not a plugin name/);
  assert.equal(parseLine("revert my last change").kind, "chat");
});

Deno.test("ls takes -l and a path; cat takes a path", () => {
  assert.deepEqual(parseLine("ls"), { kind: "ls", path: "/", long: false });
  assert.deepEqual(parseLine("ls /proc"), { kind: "ls", path: "/proc", long: false });
  assert.deepEqual(parseLine("ls -l"), { kind: "ls", path: "/", long: true });
  assert.deepEqual(parseLine("ls plugins -l"), { kind: "ls", path: "plugins", long: true });
  assert.match(invalid(parseLine("ls -a")).message, /no option -a; it has -l/);
  assert.equal(parseLine("ls the plugins").kind, "chat");
  assert.deepEqual(parseLine("cat /config/boot.yaml"), { kind: "cat", path: "/config/boot.yaml" });
  assert.match(invalid(parseLine("cat")).message, /needs the path of a file/);
  assert.equal(parseLine("cat is an animal").kind, "chat");
});

Deno.test("sessions, history and reset are commands only when the rest fits them", () => {
  assert.deepEqual(parseLine("sessions"), { kind: "sessions" });
  assert.deepEqual(parseLine("history"), { kind: "history", limit: 20 });
  assert.deepEqual(parseLine("history work -n 5"), { kind: "history", session: "work", limit: 5 });
  assert.equal(parseLine("history -n 0").kind, "invalid");
  assert.deepEqual(parseLine("reset"), { kind: "reset" });
  assert.deepEqual(parseLine("reset work"), { kind: "reset", session: "work" });
  assert.deepEqual(parseLine("reset the counter to 0"), {
    kind: "chat",
    text: "reset the counter to 0",
  });
  assert.deepEqual(parseLine("history of Rome, briefly"), {
    kind: "chat",
    text: "history of Rome, briefly",
  });
});

Deno.test("call <endpoint file> <method> [params] is a call to an endpoint; other words stay a message", () => {
  assert.deepEqual(parseLine('call /run/secrets get {"name": "key"}'), {
    kind: "endpoint",
    path: "/run/secrets",
    method: "get",
    params: { name: "key" },
  });
  assert.deepEqual(parseLine("call /proc/www-0197/control stats"), {
    kind: "endpoint",
    path: "/proc/www-0197/control",
    method: "stats",
    params: {},
  });
  const noMethod = parseLine("call /run/secrets");
  assert.equal(noMethod.kind, "invalid");
  const badParams = parseLine("call /run/secrets get [1]");
  assert.equal(badParams.kind, "invalid");
  assert.match((badParams as { example: string }).example, /^call \/run\/secrets get \{\}$/);
  assert.equal(parseLine("call my mother").kind, "chat");
});
