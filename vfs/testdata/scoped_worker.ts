/// <reference no-default-lib="true" />
/// <reference lib="deno.worker" />
/**
 * Runs the host layer in a worker whose file permissions are scoped to one
 * folder, as plugin workers are; answers one message with the results.
 */
import { HostFileSystem } from "../host_fs.ts";
import { VfsError } from "../types.ts";

function outcome(f: () => unknown): string {
  try {
    const value = f();
    return `ok ${JSON.stringify(value ?? null)}`;
  } catch (e) {
    if (e instanceof VfsError) return e.code;
    return `thrown ${e instanceof Error ? `${e.name}: ${e.message}` : String(e)}`;
  }
}

self.onmessage = (e: MessageEvent<string>) => {
  const fs = new HostFileSystem(e.data);
  const results: Record<string, string> = {
    statOut: outcome(() => fs.stat("/out").kind),
    statOutDir: outcome(() => fs.stat("/outdir/passwd").kind),
    lstatOut: outcome(() => fs.lstat("/out").kind),
    openOut: outcome(() => fs.open("/out", { read: true }).kind),
    createThroughOut: outcome(() => fs.open("/out", { write: true, create: true }).close()),
    readDirOutDir: outcome(() => fs.readDir("/outdir").length),
    realpathOutDir: outcome(() => fs.realpath("/outdir")),
    readlinkOut: outcome(() => fs.readlink("/out")),
    symlink: outcome(() => fs.symlink("f", "/new-link")),
    statInside: outcome(() => fs.stat("/f").size),
  };
  self.postMessage(results);
};
