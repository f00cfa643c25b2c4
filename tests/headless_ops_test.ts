/**
 * A headless host as a container runs it: `--log-format json` on stderr,
 * `sausage health` through the control endpoint, and SIGTERM with running
 * services and a write in progress (nothing lost, exit 0 within 6 s, the
 * journal flushed). Real hosts in subprocesses, real plugins.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { initWorld } from "../core/init.ts";
import { toRecord } from "../cli/log_format.ts";
import { eventually, installPlugin, TEST_CACHE_DIR } from "./world.ts";

const MAIN = new URL("../main.ts", import.meta.url).pathname;
const RUN = ["run", "-A", "--unstable-worker-options", MAIN];

async function newWorld(boot: string): Promise<string> {
  const root = await Deno.makeTempDir({ prefix: "sausage-headless-" });
  await initWorld(root, { installAgent: false });
  await installPlugin(root, "probe", "probe");
  await Deno.writeTextFile(join(root, "config", "boot.yaml"), boot);
  return root;
}

/** A headless host whose stderr lines are collected; resolves once its endpoint listens. */
async function headless(root: string, extra: string[] = []) {
  const child = new Deno.Command(Deno.execPath(), {
    args: [...RUN, "--headless", root, "--cache-dir", TEST_CACHE_DIR, ...extra],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).spawn();
  const lines: string[] = [];
  const ended = (async () => {
    let rest = "";
    for await (const chunk of child.stderr.pipeThrough(new TextDecoderStream())) {
      rest += chunk;
      const parts = rest.split("\n");
      rest = parts.pop()!;
      lines.push(...parts);
    }
    if (rest) lines.push(rest);
  })();
  await eventually(() => lines.some((l) => l.includes("reach it with")), 60_000);
  return { child, lines, ended };
}

async function sausage(args: string[]) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [...RUN, ...args],
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
}

const LINGER = "- method: probe.linger\n  params: {hook_file: /state/hook}\n";

Deno.test("--log-format json: one object a line, with time, level, event and fields", async () => {
  const root = await newWorld(LINGER);
  try {
    const host = await headless(root, ["--log-format", "json"]);
    // the service says it is ready on its own time: stop after that, so the stop is the last line
    await eventually(() => host.lines.some((l) => l.includes("probe.linger: ready")), 30_000);
    host.child.kill("SIGTERM");
    assert.equal((await host.child.status).code, 0);
    await host.ended;
    const records = host.lines.map((l) => JSON.parse(l));
    assert.ok(records.length >= 3, host.lines.join("\n"));
    for (const r of records) {
      assert.deepEqual(Object.keys(r), ["time", "level", "event", "message", "fields"]);
      assert.ok(!Number.isNaN(Date.parse(r.time)));
      assert.ok(["info", "warn", "error"].includes(r.level));
      assert.doesNotMatch(r.message, /^sausage:/);
      assert.ok(!r.message.includes("\x1b"), "no colours in JSON");
    }
    const started = records.find((r) => r.event === "host.started");
    assert.deepEqual(started?.fields, { world: root });
    assert.equal(records.find((r) => r.event === "control.listening")?.fields.world, root);
    assert.equal(records.at(-1).event, "host.stopping", JSON.stringify(records.slice(-3)));
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("--log-format json: an error is level error; a bad format is refused", async () => {
  const parent = await Deno.makeTempDir({ prefix: "sausage-no-world-" });
  await Deno.remove(parent);
  const missing = join(parent, "no-world");
  const run = await sausage(["--log-format", "json", "--headless", missing]);
  assert.equal(run.code, 3);
  const [record] = run.stderr.trim().split("\n").map((l) => JSON.parse(l));
  assert.equal(record.level, "error");
  assert.match(record.message, /^there is no world at .*sausage init/);
  const bad = await sausage(["--log-format", "xml", "--headless", missing]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /Allowed choices are text, json/);
  // the text the host prints maps to events
  assert.equal(toRecord("sausage: stopping (core.exit)…").fields.why, "core.exit");
  assert.equal(toRecord("sausage: warning: cannot keep a discovery").level, "warn");
  // a later line of a message (a plugin's words) keeps the first line's event, whatever it says
  const first = toRecord("sausage: services not started: www.serve failed");
  const later = toRecord("stopping (core.exit) said the plugin", new Date(), first);
  assert.equal(later.event, "services.failed");
  assert.deepEqual(later.fields, {});
});

Deno.test("sausage health: 0 when the host answers and every boot service runs, else 1", async () => {
  const root = await newWorld(LINGER);
  const failing = await newWorld(LINGER + "- method: probe.fail\n");
  try {
    const none = await sausage(["health", root]);
    assert.equal(none.code, 1);
    assert.match(none.stderr, /no host runs .*sausage --headless/);
    const host = await headless(root);
    const other = await headless(failing);
    try {
      await eventually(async () => (await sausage(["health", root])).code === 0, 20_000);
      const ok = await sausage(["health", root, "--json"]);
      const health = JSON.parse(ok.stdout);
      assert.equal(health.healthy, true);
      assert.equal(health.pid, host.child.pid);
      assert.equal(health.services[0].method, "probe.linger");
      assert.match(health.services[0].pid, /\S/);
      const bad = await sausage(["health", failing]);
      assert.equal(bad.code, 1);
      assert.match(bad.stderr, /the service probe\.fail of boot\.yaml does not run/);
      assert.match(bad.stderr, /service probe\.linger: process /);
    } finally {
      host.child.kill("SIGTERM");
      other.child.kill("SIGTERM");
      await Promise.all([host.child.status, other.child.status, host.ended, other.ended]);
    }
  } finally {
    await Deno.remove(root, { recursive: true });
    await Deno.remove(failing, { recursive: true });
  }
});

Deno.test("SIGTERM: services and a write in progress stop, nothing lost, exit 0 within 6 s", async () => {
  const root = await newWorld(LINGER);
  const PARTS = 400;
  try {
    const host = await headless(root);
    await eventually(async () => (await sausage(["health", root])).code === 0, 20_000);
    // a write in progress: PARTS appends under a lock, through the control endpoint
    const call = new Deno.Command(Deno.execPath(), {
      args: [...RUN, "call", root, "probe.locked_append", JSON.stringify({ parts: PARTS })],
      stdout: "null",
      stderr: "null",
    }).spawn();
    const appended = join(root, "state", "appended");
    await eventually(async () => {
      const text = await Deno.readTextFile(appended).catch(() => "");
      return text.split("\n").length > 20;
    }, 30_000);
    const signalled = performance.now();
    host.child.kill("SIGTERM");
    const before = (await Deno.readTextFile(appended)).trim().split("\n").length;
    const status = await host.child.status;
    const took = performance.now() - signalled;
    await host.ended;
    await call.status;
    assert.equal(status.code, 0, host.lines.join("\n"));
    assert.ok(took < 6000, `stopped in ${Math.round(took)} ms`);
    assert.ok(before < PARTS, `the write was in progress at SIGTERM (${before} of ${PARTS})`);
    console.error(`SIGTERM: stopped in ${Math.round(took)} ms, ${before} of ${PARTS} written then`);
    const lines = (await Deno.readTextFile(appended)).trim().split("\n");
    assert.equal(lines.length, PARTS, "every append of the call in progress reached the file");
    assert.deepEqual(lines.map((l) => Number(l.split(" ")[1])), [...Array(PARTS).keys()]);
    assert.equal(await Deno.readTextFile(join(root, "state", "hook")), "stopped");
    // the journal holds the stop, the service's last line included
    const db = new DatabaseSync(join(root, "state", "core", "journal.sqlite"), { readOnly: true });
    try {
      const last = db.prepare("SELECT line FROM entries ORDER BY id DESC LIMIT 1").get() as {
        line: string;
      };
      assert.equal(last.line, "host stopped");
      const hook = db.prepare("SELECT count(*) AS n FROM entries WHERE line = ?")
        .get("probe: stop hook ran") as { n: number };
      assert.equal(hook.n, 1);
    } finally {
      db.close();
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
