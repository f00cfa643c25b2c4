/**
 * A host in a process of its own, for the transpile memory figures
 * (`transpile_memory.ts`): starts a host on the world and cache given as
 * arguments, prints `discovered` when it has discovered the world's
 * plugins, and runs until it is killed.
 *
 *     deno run -A --unstable-worker-options bench/host/memory_host.ts WORLD CACHE
 *
 * @module
 */
import { Host } from "../../core/host.ts";

const [world, cacheDir] = Deno.args;
const host = await Host.start({ world, cacheDir, installAgent: false });
await host.discovered;
console.log("discovered");
await new Promise(() => {});
