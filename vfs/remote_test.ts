/**
 * The synchronous channel across two real threads: a worker uses a layer
 * served by this thread.
 */
import assert from "node:assert/strict";
import { FileSystemServer, MemoryFileSystem, SyncChannel } from "./mod.ts";

Deno.test("a worker reads and writes a layer served by the main thread", async () => {
  const layer = new MemoryFileSystem({ maxBytes: 3_500_000 });
  const server = new FileSystemServer((name) => (name === "mem" ? layer : undefined));
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
  worker.postMessage(channel.buffer);
  const result = await done;
  worker.terminate();
  assert.deepEqual(result, {
    written: 3_000_000,
    readBack: 3_000_000,
    listing: ["big", "dir"],
    missing: "ENOENT",
    unknownLayer: "ENOENT",
    full: "ENOSPC",
  });
  assert.equal(layer.stat("/big").size, 3_000_000);
});
