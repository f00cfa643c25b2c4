import { compiledPattern, requiredLiterals } from "../core/journal_grep.ts";
const cases: [string, string][] = [
  ["[[:digit:]abcdef]+", "7"],
  ["0x[[:xdigit:]xyz]+", "0x7"],
  ["\\Qa\\.b\\E", "a\\.b"],
  ["\\QC:\\\\Users\\E", "C:\\\\Users"],
  ["ab\u{1F600}?", "ab"],
  ["ab\u{1F600}?", "ab\u{1F600}"],
  ["(?:[^](]x)yyy)?", "q"],
  ["(ab\\Q)\\Ecdef)?", "zz"],
  ["[^]abc", "zabc"],
  ["abc\\b", "abc"],
  ["(?i)abc", "ABC"],
  ["x(?i:abc)", "xABC"],
  ["abc{,2}", "abc{,2}"],
  ["a{1}bcd", "abcd"],
  ["(?<n>abc)def", "abcdef"],
  ["(?<=abc)def", "abcdef"],
  ["ab\\-cd", "ab-cd"],
  ["abc\\/def", "abc/def"],
  ["abc/def", "abc/def"],
];
for (const [p, line] of cases) {
  let m: boolean | string;
  try { m = compiledPattern(p).matches(line); } catch (e) { m = "ERR " + (e as Error).message; }
  const lits = requiredLiterals(p);
  const missing = lits.filter((l) => !line.includes(l));
  console.log(JSON.stringify(p), JSON.stringify(line), "matches:", m, "literals:", JSON.stringify(lits), missing.length && m === true ? "<-- LOST" : "");
}
