/**
 * The files the core serves to processes (PROTOCOL section 4): `/proc`
 * (generated, read-only), `/self` (each process's own folder, in memory) and
 * `/run` (in memory, shared, empty at each start). They live on the host's
 * thread; plugin workers reach them over a synchronous channel
 * (`vfs/remote.ts`), while `/` (the world) is served in the worker itself.
 *
 * @module
 */
import { join } from "node:path";
import {
  type DirEntry,
  type FileHandle,
  type FileSystem,
  GeneratedFileSystem,
  type GeneratedNode,
  HostFileSystem,
  MemoryFileSystem,
  type OpenOptions,
  type Stat,
  type TimeSpec,
  VfsError,
} from "../vfs/mod.ts";
import { SharedBudget } from "../vfs/memory.ts";
import type { Journal } from "./journal.ts";
import { DEFAULT_LIMITS, resourceLimitText } from "./limits.ts";
import type { LockTable } from "./locks.ts";
import { isPluginName } from "./names.ts";
import type { Process } from "./process.ts";
import {
  LAYER_PROC,
  LAYER_RUN,
  LAYER_WORLD,
  MOUNT_POINTS,
  selfLayer,
} from "../runtime/messages.ts";
import { LOG_LINES, RUN_BYTES, SELF_BYTES } from "../protocol/limits.ts";
export { LOG_LINES, RUN_BYTES, SELF_BYTES };

/** Names in a process folder that belong to the core. */
export const RESERVED_NAMES: ReadonlySet<string> = new Set(["info.json", "log", "fs"]);

/** What `/proc` shows, provided by the host. */
export interface ProcSources {
  /** PROTOCOL.md. */
  protocol: string;
  /** The documents PROTOCOL.md links, by file name (`JOURNAL.md`); none: an empty folder. */
  docs?: Record<string, string>;
  /** Running processes. */
  processes(): Process[];
  locks: LockTable;
  journal: Journal;
  /** The world folder (plugins are listed from it). */
  worldRoot: string;
  /** The `rpc.discover` document of a plugin, when it is known. */
  discover?(plugin: string): unknown;
  /** The code `import!("<plugin>")` generates, when it is known. */
  client?(plugin: string): string | undefined;
  /** Plugins the host implements (listed without a plugin.wasm). */
  natives?(): string[];
  /** `graph.json`, when the graph is known. */
  graph?(): unknown;
  /** The limit `files_mib` (PROTOCOL 3.10) of `/self` and `/run` together, in MiB. */
  filesLimitMib?: number;
}

const json = (value: unknown) => JSON.stringify(value, null, 2) + "\n";

/** A note of the files limit is journaled at most this often. */
const FULL_NOTE_INTERVAL_MS = 1000;

/** The folder of one process: files it writes to `/self`, and the core's files. */
class ProcessFolder {
  readonly files: MemoryFileSystem;
  readonly process: Process;
  readonly #journal: Journal;

  constructor(process: Process, journal: Journal, shared: SharedBudget) {
    this.process = process;
    this.#journal = journal;
    this.files = new MemoryFileSystem({
      maxBytes: SELF_BYTES,
      reserved: [...RESERVED_NAMES],
      shared,
      name: selfLayer(process.pid),
    });
  }

  /** The core's files in the folder. */
  generated(): Record<string, GeneratedNode> {
    return {
      "info.json": { kind: "file", content: () => json(this.process.info()) },
      log: {
        kind: "file",
        content: () => {
          const pid = this.process.pid;
          const entries = this.#journal.query({ pid, limit: LOG_LINES });
          const first = entries[0]?.id;
          const earlier = first !== undefined && entries.length === LOG_LINES &&
              this.#journal.query({ pid, until: first, limit: 1 }).length > 0
            ? `(earlier lines: core.log {"pid": "${pid}", "until": "${first}"} returns them)\n`
            : "";
          return earlier + entries.map((e) => `${e.time} ${e.stream} ${e.line}\n`).join("");
        },
      },
    };
  }
}

/** The layers of `/proc`, `/run` and every `/self`. */
export class CoreFiles {
  /** The bytes of `/self` and `/run` together (the limit `files_mib`). */
  readonly budget = new SharedBudget(DEFAULT_LIMITS.files_mib * 2 ** 20);
  readonly run = new MemoryFileSystem({
    maxBytes: RUN_BYTES,
    shared: this.budget,
    name: LAYER_RUN,
  });
  readonly proc: GeneratedFileSystem;
  readonly world: HostFileSystem;
  readonly #sources: ProcSources;
  readonly #folders = new Map<string, ProcessFolder>();
  readonly #selfViews = new Map<string, SelfFileSystem>();
  /** When the files limit was last journaled, and refusals since. */
  #fullNote = { at: -Infinity, more: 0 };

  constructor(sources: ProcSources) {
    this.#sources = sources;
    if (sources.filesLimitMib !== undefined) this.filesLimitMib = sources.filesLimitMib;
    this.budget.onFull = (layer, syscall, path) => this.#full(layer, syscall, path);
    this.world = new HostFileSystem(sources.worldRoot, { reserved: MOUNT_POINTS });
    this.proc = new GeneratedFileSystem({ kind: "dir", entries: () => this.#procEntries() });
  }

  /** The limit `files_mib` (PROTOCOL 3.10): MiB of `/self` and `/run` together. */
  get filesLimitMib(): number {
    return this.budget.maxBytes / 2 ** 20;
  }
  set filesLimitMib(mib: number) {
    this.budget.maxBytes = mib * 2 ** 20;
  }

  /**
   * A write refused at `files_mib`: the detail of its `ENOSPC`, and a
   * journal line at most once a second (a full area is met by every write).
   */
  #full(layer: string, syscall: string, path: string): string {
    const text = resourceLimitText("files_mib", this.filesLimitMib);
    const now = performance.now();
    const note = this.#fullNote;
    if (now - note.at < FULL_NOTE_INTERVAL_MS) {
      note.more++;
      return text;
    }
    const more = note.more > 0 ? ` (${note.more} more refused since the last note)` : "";
    const process = layer.startsWith("self:") ? this.#folders.get(layer.slice(5))?.process : null;
    const where = `${process ? "/self" : "/run"}${path === "/" ? "" : path}`;
    this.#sources.journal.event(
      process?.pid ?? null,
      process?.plugin ?? null,
      `limit: ${syscall} of ${where} failed with insufficient-space: ${text}${more}`,
    );
    this.#fullNote = { at: now, more: 0 };
    return text;
  }

  /** Creates the folder of a process (at its start). */
  add(process: Process): void {
    const folder = new ProcessFolder(process, this.#sources.journal, this.budget);
    this.#folders.set(process.pid, folder);
    this.#selfViews.set(process.pid, new SelfFileSystem(folder));
  }

  /** Removes the folder of a process (at its end), with its files. */
  remove(pid: string): void {
    this.#folders.get(pid)?.files.detach();
    this.#folders.delete(pid);
    this.#selfViews.delete(pid);
  }

  /** The layer a worker asks for by name. */
  layer(name: string): FileSystem | undefined {
    if (name === LAYER_PROC) return this.proc;
    if (name === LAYER_RUN) return this.run;
    if (name === LAYER_WORLD) return this.world;
    if (name.startsWith("self:")) return this.#selfViews.get(name.slice(5));
    return undefined;
  }

  #procEntries(): Record<string, GeneratedNode> {
    const entries: Record<string, GeneratedNode> = { core: this.#coreDir() };
    for (const [pid, folder] of this.#folders) {
      entries[pid] = { kind: "dir", entries: () => folder.generated(), under: () => folder.files };
    }
    return entries;
  }

  #coreDir(): GeneratedNode {
    const s = this.#sources;
    return {
      kind: "dir",
      entries: () => ({
        "PROTOCOL.md": { kind: "file", content: () => s.protocol },
        // the documents PROTOCOL.md links as docs/<name>.md, beside it as in the repository
        docs: {
          kind: "dir",
          entries: () =>
            Object.fromEntries(
              Object.entries(s.docs ?? {}).map(([name, text]) => [
                name,
                { kind: "file", content: () => text } as GeneratedNode,
              ]),
            ),
        },
        "graph.json": { kind: "file", content: () => json(s.graph?.() ?? this.#plainGraph()) },
        "graph.dot": { kind: "file", content: () => graphDot(s.graph?.() ?? this.#plainGraph()) },
        "locks.json": { kind: "file", content: () => json({ locks: s.locks.snapshot() }) },
        plugins: {
          kind: "dir",
          entries: () =>
            Object.fromEntries(this.#plugins().map((name) => [name, this.#pluginDir(name)])),
        },
      }),
    };
  }

  #pluginDir(name: string): GeneratedNode {
    const s = this.#sources;
    return {
      kind: "dir",
      entries: () => ({
        "discover.json": { kind: "file", content: () => json(s.discover?.(name) ?? null) },
        "client.rs": {
          kind: "file",
          content: () =>
            s.client?.(name) ??
              `// The code of import!("${name}") is generated from the rpc.discover document of\n` +
                `// ${name}, which the core does not know yet.\n`,
        },
      }),
    };
  }

  /** Plugins with a plugin.wasm, read at each listing. */
  #plugins(): string[] {
    const names: string[] = [];
    try {
      for (const e of Deno.readDirSync(join(this.#sources.worldRoot, "plugins"))) {
        if (!e.isDirectory || !isPluginName(e.name)) continue;
        try {
          if (
            Deno.statSync(join(this.#sources.worldRoot, "plugins", e.name, "plugin.wasm")).isFile
          ) {
            names.push(e.name);
          }
        } catch {
          // a folder without plugin.wasm is not a plugin
        }
      }
    } catch {
      // no plugins folder
    }
    for (const name of this.#sources.natives?.() ?? []) if (!names.includes(name)) names.push(name);
    return names.sort();
  }

  #plainGraph() {
    return {
      plugins: Object.fromEntries(this.#plugins().map((name) => [name, { imports: {} }])),
    };
  }
}

function graphDot(graph: unknown): string {
  const plugins =
    (graph as { plugins?: Record<string, { imports?: Record<string, { status?: string }> }> })
      .plugins ?? {};
  const lines = ["digraph world {"];
  for (const [name, info] of Object.entries(plugins)) {
    lines.push(`  "${name}";`);
    for (const [provider, imp] of Object.entries(info.imports ?? {})) {
      const style = imp.status && imp.status !== "ok" ? ` [color=red, label="${imp.status}"]` : "";
      lines.push(`  "${name}" -> "${provider}"${style};`);
    }
  }
  lines.push("}");
  return lines.join("\n") + "\n";
}

/**
 * `/self` of one process: its folder, writable, with the core's files
 * (`info.json`, `log`) read-only and the reserved names refused.
 */
class SelfFileSystem implements FileSystem {
  readonly readOnly = false;
  readonly #folder: ProcessFolder;
  readonly #core: GeneratedFileSystem;

  constructor(folder: ProcessFolder) {
    this.#folder = folder;
    this.#core = new GeneratedFileSystem({ kind: "dir", entries: () => folder.generated() });
  }

  /** The reserved name at the top of `path`, if any. */
  #reserved(path: string): string | undefined {
    const first = path.split("/").find((p) => p !== "");
    return first !== undefined && RESERVED_NAMES.has(first) ? first : undefined;
  }

  #isCoreFile(path: string): boolean {
    const parts = path.split("/").filter((p) => p !== "");
    return parts.length === 1 && (parts[0] === "info.json" || parts[0] === "log");
  }

  #refuse(path: string, syscall: string): void {
    if (this.#reserved(path)) {
      throw new VfsError("EACCES", syscall, path, "the name belongs to the core");
    }
  }

  get #files(): FileSystem {
    return this.#folder.files;
  }

  stat(path: string): Stat {
    return this.#isCoreFile(path) ? this.#core.stat(path) : this.#files.stat(path);
  }
  lstat(path: string): Stat {
    return this.#isCoreFile(path) ? this.#core.lstat(path) : this.#files.lstat(path);
  }
  realpath(path: string): string {
    return this.#isCoreFile(path) ? this.#core.realpath(path) : this.#files.realpath(path);
  }
  readDir(path: string): DirEntry[] {
    const entries = this.#files.readDir(path);
    if (path.split("/").some((p) => p !== "")) return entries;
    return [...entries, { name: "info.json", kind: "file" }, { name: "log", kind: "file" }];
  }
  open(path: string, options: OpenOptions): FileHandle {
    if (this.#isCoreFile(path)) {
      if (options.write || options.create || options.truncate) {
        throw new VfsError("EACCES", "open", path, "the core writes this file");
      }
      return this.#core.open(path, options);
    }
    if (options.write || options.create || options.truncate) this.#refuse(path, "open");
    return this.#files.open(path, options);
  }
  mkdir(path: string): void {
    this.#refuse(path, "mkdir");
    this.#files.mkdir(path);
  }
  unlink(path: string): void {
    this.#refuse(path, "unlink");
    this.#files.unlink(path);
  }
  rmdir(path: string): void {
    this.#refuse(path, "rmdir");
    this.#files.rmdir(path);
  }
  rename(from: string, to: string): void {
    this.#refuse(from, "rename");
    this.#refuse(to, "rename");
    this.#files.rename(from, to);
  }
  symlink(target: string, path: string): void {
    this.#refuse(path, "symlink");
    this.#files.symlink(target, path);
  }
  readlink(path: string): string {
    return this.#files.readlink(path);
  }
  link(existing: string, newPath: string): void {
    this.#refuse(newPath, "link");
    this.#files.link(existing, newPath);
  }
  setTimes(path: string, atime: TimeSpec, mtime: TimeSpec, follow: boolean): void {
    this.#refuse(path, "utimes");
    this.#files.setTimes(path, atime, mtime, follow);
  }
}
