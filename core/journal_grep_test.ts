import assert from "node:assert/strict";
import { compiledPattern, requiredLiterals } from "./journal_grep.ts";

Deno.test("the texts a match must hold: runs of plain characters outside groups, classes and optional parts", () => {
  assert.deepEqual(requiredLiterals("host start"), ["host start"]);
  assert.deepEqual(requiredLiterals("^error: (disk|memory) full$"), ["error: ", " full"]);
  assert.deepEqual(requiredLiterals("foo\\.bar"), ["foo.bar"]);
  assert.deepEqual(requiredLiterals("abcd?ef"), ["abc"]); // d may be missing: "abc" then "ef"
  assert.deepEqual(requiredLiterals("abcd+efg"), ["abcd", "efg"]);
  assert.deepEqual(requiredLiterals("x{0,2}abc[0-9]+def"), ["abc", "def"]);
  assert.deepEqual(requiredLiterals("took \\d+ ms in total"), [" ms in total", "took "]);
  assert.deepEqual(requiredLiterals("a.b.c"), []); // every run is shorter than three
});

Deno.test("no texts when the pattern could match without them: alternatives, flags, escapes with arguments", () => {
  assert.deepEqual(requiredLiterals("disk full|memory full"), []);
  assert.deepEqual(requiredLiterals("(?i)disk full"), []);
  assert.deepEqual(requiredLiterals("\\u0041bcdef"), []);
  assert.deepEqual(requiredLiterals("\\x41bcdef"), []);
  assert.deepEqual(requiredLiterals("(unclosed abc"), []);
  assert.deepEqual(requiredLiterals("[unclosed abc"), []);
  // RE2's POSIX classes and \Q...\E, JavaScript's [^], a quantifier after a character outside
  // the BMP: each matches a line without the text a plain reading would require
  for (
    const [pattern, line] of [
      ["[[:digit:]abcdef]+", "7"],
      ["\\Qa\\.b\\E", "a\\.b"],
      ["(ab\\Q)\\Ecdef)?", "x"],
      ["(?:[^](]x)yyy)?", "x"],
      ["ab😀?cde", "abcde"],
    ]
  ) {
    assert.ok(compiledPattern(pattern).matches(line), `${pattern} matches ${line}`);
    assert.deepEqual(requiredLiterals(pattern), [], pattern);
  }
});

Deno.test("a line that lacks a required text never matches: random patterns against random lines", () => {
  // a small alphabet makes matches common, so the property is tested on many of them
  const tokens = [
    "a",
    "b",
    "c",
    "ab",
    "abc",
    "\\.",
    ".",
    "*",
    "+",
    "?",
    "|",
    "(",
    ")",
    "[ab]",
    "[^a]",
    "{1,2}",
    "{0,1}",
    "^",
    "$",
    "(?:",
    "\\d",
    "1",
    // RE2's own syntax, and what JavaScript reads differently
    "[[:digit:]a]",
    "\\Q",
    "\\E",
    "😀",
    "[]",
    "[^]",
    "(?i)",
    "(?<=a)",
  ];
  let seed = 7;
  const random = (n: number) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % n;
  };
  let checked = 0;
  let withLiterals = 0;
  for (let p = 0; p < 6000; p++) {
    let pattern = "";
    for (let k = 0, n = 1 + random(8); k < n; k++) pattern += tokens[random(tokens.length)];
    // matched as a journal query matches: by RE2, whose syntax adds to JavaScript's
    let re: { test(line: string): boolean };
    try {
      const compiled = compiledPattern(pattern);
      re = { test: (line) => compiled.matches(line) };
    } catch {
      continue; // not a pattern
    }
    const literals = requiredLiterals(pattern);
    if (literals.length > 0) withLiterals++;
    for (let l = 0; l < 40; l++) {
      let line = "";
      for (let k = 0, n = random(12); k < n; k++) {
        line += ["a", "b", "c", ".", "1", "😀", "\\"][random(7)];
      }
      if (!re.test(line)) continue;
      checked++;
      for (const literal of literals) {
        assert.ok(line.includes(literal), `${pattern} matched ${line} without ${literal}`);
      }
    }
  }
  assert.ok(
    checked > 1000 && withLiterals > 100,
    `only ${checked} matches, ${withLiterals} patterns`,
  );
});

Deno.test("a compiled pattern matches in linear time and carries its texts", () => {
  const p = compiledPattern("host start(ed)? in \\d+ ms");
  assert.ok(p.matches("host started in 12 ms"));
  assert.ok(!p.matches("host stopped in 12 ms"));
  assert.deepEqual(p.literals, ["host start", " in ", " ms"]);
});
