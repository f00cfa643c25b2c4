/**
 * Activation (PROTOCOL section 10.3): a new plugin version becomes current
 * only if every import still fits.
 *
 * 1. The file is read once; every later step uses these bytes.
 * 2. The new version is discovered in a process of its own.
 * 3. The current documents of all plugins are gathered.
 * 4. The imports of the new version are checked against the providers, and
 *    5. every consumer against the new version; a version that looks like
 *    another plugin (its title, or none of the current methods) is refused
 *    too (`force` skips all three, and the answer warns).
 * 6. The copy becomes `plugin.wasm`, the old version `plugin.prev.wasm`, and
 *    the upgrade starts (3.7).
 *
 * Files change by renames only, so `plugin.wasm` is always a whole file, old
 * or new, even if the host dies in the middle; a record in
 * `state/core/activation.json` lets the next start say what it found.
 *
 * @module
 */
import { join } from "node:path";
import type { LoadedComponent } from "./components/cache.ts";
import { sha256Hex } from "./components/cache.ts";
import type { Discovery } from "./discovery.ts";
import type { CoreFiles } from "./core_files.ts";
import type { Graph } from "./graph.ts";
import {
  checkWorld,
  compareVersions,
  type IdentityProblem,
  type OpenRpcDocument,
  renderRejection,
} from "./interfaces/mod.ts";
import type { Journal } from "./journal.ts";
import { syncFolder, writeSynced } from "./durable.ts";
import { ErrorCode, RpcError } from "./jsonrpc.ts";
import { pluginNameProblem } from "./names.ts";
import type { PluginVersions } from "./versions.ts";
import type { World } from "./world.ts";

/** One plugin to activate. */
export interface ActivationItem {
  plugin: string;
  /** The new file, as a process sees it (`/state/cargo/builds/7/notes.wasm`). */
  wasm: string;
}

interface Prepared {
  plugin: string;
  bytes: Uint8Array;
  component: LoadedComponent;
  document: Record<string, unknown>;
  current: string | undefined;
  /** The document of the current version, when it has one that was discovered. */
  currentDocument: Record<string, unknown> | undefined;
}

/**
 * The key of `core.activate`'s answer, beside the documents by plugin, that
 * says what a person should know (no plugin name has a `$`). Only there
 * when it has something to say.
 */
export const ACTIVATION_REPORT = "$report";

/** A version that an activation made current, with its document. */
export interface ActivatedDocument {
  plugin: string;
  /** The sha256 of its component. */
  version: string;
  document: unknown;
}

/** What the answer's {@linkcode ACTIVATION_REPORT} holds. */
export interface ActivationReport {
  /** By plugin: the methods its current version had that the new one has not. */
  removed?: Record<string, string[]>;
  /** Checks that `force` skipped and that would have refused the activation. */
  warnings?: string[];
}

interface Record_ {
  started: string;
  plugins: { plugin: string; from: string | null; to: string }[];
}

async function* readDirOrNothing(path: string): AsyncIterable<Deno.DirEntry> {
  try {
    yield* Deno.readDir(path);
  } catch {
    // no folder: nothing was left there
  }
}

const short = (hash: string | null | undefined) => (hash ? hash.slice(0, 12) : "none");

function rejected(message: string, data: Record<string, unknown>): RpcError {
  return new RpcError(ErrorCode.ActivationRejected, message, data);
}

/** Runs activations, one at a time. */
export class Activation {
  readonly #world: World;
  readonly #activated?: (documents: ActivatedDocument[]) => Promise<void>;
  readonly #files: CoreFiles;
  readonly #versions: PluginVersions;
  readonly #discovery: Discovery;
  readonly #graph: Graph;
  readonly #builtIn: (plugin: string) => boolean;
  readonly #journal: Journal;
  #queue: Promise<unknown> = Promise.resolve();

  /**
   * Whether an activation syncs what it writes (the new file, then its
   * folder) before it answers, so that it survives a power cut. False only
   * for the benchmark's baseline.
   */
  durable = true;

  constructor(deps: {
    world: World;
    files: CoreFiles;
    versions: PluginVersions;
    discovery: Discovery;
    graph: Graph;
    journal: Journal;
    /** Whether a name is a plugin built into the host (`cargo`): no file can replace it. */
    builtIn?: (plugin: string) => boolean;
    /**
     * Told the new versions' documents before the answer, which waits for it:
     * the host makes their `client.rs` then.
     */
    activated?: (documents: ActivatedDocument[]) => Promise<void>;
  }) {
    this.#world = deps.world;
    this.#activated = deps.activated;
    this.#files = deps.files;
    this.#versions = deps.versions;
    this.#discovery = deps.discovery;
    this.#graph = deps.graph;
    this.#builtIn = deps.builtIn ?? (() => false);
    this.#journal = deps.journal;
  }

  get #recordPath(): string {
    return join(this.#world.coreStateDir, "activation.json");
  }

  /**
   * `core.activate`: the new documents by plugin, and
   * {@linkcode ACTIVATION_REPORT} when methods go or `force` skipped a check
   * that would have refused.
   */
  activate(items: ActivationItem[], force: boolean): Promise<Record<string, unknown>> {
    return this.#serial(() =>
      this.#activate(
        items.map((i) => ({ ...i, read: () => Promise.resolve().then(() => this.#read(i.wasm)) })),
        force,
      )
    );
  }

  /** `core.revert`: activates `plugin.prev.wasm`; the current version becomes the previous. */
  revert(plugin: string, force: boolean): Promise<Record<string, unknown>> {
    const problem = pluginNameProblem(plugin);
    if (problem) throw new RpcError(ErrorCode.InvalidParams, `core.revert: ${problem}`);
    const prev = join(this.#world.pluginDir(plugin), "plugin.prev.wasm");
    return this.#serial(() =>
      this.#activate(
        [{
          plugin,
          wasm: `/plugins/${plugin}/plugin.prev.wasm`,
          read: async () => {
            try {
              return await Deno.readFile(prev);
            } catch {
              throw new RpcError(
                ErrorCode.InvalidParams,
                `core.revert: ${plugin} has no previous version (no plugins/${plugin}/plugin.prev.wasm)`,
              );
            }
          },
        }],
        force,
        true,
      )
    );
  }

  /**
   * At start: if a host died during an activation, says what each plugin is
   * on now, and removes what was left half-done.
   */
  async recover(): Promise<string[]> {
    let record: Record_;
    try {
      record = JSON.parse(await Deno.readTextFile(this.#recordPath));
    } catch {
      return [];
    }
    const notes: string[] = [];
    for (const p of record.plugins) {
      let now: string | null = null;
      try {
        now = await sha256Hex(await Deno.readFile(this.#world.pluginWasm(p.plugin)));
      } catch {
        // no plugin.wasm: the plugin was new and its activation never finished
      }
      const which = now === p.to
        ? "its new version"
        : now === p.from
        ? "its old version"
        : now === null
        ? "no version"
        : "another version";
      notes.push(
        `an activation started at ${record.started} was interrupted: ${p.plugin} is on ${which} (${
          short(now)
        })`,
      );
      for await (const e of readDirOrNothing(this.#world.pluginDir(p.plugin))) {
        if (e.name.startsWith(".activating-")) {
          await Deno.remove(join(this.#world.pluginDir(p.plugin), e.name)).catch(() => {});
        }
      }
    }
    await Deno.remove(this.#recordPath).catch(() => {});
    for (const n of notes) this.#journal.event(null, null, n);
    return notes;
  }

  #serial<T>(job: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(job, job);
    this.#queue = run.catch(() => {});
    return run;
  }

  /** Reads a file as the caller sees it: in the world, or in `/run`. */
  #read(path: string): Uint8Array {
    if (typeof path !== "string" || !path.startsWith("/")) {
      throw new RpcError(
        ErrorCode.InvalidParams,
        `"wasm" must be an absolute path in the world, such as /state/cargo/builds/7/notes.wasm`,
      );
    }
    const inRun = path === "/run" || path.startsWith("/run/");
    if (path.startsWith("/proc/") || path.startsWith("/self/")) {
      throw new RpcError(
        ErrorCode.InvalidParams,
        `"wasm" cannot be in /proc or /self (${path}): copy it to /state first`,
      );
    }
    const layer = inRun ? this.#files.run : this.#files.world;
    const inner = inRun ? path.slice(4) || "/" : path;
    try {
      const handle = layer.open(inner, { read: true });
      try {
        const size = handle.stat().size;
        const bytes = new Uint8Array(size);
        let at = 0;
        while (at < size) {
          const n = handle.read(bytes.subarray(at), at);
          if (n === 0) break;
          at += n;
        }
        return bytes.subarray(0, at);
      } finally {
        handle.close();
      }
    } catch (e) {
      throw new RpcError(ErrorCode.InvalidParams, `cannot read ${path}: ${(e as Error).message}`);
    }
  }

  async #activate(
    items: (ActivationItem & { read: () => Promise<Uint8Array> })[],
    force: boolean,
    revert = false,
  ): Promise<Record<string, unknown>> {
    const names = items.map((i) => i.plugin);
    if (new Set(names).size !== names.length) {
      throw new RpcError(ErrorCode.InvalidParams, `a plugin appears twice: ${names.join(", ")}`);
    }
    for (const name of names) {
      const problem = pluginNameProblem(name);
      if (problem) throw new RpcError(ErrorCode.InvalidParams, `core.activate: ${problem}`);
      if (this.#builtIn(name)) {
        throw new RpcError(
          ErrorCode.InvalidParams,
          `core.activate: ${name} is built into the host and cannot be replaced: give the plugin another name`,
        );
      }
    }
    const prepared: Prepared[] = [];
    for (const item of items) prepared.push(await this.#prepare(item.plugin, await item.read()));
    const changing = prepared.filter((p) => p.component.hash !== p.current);
    const documents: Record<string, unknown> = Object.fromEntries(
      prepared.map((p) => [p.plugin, p.document]),
    );
    if (changing.length === 0) return documents; // the same versions: nothing changes

    // what goes, and whether a file is another plugin's: the checks of consumers cannot see it
    const plugins = new Set(await this.#world.plugins());
    const removed: Record<string, string[]> = {};
    const identity: IdentityProblem[] = [];
    for (const p of changing) {
      const others = new Set([...plugins].filter((name) => name !== p.plugin));
      const change = compareVersions(
        p.plugin,
        p.document as OpenRpcDocument,
        p.currentDocument as OpenRpcDocument | undefined,
        others,
      );
      if (change.removed.length > 0) removed[p.plugin] = change.removed;
      // a revert goes back to a version this plugin had: it is its own
      if (!revert) identity.push(...change.problems);
    }

    if (!force) {
      const world = await this.#graph.documents();
      for (const p of changing) world.set(p.plugin, p.document as never);
      const check = checkWorld(world, { only: changing.map((p) => p.plugin) });
      // an unavailable provider cannot be checked and does not block (10.3, step 3)
      const failing = check.imports.filter((i) => i.status === "broken" || i.status === "missing");
      if (failing.length > 0 || identity.length > 0) {
        const names = changing.map((p) => p.plugin);
        const message = [
          failing.length > 0
            ? renderRejection(names, failing)
            : `${names.join(", ")} ${names.length === 1 ? "was" : "were"} not activated.`,
          ...identity.map((i) => `  ${i.text}.`),
        ].join("\n");
        this.#journal.event(null, null, `activation rejected: ${message.replaceAll("\n", " ")}`);
        throw rejected(message, {
          problems: [
            ...identity,
            ...failing.flatMap((i) =>
              i.status === "missing"
                ? [{
                  kind: "missing-provider",
                  consumer: i.consumer,
                  provider: i.provider,
                  text: `${i.provider} does not exist`,
                }]
                : i.problems
            ),
          ],
        });
      }
    }
    await this.#install(changing);
    for (const p of changing) {
      const gone = removed[p.plugin] ? `; it removes ${removed[p.plugin].join(", ")}` : "";
      this.#journal.event(
        null,
        p.plugin,
        `activated ${p.plugin}: ${short(p.current)} → ${short(p.component.hash)}${
          force ? " (forced)" : ""
        }${gone}`,
      );
      await this.#versions.current(p.plugin); // the new version is current: the upgrade starts
    }
    for (const i of identity) this.#journal.event(null, i.plugin, `warning: forced: ${i.text}`);
    // the answer comes when /proc/core/graph.json shows the new versions, and their client.rs
    await this.#graph.update().catch(() => {});
    await this.#activated?.(
      changing.map((p) => ({ plugin: p.plugin, version: p.component.hash, document: p.document })),
    ).catch(() => {});
    const report: ActivationReport = {};
    if (Object.keys(removed).length > 0) report.removed = removed;
    if (identity.length > 0) report.warnings = identity.map((i) => i.text);
    if (report.removed || report.warnings) documents[ACTIVATION_REPORT] = report;
    return documents;
  }

  async #prepare(plugin: string, bytes: Uint8Array): Promise<Prepared> {
    let component: LoadedComponent;
    try {
      component = await this.#versions.load(bytes, `the new ${plugin}`);
    } catch (e) {
      throw rejected(`${plugin} was not activated: ${(e as Error).message}`, { problems: [] });
    }
    const found = await this.#discovery.discover(plugin, component);
    if (!found.ok) {
      throw rejected(
        `${plugin} was not activated: the discovery of the new version failed: ${found.reason}`,
        { problems: [] },
      );
    }
    let current: string | undefined;
    let currentDocument: Record<string, unknown> | undefined;
    if (await this.#world.hasPlugin(plugin)) {
      try {
        const version = await this.#versions.current(plugin);
        current = version.hash;
        // cached by hash: known unless the current version was never discovered
        const before = await this.#discovery.discover(plugin, version);
        if (before.ok) currentDocument = before.document;
      } catch {
        // the current file cannot run: any new version is better
      }
    }
    return { plugin, bytes, component, document: found.document, current, currentDocument };
  }

  /**
   * Writes the new files by renames and hard links only, with a record for a
   * host that dies meanwhile. When a step fails, the plugins already switched
   * go back to their old files by renames and links too, which need no free
   * space, so a set changes as a whole or not at all.
   */
  async #install(changing: Prepared[]): Promise<void> {
    const record: Record_ = {
      started: new Date().toISOString(),
      plugins: changing.map((p) => ({
        plugin: p.plugin,
        from: p.current ?? null,
        to: p.component.hash,
      })),
    };
    await Deno.writeTextFile(this.#recordPath, JSON.stringify(record, null, 2));
    const staged: { p: Prepared; dir: string; tmp: string }[] = [];
    const switches: Switch[] = [];
    let keepRecord = false;
    try {
      for (const p of changing) {
        const dir = this.#world.pluginDir(p.plugin);
        await Deno.mkdir(dir, { recursive: true });
        const tmp = temporary(dir, "wasm");
        staged.push({ p, dir, tmp });
        // its bytes on the disk before its name is plugin.wasm
        if (this.durable) await writeSynced(tmp, p.bytes);
        else await Deno.writeFile(tmp, p.bytes);
      }
      for (const { p, dir, tmp } of staged) {
        const sw: Switch = { p, dir, oldPrev: null, prevSet: false, currentSet: false };
        switches.push(sw);
        const current = join(dir, "plugin.wasm");
        const prev = join(dir, "plugin.prev.wasm");
        if (p.current !== undefined) {
          if (await exists(prev)) {
            sw.oldPrev = temporary(dir, "oldprev");
            await Deno.rename(prev, sw.oldPrev);
          }
          await linkOrCopy(current, prev); // plugin.prev.wasm: the old file, as it is
          sw.prevSet = true;
        }
        await Deno.rename(tmp, current); // atomic: plugin.wasm is the old or the new file
        sw.currentSet = true;
      }
      // the renames survive a power cut once each folder is synced: then the activation answers
      if (this.durable) { for (const { dir } of switches) await syncFolder(dir); }
      for (const { oldPrev } of switches) if (oldPrev) await Deno.remove(oldPrev).catch(() => {});
    } catch (e) {
      const notes = await this.#rollBack(switches);
      for (const { tmp } of staged) await Deno.remove(tmp).catch(() => {});
      // the next start reports what could not be put back, and removes what is left
      keepRecord = notes.some((n) => n.failed);
      throw new RpcError(
        ErrorCode.ServerError,
        `the activation could not write the plugin files: ${(e as Error).message}${
          notes.length ? `; ${notes.map((n) => n.text).join("; ")}` : ""
        }`,
      );
    } finally {
      if (!keepRecord) await Deno.remove(this.#recordPath).catch(() => {});
    }
  }

  /** Undoes each switch, the last first; says what became of each plugin. */
  async #rollBack(switches: Switch[]): Promise<{ text: string; failed: boolean }[]> {
    const notes: { text: string; failed: boolean }[] = [];
    for (const { p, dir, oldPrev, prevSet, currentSet } of [...switches].reverse()) {
      const current = join(dir, "plugin.wasm");
      const prev = join(dir, "plugin.prev.wasm");
      try {
        if (currentSet && p.current === undefined) {
          await Deno.remove(current);
        } else if (currentSet) {
          // plugin.prev.wasm is the old file: link it back into place
          const back = temporary(dir, "back");
          await linkOrCopy(prev, back);
          await Deno.rename(back, current);
        }
        if (prevSet) await Deno.remove(prev);
        if (oldPrev) await Deno.rename(oldPrev, prev);
        notes.push({ text: `${p.plugin} stays on its old version`, failed: false });
      } catch (e) {
        notes.push({
          text: `${p.plugin} could not be put back (${(e as Error).message}): ` +
            "the next start says which version it is on",
          failed: true,
        });
      }
    }
    return notes;
  }
}

/** One plugin's switch in an activation, step by step (for the way back). */
interface Switch {
  p: Prepared;
  dir: string;
  /** Where the old `plugin.prev.wasm` waits, while it does. */
  oldPrev: string | null;
  /** `plugin.prev.wasm` is the old `plugin.wasm`. */
  prevSet: boolean;
  /** `plugin.wasm` is the new file. */
  currentSet: boolean;
}

/** A temporary name in a plugin's folder; the next start removes any that is left. */
function temporary(dir: string, what: string): string {
  return join(dir, `.activating-${crypto.randomUUID()}.${what}`);
}

/** A second name for a file (no space needed), or a copy where the host has no hard links. */
export async function linkOrCopy(from: string, to: string): Promise<void> {
  try {
    await Deno.link(from, to);
  } catch (e) {
    if (e instanceof Deno.errors.AlreadyExists || e instanceof Deno.errors.NotFound) throw e;
    await Deno.copyFile(from, to);
  }
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}
