/**
 * The synchronous channel across two real threads: a worker uses a layer
 * served by this thread.
 */
import assert from "node:assert/strict";
import { FileSystemServer, MemoryFileSystem, SyncChannel } from "./mod.ts";

Deno.test("a worker reads and writes a layer served by the main thread; long answers; listings in pages; short writes", async () => {
  const layer = new MemoryFileSystem({ maxBytes: 3_500_000 });
  // a layer with room for two channel pieces: a third piece fails
  const narrow = new MemoryFileSystem({ maxBytes: 2 << 20 });
  // listings of about 130 KiB (more than the channel's JSON area) and 1.6 MiB (more than all of it)
  const many = new MemoryFileSystem();
  many.mkdir("/some");
  many.mkdir("/lots");
  for (let i = 0; i < 3000; i++) many.open(`/some/file-${i}`, { create: true }).close();
  for (let i = 0; i < 20_000; i++) {
    many.open(`/lots/${"n".repeat(50)}-${i}`, { create: true }).close();
  }
  const layers: Record<string, MemoryFileSystem> = { mem: layer, narrow, many };
  const server = new FileSystemServer((name) => layers[name]);
  const channel = SyncChannel.create();
  const worker = new Worker(new URL("./testdata/remote_client.ts", import.meta.url), {
    type: "module",
  });
  const done = new Promise<Record<string, unknown>>((resolve) => {
    worker.onmessage = (e) => {
      if (e.data === "vfs") server.serve(channel);
      else resolve(e.data);
    };
  });
  // wake-ups that are no answer, all along (as the late notify of an answer before would be)
  const notifier = new Worker(new URL("./testdata/notifier.ts", import.meta.url), {
    type: "module",
  });
  const stop = new SharedArrayBuffer(4);
  const started = Promise.withResolvers<void>();
  const stopped = Promise.withResolvers<void>();
  notifier.onmessage = (e) => (e.data === "started" ? started : stopped).resolve();
  notifier.postMessage({ channel: channel.buffer, stop });
  await started.promise;
  worker.postMessage(channel.buffer);
  const result = await done;
  worker.terminate();
  Atomics.store(new Int32Array(stop), 0, 1);
  await stopped.promise;
  notifier.terminate();
  assert.deepEqual(result, {
    written: 3_000_000,
    readBack: 3_000_000,
    listing: ["big", "dir"],
    missing: "ENOENT",
    unknownLayer: "ENOENT",
    full: "ENOSPC",
    shortWrite: 2 << 20,
    someListed: 3000,
    lotsListed: 20_000,
    servingAfter: "directory",
    roundTrips: 20_000,
  });
  assert.equal(narrow.stat("/partial").size, 2 << 20);
  assert.equal(layer.stat("/big").size, 3_000_000);
});
