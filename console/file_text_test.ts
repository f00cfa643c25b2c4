import assert from "node:assert/strict";
import { join } from "node:path";
import { startWorld } from "../tests/world.ts";
import { GeneratedFileSystem, MemoryFileSystem } from "../vfs/mod.ts";
import { commandsOn } from "./_testing.ts";
import {
  completionNames,
  consoleFileSystem,
  consolePath,
  listPath,
  PathError,
  pathErrorText,
  readPath,
} from "../core/view_files.ts";
import {
  formatFile,
  formatListing,
  formatSize,
  hexDump,
  isText,
  SCREEN_BYTES,
} from "./file_text.ts";
import { makeStyle } from "./format.ts";

const encoder = new TextEncoder();

function write(fs: MemoryFileSystem, path: string, content: string | Uint8Array): void {
  const handle = fs.open(path, { write: true, create: true, truncate: true });
  handle.write(typeof content === "string" ? encoder.encode(content) : content, 0);
  handle.close();
}

/** A small table: a world with a folder, a file and a link; /proc generated; /run in memory. */
function table() {
  const world = new MemoryFileSystem();
  world.mkdir("/plugins");
  world.mkdir("/plugins/notes");
  write(world, "/plugins/notes/plugin.wasm", new Uint8Array([0, 0x61, 0x73, 0x6d, 13, 0, 1, 0]));
  write(world, "/notes.txt", "milk\neggs\n");
  world.symlink("/plugins", "/p");
  world.symlink("/gone", "/dangling");
  const proc = new GeneratedFileSystem({
    kind: "dir",
    entries: () => ({
      core: {
        kind: "dir",
        entries: () => ({ "graph.json": { kind: "file", content: () => '{"plugins": {}}\n' } }),
      },
    }),
  });
  const run = new MemoryFileSystem();
  write(run, "/secrets", "tcp:127.0.0.1:4000 secrets-1 vault\n");
  return consoleFileSystem({ world, proc, run });
}

Deno.test("the console sees the world at /, with /proc and /run, and no /self", () => {
  const fs = table();
  const root = listPath(fs, "/");
  assert.equal(root.folder, true);
  assert.deepEqual(root.entries.map((e) => [e.name, e.folder]), [
    ["dangling", false],
    ["notes.txt", false],
    ["p", true],
    ["plugins", true],
    ["proc", true],
    ["run", true],
  ]);
  assert.equal(formatListing(root), "  dangling@\n  notes.txt\n  p@\n  plugins/\n  proc/\n  run/");
  assert.equal(formatListing(listPath(fs, "proc/core")), "  graph.json");
  assert.equal(formatListing(listPath(fs, "/run/")), "  secrets");
  assert.throws(() => listPath(fs, "/self"), PathError);
  assert.throws(() => readPath(fs, "/self/info.json"), /the console has no \/self/);
});

Deno.test("ls of a file shows the file; ls -l shows sizes, times and link targets", () => {
  const fs = table();
  assert.equal(formatListing(listPath(fs, "/notes.txt")), "  /notes.txt");
  const now = new Date();
  const long = formatListing(listPath(fs, "/"), { long: true, now }).split("\n");
  assert.equal(
    long[0],
    "     -  -         dangling -> /gone",
    "a dangling link has no size or time",
  );
  assert.match(long[1], /^ {2}10 B {2}\d\d:\d\d:\d\d {2}notes\.txt$/);
  assert.match(long[2], /^ {2} +- {2}\d\d:\d\d:\d\d {2}p -> \/plugins$/);
  assert.match(long[3], /^ {2} +- {2}\d\d:\d\d:\d\d {2}plugins\/$/);
});

Deno.test("an empty folder, a missing path and a file in the path are said so", () => {
  const fs = table();
  fs.mkdir("/empty");
  assert.equal(formatListing(listPath(fs, "/empty")), "  /empty is an empty folder");
  const missing = (() => {
    try {
      listPath(fs, "/nope");
    } catch (e) {
      return pathErrorText("/nope", e);
    }
  })();
  assert.equal(missing, "/nope: no such file or folder");
  assert.throws(
    () => readPath(fs, "/plugins"),
    /\/plugins: it is a folder \(ls \/plugins lists it\)/,
  );
  try {
    readPath(fs, "/notes.txt/x");
    assert.fail("a file is not a folder");
  } catch (e) {
    assert.equal(
      pathErrorText("/notes.txt/x", e),
      "/notes.txt/x: a part of the path is not a folder",
    );
  }
  assert.equal(pathErrorText("/x", new Error("boom")), "/x: boom");
});

Deno.test("paths are taken from /; .. stays inside", () => {
  assert.equal(consolePath("plugins//notes/"), "/plugins/notes");
  assert.equal(consolePath(""), "/");
  const fs = table();
  assert.equal(formatFile(readPath(fs, "/../../notes.txt")), "  milk\n  eggs");
  assert.equal(formatFile(readPath(fs, "/run/../notes.txt")), "  milk\n  eggs");
});

Deno.test("cat prints text as it is, indented like all output", () => {
  const fs = table();
  assert.equal(formatFile(readPath(fs, "/proc/core/graph.json")), '  {"plugins": {}}');
  write(fs as unknown as MemoryFileSystem, "/run/tabs", "a\tb\n\n  c\r\n");
  assert.equal(formatFile(readPath(fs, "/run/tabs")), "  a\tb\n\n    c");
  write(fs as unknown as MemoryFileSystem, "/run/empty", "");
  assert.equal(formatFile(readPath(fs, "/run/empty")), "  /run/empty is empty");
});

Deno.test("cat cuts a long text at a line, and says so", () => {
  const fs = table();
  const text = Array.from({ length: 100 }, (_, i) => `line ${i}`).join("\n");
  write(fs as unknown as MemoryFileSystem, "/run/long", text);
  const file = readPath(fs, "/run/long", 50);
  assert.equal(file.bytes.length, 50);
  assert.equal(file.size, text.length);
  const shown = formatFile(file).split("\n");
  assert.deepEqual(shown.slice(0, 7), [0, 1, 2, 3, 4, 5, 6].map((i) => `  line ${i}`));
  assert.equal(shown.at(-1), `  … cut: these are the first 50 B of ${text.length} B of /run/long`);
});

Deno.test("cat shows a small binary file as hex, and refuses a larger one", () => {
  const fs = table();
  assert.equal(
    formatFile(readPath(fs, "/plugins/notes/plugin.wasm")),
    `  00000000  00 61 73 6d 0d 00 01 00${" ".repeat(27)}|.asm....|`,
  );
  write(fs as unknown as MemoryFileSystem, "/big.wasm", new Uint8Array(SCREEN_BYTES + 1));
  assert.equal(
    formatFile(readPath(fs, "/big.wasm")),
    "  /big.wasm is a binary file of 385 B: not printed " +
      "(cat shows text, and binary files up to 384 bytes as hex)",
  );
  assert.ok(formatFile(readPath(fs, "/big.wasm"), makeStyle(true)).includes("\x1b[2m"), "dimmed");
});

Deno.test("text is UTF-8 without NUL; a character cut at the end is still text", () => {
  assert.ok(isText(encoder.encode("héllo ✓")));
  assert.ok(isText(encoder.encode("✓").subarray(0, 2)));
  assert.ok(!isText(new Uint8Array([0x68, 0])));
  assert.ok(!isText(new Uint8Array([0xff, 0xfe, 0x41])));
});

Deno.test("a hex dump has offsets, two groups of eight and the printable characters", () => {
  const bytes = new Uint8Array(20).map((_, i) => 0x41 + i);
  assert.equal(
    hexDump(bytes),
    "00000000  41 42 43 44 45 46 47 48  49 4a 4b 4c 4d 4e 4f 50  |ABCDEFGHIJKLMNOP|\n" +
      "00000010  51 52 53 54                                       |QRST|",
  );
});

Deno.test("sizes are short", () => {
  assert.equal(formatSize(0), "0 B");
  assert.equal(formatSize(1023), "1023 B");
  assert.equal(formatSize(1536), "1.5 KiB");
  assert.equal(formatSize(3 * 1024 * 1024), "3.0 MiB");
});

Deno.test("completion names mark folders, also through links, and are empty for what cannot be read", () => {
  const fs = table();
  assert.deepEqual(completionNames(fs, "/").sort(), [
    "dangling",
    "notes.txt",
    "p/",
    "plugins/",
    "proc/",
    "run/",
  ]);
  assert.deepEqual(completionNames(fs, "/plugins/notes/"), ["plugin.wasm"]);
  assert.deepEqual(completionNames(fs, "/nope/"), []);
  assert.deepEqual(completionNames(fs, "/self/"), []);
});

Deno.test("ls and cat in a running world: the world, /proc and /run", async () => {
  await using w = await startWorld({ plugins: { probe: "probe", notes: "notes_v1" } });
  const c = commandsOn(w);
  assert.equal(await c.output("ls"), "  config/\n  plugins/\n  proc/\n  run/\n  state/");
  assert.match(await c.output("ls /plugins"), /^ {2}(cargo\/\n {2})?notes\/\n {2}probe\/$/);
  assert.equal(
    await c.output("ls /proc/core"),
    "  PROTOCOL.md\n  docs/\n  graph.dot\n  graph.json\n  locks.json\n  plugins/",
  );
  assert.equal(await c.output("ls proc/core/plugins/notes"), "  client.rs\n  discover.json");
  assert.match(
    await c.output("ls -l /plugins/notes"),
    /^ {2}\d+\.\d KiB {2}\d\d:\d\d:\d\d {2}plugin\.wasm$/,
  );
  const discover = JSON.parse(await c.output("cat /proc/core/plugins/notes/discover.json"));
  assert.equal(discover.info.title, "notes");
  assert.match(await c.output("cat /proc/core/PROTOCOL.md"), /^ {2}# The Sausage protocol\n/);

  // a process's files in /run and /proc are the console's too
  await w.call("probe.write_file", { path: "/run/hello.txt", text: "hi from probe\n" });
  assert.equal(await c.output("cat /run/hello.txt"), "  hi from probe");
  await Deno.writeTextFile(join(w.root, "state", "x.json"), '{"a": 1}');
  assert.equal(await c.output("cat state/x.json"), '  {"a": 1}');

  assert.equal(await c.output("ls /nope"), "  ls: /nope: no such file or folder");
  assert.equal(
    await c.output("cat /plugins"),
    "  cat: /plugins: it is a folder (ls /plugins lists it)",
  );
  assert.match(
    await c.output("cat /self/info.json"),
    /^ {2}cat: \/self\/info\.json: the console has no \/self/,
  );
  assert.match(
    await c.output("cat /plugins/notes/plugin.wasm"),
    /^ {2}\/plugins\/notes\/plugin\.wasm is a binary file of \d+\.\d KiB: not printed/,
  );
});
