/**
 * The test log holds what tests say, not noise: no ajv warning about the
 * number formats of schemars (`unknown format "uint64" ignored in schema`),
 * and no shell complaining about a pager that is not there. The tests that
 * once printed them run again here, in a subprocess, and their output is
 * searched.
 */
import assert from "node:assert/strict";
import { jsonSchemaValidator } from "../core/mcp_servers/validator.ts";
import { Validator } from "../mcp/schema.ts";

const ROOT = new URL("../", import.meta.url).pathname;

/** Lines that are noise in a test log, each with what it was. */
export const NOISE: [RegExp, string][] = [
  [/unknown format "[^"]+" ignored in schema/, "ajv does not know a format of a schema"],
  [/^(\/usr)?\/bin\/sh: \d+: .*: not found$/m, "sh ran a program that is not there"],
];

/** The noise in `log`, as `what: line`. */
function noiseIn(log: string): string[] {
  return log.split("\n").flatMap((line) =>
    NOISE.filter(([re]) => re.test(line)).map(([, what]) => `${what}: ${line}`)
  );
}

/** Runs `fn` and gives what it wrote through `console`. */
function consoleOf(fn: () => void): string[] {
  const said: string[] = [];
  const saved = { warn: console.warn, error: console.error, log: console.log };
  for (const name of ["warn", "error", "log"] as const) {
    console[name] = (...args: unknown[]) => said.push(args.map(String).join(" "));
  }
  try {
    fn();
  } finally {
    Object.assign(console, saved);
  }
  return said;
}

const SCHEMA = {
  type: "object",
  properties: {
    seq: { type: "integer", format: "uint64", minimum: 0 },
    small: { type: "integer", format: "uint8" },
    signed: { type: "integer", format: "int32" },
    ratio: { type: "number", format: "double" },
    size: { type: "integer", format: "uint" },
  },
};

Deno.test("the number formats of schemars are known to every ajv: checked, and no warning", () => {
  const said = consoleOf(() => {
    const check = jsonSchemaValidator().getValidator<Record<string, number>>(SCHEMA);
    assert.equal(check({ seq: 2 ** 40, small: 255, signed: -1, ratio: 0.5, size: 7 }).valid, true);
    assert.equal(check({ small: 256 }).valid, false);
    assert.equal(check({ signed: 2 ** 31 }).valid, false);
    const validator = new Validator();
    assert.equal(validator.problem(SCHEMA, { seq: 1, ratio: 1.5 }, "the arguments"), null);
    assert.match(String(validator.problem(SCHEMA, { small: -1 }, "the arguments")), /small/);
  });
  assert.deepEqual(said, []);
});

Deno.test("the tests that printed noise print none now", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "test",
      "--allow-all",
      "--unstable-worker-options",
      "--filter",
      "/over stdio|runPager/",
      "console/pager_test.ts",
      "tests/mcp_test.ts",
    ],
    cwd: ROOT,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const log = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
  assert.ok(out.success, log);
  assert.match(log, /2 passed/);
  assert.deepEqual(noiseIn(log), []);
});

Deno.test("the noise is recognized", () => {
  assert.equal(noiseIn('unknown format "uint64" ignored in schema at path "#/x"').length, 1);
  assert.equal(noiseIn("/usr/bin/sh: 1: no-such-pager-anywhere: not found").length, 1);
  assert.deepEqual(noiseIn("a test passed"), []);
});
