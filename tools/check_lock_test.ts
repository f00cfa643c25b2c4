import assert from "node:assert/strict";
import { formatLock, type LockFile, pruned, unreached } from "./check_lock.ts";

const ROOT = new URL("../", import.meta.url);

Deno.test("the project's deno.lock holds only what deno.json reaches", async () => {
  const lock = JSON.parse(await Deno.readTextFile(new URL("deno.lock", ROOT))) as LockFile;
  assert.deepEqual(unreached(lock), { specifiers: [], npm: [], jsr: [] });
});

Deno.test("an old version, its own dependencies and an alias's target are found or kept", () => {
  const lock: LockFile = {
    specifiers: { "npm:jco@2": "2.0.0", "npm:jco@1": "1.0.0" },
    npm: {
      "jco@2.0.0": { dependencies: ["shim@2.0.0", "old-c@npm:c@1.0.0", "d"] },
      "jco@1.0.0": { dependencies: ["shim@1.0.0", "only-old"] },
      "shim@1.0.0": {},
      "shim@2.0.0": { optionalDependencies: ["native"] },
      "c@1.0.0": {},
      "d@1.0.0_peer@3.0.0": {},
      "native@1.0.0": {},
      "only-old@1.0.0": {},
    },
    workspace: { dependencies: ["npm:jco@2"] },
  };
  const gone = unreached(lock);
  assert.deepEqual(gone, {
    specifiers: ["npm:jco@1"],
    npm: ["jco@1.0.0", "shim@1.0.0", "only-old@1.0.0"],
    jsr: [],
  });
  assert.deepEqual(unreached(pruned(lock, gone)), { specifiers: [], npm: [], jsr: [] });
  assert.deepEqual(Object.keys(pruned(lock, gone).npm!).length, 5);
});

Deno.test("JSR packages are followed through their specifiers", () => {
  const lock: LockFile = {
    specifiers: { "jsr:@std/a@1": "1.2.0", "jsr:@std/b@^1": "1.0.1", "jsr:@std/c@1": "1.0.0" },
    jsr: { "@std/a@1.2.0": { dependencies: ["jsr:@std/b@^1"] }, "@std/b@1.0.1": {} },
    workspace: { dependencies: ["jsr:@std/a@1"] },
  };
  assert.deepEqual(unreached(lock), { specifiers: ["jsr:@std/c@1"], npm: [], jsr: [] });
});

Deno.test("the lock file is written as Deno writes it", async () => {
  const text = await Deno.readTextFile(new URL("deno.lock", ROOT));
  assert.equal(formatLock(JSON.parse(text)), text);
});
