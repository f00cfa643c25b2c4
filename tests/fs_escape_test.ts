/**
 * The filesystem of a world seen from inside a plugin (PROTOCOL section 4).
 *
 * The Rust plugin `fsprobe` (tests/plugins/crates/fsprobe/src/world.rs) runs
 * as a world process and, through its own `std::fs` calls (and raw
 * `wasi:filesystem` calls where wasi-libc would hide the error code), tries to
 * leave the world by symbolic links and `..`, uses odd names and long paths,
 * opens files until an error, fills `/self`, and runs SQLite in each area. It
 * reports every attempt; these tests judge, and check the host's side.
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { RUN_BYTES, SELF_BYTES } from "../core/core_files.ts";
import { Host } from "../core/host.ts";
import { MAX_DESCRIPTORS_PER_PROCESS } from "../runtime/wasi/filesystem.ts";
import {
  eventually,
  startWorld,
  TEST_CACHE_DIR,
  type TestWorld,
  type WorldOptions,
} from "./world.ts";

type AnyRecord = Record<string, unknown>;

/** An I/O error as fsprobe reports it. */
interface IoError {
  kind: string;
  errno: string;
  code: string;
  message: string;
}

/** The outcome of one attempt. */
type Outcome = { ok: unknown } | { err: IoError };

interface Attempt {
  area: string;
  link: string;
  op: string;
  path: string;
  result: Outcome;
}

const ok = (o: Outcome): o is { ok: unknown } => "ok" in o;
const err = (o: Outcome): IoError | undefined => ("err" in o ? o.err : undefined);
const show = (value: unknown) => JSON.stringify(value, null, 1);

function fsprobeWorld(options: WorldOptions = {}): Promise<TestWorld> {
  return startWorld({ plugins: { fsprobe: "fsprobe" }, ...options });
}

async function fsprobe(w: TestWorld, method: string, params: AnyRecord = {}): Promise<AnyRecord> {
  return (await w.call(`fsprobe.${method}`, params)) as AnyRecord;
}

/**
 * Checks a report of `fill` that ran out of space: insufficient-space, what
 * was written reads back byte for byte, and so does the file written before.
 * Returns the size the file reached.
 */
function assertFilled(r: AnyRecord): number {
  const error = r.error as IoError;
  assert.deepEqual(
    [error.errno, error.code, error.kind],
    ["ENOSPC", "insufficient-space", "StorageFull"],
    show(r),
  );
  const size = (r.size as { ok: number }).ok;
  assert.deepEqual((r.read_back as { ok: unknown }).ok, { len: size, first_bad: null }, show(r));
  assert.deepEqual(r.keep_read, { ok: "earlier data" });
  return size;
}

/** Runs `ops` in one process (see `ops` in world.rs). */
async function ops(w: TestWorld, list: AnyRecord[]): Promise<Outcome[]> {
  return (await w.call("fsprobe.ops", { ops: list })) as Outcome[];
}

/** Asserts an error with this errno (and its WASI code, when given). */
function assertErr(o: Outcome, errno: string, what: string, code?: string): void {
  const e = err(o);
  assert.ok(e, `${what}: succeeded with ${show(o)}, want ${errno}`);
  assert.equal(e.errno, errno, `${what}: ${show(e)}`);
  if (code) assert.equal(e.code, code, `${what}: ${show(e)}`);
}

/** Every file and folder under `root` (relative paths), without following links. */
async function tree(root: string): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  async function walk(dir: string, rel: string): Promise<void> {
    for await (const e of Deno.readDir(dir)) {
      const path = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory) {
        found.set(path, "dir");
        await walk(join(dir, e.name), path);
      } else if (e.isSymlink) found.set(path, `link ${await Deno.readLink(join(dir, e.name))}`);
      else found.set(path, await Deno.readTextFile(join(dir, e.name)));
    }
  }
  await walk(root, "");
  return found;
}

/** A folder outside the world (beside it) with a secret and a subfolder. */
async function outsideFolder(): Promise<
  { path: string; secret: string; [Symbol.asyncDispose](): Promise<void> }
> {
  const path = await Deno.makeTempDir({ prefix: "sausage-outside-" });
  const secret = `SECRET-${crypto.randomUUID()}`;
  await Deno.writeTextFile(join(path, "secret"), secret);
  await Deno.mkdir(join(path, "sub"));
  await Deno.writeTextFile(join(path, "sub", "inner.txt"), secret);
  return {
    path,
    secret,
    async [Symbol.asyncDispose]() {
      await Deno.remove(path, { recursive: true }).catch(() => {});
    },
  };
}

/** Whether anything (a dangling link too) is at `path`. */
function lexists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/** Names that start with `fsprobe-escape` directly in `dir`. */
async function escapedNames(dir: string): Promise<string[]> {
  const names: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    if (e.name.startsWith("fsprobe-escape")) names.push(e.name);
  }
  return names;
}

// ---------------------------------------------------------------- std::fs and SQLite through the mount table

Deno.test("std::fs checks of fsprobe pass through a world's mount table: in the world, /run and /self", async () => {
  await using w = await fsprobeWorld();
  await using outside = await outsideFolder();
  // links made on the host before the process starts, as in the `sausage run` test
  const pre = join(w.root, "state", "fsprobe", "pre");
  await Deno.mkdir(pre, { recursive: true });
  await Deno.writeTextFile(join(pre, "target.txt"), "T");
  await Deno.symlink("target.txt", join(pre, "rel"));
  await Deno.symlink("/state/fsprobe/pre/target.txt", join(pre, "abs"));
  await Deno.symlink("../../../..", join(pre, "up"));
  await Deno.symlink(join(outside.path, "secret"), join(pre, "out"));
  await Deno.symlink("loop", join(pre, "loop"));
  const before = await tree(outside.path);

  for (
    const [root, prefix] of [["/state/fsprobe", "/state/fsprobe"], ["/run", ""], ["/self", ""]]
  ) {
    const r = await fsprobe(w, "checks", { root, prefix });
    const results = r.results as Record<string, string>;
    assert.equal(Object.keys(results).length, 12, `${root}: ${show(r)}`);
    for (const [name, result] of Object.entries(results)) {
      // links made before the start exist only in the world folder
      const want = name === "symlinks_read" && root !== "/state/fsprobe" ? "skip" : "ok";
      assert.equal(result, want, `${root} ${name}`);
    }
  }
  // the world got what the checks wrote; /run and /self are in memory
  assert.equal(
    await Deno.readTextFile(join(w.root, "state/fsprobe/fsprobe/config.json")),
    '{"v":2}',
  );
  assert.equal((await Deno.stat(join(w.root, "state/fsprobe/fsprobe/big.bin"))).size, 3_000_000);
  assert.deepEqual(["run", "self", "proc"].filter((n) => lexists(join(w.root, n))), []);
  assert.deepEqual(await tree(outside.path), before);
});

Deno.test("the tempfile crate works in the world, /self and /run: persist as an atomic replace, unnamed files, folders removed whole", async () => {
  await using w = await fsprobeWorld();
  for (const dir of ["/state/tmp", "/self/tmp", "/run/tmp"]) {
    const target = `${dir}/final.txt`;
    const r = await fsprobe(w, "tempfiles", { dir, target });
    assert.deepEqual(r, {
      persisted: { ok: "replaced whole" },
      unnamed: { ok: "scratch" },
      folder_left: { ok: false },
      left: ["final.txt"],
    }, `${dir}: ${show(r)}`);
  }
});

Deno.test("SQLite (rusqlite) works through a world's mount table: in the world, /run and /self", async () => {
  await using w = await startWorld({ plugins: { fsprobe: "fsprobe", sqlprobe: "sqlprobe" } });
  for (const db of ["/state/notes.db", "/run/notes.db", "/self/notes.db"]) {
    const r = await fsprobe(w, "sqlite", { db });
    assert.deepEqual(r.scenario, { ok: "ok" }, `${db}: ${show(r)}`);
    // no journal or lock is left behind
    assert.deepEqual(
      (r.files as string[]).filter((n) => n.startsWith("notes")),
      ["notes.db"],
      `${db}: ${show(r)}`,
    );
  }
  const header = (await Deno.readFile(join(w.root, "state/notes.db"))).subarray(0, 16);
  assert.equal(new TextDecoder().decode(header), "SQLite format 3\0");

  // sqlprobe's own scenario, as a world process at its default /sqlprobe.db. It is a
  // command, not a plugin: it answers no request, and its exit status says whether
  // every check passed. Its discovery at the host's start ran it once already.
  await Deno.remove(join(w.root, "sqlprobe.db")).catch(() => {});
  const response = await w.request("sqlprobe.run", {});
  const data = response.error?.data as { status: number; reason: string; log: string[] };
  assert.equal(response.error?.code, -32002, show(response));
  assert.equal(data.reason, "exited", show(response));
  assert.equal(data.status, 0, `a check of sqlprobe failed: ${show(response)}`);
  const sqlHeader = (await Deno.readFile(join(w.root, "sqlprobe.db"))).subarray(0, 16);
  assert.equal(new TextDecoder().decode(sqlHeader), "SQLite format 3\0");
  assert.ok(!existsSync(join(w.root, "sqlprobe.db-journal")));
});

// ---------------------------------------------------------------- symbolic links and `..`

Deno.test("links that lead out of the world (absolute, ../ chains, link to link) resolve inside their area; nothing outside is read or changed", async () => {
  await using w = await fsprobeWorld();
  await using outside = await outsideFolder();
  const fromRoot = `../${basename(outside.path)}`;
  assert.equal(dirname(outside.path), dirname(w.root), "the outside folder is beside the world");
  const before = await tree(outside.path);
  const beside = await escapedNames(dirname(w.root));

  const r = await fsprobe(w, "escape", {
    outside: outside.path,
    from_root: fromRoot,
    areas: ["/state/esc", "/run/esc", "/self/esc"],
  }) as { setup: { result: Outcome }[]; attempts: Attempt[]; after: Outcome };

  for (const s of r.setup) assert.ok(ok(s.result), `setup: ${show(s)}`);
  // nothing read anywhere is the secret outside
  for (const a of r.attempts) {
    assert.ok(!JSON.stringify(a.result).includes("SECRET"), `read outside: ${show(a)}`);
  }
  const attempt = (area: string, link: string, op: string) => {
    const a = r.attempts.find((x) => x.area === area && x.link === link && x.op === op);
    assert.ok(a, `${area} ${link} ${op}`);
    return a.result;
  };
  // each link resolves in its own area: absolute targets from the area's root,
  // `..` stops there; the decoys show where they landed
  const areas = { "/state/esc": "DECOY-world", "/run/esc": "DECOY-run", "/self/esc": "DECOY-self" };
  for (const [area, decoy] of Object.entries(areas)) {
    for (const link of ["abs_secret", "rel_secret", "deep_secret"]) {
      assert.deepEqual(attempt(area, link, "read"), { ok: decoy }, `${area} ${link}`);
    }
    for (const link of ["abs_outdir", "rel_outdir", "deep_outdir", "hop", "hop_abs", "hop2"]) {
      assert.deepEqual(attempt(area, link, "read_child"), { ok: decoy }, `${area} ${link}`);
      assert.deepEqual(attempt(area, link, "read_inner"), { ok: decoy }, `${area} ${link}`);
      assert.deepEqual(attempt(area, link, "list"), { ok: ["secret", "sub"] }, `${area} ${link}`);
    }
    // the world has no /etc; neither has /run nor /self
    for (const op of ["read", "stat", "open", "list"]) {
      assertErr(attempt(area, "abs_passwd", op), "ENOENT", `${area} abs_passwd ${op}`);
    }
    assertErr(attempt(area, "abs_etc", "read_child"), "ENOENT", `${area} abs_etc`);
    // a link to / is the root of the area
    assert.ok(ok(attempt(area, "to_root", "list")), area);
    // readlink returns the target as it was written
    assert.deepEqual(attempt(area, "abs_etc", "read_link"), { ok: "/etc" });
  }
  // through /proc/<pid>/, the links of /self lead where they lead in /self
  assert.deepEqual(attempt("/self/esc", "abs_secret", "proc_read"), { ok: "DECOY-self" });
  assert.deepEqual(attempt("/self/esc", "hop", "proc_read_child"), { ok: "DECOY-self" });
  assertErr(attempt("/self/esc", "hop", "proc_write_child"), "EROFS", "write through /proc");
  // a link does not lead from one area into another (PROTOCOL section 4)
  for (const link of ["to_run", "to_self", "to_proc"]) {
    assertErr(attempt("/state/esc", link, "read_child"), "ENOENT", `/state/esc ${link}`);
    assertErr(attempt("/state/esc", link, "write_child"), "ENOENT", `/state/esc ${link}`);
  }
  assertErr(attempt("/run/esc", "to_state", "list"), "ENOENT", "/run/esc to_state");
  assert.deepEqual(r.after, { ok: "still here" });

  // the host's side: outside, nothing changed and nothing was made
  assert.deepEqual(await tree(outside.path), before);
  assert.deepEqual(await escapedNames(dirname(w.root)), beside);
  // what was written through the links landed in the world, in the decoys
  const world = await tree(w.root);
  assert.ok(world.has(`tmp/${basename(outside.path)}/fsprobe-escape-abs-new`), "abs_new");
  assert.ok(world.has(`${basename(outside.path)}/fsprobe-escape-rel-new`), "rel_new");
  assert.deepEqual(["run", "self", "proc"].filter((n) => lexists(join(w.root, n))), []);
});

Deno.test("a link swapped in by another process does not lead a write or a read out of the world", async () => {
  await using w = await fsprobeWorld();
  await using outside = await outsideFolder();
  // where the link leads when it is resolved inside the world
  await Deno.mkdir(join(w.root, outside.path), { recursive: true });
  await Deno.writeTextFile(join(w.root, outside.path, "secret"), "DECOY-world");
  await Deno.mkdir(join(w.root, "state/race"), { recursive: true });
  // one process swaps /state/race/d between a folder and a link to the outside
  // folder; another writes and reads through /state/race/d/ at the same time
  const [flip, race] = await Promise.all([
    fsprobe(w, "flip", { dir: "/state/race", target: outside.path, ms: 2300 }),
    new Promise((r) => setTimeout(r, 100)).then(() =>
      fsprobe(w, "race", { dir: "/state/race", ms: 2000 })
    ),
  ]);
  const made = (await tree(outside.path)).size - 3;
  assert.deepEqual(
    { made, readOutside: (race.outside_reads as string[]).length },
    { made: 0, readOutside: 0 },
    `flip ${show(flip)}\nrace ${show(race)}`,
  );
});

Deno.test("a link made on the host, swapped in by a process, does not lead a write or a read out of the world", async () => {
  await using w = await fsprobeWorld();
  await using outside = await outsideFolder();
  await Deno.mkdir(join(w.root, outside.path), { recursive: true });
  await Deno.writeTextFile(join(w.root, outside.path, "secret"), "DECOY-world");
  await Deno.mkdir(join(w.root, "state/race"), { recursive: true });
  // made on the host while the host runs, so the check at start has not seen it
  const link = join(w.root, "state/race/d.lnk");
  await Deno.symlink(outside.path, link);
  const [flip, race] = await Promise.all([
    fsprobe(w, "flip", { dir: "/state/race", host_link: true, ms: 2300 }),
    new Promise((r) => setTimeout(r, 100)).then(() =>
      fsprobe(w, "race", { dir: "/state/race", ms: 2000 })
    ),
  ]);
  const made = (await tree(outside.path)).size - 3;
  const details = `flip ${show(flip)}\nrace ${show(race)}`;
  assert.deepEqual(
    { made, readOutside: (race.outside_reads as string[]).length },
    { made: 0, readOutside: 0 },
    details,
  );
  // the swap did happen, and reads through the link found the world's decoy
  assert.ok((flip.flips as number) > 10, details);
  assert.ok((race.read as number) > 0, details);
  // the first rename rewrote the link so that the host cannot follow it
  assert.ok(!(await Deno.readLink(link)).startsWith(outside.path), await Deno.readLink(link));
});

Deno.test("a link made on the host before the host starts is rewritten at start, and means the same to a plugin", async () => {
  const w = await fsprobeWorld();
  await using outside = await outsideFolder();
  try {
    await w.host.shutdown();
    await Deno.mkdir(join(w.root, "state/pre/sub"), { recursive: true });
    await Deno.writeTextFile(join(w.root, "state/pre/sub/f"), "inside");
    await Deno.symlink("sub", join(w.root, "state/pre/rel"));
    await Deno.symlink(outside.path, join(w.root, "state/pre/out"));
    await Deno.symlink("/.sausage-link/sub/f", join(w.root, "state/pre/former"));
    const host = await Host.start({ world: w.root, cacheDir: TEST_CACHE_DIR });
    try {
      // nothing on the host follows them any more
      for (const name of ["rel", "out", "former"]) {
        const path = join(w.root, "state/pre", name);
        assert.throws(() => Deno.statSync(path), Deno.errors.NotFound, Deno.readLinkSync(path));
      }
      const results = await host.client("console").request("fsprobe.ops", {
        ops: [
          { op: "read", path: "/state/pre/rel/f" },
          { op: "read_link", path: "/state/pre/out" },
          { op: "read", path: "/state/pre/former" },
          { op: "read", path: "/state/pre/out/secret" },
        ],
      });
      const [rel, out, former, secret] = results.result as Outcome[];
      assert.deepEqual([rel, out, former], [{ ok: "inside" }, { ok: outside.path }, {
        ok: "inside",
      }]);
      assertErr(secret, "ENOENT", "the outside through a rewritten link");
      // the journal says which links were rewritten
      const said = host.journal.query({ grep: "^rewrote 3 symbolic links made on the host" });
      assert.equal(said.length, 1);
      for (const name of ["rel", "out", "former"]) {
        assert.match(said[0].line, new RegExp(`/state/pre/${name}`));
      }
    } finally {
      await host.shutdown();
    }
  } finally {
    await w[Symbol.asyncDispose]();
  }
});

Deno.test("a plugin cannot make proc, run or self at the top of the world, also through a link", async () => {
  const w = await fsprobeWorld();
  try {
    const results = await ops(w, [
      { op: "symlink", target: "/", path: "/state/root" },
      { op: "symlink", target: "/run", path: "/state/to_run" },
      { op: "mkdir", path: "/state/root/run" },
      { op: "symlink", target: "x", path: "/state/root/self" },
      { op: "write", path: "/state/root/proc", text: "x" },
      { op: "write", path: "/state/to_run", text: "x" },
    ]);
    const made = ["run", "self", "proc"].filter((n) => lexists(join(w.root, n)));
    await w.host.shutdown();
    // the host refuses a world with these names at its top (PROTOCOL section 2)
    let restart = "started";
    try {
      const again = await Host.start({ world: w.root, cacheDir: TEST_CACHE_DIR });
      await again.shutdown();
    } catch (e) {
      restart = String(e);
    }
    assert.deepEqual({ made, restart }, { made: [], restart: "started" }, show(results));
  } finally {
    await w[Symbol.asyncDispose]();
  }
});

Deno.test("the core's names in /self (info.json, log, fs) cannot be made, also through a link", async () => {
  await using w = await fsprobeWorld();
  const [, info, , fs, , log, listing] = await ops(w, [
    { op: "symlink", target: "/info.json", path: "/self/ij" },
    { op: "write", path: "/self/ij", text: "{}" },
    { op: "symlink", target: "/fs", path: "/self/fsl" },
    { op: "write", path: "/self/fsl", text: "x" },
    { op: "symlink", target: "log", path: "/self/lg" },
    { op: "write", path: "/self/lg", text: "x" },
    { op: "list", path: "/self" },
  ]);
  assertErr(info, "EACCES", "write /info.json through a link");
  assertErr(fs, "EACCES", "write /fs through a link");
  assertErr(log, "EACCES", "write /log through a link");
  assert.deepEqual(listing, { ok: ["fsl", "ij", "info.json", "lg", "log"] });
});

Deno.test("`..` after a link in the world, even one named like an area (/state/run/../x), leaves where the link leads", async () => {
  await using w = await fsprobeWorld();
  const results = await ops(w, [
    { op: "mkdir", path: "/state/a" },
    { op: "mkdir", path: "/state/a/b" },
    { op: "write", path: "/state/a/x", text: "after the link" },
    { op: "write", path: "/state/x", text: "as written" },
    { op: "symlink", target: "/state/a/b", path: "/state/other" },
    { op: "symlink", target: "/state/a/b", path: "/state/run" },
    { op: "read", path: "/state/other/../x" },
    { op: "read", path: "/state/run/../x" },
  ]);
  // DECISIONS: "`..` leaves a mount only as written ... elsewhere `..` is
  // resolved by the layer after its symbolic links"
  assert.deepEqual(results.slice(6), [{ ok: "after the link" }, { ok: "after the link" }]);
});

// ---------------------------------------------------------------- names and long paths

Deno.test("odd names from a plugin: spaces, newlines, unicode and 255 bytes work; 256 bytes give ENAMETOOLONG; the process keeps working", async () => {
  await using w = await fsprobeWorld();
  const r = await fsprobe(w, "names", { dirs: ["/state/names", "/run/names", "/self/names"] });
  const entries = (r.names as AnyRecord[]).filter((n) => "write" in n);
  assert.equal(entries.length, 3 * 31, show(r));
  for (const n of entries) {
    const what = `${n.dir} ${n.name}`;
    const name = String(n.name);
    if (name === "NUL") {
      // Rust refuses it before any call
      assert.equal(err(n.write as Outcome)?.kind, "InvalidInput", what);
    } else if (name.startsWith("invalid utf-8")) {
      continue; // a test of its own
    } else if ((n.bytes as number) > 255) {
      for (const op of ["write", "read", "stat"]) {
        assertErr(n[op] as Outcome, "ENAMETOOLONG", `${what} ${op}`, "name-too-long");
      }
      assert.equal(err(n.write as Outcome)?.kind, "InvalidFilename", what);
      assert.deepEqual(n.listed, { ok: 0 }, what);
    } else {
      assert.deepEqual(n.write, { ok: true }, what);
      assert.deepEqual(n.read, { ok: `content of ${name}` }, what);
      assert.deepEqual(n.listed, { ok: 1 }, `${what}: the name reads back as written`);
      for (const op of ["rename", "remove", "mkdir"]) {
        assert.deepEqual(n[op], { ok: true }, `${what} ${op}`);
      }
    }
  }
  assert.deepEqual(r.after, { ok: "still here" });
});

Deno.test("a name that is not UTF-8 ends the process, as the component model's trap, and touches no file", async () => {
  await using w = await fsprobeWorld();
  const r = await w.request("fsprobe.names", { dirs: ["/state/names"], invalid: true });
  assert.equal(r.error?.code, -32002, show(r));
  assert.match(JSON.stringify(r.error), /utf-8|UTF-8|encoded data/, show(r.error));
  // the names before it were made and removed; nothing was made of the invalid one
  const left = [...(await tree(join(w.root, "state/names"))).keys()];
  assert.deepEqual(left.filter((n) => n.includes("bad")), [], show(left));
});

Deno.test("paths over 4095 bytes (up to a million) give ENAMETOOLONG in the world, /run and /self; the process keeps working", async () => {
  await using w = await fsprobeWorld();
  const r = await fsprobe(w, "long_paths", { dirs: ["/state/long", "/run/long", "/self/long"] });
  for (const dir of ["/state/long", "/run/long", "/self/long"]) {
    const d = r[dir] as AnyRecord;
    for (const [what, o] of Object.entries(d.long as Record<string, Outcome>)) {
      assertErr(o, "ENAMETOOLONG", `${dir} ${what}`, "name-too-long");
    }
    const oneMore = d.one_more as { len: number; error: IoError };
    assert.equal(oneMore.error.errno, "ENAMETOOLONG", `${dir}: ${show(d)}`);
    assert.equal(oneMore.len, (d.longest_file as number) + 1, `${dir}: ${show(d)}`);
    assert.equal((d.mkdir_fails as { error: IoError }).error.errno, "ENAMETOOLONG", show(d));
  }
  // The limit is on the path inside the area: 4095 bytes after /run or /self ...
  assert.equal((r["/run/long"] as AnyRecord).longest_file, 4095 + "/run".length);
  assert.equal((r["/self/long"] as AnyRecord).longest_file, 4095 + "/self".length);
  // ... and in the world, 4095 bytes including the world folder's own path on the host.
  assert.equal(
    (r["/state/long"] as AnyRecord).longest_file,
    4095 - Deno.realPathSync(w.root).length,
  );
  assert.deepEqual(r.after, { ok: "still here" });
});

// ---------------------------------------------------------------- open files

Deno.test("a plugin that opens files until an error gets insufficient-memory (ENOMEM), closes them and goes on; a process beside it still opens files", async () => {
  // one worker: the processes share its budget of host files
  await using w = await fsprobeWorld({ workers: 1 });
  const r = await fsprobe(w, "open_many", {
    dir: "/state/many",
    pause_ms: 50,
    call: { method: "fsprobe.open_some", params: { dir: "/state/beside", count: 10 } },
  });
  // wasi-libc's own table ends first (about 124 files), with ENOMEM too
  const error = r.error as IoError;
  assert.deepEqual(
    [error.errno, error.code, error.kind],
    ["ENOMEM", "insufficient-memory", "OutOfMemory"],
    show(r),
  );
  assert.ok((r.opened as number) >= 100, show(r));
  const full = r.while_full as Record<string, Outcome>;
  assert.ok(
    ok(full.stat) && ok(full.write_held),
    `what needs no new descriptor works: ${show(full)}`,
  );
  assertErr(full.read, "ENOMEM", "a new open while full");
  // the process beside it, on the same worker, while these files are open
  assert.deepEqual((r.nested as AnyRecord).result, { opened: 10, error: null }, show(r.nested));
  assert.deepEqual(r.after_close, { ok: "after close" });

  // past wasi-libc: the host's limit per process, then the same clean error
  const raw = await fsprobe(w, "open_many", { dir: "/state/raw", raw: true });
  assert.equal(raw.opened, MAX_DESCRIPTORS_PER_PROCESS, show(raw));
  assert.deepEqual(raw.error, { code: "insufficient-memory" });
  assert.deepEqual(raw.after_close, { ok: "after close" });
  // and the host: a later process opens files as before
  assert.deepEqual(await fsprobe(w, "open_some", { dir: "/state/later", count: 50 }), {
    opened: 50,
    error: null,
  });
});

// ---------------------------------------------------------------- a full /self

Deno.test("/self is full at 64 MiB: insufficient-space (ENOSPC), earlier data intact, space comes back, the process and the host go on", async () => {
  await using w = await fsprobeWorld();
  const r = await fsprobe(w, "fill", {
    path: "/self/big",
    keep: "/self/keep.txt",
    prefill: SELF_BYTES - 64 * 1024,
  });
  const size = assertFilled(r);
  assert.ok(size <= SELF_BYTES && size > SELF_BYTES - 64 * 1024, show(r));
  // while full: no more bytes, but names are counted apart, as inodes are
  assertErr(r.small_write as Outcome, "ENOSPC", "a small write when full", "insufficient-space");
  assert.deepEqual([r.empty_create, r.mkdir], [{ ok: true }, { ok: true }]);
  // removing the big file gives its space back
  assert.deepEqual([r.remove, r.after_remove], [{ ok: true }, { ok: 4096 }]);
  assert.deepEqual(r.after, { ok: "still here" });
  // the host still works: a new process, with an empty /self
  assert.deepEqual(await fsprobe(w, "write", { path: "/self/again", text: "fresh" }), {
    ok: "fresh",
  });
  await eventually(() => w.host.processes.list().length === 0);
});

Deno.test("/run, shared by all processes, is full at 256 MiB: insufficient-space for the writer, earlier data intact; the host and other processes go on", async () => {
  await using w = await fsprobeWorld();
  // most of /run is taken by another holder (written on the host: quicker than a plugin)
  const filler = w.host.files.run.open("/filler", { write: true, create: true });
  const mib = new Uint8Array(1 << 20).fill(7);
  const fillerBytes = RUN_BYTES - (1 << 20);
  for (let at = 0; at < fillerBytes; at += mib.length) filler.write(mib, at);
  filler.close();
  const r = await fsprobe(w, "fill", { path: "/run/big", keep: "/run/keep.txt" });
  const size = assertFilled(r);
  assert.ok(size > 0 && size <= 1 << 20, show(r));
  // another process reads /run while it is full, and writes once space is given back
  const reader = await fsprobe(w, "ops", { ops: [{ op: "read", path: "/run/keep.txt" }] });
  assert.deepEqual(reader, [{ ok: "earlier data" }]);
  w.host.files.run.unlink("/filler");
  assert.deepEqual(await fsprobe(w, "write", { path: "/run/after", text: "room again" }), {
    ok: "room again",
  });
});

Deno.test("SQLite in a full /self fails cleanly (database or disk is full), keeps its data, and works once space is freed", async () => {
  await using w = await fsprobeWorld();
  const r = await fsprobe(w, "sqlite", { db: "/self/notes.db", fill: "/self/fill" });
  assert.deepEqual(r.scenario, { ok: "ok" }, show(r));
  const full = r.full as AnyRecord;
  assert.match(String(full.error), /database or disk is full/, show(full));
  assert.deepEqual(full.count, { ok: 2001 });
  assert.deepEqual(full.integrity, { ok: "ok" });
  assert.deepEqual(full.after_remove, { ok: 2002 });
});

Deno.test("a write that fills /self part way is a short write: it reports what it wrote", async () => {
  await using w = await fsprobeWorld();
  // one raw pwrite of 3 MiB that starts 2 MiB before the end of /self
  const r = await fsprobe(w, "fill_raw", {
    path: "/self/raw",
    fill: SELF_BYTES - 2 * 1024 * 1024,
    size: 3 * 1024 * 1024,
  });
  // the pieces that fit are written and counted; the caller learns how far it got
  const wrote = (r.write as { ok?: number }).ok;
  assert.ok(wrote !== undefined && wrote > 0 && wrote < 3 * 1024 * 1024, show(r));
  assert.equal((r.size_after as number) - (r.size_before as number), wrote, show(r));
});

Deno.test("the targets of links in a full /self count against its 64 MiB", async () => {
  await using w = await fsprobeWorld();
  // when full, 500 links of 4000 bytes each
  const r = await fsprobe(w, "fill", {
    path: "/self/big",
    prefill: SELF_BYTES - 64 * 1024,
    links: 500,
  });
  assert.equal((r.link_error as IoError | null)?.errno, "ENOSPC", show(r));
  assert.equal(r.link_bytes, 0, show(r));
});

// ---------------------------------------------------------------- big listings of the host's layers

Deno.test("a listing of 3000 files in /run answers (more than the channel's 64 KiB of JSON)", async () => {
  await using w = await fsprobeWorld();
  const made = await ops(
    w,
    Array.from({ length: 3000 }, (_, i) => ({ op: "write", path: `/run/big-${i}`, text: "" })),
  );
  assert.ok(made.every(ok));
  const [listing] = await ops(w, [{ op: "list", path: "/run" }]);
  assert.equal((listing as { ok: string[] }).ok.length, 3000);
});

Deno.test("50,000 names in /run and in the world are listed and removed by a plugin (a listing comes in pages)", async () => {
  await using w = await fsprobeWorld();
  // /run: made by the plugin, one file a call
  const run = await fsprobe(w, "many", { dir: "/run/many", count: 50_000 });
  assert.deepEqual(run.listed, { names: 50_000, expected: 50_000 }, show(run));
  assert.deepEqual([run.removed, run.gone], [{ ok: true }, true], show(run));
  // the world: made on the host (a disk's speed is not what this tests), listed and removed
  const dir = join(w.root, "state/many");
  await Deno.mkdir(dir, { recursive: true });
  for (let i = 0; i < 50_000; i++) Deno.writeFileSync(`${dir}/name-${i}`, new Uint8Array());
  const world = await fsprobe(w, "many", { dir: "/state/many", make: false });
  assert.deepEqual(world.listed, { names: 50_000, expected: 50_000 }, show(world));
  assert.deepEqual([world.removed, world.gone], [{ ok: true }, true], show(world));
  assert.equal(existsSync(dir), false);
});

// ---------------------------------------------------------------- deep folders

Deno.test("folders 1,000 deep in the world, /run and /self are made, written, reached through `..` and removed", async () => {
  await using w = await fsprobeWorld();
  for (const base of ["/state/deep", "/run/deep", "/self/deep"]) {
    const r = await fsprobe(w, "deep", { base, levels: 1000, up: 300 });
    assert.equal(r.levels, 1000, `${base}: ${show(r)}`);
    assert.equal(r.read, "bottom", `${base}: ${show(r)}`);
    assert.deepEqual(r.through_dotdot, { ok: "bottom" }, `${base}: ${show(r)}`);
  }
  assert.deepEqual([...Deno.readDirSync(join(w.root, "state/deep"))], []);
});

// ---------------------------------------------------------------- hard links across areas

Deno.test("a hard link across areas fails with cross-device (EXDEV), in both directions", async () => {
  await using w = await fsprobeWorld();
  const [, , , ...links] = await ops(w, [
    { op: "write", path: "/state/in-world", text: "w" },
    { op: "write", path: "/run/in-run", text: "r" },
    { op: "write", path: "/self/in-self", text: "s" },
    { op: "link", path: "/state/in-world", to: "/run/from-world" },
    { op: "link", path: "/state/in-world", to: "/self/from-world" },
    { op: "link", path: "/run/in-run", to: "/state/from-run" },
    { op: "link", path: "/self/in-self", to: "/run/from-self" },
    { op: "link", path: "/proc/core/info.json", to: "/state/from-proc" },
    { op: "link", path: "/run/in-run", to: "/run/same-area" },
  ]);
  for (
    const [i, what] of ["world→run", "world→self", "run→world", "self→run", "proc→world"].entries()
  ) {
    assertErr(links[i], "EXDEV", what, "cross-device");
  }
  assert.ok(ok(links[5]), show(links[5]));
});
