import assert from "node:assert/strict";
import { GeneratedFileSystem, MemoryFileSystem, VfsError } from "./mod.ts";

Deno.test("a generated file is made at open, and a read returns that snapshot", () => {
  let n = 0;
  const fs = new GeneratedFileSystem({
    kind: "dir",
    entries: () => ({ "n.txt": { kind: "file", content: () => `${++n}` } }),
  });
  const h = fs.open("/n.txt", { read: true });
  n = 41; // the state moves on; the open snapshot does not
  const buf = new Uint8Array(10);
  assert.equal(new TextDecoder().decode(buf.subarray(0, h.read(buf, 0))), "1");
  assert.equal(h.read(buf, 1), 0, "the snapshot ends");
  assert.equal(new TextDecoder().decode(buf.subarray(0, fs.open("/n.txt", {}).read(buf, 0))), "42");
});

Deno.test("every change is EROFS; folders list their entries and the layer under them", () => {
  const under = new MemoryFileSystem();
  under.open("/stored", { write: true, create: true }).close();
  const fs = new GeneratedFileSystem({
    kind: "dir",
    entries: () => ({ made: { kind: "file", content: () => "x" } }),
    under: () => under,
  });
  assert.deepEqual(fs.readDir("/").map((e) => e.name).sort(), ["made", "stored"]);
  assert.equal(fs.stat("/stored").kind, "file");
  for (
    const f of [
      () => fs.open("/new", { write: true, create: true }),
      () => fs.open("/stored", { write: true }),
      () => fs.mkdir("/d"),
      () => fs.unlink("/made"),
      () => fs.rename("/made", "/m2"),
    ]
  ) {
    assert.throws(f, (e: Error) => e instanceof VfsError && e.code === "EROFS");
  }
  assert.throws(
    () => fs.stat("/missing"),
    (e: Error) => e instanceof VfsError && e.code === "ENOENT",
  );
});
