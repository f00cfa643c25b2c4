/**
 * `wasi:filesystem` calls as jco makes them, against plain Deno calls:
 * `deno bench --allow-all runtime/wasi/filesystem_bench.ts`.
 */
import { type Descriptor, filesystemImports, releaseFilesystem } from "./filesystem.ts";

const dir = Deno.makeTempDirSync({ prefix: "wasi_fs_bench_" });
Deno.mkdirSync(`${dir}/state/notes`, { recursive: true });
Deno.writeFileSync(`${dir}/state/notes/data.bin`, new Uint8Array(1 << 20));
const imports = filesystemImports([{ guestPath: "/", hostPath: dir }]);
const getDirectories = imports["wasi:filesystem/preopens"].getDirectories as () => [
  Descriptor,
  string,
][];
const root = getDirectories()[0][0];
const file = root.openAt({ symlinkFollow: true }, "state/notes/data.bin", {}, {
  read: true,
  write: true,
});
const plain = Deno.openSync(`${dir}/state/notes/data.bin`, { read: true, write: true });
const page = new Uint8Array(4096);
let offset = 0;
const next = () => (offset = (offset + 4096 * 7) % (1 << 20));
globalThis.addEventListener("unload", () => {
  releaseFilesystem(imports);
  plain.close();
  Deno.removeSync(dir, { recursive: true });
});

Deno.bench("stat-at (wasi)", { group: "stat" }, () => {
  root.statAt({ symlinkFollow: true }, "state/notes/data.bin");
});
Deno.bench("stat (plain)", { group: "stat", baseline: true }, () => {
  Deno.statSync(`${dir}/state/notes/data.bin`);
});
Deno.bench("stat-at of a missing file (wasi)", { group: "missing" }, () => {
  try {
    root.statAt({ symlinkFollow: true }, "state/notes/data.bin-journal");
  } catch { /* expected */ }
});
Deno.bench("stat of a missing file (plain)", { group: "missing", baseline: true }, () => {
  try {
    Deno.statSync(`${dir}/state/notes/data.bin-journal`);
  } catch { /* expected */ }
});
Deno.bench("open-at + get-type + drop (wasi)", { group: "open" }, () => {
  const d = root.openAt({ symlinkFollow: true }, "state/notes/data.bin", {}, { read: true });
  d.getType();
  d[Symbol.dispose]();
});
Deno.bench("open + stat + close (plain)", { group: "open", baseline: true }, () => {
  const f = Deno.openSync(`${dir}/state/notes/data.bin`, { read: true });
  f.statSync();
  f.close();
});
Deno.bench("read 4 KiB at an offset (wasi)", { group: "read" }, () => {
  file.read(4096n, BigInt(next()));
});
Deno.bench("read 4 KiB at an offset (plain)", { group: "read", baseline: true }, () => {
  plain.seekSync(next(), Deno.SeekMode.Start);
  plain.readSync(page);
});
Deno.bench("write 4 KiB at an offset (wasi)", { group: "write" }, () => {
  file.write(page, BigInt(next()));
});
Deno.bench("write 4 KiB at an offset (plain)", { group: "write", baseline: true }, () => {
  plain.seekSync(next(), Deno.SeekMode.Start);
  plain.writeSync(page);
});
