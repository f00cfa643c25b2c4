import { Journal } from "../core/journal.ts";
const dir = await Deno.makeTempDir();
const path = `${dir}/j.sqlite`;
const w = new Journal(path, {});
for (let n = 0; w.usedBytes() < 1024 * 1024 * 0.97; ) {
  for (let k = 0; k < 1000; k++, n++) w.append("p", "p", "stderr", `line ${n} ${"x".repeat(100)}`);
  w.flush();
}
w.close();
// the constructor's own check would prune at once: hold entries in the buffer first is not possible,
// so open, let the first prune finish, refill, then buffer and prune
const j = new Journal(path, { retention: { mib: 1, days: 90 } });
await j.prune();
await new Promise((r) => setTimeout(r, 50));
for (let n = 0; j.usedBytes() < 1024 * 1024 * 0.96; ) {
  for (let k = 0; k < 100; k++, n++) j.append("p", "p", "stderr", `more ${n} ${"x".repeat(100)}`);
  // flush without triggering: writtenSinceCheck grows; use the sqlite directly is hard, so call flush
  j.flush();
  await j.prune(); // may or may not prune
}
await new Promise((r) => setTimeout(r, 50));
const before = j.query({ grep: "^journal pruned", limit: 1000 }).length;
// used is now > 95%? 
console.log("used share", j.usedBytes() / 1048576);
for (let k = 0; k < 300; k++) j.append("p", "p", "stderr", `buffered ${k} ${"y".repeat(100)}`);
const p = j.prune();
await p;
await new Promise((r) => setTimeout(r, 200));
const after = j.query({ grep: "^journal pruned", limit: 1000 });
console.log("prune events added by one prune():", after.length - before);
for (const e of after.slice(-3)) console.log(e.line);
j.close();
