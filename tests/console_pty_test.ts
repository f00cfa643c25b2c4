/**
 * The console in a real terminal: `sausage WORLD` runs in a tmux pane (120
 * by 40) on a world with the shipped agent, which talks to the scripted
 * model server. The tests type keys with `send-keys` and read the screen
 * with `capture-pane`, waiting for text rather than for fixed times.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { initWorld } from "../core/init.ts";
import { AGENT_WASM, agentYaml } from "./agent_world.ts";
import {
  type ModelServer,
  type Reply,
  type SeenRequest,
  startModelServer,
} from "./model_server.ts";
import { needs } from "./tools.ts";
import { installPlugin, TEST_CACHE_DIR } from "./world.ts";

const MAIN = new URL("../main.ts", import.meta.url).pathname;
/** How long the screen may take to show something on a loaded machine. */
const SCREEN_TIMEOUT_MS = 60_000;

/** The text of the last user message a model request holds. */
function lastUserText(request: SeenRequest): string {
  const messages = (request.body as { messages?: { role: string; content: unknown }[] }).messages ??
    [];
  const user = messages.filter((m) => m.role === "user").at(-1);
  if (!user) return "";
  if (typeof user.content === "string") return user.content;
  return JSON.stringify(user.content);
}

/** A world with the agent and the probe plugin, whose agent talks to `server`. */
async function makeWorld(server: ModelServer): Promise<string> {
  const root = await Deno.makeTempDir({ prefix: "sausage-pty-" });
  await initWorld(root, { installAgent: false });
  await installPlugin(root, "probe", "probe");
  await Deno.mkdir(join(root, "plugins", "agent"), { recursive: true });
  await Deno.copyFile(AGENT_WASM, join(root, "plugins", "agent", "plugin.wasm"));
  await Deno.writeTextFile(
    join(root, "config", "agent.yaml"),
    agentYaml(server, "openai-chat-completions"),
  );
  return root;
}

let sockets = 0;

/** The console of a world in a tmux pane of its own tmux server. */
class Pane {
  readonly socket = `sausage-pty-${Deno.pid}-${++sockets}-${Date.now()}`;
  /** The server's socket file, removed at the end (tmux leaves it behind). */
  #socketPath: string | undefined;

  async #tmux(...args: string[]): Promise<string> {
    const out = await new Deno.Command("tmux", {
      args: ["-L", this.socket, ...args],
      stdout: "piped",
      stderr: "piped",
    }).output();
    if (!out.success) {
      throw new Error(`tmux ${args[0]} failed: ${new TextDecoder().decode(out.stderr)}`);
    }
    return new TextDecoder().decode(out.stdout);
  }

  /** Starts the console on `world`; resolves when its banner shows. */
  async start(world: string): Promise<void> {
    // colours on and the default pager, whatever the environment of the test
    const command = [
      "env",
      "-u",
      "NO_COLOR",
      "-u",
      "PAGER",
      "-u",
      "LESS",
      Deno.execPath(),
      "run",
      // as `deno task sausage` runs it: without --quiet, Deno's own progress line for a new
      // worker's modules clears the row the prompt is on
      "--quiet",
      "--no-prompt",
      "-A",
      "--unstable-worker-options",
      MAIN,
      world,
      "--cache-dir",
      TEST_CACHE_DIR,
    ].map((w) => `'${w}'`).join(" ");
    // the pane stays after the console ends, so that its exit code can be read
    await this.#tmux(
      "new-session",
      "-d",
      "-x",
      "120",
      "-y",
      "40",
      `${command}; echo "console exited $?"; sleep 600`,
    );
    this.#socketPath = (await this.#tmux("display-message", "-p", "#{socket_path}")).trim();
    await this.waitFor("Ctrl-D leaves");
  }

  /** The screen as text, wrapped lines joined (or each row as it is), with colour codes if asked. */
  async screen(join = true, escapes = false): Promise<string> {
    return await this.#tmux(
      "capture-pane",
      "-p",
      ...(join ? ["-J"] : []),
      ...(escapes ? ["-e"] : []),
    );
  }

  /** The last row of the screen that is not empty. */
  async lastRow(): Promise<string> {
    return (await this.screen(false)).trimEnd().split("\n").at(-1) ?? "";
  }

  /** Types keys (tmux key names, such as `Enter`, `Tab`, `C-c`). */
  async keys(...keys: string[]): Promise<void> {
    await this.#tmux("send-keys", ...keys);
  }

  /** Types text as it is (no key names). */
  async type(text: string): Promise<void> {
    await this.#tmux("send-keys", "-l", text);
  }

  /** Waits until the screen satisfies `check` (a text it holds, or a test); returns the screen. */
  async waitFor(
    check: string | RegExp | ((screen: string) => boolean),
    ms = SCREEN_TIMEOUT_MS,
  ): Promise<string> {
    const test = typeof check === "string"
      ? (s: string) => s.includes(check)
      : check instanceof RegExp
      ? (s: string) => check.test(s)
      : check;
    const until = performance.now() + ms;
    let screen = "";
    while (performance.now() < until) {
      screen = await this.screen();
      if (test(screen)) return screen;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`the screen did not show ${String(check)} within ${ms} ms:\n${screen}`);
  }

  /** Leaves the console with Ctrl-D and waits until it exited; gives its exit code. */
  async leave(): Promise<number> {
    await this.keys("C-u", "C-d");
    const screen = await this.waitFor(/console exited \d+/);
    return Number(screen.match(/console exited (\d+)/)![1]);
  }

  /** Ends the tmux server (and what still runs in it). */
  async kill(): Promise<void> {
    await this.#tmux("kill-server").catch(() => "");
    if (this.#socketPath) await Deno.remove(this.#socketPath).catch(() => {});
  }
}

/** A model server, a world and a console on it; all of it goes at the end. */
async function consoleOn(
  script: (request: SeenRequest) => Reply,
): Promise<{ pane: Pane; server: ModelServer; world: string } & AsyncDisposable> {
  const server = await startModelServer({
    api: "openai-chat-completions",
    script,
    token: "test-key",
  });
  const world = await makeWorld(server);
  const pane = new Pane();
  try {
    await pane.start(world);
  } catch (e) {
    await pane.kill();
    await server.close();
    throw e;
  }
  return {
    pane,
    server,
    world,
    async [Symbol.asyncDispose]() {
      await pane.kill();
      await server.close();
      await Deno.remove(world, { recursive: true }).catch(() => {});
    },
  };
}

const ANSWER = "# Result\n\nThe **answer** is `42`.\n\n- first point\n- second point\n";

Deno.test({
  ...needs(
    ["tmux"],
    "console in a terminal: streaming, did you mean, completion, graph, progress, pager",
  ),
  sanitizeResources: false,
  sanitizeOps: false,
  async fn(t) {
    await using c = await consoleOn((request) => {
      const messages = (request.body as { messages: { role: string }[] }).messages;
      if (messages.at(-1)?.role === "tool") return { text: "The echo **worked**." };
      if (lastUserText(request).includes("use a tool")) {
        return {
          toolCalls: [{ name: "call", arguments: { method: "probe.echo", params: { n: 7 } } }],
        };
      }
      if (lastUserText(request).includes("what is the answer")) {
        return { text: ANSWER, delayMs: 120 };
      }
      return { text: "ok" };
    });
    const { pane, server } = c;

    await t.step("a message streams raw, then the answer shows drawn from Markdown", async () => {
      await pane.type("what is the answer?");
      await pane.keys("Enter");
      // while it streams, the progress area shows the text as it comes, Markdown and all
      await pane.waitFor((s) => s.includes("… # Result") || s.includes("**answer"));
      const done = await pane.waitFor("• second point");
      assert.match(done, /^ {2}Result$/m);
      assert.match(done, /^ {2}The answer is 42\.$/m);
      assert.match(done, /^ {2}• first point$/m);
      assert.doesNotMatch(done, /\*\*answer/, "the raw text is replaced by the rendered answer");
      assert.equal(server.requests.length, 1);
    });

    await t.step("a tool step is one short dimmed line, then the answer", async () => {
      await pane.keys("C-l");
      await pane.type("use a tool please");
      await pane.keys("Enter");
      const screen = await pane.waitFor("The echo worked.");
      assert.match(screen, /^ {2}▸ call probe\.echo \{"n":7\} … .+$/m);
      const colored = await pane.screen(true, true);
      const step = colored.split("\n").find((l) => l.includes("▸ call")) ?? "";
      assert.ok(step.includes("\x1b[2m"), `dimmed: ${JSON.stringify(step)}`);
    });

    await t.step("a typo of a command gets did you mean, and goes nowhere", async () => {
      await pane.type("psx");
      await pane.keys("Enter");
      await pane.waitFor("did you mean `ps`?");
      await pane.type("lg -n 5");
      await pane.keys("Enter");
      await pane.waitFor("did you mean `log`?");
      assert.equal(server.requests.length, 3, "nothing more went to the model");
    });

    await t.step(
      "Tab completes a plugin, then its methods, with a space after a unique one",
      async () => {
        await pane.type("methods probe"); // makes sure the probe's document is known
        await pane.keys("Enter");
        await pane.waitFor(/echo\(/);
        await pane.keys("C-l");
        await pane.type("pro");
        await pane.keys("Tab");
        await pane.waitFor(/^> probe\.$/m);
        await pane.keys("Tab");
        await pane.waitFor(/^> probe\.echo $/m);
        await pane.keys("C-u");
        await pane.type("car");
        await pane.keys("Tab");
        await pane.waitFor(/^> cargo\.$/m);
        await pane.keys("Tab");
        await pane.waitFor(/^> cargo\.build $/m);
        await pane.keys("C-u");
      },
    );

    await t.step("graph draws the plugins and their imports", async () => {
      await pane.keys("C-l");
      await pane.type("graph");
      await pane.keys("Enter");
      const screen = await pane.waitFor(/\d+ plugins?, \d+ imports?/);
      assert.match(screen, /^ {2}agent\s+[0-9a-f]{8}$/m);
      assert.match(screen, /^ {2}cargo\s+built in$/m);
      assert.match(screen, /^ {2}probe\s+[0-9a-f]{8}$/m);
    });

    await t.step("output printed while a progress line shows is not lost", async () => {
      await pane.keys("C-l");
      await pane.type(
        'probe.slow_notify {"ms": 2500, "name": "progress", "params": {"text": "compiling"}}',
      );
      await pane.keys("Enter");
      await pane.waitFor("… compiling");
      await pane.type("ps");
      await pane.keys("Enter");
      // the rows of ps come first, then the progress line is drawn again above the prompt: a
      // screen read between the two has the rows alone
      const during = await pane.waitFor((screen) =>
        /probe\.slow_notify\s+running/.test(screen) && /… compiling\n>/.test(screen)
      );
      assert.match(during, /^> ps$/m, "the line typed stays");
      assert.match(during, /^ {2}PID\s+CALL\s+STATE/m);
      const after = await pane.waitFor('"notified"');
      assert.match(after, /^ {2}PID\s+CALL\s+STATE/m, "the rows of ps are still there");
      assert.match(after, /probe\.slow_notify\s+running/);
      assert.doesNotMatch(after, /… compiling/, "the progress line is gone with its call");
    });

    await t.step("long output goes through the pager, and the prompt comes back", async () => {
      await pane.keys("C-l");
      await pane.type("cat /proc/core/PROTOCOL.md");
      await pane.keys("Enter");
      // less waits with its prompt ":" on the last row
      const until = performance.now() + SCREEN_TIMEOUT_MS;
      while ((await pane.lastRow()).trim() !== ":") {
        assert.ok(performance.now() < until, `no pager: ${await pane.screen()}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.match(await pane.screen(), /# The Sausage protocol/);
      await pane.keys("q");
      await pane.type("ps");
      await pane.keys("Enter");
      await pane.waitFor("no processes");
    });

    assert.equal(await pane.leave(), 0);
  },
});

Deno.test({
  ...needs(
    ["tmux"],
    "console in a terminal: Ctrl-C stops a turn, the console stays, the history shows it cancelled",
  ),
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    await using c = await consoleOn(() => ({
      partial: { text: "a long answer that never ends, as it streams ", delayMs: 50 },
      thenHang: true,
    }));
    const { pane } = c;
    await pane.type("tell me a long story");
    await pane.keys("Enter");
    await pane.waitFor("… a long");
    await pane.keys("C-c");
    const stopped = await pane.waitFor(/^ {2}stopped$/m);
    assert.match(stopped, /stopping tell me a long story \(agent-[0-9a-f-]+\)/);
    await pane.keys("C-l");
    await pane.type("history");
    await pane.keys("Enter");
    const history = await pane.waitFor("the turn was cancelled");
    assert.match(history, /> tell me a long story/);
    // nothing runs now: Ctrl-C on the empty line only hints; a second one leaves
    await pane.keys("C-c");
    await pane.waitFor("nothing runs: press Ctrl-C again");
    await pane.keys("C-c");
    const screen = await pane.waitFor(/console exited \d+/);
    assert.match(screen, /console exited 0/);
  },
});

Deno.test({
  ...needs(
    ["tmux"],
    "console in a terminal: the history survives a restart, and Ctrl-R searches it",
  ),
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    await using c = await consoleOn(() => ({ text: "ok" }));
    const { pane, world } = c;
    await pane.type("ps");
    await pane.keys("Enter");
    await pane.waitFor("no processes");
    await pane.type('probe.echo {"first": "run"}');
    await pane.keys("Enter");
    await pane.waitFor('"first": "run"');
    assert.equal(await pane.leave(), 0);
    await pane.kill();

    const again = new Pane();
    try {
      await again.start(world);
      await again.keys("Up");
      await again.waitFor(/^> probe\.echo \{"first": "run"\}$/m);
      await again.keys("Up");
      await again.waitFor(/^> ps$/m);
      await again.keys("C-u", "C-r");
      await again.type("first");
      await again.waitFor('(reverse-i-search)`first\': probe.echo {"first": "run"}');
      await again.keys("Enter");
      const screen = await again.waitFor(/"first": "run"\n\s*\}/);
      assert.match(screen, /^> probe\.echo \{"first": "run"\}$/m);
      assert.equal(await again.leave(), 0);
    } finally {
      await again.kill();
    }
  },
});

Deno.test({
  ...needs(
    ["tmux"],
    "console in a terminal: clear clears the screen and sends nothing to the agent",
  ),
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    await using c = await consoleOn(() => ({ text: "should not be asked" }));
    const { pane, server } = c;
    await pane.type('probe.echo {"before": "clear"}');
    await pane.keys("Enter");
    await pane.waitFor('"before": "clear"');
    await pane.type("clear");
    await pane.keys("Enter");
    const screen = await pane.waitFor((text) => !text.includes('"before": "clear"'));
    assert.match(screen.trimStart(), /^>/, "the prompt is at the top");
    // the screen is clear, and the console still answers
    await pane.type('probe.echo {"after": "clear"}');
    await pane.keys("Enter");
    await pane.waitFor('"after": "clear"');
    assert.equal(server.requests.length, 0, "clear went to the agent");
    assert.equal(await pane.leave(), 0);
  },
});
