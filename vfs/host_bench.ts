/**
 * The host layer against plain Deno calls on the same files:
 * `deno bench --allow-all vfs/host_bench.ts`.
 */
import { HostFileSystem } from "./host.ts";

const root = Deno.makeTempDirSync({ prefix: "vfs_bench_" });
Deno.mkdirSync(`${root}/state/notes/db`, { recursive: true });
Deno.writeFileSync(`${root}/state/notes/db/data.bin`, new Uint8Array(1 << 20));
Deno.symlinkSync("state/notes", `${root}/link`);
for (let i = 0; i < 20; i++) Deno.writeTextFileSync(`${root}/state/notes/n${i}.txt`, "x");
globalThis.addEventListener("unload", () => Deno.removeSync(root, { recursive: true }));

const fs = new HostFileSystem(root);
const path = "/state/notes/db/data.bin";
const host = root + path;
const buf = new Uint8Array(4096);
const layerFile = fs.open(path, { read: true, write: true });
const plainFile = Deno.openSync(host, { read: true, write: true });
let offset = 0;
const nextOffset = () => (offset = (offset + 4096 * 7) % (1 << 20));

Deno.bench("stat (layer)", { group: "stat", baseline: false }, () => {
  fs.stat(path);
});
Deno.bench("stat (plain)", { group: "stat", baseline: true }, () => {
  Deno.statSync(host);
});
Deno.bench("stat of a missing file (layer)", { group: "missing" }, () => {
  try {
    fs.stat("/state/notes/db/data.bin-journal");
  } catch { /* expected */ }
});
Deno.bench("stat of a missing file (plain)", { group: "missing", baseline: true }, () => {
  try {
    Deno.statSync(`${host}-journal`);
  } catch { /* expected */ }
});
Deno.bench("stat through a symbolic link (layer)", { group: "link" }, () => {
  fs.stat("/link/db/data.bin");
});
Deno.bench("stat through a symbolic link (plain)", { group: "link", baseline: true }, () => {
  Deno.statSync(`${root}/link/db/data.bin`);
});
Deno.bench("open + close (layer)", { group: "open" }, () => {
  fs.open(path, { read: true }).close();
});
Deno.bench("open + close (plain)", { group: "open", baseline: true }, () => {
  Deno.openSync(host, { read: true }).close();
});
Deno.bench("read 4 KiB at an offset (layer)", { group: "read" }, () => {
  layerFile.read(buf, nextOffset());
});
Deno.bench("read 4 KiB at an offset (plain)", { group: "read", baseline: true }, () => {
  plainFile.seekSync(nextOffset(), Deno.SeekMode.Start);
  plainFile.readSync(buf);
});
Deno.bench("write 4 KiB at an offset (layer)", { group: "write" }, () => {
  layerFile.write(buf, nextOffset());
});
Deno.bench("write 4 KiB at an offset (plain)", { group: "write", baseline: true }, () => {
  plainFile.seekSync(nextOffset(), Deno.SeekMode.Start);
  plainFile.writeSync(buf);
});
Deno.bench("list a folder of 21 (layer)", { group: "readdir" }, () => {
  fs.readDir("/state/notes");
});
Deno.bench("list a folder of 21 (plain)", { group: "readdir", baseline: true }, () => {
  for (const _ of Deno.readDirSync(`${root}/state/notes`));
});
