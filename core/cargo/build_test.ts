/**
 * `cargo.build` in a world (PROTOCOL section 11), with the SDK example
 * `notes` as the plugin's source.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { startWorld, TEST_CACHE_DIR, type TestWorld } from "../../tests/world.ts";
import { warningsOf } from "./compile.ts";
import { findWasmToolchain } from "./toolchain.ts";
import { BUILD_SLOTS, BuildSlots } from "./slots.ts";
import { isTestHarness } from "./test_run.ts";

const NOTES = new URL("../../plugins/notes/src/main.rs", import.meta.url).pathname;

/** Writes `plugins/<name>/source/` with the notes example, changed by `edit`. */
async function writeSource(w: TestWorld, name: string, edit: (main: string) => string = (m) => m) {
  const src = join(w.root, "plugins", name, "source");
  await Deno.mkdir(join(src, "src"), { recursive: true });
  await Deno.writeTextFile(join(src, "src", "main.rs"), edit(await Deno.readTextFile(NOTES)));
  await Deno.writeTextFile(
    join(src, "Cargo.toml"),
    `[package]\nname = "${name}"\nversion = "0.1.0"\nedition = "2024"\n\n[dependencies]\nsausage-plugin = "0.1"\n`,
  );
}

async function build(w: TestWorld, plugin: string) {
  const steps: Record<string, unknown>[] = [];
  const response = await w.client.request("cargo.build", { plugin }, {
    onNotify: (_name, params) => steps.push(params as Record<string, unknown>),
  });
  return { response, steps };
}

Deno.test("cargo.build builds and tests the SDK example; core.activate makes it current; it works", async () => {
  await using w = await startWorld();
  await writeSource(w, "notes");
  const { response, steps } = await build(w, "notes");
  assert.equal(response.error, undefined, JSON.stringify(response.error, null, 2));
  const result = response.result as {
    wasm: string;
    tests: { passed: number; failed: number; output: string };
  };
  assert.match(result.wasm, /^\/state\/cargo\/builds\/\d+\/notes\.wasm$/);
  // the component, not the test binary cargo built beside it
  assert.ok(!isTestHarness(await Deno.readFile(join(w.root, result.wasm))));
  // its document beside it, for a consumer's import before the activation
  const discover = (result as { discover?: string }).discover ?? "(none)";
  assert.equal(discover, result.wasm.replace(/notes\.wasm$/, "discover.json"));
  const document = JSON.parse(await Deno.readTextFile(join(w.root, discover)));
  assert.ok(document.methods.some((m: { name: string }) => m.name === "add"));
  assert.equal(result.tests.failed, 0);
  assert.equal(result.tests.passed, 2);
  assert.ok(steps.some((s) => s.step === "test"));
  // the build did not activate anything
  await assert.rejects(Deno.stat(join(w.root, "plugins", "notes", "plugin.wasm")));
  const activated = await w.request("core.activate", { plugin: "notes", wasm: result.wasm });
  assert.equal(activated.error, undefined, activated.error?.message);
  const adds = await Promise.all(
    ["milk", "eggs", "flour"].map((text) => w.call("notes.add", { text })),
  );
  assert.deepEqual((adds as { count: number }[]).map((a) => a.count).sort(), [1, 2, 3]);
  assert.deepEqual(((await w.call("notes.list")) as string[]).sort(), ["eggs", "flour", "milk"]);
  // a call to cargo.build has a process, a folder in /proc while it runs, and journal entries
  assert.ok(w.host.journal.query({ plugin: "cargo", grep: "^start build" }).length === 1);
});

Deno.test("a second build after a one-line change compiles only the plugin", async () => {
  await using w = await startWorld();
  await writeSource(w, "notes2");
  assert.equal((await build(w, "notes2")).response.error, undefined);
  await writeSource(
    w,
    "notes2",
    (m) => m.replace("Add a note at the end of the list.", "Add a note, at the end."),
  );
  const started = performance.now();
  const { response, steps } = await build(w, "notes2");
  const seconds = (performance.now() - started) / 1000;
  assert.equal(response.error, undefined);
  const compiled = steps.filter((s) => s.step === "compile").map((s) => String(s.text));
  assert.ok(
    compiled.every((t) => /notes2/.test(t)),
    `compiled again: ${compiled.join(", ")} (${seconds} s)`,
  );
});

Deno.test("a failing test is -32004 with the test output; the other tests still ran", async () => {
  await using w = await startWorld();
  await writeSource(
    w,
    "broken",
    (m) => m.replace("assert!(Notes.list().unwrap().is_empty());", 'assert!(false, "on purpose");'),
  );
  const { response } = await build(w, "broken");
  assert.equal(response.error?.code, -32004);
  const data = response.error!.data as {
    step: string;
    tests: { passed: number; failed: number; output: string };
  };
  assert.equal(data.step, "the tests");
  assert.equal(data.tests.failed, 1);
  assert.equal(data.tests.passed, 1);
  assert.match(data.tests.output, /on purpose/);
});

Deno.test("a compile error is -32004 with the compiler's message", async () => {
  await using w = await startWorld();
  await writeSource(
    w,
    "typo",
    (m) => m.replace("fn file() -> PathBuf {", "fn file() -> PathBuff {"),
  );
  const { response } = await build(w, "typo");
  assert.equal(response.error?.code, -32004);
  const data = response.error!.data as { step: string; output: string };
  assert.equal(data.step, "compiling the tests");
  assert.match(data.output, /PathBuff/);
});

Deno.test("a build of a plugin without source is a clear error", async () => {
  await using w = await startWorld();
  const r = await w.request("cargo.build", { plugin: "nothing" });
  assert.equal(r.error?.code, -32602);
  assert.match(r.error!.message, /\/plugins\/nothing\/source\/Cargo\.toml/);
});

Deno.test("sausage-plugin is the world's /plugins/cargo/sdk/: an edit there is built, with a warning; without it a clear error", async () => {
  await using w = await startWorld();
  const lib = join(w.root, "plugins", "cargo", "sdk", "sausage-plugin", "src", "lib.rs");
  await Deno.writeTextFile(
    lib,
    `\n/// A mark of this world's own SDK.\npub const WORLD_MARK: &str = "edited";\n`,
    { append: true },
  );
  await writeSource(w, "marked", (m) =>
    m + `
#[cfg(test)]
mod mark {
    #[test]
    fn built_against_the_world_sdk() {
        assert_eq!(sausage_plugin::WORLD_MARK, "edited");
    }
}
`);
  const { response } = await build(w, "marked");
  assert.equal(response.error, undefined, JSON.stringify(response.error, null, 2));
  const result = response.result as { tests: { passed: number }; warnings: string[] };
  assert.equal(result.tests.passed, 3);
  assert.match(
    result.warnings[0],
    /\/plugins\/cargo\/sdk\/ differs .* sausage-plugin\/src\/lib\.rs/,
  );

  await Deno.remove(join(w.root, "plugins", "cargo", "sdk"), { recursive: true });
  const missing = (await build(w, "marked")).response;
  assert.equal(missing.error?.code, -32004);
  const data = missing.error!.data as { step: string; output: string };
  assert.equal(data.step, "finding the SDK");
  assert.match(data.output, /no SDK at \/plugins\/cargo\/sdk\/.*sausage init/);
});

Deno.test("a file in place of /plugins/cargo/sdk, or an SDK over the size cap, is -32004 (finding the SDK)", async () => {
  await using w = await startWorld();
  await writeSource(w, "nosdk");
  const sdk = join(w.root, "plugins", "cargo", "sdk");
  {
    using file = await Deno.open(join(sdk, "sausage-plugin", "big.bin"), {
      write: true,
      create: true,
    });
    await file.truncate(65 * 1024 * 1024);
  }
  const large = (await build(w, "nosdk")).response;
  assert.equal(large.error?.code, -32004, JSON.stringify(large.error));
  assert.equal((large.error!.data as { step: string }).step, "finding the SDK");
  assert.match((large.error!.data as { output: string }).output, /more than 64 MiB/);

  await Deno.remove(sdk, { recursive: true });
  await Deno.writeTextFile(sdk, "not a folder");
  const file = (await build(w, "nosdk")).response;
  assert.equal(file.error?.code, -32004, JSON.stringify(file.error));
  const data = file.error!.data as { step: string; output: string };
  assert.equal(data.step, "finding the SDK");
  assert.match(data.output, /\/plugins\/cargo\/sdk is not a folder.*sausage init/);
});

/** The processes (ID and command line) that work in the shared build folders. */
async function buildProcesses(): Promise<Map<number, string>> {
  const { stdout } = await new Deno.Command("ps", { args: ["-eo", "pid=,args="], stdout: "piped" })
    .output();
  const folder = join(TEST_CACHE_DIR, "cargo");
  const found = new Map<number, string>();
  for (const line of new TextDecoder().decode(stdout).split("\n")) {
    const [, pid, args] = line.match(/^\s*(\d+) (.*)$/) ?? [];
    if (args?.includes(folder)) found.set(Number(pid), args);
  }
  return found;
}

/** A test that runs for two minutes, so that a build is still testing when it is ended. */
const SLOW_TEST = `
#[cfg(test)]
mod slow {
    #[test]
    fn waits() {
        std::thread::sleep(std::time::Duration::from_secs(120));
    }
}
`;

/** A const that rustc evaluates for hours, so that a build is still compiling the plugin when it is ended. */
const SLOW_CONST = `
const _: u64 = {
    let mut i = 0u64;
    let mut sum = 0u64;
    while i < u64::MAX {
        sum = sum.wrapping_add(i);
        i += 1;
    }
    sum
};
`;

/** A build script that runs for two minutes. */
const SLOW_BUILD_SCRIPT = `fn main() {
    std::thread::sleep(std::time::Duration::from_secs(120));
}
`;

interface EndCase {
  /** The plugin's name. */
  name: string;
  edit: (main: string) => string;
  /** More files of the source. */
  files?: Record<string, string>;
  /**
   * The command line of a process of the build that must run when it is
   * ended, or "tests": the host runs the test binary, after it said so.
   */
  running: RegExp | "tests";
}

const IN_TESTS: EndCase = { name: "killed", edit: (m) => m + SLOW_TEST, running: "tests" };

/** The test runs' temporary worlds (`sausage-test-*`) that are there now. */
async function testRoots(): Promise<Set<string>> {
  const tmp = Deno.env.get("TMPDIR") ?? "/tmp";
  const roots = new Set<string>();
  for await (const e of Deno.readDir(tmp)) {
    if (e.name.startsWith("sausage-test-")) roots.add(join(tmp, e.name));
  }
  return roots;
}

async function endsCargo(how: "core.kill" | "core.stop", code: number, c: EndCase = IN_TESTS) {
  await using w = await startWorld();
  await writeSource(w, c.name, c.edit);
  for (const [path, text] of Object.entries(c.files ?? {})) {
    await Deno.writeTextFile(join(w.root, "plugins", c.name, "source", path), text);
  }
  const before = new Set((await buildProcesses()).keys()); // other builds on this machine
  const ours = async () => [...(await buildProcesses())].filter(([pid]) => !before.has(pid));
  const rootsBefore = await testRoots();
  let testing = false;
  try {
    const pending = w.client.request("cargo.build", { plugin: c.name }, {
      onNotify: (_name, params) => {
        if (/^running unittests/.test((params as { text?: string }).text ?? "")) testing = true;
      },
    });
    const deadline = performance.now() + 180_000;
    const running = async () => {
      if (c.running === "tests") {
        // the instance started: its temporary world is there
        return testing && [...await testRoots()].some((r) => !rootsBefore.has(r));
      }
      const pattern = c.running;
      return (await ours()).some(([, args]) => pattern.test(args));
    };
    while (!(await running())) {
      assert.ok(performance.now() < deadline, `the build did not reach ${c.running} in time`);
      await new Promise((r) => setTimeout(r, 100));
    }
    const pid = w.host.processes.list().find((p) => p.plugin === "cargo")!.pid;
    await w.call(how, { pid });
    const r = await pending;
    assert.equal(r.error?.code, code, JSON.stringify(r.error));
    let left = await ours();
    for (let i = 0; i < 100 && left.length > 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
      left = await ours();
    }
    assert.deepEqual(left.map(([, args]) => args), [], `still running after ${how}`);
    // the tests' instances ended with their run, which removes its temporary world
    const roots = async () => [...await testRoots()].filter((r) => !rootsBefore.has(r));
    for (let i = 0; i < 100 && (await roots()).length > 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.deepEqual(await roots(), [], `a test run still runs after ${how}`);
  } finally {
    // a failed test leaves no busy rustc behind on a shared machine
    for (const [pid] of await ours()) {
      try {
        Deno.kill(pid, "SIGKILL");
      } catch {
        // gone
      }
    }
  }
}

Deno.test("a kill during a build ends cargo, rustc and the tests at once", async () => {
  await endsCargo("core.kill", -32002);
});

Deno.test("a stop during a build ends cargo, rustc and the tests", async () => {
  await endsCargo("core.stop", -32002);
});

Deno.test("a kill while rustc compiles the plugin leaves no rustc running", async () => {
  await endsCargo("core.kill", -32002, {
    name: "slowconst",
    edit: (m) => `#![allow(long_running_const_eval)]\n${m}${SLOW_CONST}`,
    running: /rustc.* --crate-name slowconst /,
  });
});

Deno.test("a kill while a build script runs leaves no build script or rustc running", async () => {
  await endsCargo("core.kill", -32002, {
    name: "slowscript",
    edit: (m) => m,
    files: { "build.rs": SLOW_BUILD_SCRIPT },
    running: /slowscript-[0-9a-f]+\/build-script-build/,
  });
});

Deno.test("the warnings name each imported method the plugin does not use", () => {
  const span = (text: string) => [{ is_primary: true, text: [{ text }] }];
  const warnings = warningsOf([
    {
      reason: "compiler-message",
      message: {
        level: "warning",
        message: "function `list` is never used",
        code: { code: "dead_code" },
        rendered: "warning: function `list` is never used",
        spans: span('sausage_plugin::import!("notes"); // imports/notes.json'),
      },
    },
    {
      reason: "compiler-message",
      message: {
        level: "warning",
        message: "methods `set`, `remove`, and `names` are never used",
        code: { code: "dead_code" },
        rendered: "warning: methods ...",
        spans: span('sausage_plugin::import!("secrets");'),
      },
    },
    {
      reason: "compiler-message",
      message: {
        level: "warning",
        message: "unused variable: `x`",
        code: { code: "unused_variables" },
        rendered: "warning: unused variable: `x`",
        spans: span("let x = 1;"),
      },
    },
  ]);
  assert.deepEqual(warnings.slice(0, 4), [
    "unused import: notes list is imported but never used: remove it from imports/notes.json",
    "unused import: secrets set is imported but never used: remove it from imports/secrets.json",
    "unused import: secrets remove is imported but never used: remove it from imports/secrets.json",
    "unused import: secrets names is imported but never used: remove it from imports/secrets.json",
  ]);
  assert.ok(warnings.includes("warning: unused variable: `x`"));
});

/** A provider of two methods, as `imports/demo.json`. */
const DEMO_DOCUMENT = {
  openrpc: "1.2.6",
  info: { title: "demo", version: "0.1.0" },
  methods: ["ping", "pong"].map((name) => ({
    name,
    summary: `Answer ${name}.`,
    paramStructure: "by-name",
    params: [],
    result: { name: "Answer", schema: { type: "string" } },
  })),
};

/** A plugin that imports demo and calls only `ping`. */
const PINGER = `use sausage_plugin::{Result, rpc};

sausage_plugin::import!("demo"); // imports/demo.json

/// Pings demo.
struct Pinger;

#[rpc]
impl Pinger {
    /// Ping demo.
    async fn ping(&self) -> Result<String> {
        Ok(demo::ping().await?)
    }
}

fn main() {
    sausage_plugin::run(Pinger);
}
`;

Deno.test("a real build's warnings name the imported method the plugin does not use", async () => {
  await using w = await startWorld();
  const src = join(w.root, "plugins", "pinger", "source");
  await Deno.mkdir(join(src, "src"), { recursive: true });
  await Deno.mkdir(join(src, "imports"), { recursive: true });
  await Deno.writeTextFile(join(src, "imports", "demo.json"), JSON.stringify(DEMO_DOCUMENT));
  await Deno.writeTextFile(join(src, "src", "main.rs"), PINGER);
  await Deno.writeTextFile(
    join(src, "Cargo.toml"),
    `[package]\nname = "pinger"\nversion = "0.1.0"\nedition = "2024"\n\n[dependencies]\nsausage-plugin = "0.1"\n`,
  );
  const { response } = await build(w, "pinger");
  assert.equal(response.error, undefined, JSON.stringify(response.error, null, 2));
  const { warnings } = response.result as { warnings: string[] };
  assert.deepEqual(
    warnings.filter((line) => line.startsWith("unused import:")),
    ["unused import: demo pong is imported but never used: remove it from imports/demo.json"],
    warnings.join("\n"),
  );
});

/** A build script that compiles C with the WASI clang cargo.build names, and tells the crate which. */
const C_BUILD_SCRIPT = `use std::{env, path::PathBuf, process::Command};

fn main() {
    let cc = env::var("CC_wasm32_wasip2").expect("CC_wasm32_wasip2 is set");
    let out = PathBuf::from(env::var("OUT_DIR").unwrap());
    std::fs::write(out.join("answer.c"), "int answer(void) { return 42; }\\n").unwrap();
    let status = Command::new(&cc)
        .args(["--target=wasm32-wasip2", "-c"])
        .arg(out.join("answer.c"))
        .arg("-o")
        .arg(out.join("answer.o"))
        .status()
        .unwrap();
    assert!(status.success(), "{cc} could not compile C");
    println!("cargo:rustc-env=SEEN_CC={cc}");
    println!("cargo:rustc-env=SEEN_AR={}", env::var("AR_wasm32_wasip2").unwrap_or_default());
}
`;

const clang = (await findWasmToolchain()).env;

Deno.test({
  name: "build scripts get CC_wasm32_wasip2 and AR_wasm32_wasip2, a WASI clang that compiles C",
  ignore: !clang.CC_wasm32_wasip2,
  fn: async () => {
    await using w = await startWorld();
    await writeSource(w, "withc", (m) =>
      m + `
#[cfg(test)]
mod c {
    #[test]
    fn the_build_script_saw_a_wasi_clang() {
        assert_eq!(env!("SEEN_CC"), ${JSON.stringify(clang.CC_wasm32_wasip2)});
        assert_eq!(env!("SEEN_AR"), ${JSON.stringify(clang.AR_wasm32_wasip2 ?? "")});
    }
}
`);
    await Deno.writeTextFile(
      join(w.root, "plugins", "withc", "source", "build.rs"),
      C_BUILD_SCRIPT,
    );
    const { response } = await build(w, "withc");
    assert.equal(response.error, undefined, JSON.stringify(response.error, null, 2));
    assert.equal((response.result as { tests: { passed: number } }).tests.passed, 3);
  },
});

Deno.test("the three SDK examples build through cargo.build and activate; the web server answers HTTP", async () => {
  await using w = await startWorld();
  for (const name of ["notes", "www", "secrets"]) {
    const from = new URL(`../../plugins/${name}/`, import.meta.url).pathname;
    const src = join(w.root, "plugins", name, "source");
    await Deno.mkdir(src, { recursive: true });
    await Deno.mkdir(join(src, "src"), { recursive: true });
    for await (const e of Deno.readDir(join(from, "src"))) {
      await Deno.copyFile(join(from, "src", e.name), join(src, "src", e.name));
    }
    // in a world, the SDK is a registry dependency that cargo.build points to the shipped copy
    const manifest = (await Deno.readTextFile(join(from, "Cargo.toml")))
      .replace(/sausage-plugin = \{ path = "[^"]*" \}/, 'sausage-plugin = "0.1"');
    await Deno.writeTextFile(join(src, "Cargo.toml"), manifest);
    const built = await w.request("cargo.build", { plugin: name });
    assert.equal(built.error, undefined, `${name}: ${JSON.stringify(built.error, null, 2)}`);
    const activated = await w.request("core.activate", {
      plugin: name,
      wasm: (built.result as { wasm: string }).wasm,
    });
    assert.equal(activated.error, undefined, `${name}: ${activated.error?.message}`);
  }
  await Deno.mkdir(join(w.root, "state", "www"), { recursive: true });
  await Deno.writeTextFile(join(w.root, "state", "www", "index.html"), "hello from www");
  const listener = Deno.listen({ port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const pid = await w.call("core.call", { method: "www.start", params: { port }, detach: true });
  assert.match(String(pid), /^www-/);
  const page = await fetch(`http://127.0.0.1:${port}/index.html`);
  assert.equal(await page.text(), "hello from www");
  await w.call("core.stop", { pid });
});

/** A plugin that imports the built-in `cargo`, as an agent's plugin does. */
const REBUILDER = `use sausage_plugin::{Result, rpc, schema};

sausage_plugin::import!("cargo"); // imports/cargo.json, from /proc/core/plugins/cargo/discover.json

/// Builds plugins.
struct Rebuilder;

/// A plugin to build.
#[schema]
struct Target {
    /// Its name.
    plugin: String,
}

#[rpc]
impl Rebuilder {
    /// Build a plugin; returns the path of its component.
    async fn rebuild(&self, Target { plugin }: Target) -> Result<String> {
        Ok(cargo::build(cargo::BuildParams { plugin }).await?.wasm)
    }
}

fn main() {
    sausage_plugin::run(Rebuilder);
}
`;

Deno.test("a plugin that imports the built-in cargo activates without force; /proc has cargo's client.rs", async () => {
  await using w = await startWorld();
  const read = async (path: string) => {
    const r = (await w.call("probe.read_file", { path })) as { text?: string; error?: string };
    assert.ok(r.text !== undefined, `${path}: ${r.error}`);
    return r.text;
  };
  const src = join(w.root, "plugins", "rebuilder", "source");
  await Deno.mkdir(join(src, "src"), { recursive: true });
  await Deno.mkdir(join(src, "imports"), { recursive: true });
  await Deno.writeTextFile(
    join(src, "imports", "cargo.json"),
    await read("/proc/core/plugins/cargo/discover.json"),
  );
  await Deno.writeTextFile(join(src, "src", "main.rs"), REBUILDER);
  await Deno.writeTextFile(
    join(src, "Cargo.toml"),
    `[package]\nname = "rebuilder"\nversion = "0.1.0"\nedition = "2024"\n\n[dependencies]\nsausage-plugin = "0.1"\n`,
  );
  const built = await w.request("cargo.build", { plugin: "rebuilder" });
  assert.equal(built.error, undefined, JSON.stringify(built.error, null, 2));
  const activated = await w.request("core.activate", {
    plugin: "rebuilder",
    wasm: (built.result as { wasm: string }).wasm,
  });
  assert.equal(activated.error, undefined, JSON.stringify(activated.error, null, 2));
  const graph = JSON.parse(await read("/proc/core/graph.json"));
  assert.equal(graph.plugins.rebuilder.imports.cargo.status, "ok");
  let client = "";
  for (let i = 0; i < 200 && !client.includes("fn build"); i++) {
    client = await read("/proc/core/plugins/cargo/client.rs");
    if (!client.includes("fn build")) await new Promise((r) => setTimeout(r, 100));
  }
  assert.match(client, /fn build/);
  // no file replaces the built-in plugin
  const replaced = await w.request("core.activate", {
    plugin: "cargo",
    wasm: (built.result as { wasm: string }).wasm,
  });
  assert.equal(replaced.error?.code, -32602);
  assert.match(replaced.error!.message, /cargo is built into the host/);
});

Deno.test("two builds at once, of two worlds, run side by side in build slots of their own", async () => {
  await using a = await startWorld();
  await using b = await startWorld();
  await writeSource(a, "sidea");
  await writeSource(b, "sideb");
  const first = await build(a, "sidea");
  assert.equal(first.response.error, undefined, JSON.stringify(first.response.error));
  // after a build its slot's compiled crates are copied to slots that have none (in the
  // background): done here at once, so that both builds find them
  const slots = new BuildSlots(TEST_CACHE_DIR);
  for (let i = 0; i < BUILD_SLOTS; i++) await slots.fill(i);

  const [ra, rb] = await Promise.all([build(a, "sidea"), build(b, "sideb")]);
  for (const [r, name] of [[ra, "sidea"], [rb, "sideb"]] as const) {
    assert.equal(r.response.error, undefined, JSON.stringify(r.response.error));
    assert.ok(
      !r.steps.some((s) => s.step === "slot"),
      `${name} waited: ${JSON.stringify(r.steps)}`,
    );
    // each compiled only its own crate: the dependencies were fresh in its slot
    const compiled = new Set(
      r.steps.filter((s) => s.step === "compile").map((s) => String(s.text).split(" ").pop()),
    );
    assert.deepEqual([...compiled], [name]);
    const last = r.steps.findLast((s) => s.step === "compile")!;
    assert.match(String(last.text), new RegExp(`^compiled \\d+/\\d+ ${name}$`));
    assert.ok(Number(last.compiled) <= Number(last.total), JSON.stringify(last));
  }
});

Deno.test("a Cargo.toml whose package is not the plugin's name is -32004 naming both", async () => {
  await using w = await startWorld();
  await writeSource(w, "named");
  const manifest = join(w.root, "plugins", "named", "source", "Cargo.toml");
  await Deno.writeTextFile(
    manifest,
    (await Deno.readTextFile(manifest)).replace('name = "named"', 'name = "other"'),
  );
  const { response } = await build(w, "named");
  assert.equal(response.error?.code, -32004, JSON.stringify(response.error));
  assert.equal((response.error?.data as { step: string }).step, "checking the package");
  assert.match(response.error!.message, /names its package "other"/);
  assert.match(response.error!.message, /set name = "named" under \[package\]/);
});

Deno.test("a crate that needs a newer rustc is -32004 saying so in its message", async () => {
  await using w = await startWorld();
  await writeSource(w, "newer");
  const manifest = join(w.root, "plugins", "newer", "source", "Cargo.toml");
  await Deno.writeTextFile(
    manifest,
    (await Deno.readTextFile(manifest)).replace(
      'edition = "2024"',
      'edition = "2024"\nrust-version = "1.999"',
    ),
  );
  const { response } = await build(w, "newer");
  assert.equal(response.error?.code, -32004, JSON.stringify(response.error));
  assert.match(
    response.error!.message,
    /^cargo\.build: compiling the tests failed: .*requires rustc 1\.999/,
  );
  assert.doesNotMatch(response.error!.message, new RegExp(TEST_CACHE_DIR));
});

Deno.test("the lock file goes back to the source; a build keeps it as it is, a new dependency extends it", async () => {
  await using w = await startWorld();
  await writeSource(w, "locked");
  const source = join(w.root, "plugins", "locked", "source");
  const first = await build(w, "locked");
  assert.equal(first.response.error, undefined, JSON.stringify(first.response.error));
  const lock = await Deno.readTextFile(join(source, "Cargo.lock"));
  const rootEntry = (text: string) =>
    text.split("[[package]]").find((p) => p.includes('name = "locked"')) ?? "";
  assert.doesNotMatch(rootEntry(lock), /"itoa"/);

  const again = await build(w, "locked");
  assert.equal(again.response.error, undefined, JSON.stringify(again.response.error));
  assert.equal(await Deno.readTextFile(join(source, "Cargo.lock")), lock, "no re-lock");

  // itoa is already locked (serde_json uses it): the plugin's own use of it resolves offline
  const manifest = join(source, "Cargo.toml");
  await Deno.writeTextFile(manifest, `${await Deno.readTextFile(manifest)}itoa = "1"\n`);
  const extended = await build(w, "locked");
  assert.equal(extended.response.error, undefined, JSON.stringify(extended.response.error));
  const after = await Deno.readTextFile(join(source, "Cargo.lock"));
  assert.match(rootEntry(after), /"itoa"/);
  assert.ok(!extended.steps.some((s) => s.step === "fetch"), "resolved without the network");
});
