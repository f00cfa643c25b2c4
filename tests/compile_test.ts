/**
 * `deno task compile`: the one executable runs a world. Compiling downloads
 * Deno's runtime (`denort`) unless `DENORT_BIN` names one; where neither is
 * possible, the test is reported as ignored.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { canDownload } from "../tools/release.ts";
import { installPlugin, TEST_CACHE_DIR } from "./world.ts";

/** Whether `deno compile` can get its runtime here. */
async function canCompile(): Promise<boolean> {
  return Boolean(Deno.env.get("DENORT_BIN")) || await canDownload();
}

const dec = new TextDecoder();

async function run(cmd: string, args: string[], cwd?: string) {
  const out = await new Deno.Command(cmd, { args, cwd, stdout: "piped", stderr: "piped" }).output();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

Deno.test({
  name: "the compiled executable: --help, init with the SDK, a call, PROTOCOL.md in /proc",
  ignore: !(await canCompile()),
  async fn() {
    const root = new URL("..", import.meta.url).pathname;
    const built = await run(Deno.execPath(), ["task", "compile"], root);
    assert.equal(built.code, 0, built.stderr);
    const exe = join(root, "dist", "sausage");

    const help = await run(exe, ["--help"]);
    assert.equal(help.code, 0, help.stderr);
    assert.match(help.stdout, /Exit codes/);

    const world = await Deno.makeTempDir({ prefix: "sausage-compiled-" });
    const init = await run(exe, ["init", world]);
    assert.equal(init.code, 0, init.stderr);
    await Deno.stat(join(world, "config", "agent.yaml"));
    await Deno.stat(join(world, "plugins", "cargo", "sdk", "sausage-plugin", "Cargo.toml"));

    await installPlugin(world, "probe", "probe");
    const cache = ["--cache-dir", TEST_CACHE_DIR];
    const echo = await run(exe, ["call", world, "probe.echo", '{"via": "compiled"}', ...cache]);
    assert.equal(echo.code, 0, echo.stderr);
    assert.deepEqual(JSON.parse(echo.stdout), { via: "compiled" });
    const protocol = await run(exe, [
      "call",
      world,
      "probe.read_file",
      '{"path": "/proc/core/PROTOCOL.md"}',
      ...cache,
    ]);
    assert.equal(protocol.code, 0, protocol.stderr);
    assert.match(JSON.parse(protocol.stdout).text, /## 3\. Calls and processes/);
    await Deno.remove(world, { recursive: true });
  },
});
