import { Journal } from "../core/journal.ts";
import { searchAll } from "../cli/log_query.ts";
const j = new Journal(":memory:", { maxQueryMs: 1 });
const N = 250_123;
for (let i = 0; i < N; i++) { j.event(null, null, i % 25 === 0 ? `hit ${i}` : `miss ${i}`); if (i % 10000 === 0) j.flush(); }
j.flush();
// unbounded query
const q = j.query({ grep: "^hit \\d+$", limit: 10000 });
const nums = q.map((e) => Number(e.line.split(" ")[1]));
const expected: number[] = [];
for (let i = 0; i < N; i++) if (i % 25 === 0) expected.push(i);
const exp = expected.slice(-10000);
console.log("query count", nums.length, "ok", JSON.stringify(nums) === JSON.stringify(exp));
// search following time cuts
let calls = 0;
const a = await searchAll((qq) => { calls++; return Promise.resolve(j.search(qq)); }, { grep: "^hit \\d+$", limit: 10000 });
const n2 = a.entries.map((e) => Number(e.line.split(" ")[1]));
console.log("searchAll calls", calls, "count", n2.length, "ok", JSON.stringify(n2) === JSON.stringify(exp), "cut", a.cut);
const ids = new Set(a.entries.map((e) => e.id));
console.log("unique", ids.size);
// literal-prefilter losses end to end
for (const [p, line] of [["[[:digit:]abcdef]+", "7"], ["ab\u{1F600}?", "ab\u{1F600}"], ["\\Qa\\.b\\E", "a\\.b"]]) {
  j.event(null, null, line);
  j.flush();
  const r = j.query({ grep: p, limit: 10 });
  console.log(JSON.stringify(p), "found", r.some((e) => e.line === line));
}
j.close();
