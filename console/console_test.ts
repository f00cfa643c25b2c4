/**
 * End-to-end tests: the real `sausage WORLD` command as a subprocess, fed a
 * script on stdin, and (where `script` from util-linux exists) on a terminal.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { initWorld } from "../core/init.ts";
import { needs } from "../tests/tools.ts";
import { installPlugin, TEST_CACHE_DIR } from "../tests/world.ts";
import { historyPath } from "./history.ts";
import { fitLine } from "./terminal.ts";

const MAIN = new URL("../main.ts", import.meta.url).pathname;
const DENO_ARGS = ["run", "--no-prompt", "--allow-all", "--unstable-worker-options", MAIN];
/** Select Graphic Rendition: the escape codes of colours and bold. */
// deno-lint-ignore no-control-regex
const SGR = /\x1b\[[0-9;]*m/;

/** A temporary world with the probe plugin. */
async function makeWorld(): Promise<{ root: string } & AsyncDisposable> {
  const root = await Deno.makeTempDir({ prefix: "sausage-console-" });
  await initWorld(root);
  await installPlugin(root, "probe", "probe");
  return {
    root,
    async [Symbol.asyncDispose]() {
      await Deno.remove(root, { recursive: true }).catch(() => {});
    },
  };
}

/** The environment of a child: this one without colour settings, plus `extra`. */
function childEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env = Deno.env.toObject();
  for (const name of ["NO_COLOR", "FORCE_COLOR", "CI", "TERM"]) delete env[name];
  return { ...env, ...extra };
}

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `sausage WORLD` with `lines` on stdin. */
async function sausage(
  world: string,
  lines: string[],
  env: Record<string, string> = {},
): Promise<Run> {
  const child = new Deno.Command(Deno.execPath(), {
    args: [...DENO_ARGS, world, "--cache-dir", TEST_CACHE_DIR],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
    clearEnv: true,
    env: childEnv(env),
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(lines.join("\n")));
  await writer.close();
  const out = await child.output();
  const decoder = new TextDecoder();
  return { code: out.code, stdout: decoder.decode(out.stdout), stderr: decoder.decode(out.stderr) };
}

/** Asserts that `parts` occur in `text` in this order. */
function assertInOrder(text: string, parts: (string | RegExp)[]): void {
  let from = 0;
  for (const part of parts) {
    const rest = text.slice(from);
    const match = typeof part === "string"
      ? { index: rest.indexOf(part), length: part.length }
      : (() => {
        const m = rest.match(part);
        return m ? { index: m.index!, length: m[0].length } : { index: -1, length: 0 };
      })();
    assert.ok(match.index >= 0, `expected ${part} after offset ${from} in:\n${text}`);
    from += match.index + match.length;
  }
}

Deno.test("a script runs its commands in order and prints the results plainly", async () => {
  await using world = await makeWorld();
  const run = await sausage(world.root, [
    "# a comment, then an empty line",
    "",
    'probe.echo {"a": 1}',
    'core.call {"method": "probe.linger", "params": {}, "detach": true}',
    "ps",
    "log probe -n 5",
    "probe.fail",
    'probe.progress {"count": 3}',
    "probe.echo [1]",
    "probe.panic",
    "hello, is anybody there?",
    "stop probe-0197f3a2-7c1e-7d2b-9a41-5f0c2e8b1d34",
    "help",
    "probe.echo", // the last line has no newline
  ]);
  assert.equal(run.code, 0, run.stderr);
  assert.doesNotMatch(run.stdout, SGR);
  assert.doesNotMatch(run.stdout, /a comment/);
  assertInOrder(run.stdout, [
    '  {\n    "a": 1\n  }\n',
    '  "lingering"\n',
    /^ {2}PID +CALL +STATE +PARENT +AGE\n/m,
    /probe-\S+ +probe\.linger +running +detached +\d+s\n/,
    /( {2}\d\d:\d\d:\d\d\.\d{3} {2}probe-\S+ {2}(core|stderr) .*\n){1,5}/,
    "  error 4711: probe failed on purpose\n",
    '  · progress {"step":0}\n  · progress {"step":1}\n  · progress {"step":2}\n',
    '  {\n    "steps": 3\n  }\n',
    "  the params of probe.echo must be a JSON object (params are by name), not an array\n",
    "  for example: probe.echo {}\n",
    / {2}error -32002: probe\.panic: the process probe-\S+ ended without an answer/,
    "  last lines of its log:\n    start panic {} (parent console)\n    probe: about to panic\n",
    "  error -32000: the agent is not configured: /config/agent.yaml sets no `api`",
    /\n {2}hint: the file is \S+\/config\/agent\.yaml on this machine\n/,
    "  error -32602: core.stop: there is no running process",
    /<plugin>\.<method> \[\{json\}\] +call a method/,
    "e.g. log agent -n 5",
    "  {}\n",
  ]);
  // the log shows probe's entries, and the linger start among them
  assert.match(run.stdout, /probe-\S+ {2}core {4}start linger \{\}/);
  // a script does not write the history
  await assert.rejects(Deno.stat(historyPath(join(world.root, "state", "core"))));
});

Deno.test("a script shows methods, folders and files as a process sees them", async () => {
  await using world = await makeWorld();
  const run = await sausage(world.root, [
    "methods probe",
    "ls /proc/core",
    "cat /proc/core/plugins/probe/discover.json",
    "ls /self",
    "revert probe",
  ]);
  assert.equal(run.code, 0, run.stderr);
  assertInOrder(run.stdout, [
    "  probe, version 0.1.0\n  methods:\n    echo() -> any\n",
    "  PROTOCOL.md\n  docs/\n  graph.dot\n  graph.json\n  locks.json\n  plugins/\n",
    '  {\n    "info": {\n      "title": "probe",\n',
    '    "openrpc": "1.2.6"\n  }\n',
    "  ls: /self: the console has no /self",
    "  error -32602: core.revert: probe has no previous version",
  ]);
});

Deno.test("core.exit ends a script with exit code 75", async () => {
  await using world = await makeWorld();
  const run = await sausage(world.root, [
    'probe.echo {"n": 1}',
    "core.exit",
    'probe.echo {"n": 2}',
    "",
  ]);
  assert.equal(run.code, 75, run.stderr);
  assert.equal(run.stdout, '  {\n    "n": 1\n  }\n  {}\n');
});

Deno.test("quit ends a script with exit code 0", async () => {
  await using world = await makeWorld();
  const run = await sausage(world.root, ['probe.echo {"n": 1}', "quit", 'probe.echo {"n": 2}']);
  assert.equal(run.code, 0, run.stderr);
  assert.equal(run.stdout, '  {\n    "n": 1\n  }\n');
});

Deno.test("colours appear only when wanted, and NO_COLOR turns them off", async () => {
  await using world = await makeWorld();
  const lines = ["probe.fail", 'probe.progress {"count": 1}'];
  const plain = await sausage(world.root, lines);
  assert.doesNotMatch(plain.stdout, SGR, "no colours when stdout is not a terminal");
  const forced = await sausage(world.root, lines, { FORCE_COLOR: "1" });
  assert.ok(forced.stdout.includes("\x1b[31merror 4711: probe failed on purpose\x1b[39m"));
  assert.ok(forced.stdout.includes('\x1b[2m· progress {"step":0}\x1b[22m'));
  const off = await sausage(world.root, lines, { FORCE_COLOR: "1", NO_COLOR: "1" });
  assert.doesNotMatch(off.stdout, SGR);
  assert.equal(off.stdout, plain.stdout);
});

/** `script` from util-linux gives the console a terminal (Linux's `script`, not BSD's). */
const onTerminal = (name: string) =>
  Deno.build.os === "linux" ? needs(["script"], name) : { name, ignore: true };

/** The console on a pseudo-terminal: type, and wait for what it shows. */
class Terminal {
  readonly #child: Deno.ChildProcess;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  #screen = "";
  readonly #reading: Promise<void>;

  constructor(world: string, env: Record<string, string>) {
    const command = [Deno.execPath(), ...DENO_ARGS, world, "--cache-dir", TEST_CACHE_DIR]
      .map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(" ");
    this.#child = new Deno.Command("script", {
      args: ["-qfec", command, "/dev/null"],
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
      clearEnv: true,
      env: childEnv({ TERM: "xterm-256color", ...env }),
    }).spawn();
    this.#writer = this.#child.stdin.getWriter();
    const stdout = this.#child.stdout;
    this.#reading = (async () => {
      const decoder = new TextDecoder();
      for await (const chunk of stdout) {
        this.#screen += decoder.decode(chunk, { stream: true });
      }
    })();
  }

  /** Everything shown so far. */
  get screen(): string {
    return this.#screen;
  }

  /** Everything shown so far, without escape codes. */
  get text(): string {
    // deno-lint-ignore no-control-regex
    return this.#screen.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, "").replaceAll("\r", "");
  }

  async type(keys: string): Promise<void> {
    await this.#writer.write(new TextEncoder().encode(keys));
  }

  async waitFor(check: (text: string) => boolean, what: string, ms = 20_000): Promise<void> {
    const until = Date.now() + ms;
    while (!check(this.text)) {
      if (Date.now() > until) {
        throw new Error(`no ${what} within ${ms} ms; the screen:\n${this.text}`);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async exit(): Promise<number> {
    const status = await this.#child.status;
    await this.#reading;
    await this.#writer.close().catch(() => {});
    return status.code;
  }

  kill(): void {
    try {
      this.#child.kill("SIGKILL");
    } catch {
      // already ended
    }
  }
}

Deno.test({
  ...onTerminal("on a terminal: a prompt, results, Ctrl-C, and the history file"),
  async fn() {
    await using world = await makeWorld();
    const term = new Terminal(world.root, {});
    try {
      await term.waitFor((t) => t.includes("> "), "prompt");
      await term.type('probe.echo {"via": "tty"}\r');
      await term.waitFor((t) => t.includes('"via": "tty"\n'), "result");
      // Ctrl-C clears a typed line; on an empty line with nothing running it hints, and a second one leaves
      await term.type("not sent");
      await term.waitFor((t) => t.includes("not sent"), "echo of the typed text");
      await term.type("\x03");
      await term.type("\x03");
      await term.waitFor((t) => t.includes("press Ctrl-C again"), "hint");
      await term.type("\x03");
      assert.equal(await term.exit(), 0);
    } finally {
      term.kill();
    }
    assert.match(term.screen, SGR, "colours on a terminal");
    const history = await Deno.readTextFile(historyPath(join(world.root, "state", "core")));
    assert.equal(history, 'probe.echo {"via": "tty"}\n');
  },
});

Deno.test({
  ...onTerminal("on a terminal: NO_COLOR, history across runs, quit"),
  async fn() {
    await using world = await makeWorld();
    const path = historyPath(join(world.root, "state", "core"));
    await Deno.writeTextFile(path, 'probe.echo {"from": "before"}\n');
    const term = new Terminal(world.root, { NO_COLOR: "1" });
    try {
      await term.waitFor((t) => t.includes("> "), "prompt");
      await term.type("\x1b[A"); // up: the last line of the history
      await term.waitFor((t) => t.includes('> probe.echo {"from": "before"}'), "history entry");
      await term.type("\r");
      await term.waitFor((t) => t.includes('"from": "before"\n'), "result");
      await term.type("ps\r");
      await term.waitFor((t) => t.includes("no processes") || t.includes("PID"), "ps");
      // tab completes paths as a process sees them, and plugin names
      await term.type("ls /proc/co\t");
      await term.waitFor((t) => t.includes("> ls /proc/core/"), "a completed path");
      await term.type("\r");
      await term.waitFor((t) => t.includes("  graph.json\n"), "the listing");
      await term.type("methods pro\t");
      await term.waitFor((t) => t.includes("> methods probe"), "a completed plugin name");
      await term.type("\r");
      await term.waitFor((t) => t.includes("echo() -> any"), "the methods");
      await term.type("quit\r");
      assert.equal(await term.exit(), 0);
    } finally {
      term.kill();
    }
    assert.doesNotMatch(term.screen, SGR, "NO_COLOR: no colours");
    assert.equal(
      await Deno.readTextFile(path),
      'probe.echo {"from": "before"}\nps\nls /proc/core/\nmethods probe\nquit\n',
      "a repeated line is kept once",
    );
  },
});

Deno.test({
  ...onTerminal("on a terminal: a result that arrives while a line is typed keeps the line"),
  async fn() {
    await using world = await makeWorld();
    const term = new Terminal(world.root, { NO_COLOR: "1" });
    try {
      await term.waitFor((t) => t.includes("> "), "prompt");
      await term.type('probe.sleep {"ms": 1500}\r');
      await term.type('probe.echo {"typed": "meanwhile"}');
      await term.waitFor(
        (t) => /"slept": 1500[^]*> probe\.echo/.test(t),
        "the result of the first call and the prompt after it",
      );
      // the result went above the prompt, which was drawn again with the typed text
      const after = term.screen.slice(term.screen.lastIndexOf('"slept": 1500'));
      assert.match(after, /> probe\.echo \{"typed": "meanwhile"\}/);
      await term.type("\r");
      await term.waitFor((t) => t.includes('"typed": "meanwhile"\n'), "the typed call's result");
      await term.type("quit\r");
      assert.equal(await term.exit(), 0);
    } finally {
      term.kill();
    }
  },
});

Deno.test({
  ...onTerminal(
    "on a terminal: a notification that arrives while a line is typed is dimmed and keeps the line",
  ),
  async fn() {
    await using world = await makeWorld();
    const term = new Terminal(world.root, {});
    try {
      await term.waitFor((t) => t.includes("> "), "prompt");
      for (const name of ["note", "progress"]) {
        const typed = `probe.echo {"typed": "${name}"}`;
        await term.type(
          `probe.slow_notify {"ms": 1000, "name": "${name}", "params": {"text": "half way"}}\r`,
        );
        await term.type(typed);
        await term.waitFor((t) => t.includes(typed), "the typed text");
        const shown = term.screen.length;
        // a note prints above the prompt; progress is the line above the prompt
        const shownText = name === "note" ? '· note {"text":"half way"}' : "… half way";
        const mark = name === "note" ? "· note" : "… half way";
        // only the screen since the typed text (the first round's result is still above it),
        // up to the prompt drawn again after the result, which may come in a later chunk
        // deno-lint-ignore no-control-regex
        const since = () => term.screen.slice(shown).replace(/\x1b\[[0-9;?]*[A-Za-z]/g, "");
        await term.waitFor(() => since().includes(shownText), `the ${name} notification`);
        await term.waitFor(
          () => /"notified"[^]*> /.test(since().slice(since().indexOf(mark))),
          "the result and the prompt after it",
        );
        const during = term.screen.slice(shown);
        // dimmed (SGR 2)
        assert.match(
          during.slice(0, during.indexOf(mark)),
          // deno-lint-ignore no-control-regex
          /\x1b\[2m[^\x1b]*$/,
          `dimmed: ${JSON.stringify(during)}`,
        );
        // and the prompt was drawn again after it, with the typed text
        const plain = since();
        assert.ok(
          plain.indexOf(`> ${typed}`, plain.indexOf(mark)) > plain.indexOf(mark),
          `line kept: ${JSON.stringify(plain)}`,
        );
        await term.type("\r");
        await term.waitFor((t) => t.includes(`"typed": "${name}"\n`), "the typed call's result");
      }
      await term.type("quit\r");
      assert.equal(await term.exit(), 0);
    } finally {
      term.kill();
    }
  },
});

Deno.test("fitLine cuts visible characters only, and keeps every colour code", () => {
  const dim = (t: string) => `\x1b[2m${t}\x1b[22m`;
  assert.equal(fitLine(dim("… half way there"), 10), dim("… half way"));
  assert.equal(fitLine(`ab${dim("cd")}ef`, 3), `ab${dim("c")}`);
  assert.equal(fitLine("short", 10), "short");
});
