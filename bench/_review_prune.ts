import { Journal } from "../core/journal.ts";
const dir = await Deno.makeTempDir();
for (const pids of [1, 50, 5000]) {
  const path = `${dir}/j${pids}.sqlite`;
  const j = new Journal(path, {});
  let n = 0;
  while (j.usedBytes() < 2 * 1024 * 1024 * 0.97) {
    for (let k = 0; k < 1000; k++, n++) j.append(`pid-${n % pids}-${"z".repeat(10)}`, `plugin${n % 7}`, "stderr", `line ${n} ${"x".repeat(100)}`);
    j.flush();
  }
  j.close();
  const r = new Journal(path, { retention: { mib: 2, days: 90 } });
  const before = n;
  const t = performance.now();
  // constructor started a prune
  await new Promise((res) => setTimeout(res, 10));
  const report = await r.prune();
  await new Promise((res) => setTimeout(res, 50));
  const left = r.query({ limit: 1 }).length;
  const count = (r as any);
  console.log(`pids=${pids}: written ${before}, used now ${(r.usedBytes()/1048576).toFixed(3)} MiB, file ${(r.fileBytes()/1048576).toFixed(3)}`);
  r.close();
  const { DatabaseSync } = await import("node:sqlite");
  const db = new DatabaseSync(path);
  console.log("  rows left", db.prepare("select count(*) c from entries").get(), "ms", (performance.now()-t).toFixed(0));
  db.close();
}
