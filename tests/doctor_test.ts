/**
 * `sausage doctor` on worlds with each problem it names (a plugin whose
 * discovery fails, a broken import, an unreadable journal, a lock left by a
 * killed host, a lock held by a running one), on a machine without a Rust
 * toolchain or a WASI clang, and on bad folders: a cache that is not
 * writable, a world on a read-only file system, a world of another user.
 * The last run as root with `mount` and as another uid: skipped where that
 * cannot be done, with the reason.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { initWorld } from "../core/init.ts";
import { checkToolchain, exitCodeOf, type Finding } from "../cli/doctor.ts";
import { installPlugin, startHeadless, TEST_CACHE_DIR } from "./world.ts";

const MAIN = new URL("../main.ts", import.meta.url).pathname;
const NOBODY = 65534;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function sausage(
  args: string[],
  options: { uid?: number; env?: Record<string, string> } = {},
): Promise<Run> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--unstable-worker-options", MAIN, ...args],
    env: { NO_COLOR: "1", ...options.env },
    stdout: "piped",
    stderr: "piped",
    ...(options.uid === undefined ? {} : { uid: options.uid, gid: options.uid }),
  }).output();
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr) };
}

/** `sausage doctor WORLD --json`: the findings, checked against the exit code. */
async function doctor(world: string, extra: string[] = [], uid?: number): Promise<Finding[]> {
  const run = uid === undefined
    ? await sausage(["doctor", world, "--json", "--cache-dir", TEST_CACHE_DIR, ...extra])
    : await asUser(uid, ["doctor", world, "--json", ...extra]);
  const findings = JSON.parse(run.stdout) as Finding[];
  assert.equal(run.code, exitCodeOf(findings), "the exit code is the worst finding's");
  return findings;
}

function find(findings: Finding[], topic: string, pattern: RegExp): Finding {
  const f = findings.find((f) => f.topic === topic && pattern.test(f.text));
  assert.ok(f, `no ${topic} finding matches ${pattern}: ${JSON.stringify(findings, null, 2)}`);
  return f;
}

async function newWorld(plugins: Record<string, string> = { probe: "probe" }): Promise<string> {
  const root = await Deno.makeTempDir({ prefix: "sausage-doctor-" });
  await initWorld(root, { installAgent: false });
  for (const [name, crate] of Object.entries(plugins)) await installPlugin(root, name, crate);
  return root;
}

async function sh(cmd: string, ...args: string[]): Promise<boolean> {
  const out = await new Deno.Command(cmd, { args, stdout: "null", stderr: "null" }).output()
    .catch(() => ({ success: false }));
  return out.success;
}

/** Whether this machine lets the tests bind-mount a folder read-only (root with CAP_SYS_ADMIN). */
async function mountWorks(): Promise<boolean> {
  if (Deno.build.os !== "linux" || Deno.uid() !== 0) return false;
  const dir = await Deno.makeTempDir({ prefix: "sausage-mount-check-" });
  try {
    if (!await sh("mount", "--bind", dir, dir)) return false;
    const ro = await sh("mount", "-o", "remount,bind,ro", dir);
    await sh("umount", dir);
    return ro;
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

const CAN_MOUNT = await mountWorks();
const NO_MOUNT = "needs root and mount (a read-only bind mount, another uid)";
if (!CAN_MOUNT) console.error(`doctor_test: skipping the bad-folder tests: ${NO_MOUNT}`);

/** Runs `fn` with `dir` bind-mounted read-only over itself. */
async function readOnly<T>(dir: string, fn: () => Promise<T>): Promise<T> {
  assert.ok(await sh("mount", "--bind", dir, dir));
  try {
    assert.ok(await sh("mount", "-o", "remount,bind,ro", dir));
    return await fn();
  } finally {
    assert.ok(await sh("umount", dir));
  }
}

/**
 * `sausage ARGS` as the user `uid`. Deno's cache is in root's home, which
 * another user cannot enter: it is bind-mounted where that user can read it.
 */
async function asUser(uid: number, args: string[]): Promise<Run> {
  const home = Deno.env.get("HOME") ?? "/root";
  const denoDir = Deno.env.get("DENO_DIR") ?? join(home, ".cache", "deno");
  const view = await Deno.makeTempDir({ prefix: "sausage-deno-dir-" });
  await Deno.chmod(view, 0o755);
  assert.ok(await sh("mount", "--bind", denoDir, view));
  try {
    return await sausage(args, { uid, env: { DENO_DIR: view, HOME: "/tmp" } });
  } finally {
    await sh("umount", view);
    await Deno.remove(view, { recursive: true }).catch(() => {});
  }
}

Deno.test("doctor: a healthy world is ok on every line of its own", async () => {
  const root = await newWorld();
  try {
    const findings = await doctor(root);
    const own = findings.filter((f) => ["world", "journal", "lock", "plugins"].includes(f.topic));
    assert.deepEqual(own.map((f) => f.level), ["ok", "ok", "ok", "ok"], JSON.stringify(own));
    find(findings, "plugins", /^\d+ plugins discovered; \d+ imports ok$/);
    find(findings, "cache", new RegExp(`^${TEST_CACHE_DIR}: .* free$`));
    // the text form: one line a finding
    const text = await sausage(["doctor", root, "--cache-dir", TEST_CACHE_DIR]);
    assert.match(text.stdout, /^ok +lock +no host runs it$/m);
    assert.ok(!text.stdout.includes("\x1b"), "no colours on a pipe");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("doctor: a failed discovery, a broken import, a lock left by a killed host", async () => {
  const root = await newWorld({ probe: "probe", agent: "agent_v1" });
  try {
    await Deno.mkdir(join(root, "plugins", "bad"));
    await Deno.writeTextFile(join(root, "plugins", "bad", "plugin.wasm"), "not a component");
    await Deno.mkdir(join(root, "state", "core"), { recursive: true });
    const killed = { pid: 4242, hostname: "box", started: "2026-01-01T00:00:00Z", command: "x" };
    await Deno.writeTextFile(join(root, "state", "core", "host.lock"), JSON.stringify(killed));
    const findings = await doctor(root);
    const plugin = find(findings, "plugin", /^bad: its discovery failed: /);
    assert.equal(plugin.level, "error");
    assert.match(plugin.fix ?? "", /cargo\.build.*core\.revert \{"plugin": "bad"\}/);
    const missing = find(findings, "import", /^agent imports notes, which does not exist$/);
    assert.equal(missing.level, "error");
    assert.match(missing.fix ?? "", /install \/plugins\/notes\/plugin\.wasm/);
    const lock = find(findings, "lock", /process 4242 on box.* did not stop cleanly/);
    assert.equal(lock.level, "warning");
    assert.equal(exitCodeOf(findings), 1);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("doctor: an unreadable journal, with the fix", async () => {
  const root = await newWorld();
  try {
    await Deno.mkdir(join(root, "state", "core"), { recursive: true });
    const journal = join(root, "state", "core", "journal.sqlite");
    await Deno.writeTextFile(
      journal,
      "this is not a database, it is a shopping list\n".repeat(200),
    );
    const findings = await doctor(root, ["--no-discover"]);
    const f = find(findings, "journal", /^cannot read the journal .*journal\.sqlite: /);
    assert.equal(f.level, "error");
    assert.equal(
      f.fix,
      `move it away (mv ${journal} ${journal}.broken) while no host runs: ` +
        "the next start begins a new one",
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("doctor: a world a host runs: the lock's holder, the graph from its endpoint", async () => {
  const root = await newWorld({ probe: "probe", agent: "agent_v1" });
  const host = await startHeadless(root);
  try {
    const findings = await doctor(root);
    find(findings, "lock", new RegExp(`^run now by process ${host.pid} on `));
    find(findings, "import", /^agent imports notes, which does not exist$/);
    find(findings, "journal", /^\d+ entries, the last at /);
  } finally {
    host.kill("SIGTERM");
    await host.status;
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("doctor: no Rust toolchain, or no WASI clang: what to install", async () => {
  const none = await Deno.makeTempDir({ prefix: "sausage-no-toolchain-" });
  try {
    const [missing] = await checkToolchain({ env: { PATH: none }, prebuilt: none, wasiSdk: none });
    assert.equal(missing.level, "error");
    assert.match(
      missing.text,
      /^cargo\.build cannot work: No Rust toolchain with the wasm32-wasip2/,
    );
    assert.match(
      missing.fix ?? "",
      /rustup target add wasm32-wasip2|sh\.rustup\.rs .*wasm32-wasip2/,
    );
    // a toolchain that works, without a C compiler for its target
    const found = await checkToolchain();
    if (found[0].level !== "ok") return; // this machine has no toolchain: the case above covers it
    const { findWasmToolchain } = await import("../core/cargo/toolchain.ts");
    const rustc = (await findWasmToolchain()).env.RUSTC;
    if (!rustc) return; // the rustc on the PATH: its clang cannot be taken away here
    const [ok, clang] = await checkToolchain({
      env: { RUSTC: rustc, PATH: none },
      prebuilt: none,
      wasiSdk: none,
    });
    assert.equal(ok.level, "ok");
    assert.equal(clang.level, "warning");
    assert.match(clang.text, /no WASI clang/);
    assert.match(clang.fix ?? "", /WASI_SDK_PATH/);
  } finally {
    await Deno.remove(none, { recursive: true });
  }
});

Deno.test({
  name: "bad input: a world owned by another user is a warning with the fix",
  ignore: !CAN_MOUNT,
  async fn() {
    const root = await newWorld();
    try {
      assert.ok(await sh("chown", "-R", "12345:12345", root));
      const findings = await doctor(root, ["--no-discover"]);
      const f = find(findings, "world", /belongs to the user 12345, and Sausage runs as root/);
      assert.equal(f.level, "warning");
      assert.match(f.fix ?? "", /--user 12345.*chown -R 0 /);
      // run as another user still: that user cannot write it
      const other = await doctor(root, ["--no-discover"], NOBODY);
      const denied = find(other, "world", /is not writable by the user 65534/);
      assert.equal(denied.level, "error");
      assert.match(denied.fix ?? "", /run Sausage as the user that owns it \(12345\)/);
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  },
});

Deno.test({
  name: "bad input: a cache folder that is not writable, by permissions or a read-only mount",
  ignore: !CAN_MOUNT,
  async fn() {
    const cache = await Deno.makeTempDir({ prefix: "sausage-cache-ro-" });
    await Deno.chmod(cache, 0o755);
    try {
      const run = await asUser(NOBODY, ["doctor", "--json", "--cache-dir", cache]);
      const findings = JSON.parse(run.stdout) as Finding[];
      const f = find(findings, "cache", /^the cache .* is not writable by the user 65534/);
      assert.equal(f.level, "error");
      assert.equal(run.code, 1);
      assert.match(f.fix ?? "", new RegExp(`chown -R 65534 ${cache}.*--cache-dir DIR`));
      // read-only for root too
      await readOnly(cache, async () => {
        const findings = JSON.parse(
          (await sausage(["doctor", "--json", "--cache-dir", cache])).stdout,
        ) as Finding[];
        const ro = find(findings, "cache", /is on a read-only file system/);
        assert.match(ro.fix ?? "", /--cache-dir DIR, or set XDG_CACHE_HOME/);
      });
    } finally {
      await Deno.remove(cache, { recursive: true });
    }
  },
});

Deno.test({
  name: "bad input: a world on a read-only file system, for doctor and for a host",
  ignore: !CAN_MOUNT,
  async fn() {
    const root = await newWorld();
    try {
      // a first run makes the journal and the lock file
      const first = await sausage([
        "call",
        root,
        "probe.echo",
        "{}",
        "--cache-dir",
        TEST_CACHE_DIR,
      ]);
      assert.equal(first.code, 0, first.stderr);
      await readOnly(root, async () => {
        const findings = await doctor(root);
        const f = find(findings, "world", /is on a read-only file system/);
        assert.equal(f.level, "error");
        assert.match(f.fix ?? "", /mount it read-write/);
        find(findings, "plugins", /not checked: a host cannot run a world it cannot write/);
        const host = await sausage(["--headless", root, "--cache-dir", TEST_CACHE_DIR]);
        assert.notEqual(host.code, 0);
        assert.match(
          host.stderr,
          new RegExp(
            `the world ${root} is on a read-only file system .*Fix: .*mount it read-write`,
          ),
        );
      });
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  },
});
