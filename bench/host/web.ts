/**
 * The web page: the time from the spawn of `sausage --headless WORLD --http`
 * to the first byte of the page; the delay from a journal entry to the
 * page's event stream; and what 20 open, idle event streams (their readers
 * in another process, as browsers would be) add to a call on the host's
 * thread, blocks of calls with and without them alternating.
 *
 * @module
 */
import { LocalHostView } from "../../core/host_view.ts";
import { startWebServer } from "../../web/server.ts";
import type { Figure } from "../figures.ts";
import {
  benchWorld,
  createWorld,
  removeWorld,
  REPO_ROOT,
  TEST_CACHE_DIR,
  timedCall,
} from "../fixture.ts";
import { pick, type Section } from "../section.ts";
import { median, summarize } from "../stats.ts";
import { sausageCommand } from "./ready.ts";

/** The idle streams of the third figure. */
const IDLE_STREAMS = 20;

/** Spawns a headless host with the page; the times to its URL and to the page's first byte. */
async function startToFirstByte(root: string): Promise<{ url: number; firstByte: number }> {
  const args = [...await sausageCommand(), "--headless", root, "--http", "127.0.0.1:0"];
  args.push("--cache-dir", TEST_CACHE_DIR);
  const start = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args,
    cwd: REPO_ROOT,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).spawn();
  const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
  try {
    let seen = "";
    let url: string | undefined;
    while (url === undefined) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`sausage --headless --http printed no URL:\n${seen}`);
      seen += value;
      url = /the web page is at (\S+)/.exec(seen)?.[1];
    }
    const printed = performance.now() - start;
    // the printed URL sets the token's cookie and leads to the page, as a browser follows it
    const entry = await fetch(url, { redirect: "manual" });
    await entry.body?.cancel();
    const cookie = entry.headers.get("set-cookie")?.split(";")[0];
    if (entry.status !== 303 || !cookie) {
      throw new Error(
        `GET ${url}: ${entry.status}, not the 303 to the page with the token's cookie`,
      );
    }
    const response = await fetch(new URL("/", url), { headers: { cookie } });
    const body = response.body!.getReader();
    await body.read();
    const firstByte = performance.now() - start;
    await body.cancel();
    if (!response.ok) throw new Error(`GET ${url}: ${response.status}`);
    return { url: printed, firstByte };
  } finally {
    child.kill("SIGTERM");
    await child.status;
    await reader.cancel().catch(() => {});
  }
}

/** A subprocess that holds `n` event streams of `url` open and reads them; ready once all opened. */
async function idleReaders(url: string, n: number): Promise<{ close(): Promise<void> }> {
  const code = `
    const answers = await Promise.all(Array.from({ length: ${n} }, () => fetch(${
    JSON.stringify(url)
  })));
    if (answers.some((r) => r.status !== 200)) Deno.exit(1);
    for (const r of answers) r.body.pipeTo(new WritableStream());
    console.log("open");`;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["eval", code],
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const { value } = await reader.read();
  if (!value?.includes("open")) throw new Error(`the readers of ${url} did not open`);
  return {
    async close() {
      child.kill("SIGTERM");
      await child.status;
      await reader.cancel().catch(() => {});
    },
  };
}

export const web: Section = {
  name: "web",
  group: "host",
  summary: "the web page: start to first byte, journal to event stream, 20 idle streams",
  async run(ctx) {
    const figures: Figure[] = [];

    const starts = pick(ctx, 5, 2);
    ctx.progress(`web: ${starts} starts of sausage --headless --http`);
    const root = await createWorld({ probe: "probe" });
    const printed: number[] = [];
    const firstBytes: number[] = [];
    try {
      await startToFirstByte(root); // warm: transpiles cached, files in the page cache
      for (let i = 0; i < starts; i++) {
        const t = await startToFirstByte(root);
        printed.push(t.url);
        firstBytes.push(t.firstByte);
      }
    } finally {
      await removeWorld(root);
    }
    figures.push({
      name: "web.first_byte",
      label: "spawn of sausage --headless --http to the page's first byte",
      unit: "ms",
      median: median(firstBytes),
      runs: firstBytes.length,
      warmup: 1,
      method: "the spawn, the URL on stderr, its GET (the 303 with the token's cookie), then " +
        "GET / with the cookie until its first body bytes",
      samples: firstBytes,
      extra: { urlPrintedMs: printed },
    });

    await using w = await benchWorld({ probe: "probe" });
    const view = new LocalHostView(w.host);
    const server = await startWebServer(view, { hostname: "127.0.0.1", port: 0 });
    try {
      // the delay from an entry to its event on a reader of /events
      const rounds = pick(ctx, 200, 50);
      const warmup = 10;
      ctx.progress(`web: ${rounds} journal entries through /events`);
      const stream = await fetch(`${server.origin}/events?token=${server.token}`);
      const reader = stream.body!.pipeThrough(new TextDecoderStream()).getReader();
      let rest = "";
      const next = async (marker: string) => {
        while (!rest.includes(marker)) {
          const { value, done } = await reader.read();
          if (done) throw new Error("the event stream ended");
          rest += value;
        }
        rest = rest.slice(rest.indexOf(marker) + marker.length);
      };
      const delays: number[] = [];
      for (let i = 0; i < warmup + rounds; i++) {
        const marker = `bench-web-${i}-`;
        // an entry on its own: past the server's window in which entries are sent together
        await new Promise((r) => setTimeout(r, 20));
        const t = performance.now();
        w.host.journal.event(null, null, marker);
        await next(marker);
        if (i >= warmup) delays.push(performance.now() - t);
      }
      await reader.cancel();
      figures.push({
        name: "web.journal_to_page",
        label: "a journal entry until its event is read from /events",
        unit: "ms",
        median: median(delays),
        p99: summarize(delays).p99,
        runs: delays.length,
        warmup,
        samples: delays,
      });

      // calls with and without 20 idle streams, in alternating blocks
      const blocks = pick(ctx, 4, 2);
      const perBlock = pick(ctx, 100, 40);
      ctx.progress(
        `web: ${blocks} blocks of ${perBlock} calls with and without ${IDLE_STREAMS} streams`,
      );
      const client = w.host.client("console");
      for (let i = 0; i < 20; i++) await timedCall(client, "probe.echo", {});
      const without: number[] = [];
      const withStreams: number[] = [];
      for (let b = 0; b < blocks; b++) {
        for (let i = 0; i < perBlock; i++) without.push(await timedCall(client, "probe.echo", {}));
        const readers = await idleReaders(
          `${server.origin}/events?token=${server.token}`,
          IDLE_STREAMS,
        );
        try {
          for (let i = 0; i < perBlock; i++) {
            withStreams.push(await timedCall(client, "probe.echo", {}));
          }
        } finally {
          await readers.close();
        }
      }
      figures.push(
        {
          name: "web.call_without_streams",
          label: "probe.echo, no event stream open",
          unit: "ms",
          median: median(without),
          p99: summarize(without).p99,
          runs: without.length,
          warmup: 20,
          samples: without,
        },
        {
          name: "web.call_with_streams",
          label: `probe.echo with ${IDLE_STREAMS} idle event streams open`,
          unit: "ms",
          median: median(withStreams),
          p99: summarize(withStreams).p99,
          runs: withStreams.length,
          warmup: 20,
          method: "each call's journal entries go to every stream; the readers are another process",
          samples: withStreams,
        },
        {
          name: "web.idle_streams_cost",
          label: `  added by ${IDLE_STREAMS} idle streams (difference of medians)`,
          unit: "ms",
          median: median(withStreams) - median(without),
          runs: withStreams.length,
          warmup: 20,
        },
      );
    } finally {
      await server.close();
      await view.close();
    }
    return figures;
  },
};
