/**
 * The `grep` of a journal query (PROTOCOL section 7): a JavaScript regular
 * expression matched in linear time by RE2, and the texts any match must
 * contain, which let SQLite skip the lines that cannot match before a line
 * reaches JavaScript.
 *
 * @module
 */
import { RE2JS } from "re2js";
import { MAX_GREP_LENGTH } from "../protocol/limits.ts";

/** Raised for a query with a bad filter; the message names it. */
export class QueryError extends Error {
  override name = "QueryError";
}

/** A compiled `grep`. */
export interface Pattern {
  /** Whether the line holds a match. */
  matches(line: string): boolean;
  /** Texts that every matching line contains (none when the pattern gives none for sure). */
  readonly literals: readonly string[];
}

/** Literals shorter than this select too many lines to be worth a filter. */
const MIN_LITERAL = 3;
/** The most literals a query filters on: the longest are the most selective. */
const MAX_LITERALS = 3;

const patterns = new Map<string, Pattern>();

/**
 * Compiles a `grep`; a pattern that is too long, not valid, or uses what a
 * linear-time engine cannot match is a {@linkcode QueryError} naming why.
 *
 * @example
 * ```ts
 * const p = compiledPattern("host start(ed)? in \\d+ ms");
 * p.matches("host started in 12 ms"); // true
 * p.literals; // ["host start", " in ", " ms"]
 * ```
 */
export function compiledPattern(pattern: string): Pattern {
  let compiled = patterns.get(pattern);
  if (!compiled) {
    if (pattern.length > MAX_GREP_LENGTH) {
      throw new QueryError(`grep is longer than ${MAX_GREP_LENGTH} characters`);
    }
    const missing = unsupportedConstruct(pattern);
    if (missing) throw new QueryError(`grep cannot use ${missing}: it is matched in linear time`);
    let re: RE2JS;
    try {
      re = RE2JS.compile(RE2JS.translateRegExp(pattern), RE2JS.LOOKBEHINDS);
    } catch (e) {
      const message = (e as Error).message.replace(/^error parsing regexp: /, "");
      throw new QueryError(`grep is not a valid regular expression: ${message}`);
    }
    compiled = { matches: (line) => re.matcher(line).find(), literals: requiredLiterals(pattern) };
    if (patterns.size > 100) patterns.clear();
    patterns.set(pattern, compiled);
  }
  return compiled;
}

/** The first construct of JavaScript's syntax that a linear-time engine cannot match, named. */
function unsupportedConstruct(pattern: string): string | null {
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === "\\") {
      const next = pattern[i + 1] ?? "";
      if (/[1-9]/.test(next)) return `a backreference (\\${next})`;
      if (next === "k" && pattern[i + 2] === "<") return "a named backreference (\\k<name>)";
      i++;
    } else if (c === "(" && pattern[i + 1] === "?") {
      const kind = pattern.slice(i + 2, i + 3);
      if (kind === "=") return "a lookahead ((?=...))";
      if (kind === "!") return "a negative lookahead ((?!...))";
    }
  }
  return null;
}

/** Characters that a backslash makes literal. */
const ESCAPED_LITERALS = new Set([..."^$\\.*+?()[]{}|/-"]);

/**
 * Texts that every match of `pattern` contains, longest first: the runs of
 * plain characters outside groups and classes, when nothing at the top level
 * is an alternative. Anything it is not sure of ends a run, so a line that
 * lacks one of them never matches (the pattern decides the rest).
 *
 * @example
 * ```ts
 * requiredLiterals("^error: (disk|memory) full$"); // ["error: ", " full"]
 * requiredLiterals("a|b"); // []
 * ```
 */
export function requiredLiterals(pattern: string): string[] {
  // RE2's \Q...\E quoting and POSIX classes ([[:digit:]]), JavaScript's [] and [^], and
  // characters outside the BMP (a quantifier after one applies to the whole character) are not
  // read here: no texts for sure
  if (/\\Q|\[:|\[\^?\]|[\uD800-\uDFFF]/.test(pattern)) return [];
  const runs: string[] = [];
  let run = "";
  const end = () => {
    if (run.length >= MIN_LITERAL) runs.push(run);
    run = "";
  };
  let i = 0;
  while (i < pattern.length) {
    const c = pattern[i];
    if (c === "|") return []; // an alternative at the top level: nothing is required
    let atom: string | null = null; // one literal character, or null for anything else
    let next = i + 1;
    if (c === "\\") {
      const e = pattern[i + 1];
      // \u0041, \x41, \cJ, \p{L}, \0: escapes with more after them; not worth reading
      if (e === undefined || "uxcpPk0".includes(e)) return [];
      if (ESCAPED_LITERALS.has(e)) atom = e;
      next = i + 2; // \d, \b and the rest are not literal: the run ends below
    } else if (c === "(") {
      // (?i) and other flags change what matches: no texts for sure
      if (pattern[i + 1] === "?" && /[A-Za-z-]/.test(pattern[i + 2] ?? "")) return [];
      next = skipGroup(pattern, i);
      if (next < 0) return [];
    } else if (c === "[") {
      next = skipClass(pattern, i);
      if (next < 0) return [];
    } else if (!".^$*+?{}]".includes(c)) {
      atom = c;
    }
    // a quantifier after the atom
    const quantifier = quantifierAt(pattern, next);
    if (atom !== null && quantifier === null) {
      run += atom;
    } else if (atom !== null && quantifier !== null && quantifier.min >= 1) {
      run += atom; // present at least once, but what follows may repeat it
      end();
    } else {
      end();
    }
    i = quantifier === null ? next : quantifier.next;
  }
  end();
  return [...new Set(runs)].sort((a, b) => b.length - a.length).slice(0, MAX_LITERALS);
}

/** The quantifier at `i` (with its lazy `?`), or null. */
function quantifierAt(pattern: string, i: number): { min: number; next: number } | null {
  const c = pattern[i];
  let min: number;
  let next: number;
  if (c === "*" || c === "?") {
    min = 0;
    next = i + 1;
  } else if (c === "+") {
    min = 1;
    next = i + 1;
  } else if (c === "{") {
    const m = /^\{(\d+)(,\d*)?\}/.exec(pattern.slice(i));
    if (!m) return null;
    min = Number(m[1]);
    next = i + m[0].length;
  } else {
    return null;
  }
  if (pattern[next] === "?") next++;
  return { min, next };
}

/** The index after the group that opens at `i`, or -1 when it never closes. */
function skipGroup(pattern: string, i: number): number {
  let depth = 0;
  for (let j = i; j < pattern.length; j++) {
    const c = pattern[j];
    if (c === "\\") j++;
    else if (c === "[") {
      j = skipClass(pattern, j) - 1;
      if (j < 0) return -1;
    } else if (c === "(") depth++;
    else if (c === ")" && --depth === 0) return j + 1;
  }
  return -1;
}

/** The index after the class that opens at `i`, or -1 when it never closes. */
function skipClass(pattern: string, i: number): number {
  let j = i + 1;
  if (pattern[j] === "^") j++;
  if (pattern[j] === "]") j++; // a ] first is a member
  for (; j < pattern.length; j++) {
    if (pattern[j] === "\\") j++;
    else if (pattern[j] === "]") return j + 1;
  }
  return -1;
}
