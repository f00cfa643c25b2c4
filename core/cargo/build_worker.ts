/**
 * The build worker: runs one `cargo.build` job with the narrow Deno
 * permissions `cargo/build.ts` gives it, and reports logs, progress and the
 * result to the host.
 *
 * @module
 */
/// <reference lib="deno.worker" />
import { type BuildJob, type FromBuilder, runBuild } from "./compile.ts";
import { RpcError } from "../jsonrpc.ts";

const abort = new AbortController();
const post = (m: FromBuilder) => self.postMessage(m);

self.onmessage = async (
  e: MessageEvent<{ t: "job"; job: BuildJob } | { t: "abort"; reason: string }>,
) => {
  const m = e.data;
  if (m.t === "abort") {
    abort.abort(m.reason);
    return;
  }
  try {
    const result = await runBuild(m.job, {
      pid: m.job.plugin,
      signal: abort.signal,
      log: (line) => post({ t: "log", line }),
      notify: (name, params) => post({ t: "notify", name, params }),
      group: (pgid, running) => post({ t: "group", pgid, running }),
      tests: (targets, env) => post({ t: "tests", targets, env }),
    });
    post({ t: "done", result });
  } catch (e) {
    const error = e instanceof RpcError
      ? e.toObject()
      : { code: -32603, message: `the build failed: ${(e as Error).message}` };
    post({ t: "failed", error });
  }
};

self.postMessage({ t: "ready" });
