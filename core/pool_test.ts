import assert from "node:assert/strict";
import { ComponentCache } from "./components/cache.ts";
import { type SpawnOptions, WorkerPool } from "./pool.ts";
import { testPlugin } from "../tests/setup.ts";
import { TEST_CACHE_DIR } from "../tests/world.ts";
import type { ExitReport } from "../runtime/messages.ts";

const encoder = new TextEncoder();

async function probePool(): Promise<{
  pool: WorkerPool;
  hash: string;
  run(pid: string, then: (pool: WorkerPool) => void): Promise<{ out: unknown[]; exit: ExitReport }>;
  [Symbol.asyncDispose](): Promise<void>;
}> {
  const root = await Deno.makeTempDir();
  const path = await testPlugin("probe");
  const component = await new ComponentCache(TEST_CACHE_DIR).load(await Deno.readFile(path), path);
  const pool = new WorkerPool({
    size: 1,
    permissions: { read: [root], write: [root], net: false },
  });
  await pool.start();
  const options = (pid: string): SpawnOptions => ({
    pid,
    env: [["SAUSAGE_PID", pid]],
    args: ["probe"],
    cwd: "/",
    files: { world: root },
    stdio: "rpc",
  });
  return {
    pool,
    hash: component.hash,
    run(pid, then) {
      const out: unknown[] = [];
      const ended = Promise.withResolvers<{ out: unknown[]; exit: ExitReport }>();
      pool.spawn(component, options(pid), {
        stdout: (messages) => out.push(...messages),
        exit: (exit) => ended.resolve({ out, exit }),
      });
      then(pool);
      return ended.promise;
    },
    async [Symbol.asyncDispose]() {
      pool.close();
      await Deno.remove(root, { recursive: true });
    },
  };
}

const request = (id: string, method: string) =>
  encoder.encode(JSON.stringify({ jsonrpc: "2.0", id, method, params: { id } }) + "\n");

Deno.test("what is written in the turn of the spawn reaches the process with it, EOF too", async () => {
  await using p = await probePool();
  const { out, exit } = await p.run("p-1", (pool) => {
    pool.write("p-1", request("p-1", "echo"));
    pool.closeStdin("p-1");
  });
  assert.deepEqual(out, [{ jsonrpc: "2.0", id: "p-1", result: { id: "p-1" } }]);
  assert.deepEqual(exit, { status: 0, reason: "exited" });
});

Deno.test("a kill in the turn of the spawn ends the process killed, before its request ran", async () => {
  await using p = await probePool();
  const { out, exit } = await p.run("p-2", (pool) => {
    pool.write("p-2", request("p-2", "echo"));
    pool.kill("p-2", "killed at once");
  });
  assert.deepEqual(out, []);
  assert.equal(exit.reason, "killed");
  assert.equal(exit.detail, "killed at once");
  // the worker goes on: the next process answers
  const next = await p.run("p-3", (pool) => pool.write("p-3", request("p-3", "echo")));
  assert.deepEqual(next.out, [{ jsonrpc: "2.0", id: "p-3", result: { id: "p-3" } }]);
});

/** The starts linked ahead and at the spawn (reuse is `tests/reuse_test.ts`'s). */
function startCounts(pool: WorkerPool): { ahead: number; cold: number } {
  const { ahead, cold } = pool.starts;
  return { ahead, cold };
}

Deno.test("once a process ended, the next of its version starts on an instance linked ahead", async () => {
  await using p = await probePool();
  await p.run("p-4", (pool) => pool.write("p-4", request("p-4", "echo")));
  await new Promise((r) => setTimeout(r, 30)); // linked ahead while idle
  const ahead = await p.run("p-5", (pool) => pool.write("p-5", request("p-5", "echo")));
  assert.deepEqual(ahead.out, [{ jsonrpc: "2.0", id: "p-5", result: { id: "p-5" } }]);
  assert.deepEqual(startCounts(p.pool), { ahead: 1, cold: 1 });
  // a version that is unloaded drops it, and what p-5 left: the next process links at its spawn
  const reused = p.pool.starts.reused;
  p.pool.unload(p.hash);
  const cold = await p.run("p-6", (pool) => pool.write("p-6", request("p-6", "echo")));
  assert.deepEqual(cold.out, [{ jsonrpc: "2.0", id: "p-6", result: { id: "p-6" } }]);
  assert.deepEqual(startCounts(p.pool), { ahead: 1, cold: 2 });
  assert.equal(p.pool.starts.reused, reused, "p-6 ran on an instance of its own");
});
