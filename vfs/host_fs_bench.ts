/**
 * The host layer against plain Deno calls on the same files:
 * `deno bench --allow-all vfs/host_fs_bench.ts`.
 */
import { HostFileSystem } from "./host_fs.ts";

const root = Deno.makeTempDirSync({ prefix: "vfs_bench_" });
Deno.mkdirSync(`${root}/state/notes/db`, { recursive: true });
Deno.writeFileSync(`${root}/state/notes/db/data.bin`, new Uint8Array(1 << 20));
Deno.symlinkSync("state/notes", `${root}/link`);
// the layer rewrites the links it meets behind its prefix: the plain calls get one of their own
Deno.symlinkSync("state/notes", `${root}/plain-link`);
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
  Deno.statSync(`${root}/plain-link/db/data.bin`);
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

/** Makes `levels` nested folders under `top` one by one, writes a file at the bottom, removes all. */
function deepChain(
  mkdir: (path: string) => void,
  write: (path: string) => void,
  remove: (path: string) => void,
  top: string,
  levels: number,
): void {
  let path = top;
  for (let i = 0; i < levels; i++) mkdir(path += "/d");
  write(`${path}/bottom.txt`);
  remove(`${path}/bottom.txt`);
  for (let i = 0; i < levels; i++, path = path.slice(0, -2)) remove(path);
}

Deno.bench("1,000 nested folders made, a file at the bottom, all removed (layer)", {
  group: "deep",
  n: 5,
  warmup: 1,
}, () => {
  deepChain(
    (p) => fs.mkdir(p),
    (p) => fs.open(p, { write: true, create: true }).close(),
    (p) => (fs.lstat(p).kind === "directory" ? fs.rmdir(p) : fs.unlink(p)),
    "",
    1000,
  );
});
Deno.bench("1,000 nested folders made, a file at the bottom, all removed (plain)", {
  group: "deep",
  baseline: true,
  n: 5,
  warmup: 1,
}, () => {
  deepChain(
    (p) => Deno.mkdirSync(p),
    (p) => Deno.writeFileSync(p, new Uint8Array()),
    (p) => Deno.removeSync(p),
    root,
    1000,
  );
});
