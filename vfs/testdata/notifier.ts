/// <reference lib="deno.worker" />
// Wakes whoever waits on a channel, again and again, as a late notify of an
// earlier answer would: a client must take only a real answer as its answer.
self.onmessage = (e: MessageEvent<{ channel: SharedArrayBuffer; stop: SharedArrayBuffer }>) => {
  const header = new Int32Array(e.data.channel, 0, 4);
  const stop = new Int32Array(e.data.stop);
  self.postMessage("started");
  while (Atomics.load(stop, 0) === 0) Atomics.notify(header, 0);
  self.postMessage("stopped");
};
