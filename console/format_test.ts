import assert from "node:assert/strict";
import type { Entry } from "../core/journal.ts";
import {
  callLabel,
  cargoColours,
  formatAge,
  formatClock,
  formatError,
  formatHelp,
  formatLog,
  formatNotification,
  formatProcesses,
  formatResult,
  formatTable,
  formatText,
  formatUsage,
  HELP,
  indent,
  makeStyle,
  PLAIN,
  truncate,
} from "./format.ts";

const COLOR = makeStyle(true);
// deno-lint-ignore no-control-regex
const ANSI = /\x1b\[/;

Deno.test("indent pads every non-empty line", () => {
  assert.equal(indent("a\n\nb"), "  a\n\n  b");
  assert.equal(indent("a", 4), "    a");
});

Deno.test("truncate and callLabel shorten long text", () => {
  assert.equal(truncate("abcdef", 10), "abcdef");
  assert.equal(truncate("abcdef", 4), "abc…");
  assert.equal(callLabel('  probe.echo   {"a":  1} '), 'probe.echo {"a": 1}');
  assert.equal(callLabel("x".repeat(100)).length, 60);
});

Deno.test("a result is pretty JSON indented by two spaces", () => {
  assert.equal(
    formatResult({ a: 1, b: [true] }),
    '  {\n    "a": 1,\n    "b": [\n      true\n    ]\n  }',
  );
  assert.equal(formatResult(null), "  null");
  assert.equal(formatResult(undefined), "  null");
  assert.equal(formatResult("x"), '  "x"');
});

Deno.test("a result names its call when it has a label", () => {
  assert.equal(formatResult(1, { label: "probe.echo {}" }), "probe.echo {} →\n  1");
  assert.equal(formatText("hi\nthere", { label: "hello" }), "hello →\n  hi\n  there");
  assert.match(formatResult(1, { label: "x", style: COLOR }), ANSI);
});

Deno.test("an error shows its code and message, in red with colours", () => {
  const error = { code: 4711, message: "probe failed on purpose" };
  assert.equal(formatError(error), "  error 4711: probe failed on purpose");
  const colored = formatError(error, { style: COLOR });
  assert.equal(colored, `  \x1b[31merror 4711: probe failed on purpose\x1b[39m`);
});

Deno.test("an error -32002 shows the last lines of the process's log", () => {
  const text = formatError({
    code: -32002,
    message: "probe.panic: the process ended without an answer",
    data: { pid: "p", status: null, log: ["start panic {}", "probe: about to panic"] },
  });
  assert.equal(
    text,
    [
      "  error -32002: probe.panic: the process ended without an answer",
      "  last lines of its log:",
      "    start panic {}",
      "    probe: about to panic",
    ].join("\n"),
  );
});

Deno.test("other error data is shown as text or JSON, and a hint comes last", () => {
  assert.equal(
    formatError({ code: -32004, message: "build failed", data: "line 1\nline 2\n" }),
    "  error -32004: build failed\n    line 1\n    line 2",
  );
  assert.equal(
    formatError({ code: -32000, message: "failed", data: { reasons: ["x"] } }),
    '  error -32000: failed\n    {\n      "reasons": [\n        "x"\n      ]\n    }',
  );
  assert.equal(
    formatError({ code: -32001, message: "no agent" }, { hint: "install it", label: "hi" }),
    "hi →\n  error -32001: no agent\n  hint: install it",
  );
});

Deno.test("a rejected activation shows the lines of its message, not its data as JSON", () => {
  const message = [
    "notes was not activated: 1 consumer breaks.",
    "- agent imports notes.add(text: string) -> Added.",
    '  The new notes.add has no param "text". It requires "body": string.',
    '  Counterexample: {"text": "milk"} is not valid for the new params.',
    "  Update agent first, or activate both together.",
  ].join("\n");
  const text = formatError({ code: -32003, message, data: { problems: [{ kind: "params" }] } });
  assert.equal(
    text,
    [
      "  error -32003: notes was not activated: 1 consumer breaks.",
      "    - agent imports notes.add(text: string) -> Added.",
      '      The new notes.add has no param "text". It requires "body": string.',
      '      Counterexample: {"text": "milk"} is not valid for the new params.',
      "      Update agent first, or activate both together.",
    ].join("\n"),
  );
  const colored = formatError({ code: -32003, message }, { style: COLOR }).split("\n");
  assert.match(colored[0], ANSI);
  assert.doesNotMatch(colored[1], ANSI, "only the first line is red");
});

Deno.test("a usage error shows an example", () => {
  assert.equal(
    formatUsage("params must be an object", 'probe.echo {"text": "milk"}'),
    '  params must be an object\n  for example: probe.echo {"text": "milk"}',
  );
});

Deno.test("a notification is one dimmed line", () => {
  assert.equal(formatNotification("progress", { step: 1 }), '  · progress {"step":1}');
  assert.equal(formatNotification("done", {}), "  · done");
  assert.equal(formatNotification("done", undefined), "  · done");
  assert.equal(
    formatNotification("progress", { step: 1 }, { label: "probe.progress" }),
    '  · probe.progress: progress {"step":1}',
  );
  assert.equal(formatNotification("x", {}, { style: COLOR }), "  \x1b[2m· x\x1b[22m");
  assert.ok(formatNotification("big", { text: "y".repeat(1000) }).length < 320);
});

Deno.test("a table aligns its columns", () => {
  assert.equal(
    formatTable(["A", "BB", "C"], [["xxx", "y", "z"], ["1", "22", "333"]]),
    "  A    BB  C\n  xxx  y   z\n  1    22  333",
  );
});

Deno.test("ages are short", () => {
  assert.equal(formatAge(0), "0s");
  assert.equal(formatAge(-5), "0s");
  assert.equal(formatAge(59_999), "59s");
  assert.equal(formatAge(60_000), "1m00s");
  assert.equal(formatAge(3_599_000), "59m59s");
  assert.equal(formatAge(3_600_000), "1h00m");
  assert.equal(formatAge(86_400_000 + 7_200_000), "1d02h");
});

Deno.test("ps shows pid, call, state, parent and age", () => {
  const now = new Date("2026-01-01T12:00:00Z");
  assert.equal(formatProcesses([], now), "  no processes");
  const text = formatProcesses([
    {
      pid: "probe-1",
      plugin: "probe",
      method: "sleep",
      state: "running",
      parent: "console",
      startedAt: new Date("2026-01-01T11:58:55Z"),
    },
    {
      pid: "www-2",
      plugin: "www",
      method: "start",
      state: "stopping",
      parent: null,
      startedAt: new Date("2026-01-01T10:00:00Z"),
    },
  ], now);
  assert.equal(
    text,
    [
      "  PID      CALL         STATE     PARENT    AGE",
      "  probe-1  probe.sleep  running   console   1m05s",
      "  www-2    www.start    stopping  detached  2h00m",
    ].join("\n"),
  );
});

Deno.test("a time of day shows the date only on another day", () => {
  const now = new Date(2026, 0, 2, 15, 0, 0);
  assert.equal(formatClock(new Date(2026, 0, 2, 9, 5, 7, 42), now), "09:05:07.042");
  assert.equal(formatClock(new Date(2026, 0, 1, 23, 59, 59, 999), now), "2026-01-01 23:59:59.999");
});

Deno.test("journal entries show time, process, stream and line", () => {
  const now = new Date(2026, 0, 2, 15, 0, 0);
  const entry = (pid: string | null, stream: "core" | "stderr", line: string): Entry => ({
    id: "x",
    time: new Date(2026, 0, 2, 14, 0, 1, 500).toISOString(),
    pid,
    plugin: pid === null ? null : "probe",
    stream,
    line,
  });
  assert.equal(formatLog([], { now }), "  no journal entries");
  const entries = [entry("probe-1", "core", "start echo {}"), entry(null, "stderr", "hello")];
  assert.equal(
    formatLog(entries, { now }),
    "  14:00:01.500  probe-1  core    start echo {}\n  14:00:01.500  core     stderr  hello",
  );
  assert.equal(
    formatLog([entries[0]], { now, showPid: false }),
    "  14:00:01.500  core    start echo {}",
  );
  const colored = formatLog(entries, { now, style: COLOR }).split("\n");
  assert.match(colored[0], ANSI); // the core's events are dimmed
  assert.doesNotMatch(colored[1], ANSI);
});

Deno.test("the help lists every command with an explanation and an example", () => {
  const text = formatHelp();
  const words = ["<plugin>.<method>", "ps", "log", "stop", "kill", "help", "quit", "exit"];
  words.push("methods <plugin>", "activate <plugin> <wasm>", "revert <plugin>", "ls", "cat");
  for (const word of words) {
    assert.ok(text.includes(word), word);
  }
  for (const entry of HELP) {
    assert.ok(text.includes(entry.does));
    assert.ok(text.includes(`e.g. ${entry.example}`));
  }
  assert.doesNotMatch(text, ANSI);
  assert.match(formatHelp(COLOR), ANSI);
});

Deno.test("the plain style has no colours", () => {
  for (const f of [PLAIN.red, PLAIN.green, PLAIN.cyan, PLAIN.dim, PLAIN.bold]) {
    assert.equal(f("x"), "x");
  }
});

Deno.test("long texts of several lines in a result show as text after the JSON, under their path", () => {
  const output = "running 2 tests\ntest a ... ok\ntest b ... ok\n\ntest result: ok. 2 passed\n";
  const text = formatResult({ wasm: "/state/b/1/notes.wasm", tests: { passed: 2, output } });
  assert.equal(
    text,
    [
      "  {",
      '    "wasm": "/state/b/1/notes.wasm",',
      '    "tests": {',
      '      "passed": 2,',
      '      "output": "(text below)"',
      "    }",
      "  }",
      "  tests.output:",
      "    running 2 tests",
      "    test a ... ok",
      "    test b ... ok",
      "",
      "    test result: ok. 2 passed",
    ].join("\n"),
  );
  // a short string with a newline stays in the JSON
  assert.equal(formatResult({ a: "x\ny" }), '  {\n    "a": "x\\ny"\n  }');
});

Deno.test("the colours of a compiler's text are kept with colours, and dropped without", () => {
  const red = "\x1b[1m\x1b[31merror[E0308]\x1b[0m: mismatched types\n";
  const output = `${red}  --> src/main.rs:3:5\n${"   |\n".repeat(3)}`;
  const plain = formatError({
    code: -32004,
    message: "cargo.build: test failed",
    data: { output },
  });
  assert.match(plain, /^ {6}error\[E0308\]: mismatched types$/m);
  assert.ok(!plain.includes("\x1b"), "no escape codes without colours");
  assert.doesNotMatch(plain, /\\n/);
  const colored = formatError(
    { code: -32004, message: "cargo.build: test failed", data: { step: "test", output } },
    { style: makeStyle(true) },
  );
  assert.ok(colored.includes("\x1b[31merror[E0308]"));
  assert.ok(colored.endsWith("\x1b[0m"), "a colour left on by the text is reset");
});

Deno.test("compiler output without colours gets cargo's: errors, warnings, places, test results", () => {
  const colours = makeStyle(true);
  const text = [
    "   Compiling notes v0.1.0",
    "error[E0425]: cannot find value `x` in this scope",
    "  --> src/main.rs:3:5",
    "warning: unused variable: `y`",
    "test adds ... ok",
    "plain line",
  ].join("\n");
  const lines = cargoColours(text, colours).split("\n");
  assert.equal(
    lines[1],
    colours.bold(colours.red("error[E0425]")) +
      colours.bold(": cannot find value `x` in this scope"),
  );
  assert.equal(lines[2], colours.cyan("  --> src/main.rs:3:5"));
  assert.ok(lines[3].startsWith(colours.bold(colours.cyan("warning"))));
  assert.equal(lines[4], colours.green("test adds ... ok"));
  assert.equal(lines[5], "plain line");
  assert.equal(cargoColours(text, PLAIN), text);
});
