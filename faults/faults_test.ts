/**
 * The fault suite itself, kept from rotting: a few attacks with their checks
 * (three of the HTTP side's),
 * a short randomized run with a fixed seed, and one crash round, against a
 * real host. The full suite is `deno task faults`.
 */
import assert from "node:assert/strict";
import { TEST_CACHE_DIR } from "../tests/world.ts";
import { ATTACKS } from "./attacks.ts";
import { runChecks, setWorld, takeBaseline } from "./checks.ts";
import { crashRun } from "./crash.ts";
import { attackWorld, HostProcess, limitsYaml } from "./harness.ts";
import { HTTP_ATTACKS, httpBaseline, httpChecks } from "./http_attacks.ts";
import { generator, randomRun } from "./random.ts";
import { soakRun } from "./soak.ts";

Deno.test("the seeded generator draws the same numbers for the same seed", () => {
  const a = generator(42), b = generator(42), c = generator(43);
  const xs = Array.from({ length: 5 }, a);
  assert.deepEqual(xs, Array.from({ length: 5 }, b));
  assert.notDeepEqual(xs, Array.from({ length: 5 }, c));
  assert.ok(xs.every((x) => x >= 0 && x < 1));
});

Deno.test("faults: attacks with their checks, and a randomized run of 100 calls", async () => {
  const root = await attackWorld(limitsYaml());
  const outside = await Deno.makeTempDir({ prefix: "sausage-faults-outside-" });
  const canary = { name: "canary.txt", secret: `secret-${crypto.randomUUID()}` };
  await Deno.writeTextFile(`${outside}/${canary.name}`, canary.secret);
  const h = await HostProcess.start(root, TEST_CACHE_DIR);
  try {
    setWorld(h, root);
    h.watch(2 * 2 ** 30);
    h.order({ op: "call", method: "bystander.wait", params: {} }, 2 ** 31 - 1).catch(() => {});
    for (let i = 0; i < 100 && (await h.state()).processes.length < 2; i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    for (const name of ["plugin crash", "garbage", "escape"]) {
      const attack = ATTACKS.find((a) => a.name === name)!;
      const base = await takeBaseline(h);
      assert.equal(base.bystanders.length, 2, "the boot service and the attached bystander");
      const note = await attack.run({ host: h, root, outside, canary, quick: true });
      assert.ok(note.length > 0);
      const failed = (await runChecks(h, base)).filter((c) => !c.ok);
      assert.deepEqual(failed, [], `${name}: ${JSON.stringify(failed)}`);
    }
    // the quick ones of the HTTP side, with their checks through the three endpoints
    for (const name of ["http big headers", "http malformed", "http event streams"]) {
      const attack = HTTP_ATTACKS.find((a) => a.name === name)!;
      const served = await httpBaseline(h);
      const note = await attack.run({ host: h, root, outside, canary, quick: true });
      assert.ok(note.length > 0);
      const failed = (await httpChecks(h, served)).filter((c) => !c.ok);
      assert.deepEqual(failed, [], `${name}: ${JSON.stringify(failed)}`);
    }
    const base = await takeBaseline(h);
    const r = await randomRun(h, base, { calls: 100, seed: 7, workerWaitMs: 1000 });
    assert.equal(r.calls, 100);
    assert.ok(r.faulty > 10, `${r.faulty} faulty calls of 100`);
    assert.equal(r.unanswered, 0, JSON.stringify(r.examples));
    assert.deepEqual(r.wrong, {}, JSON.stringify(r.examples));
    // leaks are the suite's findings about the host (`deno task faults` reports them); here the
    // suite must only count them
    assert.ok(Array.isArray(r.leaked.processes) && Array.isArray(r.leaked.locks));
    assert.equal(Object.values(r.byBehaviour).reduce((a, b) => a + b, 0), 100);
  } finally {
    await h.stop();
    await Deno.remove(root, { recursive: true }).catch(() => {});
    await Deno.remove(outside, { recursive: true }).catch(() => {});
  }
});

Deno.test("faults: a host killed during journal writes reopens with its journal intact", async () => {
  const [r] = await crashRun({ rounds: 1, seed: 7, kinds: ["journal"] });
  assert.equal(r.kind, "journal");
  assert.deepEqual(r.problems, []);
  assert.equal(r.passed, 1);
});

Deno.test("faults: a short soak of the agent: every turn ends, no agent is left, histories whole", async () => {
  const r = await soakRun({
    turns: 24,
    sessions: 3,
    seed: 11,
    waitMs: 300,
    longWaitShare: 0,
    builds: 1,
    hostKills: 1,
    stopShare: 0.3,
  });
  assert.deepEqual(r.problems, []);
  assert.equal(r.turns, 27, "24 turns and a closing turn in each session");
  assert.equal(r.hostKills, 1);
  assert.ok(r.stopped >= 3, `${r.stopped} turns stopped by their caller`);
  assert.equal(r.answered + r.stopped + r.cutByHostKill, r.turns);
  assert.ok(r.maxStopToAnswerMs < 8000, `a stop answered after ${r.maxStopToAnswerMs} ms`);
  assert.ok(r.ok);
});
