import assert from "node:assert/strict";
import { HostFileSystem } from "./host_fs.ts";
import { MemoryFileSystem } from "./memory.ts";

const at = (seconds: number, nanoseconds: number) => ({ seconds, nanoseconds });

Deno.test("host layer: times set to the nanosecond come back exact, until the file changes", () => {
  const root = Deno.makeTempDirSync({ prefix: "vfs_times_" });
  try {
    const fs = new HostFileSystem(root);
    fs.open("/f", { write: true, create: true }).close();
    const a = at(1_700_000_000, 123_456_789);
    const m = at(1_700_000_001, 999_999_900);
    fs.setTimes("/f", a, m, true);
    const s = fs.stat("/f");
    assert.deepEqual([s.atimeExact, s.mtimeExact], [a, m]);
    assert.equal(s.mtimeMs, 1_700_000_001_999); // what Deno gives: the milliseconds, cut
    // the host keeps the milliseconds, whatever thread reads them
    assert.equal(Deno.statSync(`${root}/f`).mtime?.getTime(), 1_700_000_001_999);

    // through a handle, and `null` keeps the other time as it was set
    const file = fs.open("/f", { write: true });
    const m2 = at(1_600_000_000, 1);
    file.setTimes(null, m2);
    assert.deepEqual([file.stat().atimeExact, file.stat().mtimeExact], [a, m2]);

    // a write moves the modification time: the remembered one no longer applies
    file.write(new TextEncoder().encode("x"), 0);
    file.close();
    const after = fs.stat("/f");
    assert.equal(after.mtimeExact, undefined);
    assert.ok(after.mtimeMs! > 1_600_000_000_000);

    // milliseconds as before: no exact time is reported
    fs.setTimes("/f", 1_500_000_000_250, 1_500_000_000_250, true);
    const ms = fs.stat("/f");
    assert.deepEqual([ms.atimeMs, ms.mtimeMs, ms.atimeExact, ms.mtimeExact], [
      1_500_000_000_250,
      1_500_000_000_250,
      undefined,
      undefined,
    ]);
  } finally {
    Deno.removeSync(root, { recursive: true });
  }
});

Deno.test("memory layer: an exact time is kept as milliseconds", () => {
  const fs = new MemoryFileSystem();
  fs.open("/f", { write: true, create: true }).close();
  fs.setTimes("/f", at(10, 500_000), at(20, 0), true);
  const s = fs.stat("/f");
  assert.deepEqual([s.atimeMs, s.mtimeMs], [10_000.5, 20_000]);
});
