/// <reference lib="deno.worker" />
import { RemoteFileSystem, SyncChannel, type VfsError } from "../mod.ts";

const code = (f: () => unknown) => {
  try {
    f();
    return "ok";
  } catch (e) {
    return (e as VfsError).code;
  }
};

/** How many of `n` stats in a row answer as the folder they ask about. */
function roundTrips(fs: RemoteFileSystem, n: number): number {
  let answered = 0;
  for (let i = 0; i < n; i++) if (fs.stat("/some").kind === "directory") answered++;
  return answered;
}

self.onmessage = (e: MessageEvent<SharedArrayBuffer>) => {
  const channel = SyncChannel.attach(e.data, () => self.postMessage("vfs"));
  const fs = new RemoteFileSystem(channel, "mem");
  fs.mkdir("/dir");
  const big = new Uint8Array(3_000_000).fill(7); // more than one channel's data
  const h = fs.open("/big", { write: true, create: true, read: true });
  h.write(big, 0);
  const back = new Uint8Array(3_000_000);
  let readBack = 0;
  for (let n; (n = h.read(back.subarray(readBack), readBack)) > 0;) readBack += n;
  h.close();
  self.postMessage({
    written: fs.stat("/big").size,
    readBack: back.every((b) => b === 7) ? readBack : -1,
    listing: fs.readDir("/").map((x) => x.name).sort(),
    missing: code(() => fs.stat("/nothing")),
    unknownLayer: code(() => new RemoteFileSystem(channel, "other").stat("/")),
    full: code(() =>
      fs.open("/more", { write: true, create: true }).write(new Uint8Array(1 << 20), 0)
    ),
    // a write that fails after some pieces is a short write of those pieces
    shortWrite: new RemoteFileSystem(channel, "narrow")
      .open("/partial", { write: true, create: true })
      .write(new Uint8Array(3 << 20), 0),
    someListed: new RemoteFileSystem(channel, "many").readDir("/some").length,
    // 1.6 MiB of names, more than the channel holds: listed in pages, each name once
    lotsListed: new Set(new RemoteFileSystem(channel, "many").readDir("/lots").map((x) => x.name))
      .size,
    servingAfter: new RemoteFileSystem(channel, "many").stat("/lots").kind,
    // many quick round trips: a late wake-up meant for the answer before never reads as an answer
    roundTrips: roundTrips(new RemoteFileSystem(channel, "many"), 20_000),
  });
};
