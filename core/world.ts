/**
 * The world folder (PROTOCOL section 2): its layout, the checks before a
 * host runs it, `sausage init`, and the lock that keeps a second host out.
 *
 * @module
 */
import { join, resolve } from "node:path";
import { isPluginName } from "./names.ts";
import { MOUNT_POINTS } from "../runtime/messages.ts";
import { HostFileSystem } from "../vfs/host_fs.ts";
import { LIMITS_FILE } from "./limits.ts";

export { MOUNT_POINTS };

/** Where links in a world led before the VFS had its own default prefix. */
export const FORMER_LINK_PREFIXES: readonly string[] = ["/.sausage-link/"];

/** Raised when a world cannot be run; the message names the cause and the fix. */
export class WorldError extends Error {
  override name = "WorldError";
}

/** The paths of a world. */
export class World {
  /** Absolute path of the world folder. */
  readonly root: string;

  constructor(root: string) {
    this.root = resolve(root);
  }

  get pluginsDir(): string {
    return join(this.root, "plugins");
  }
  get stateDir(): string {
    return join(this.root, "state");
  }
  get configDir(): string {
    return join(this.root, "config");
  }
  get coreStateDir(): string {
    return join(this.root, "state", "core");
  }
  get journalPath(): string {
    return join(this.coreStateDir, "journal.sqlite");
  }
  get bootPath(): string {
    return join(this.configDir, "boot.yaml");
  }
  get agentConfigPath(): string {
    return join(this.configDir, "agent.yaml");
  }
  get limitsPath(): string {
    return join(this.root, LIMITS_FILE);
  }

  /** The folder of a plugin. */
  pluginDir(name: string): string {
    return join(this.pluginsDir, name);
  }

  /** The current version of a plugin. */
  pluginWasm(name: string): string {
    return join(this.pluginsDir, name, "plugin.wasm");
  }

  /** Whether `plugins/<name>/plugin.wasm` exists (and the name is valid). */
  async hasPlugin(name: string): Promise<boolean> {
    if (!isPluginName(name)) return false;
    try {
      return (await Deno.stat(this.pluginWasm(name))).isFile;
    } catch {
      return false;
    }
  }

  /** Plugins with a `plugin.wasm`, sorted. */
  async plugins(): Promise<string[]> {
    const names: string[] = [];
    try {
      for await (const e of Deno.readDir(this.pluginsDir)) {
        if (e.isDirectory && await this.hasPlugin(e.name)) names.push(e.name);
      }
    } catch (e) {
      if (!(e instanceof Deno.errors.NotFound)) throw e;
    }
    return names.sort();
  }

  /**
   * Checks that the folder can be run: it exists, and has none of the mount
   * point names at its top level. Then rewrites the symbolic links made on
   * the host so that the host cannot follow them (PROTOCOL section 4): a
   * process that renames one over a folder another process has just checked
   * must not lead that process out of the world.
   */
  async check(): Promise<void> {
    let info: Deno.FileInfo;
    try {
      info = await Deno.stat(this.root);
    } catch {
      throw new WorldError(
        `there is no world at ${this.root}: create one with \`sausage init ${this.root}\``,
      );
    }
    if (!info.isDirectory) throw new WorldError(`${this.root} is not a folder`);
    for (const name of MOUNT_POINTS) {
      try {
        await Deno.lstat(join(this.root, name));
      } catch {
        continue;
      }
      throw new WorldError(
        `the world ${this.root} contains "${name}", which is a mount point for every process ` +
          `(/proc, /run and /self). Rename or remove ${join(this.root, name)} and start again.`,
      );
    }
  }

  /**
   * Rewrites the links made on the host into the form the host cannot follow
   * (see `vfs/host_fs.ts`); returns their paths in the world. Call it with the
   * world's lock held, before any process runs.
   */
  sealLinks(): string[] {
    try {
      return new HostFileSystem(this.root, { reserved: MOUNT_POINTS })
        .sealLinks(FORMER_LINK_PREFIXES);
    } catch (e) {
      throw new WorldError(
        `the symbolic links of the world ${this.root} cannot be made safe ` +
          `(${e instanceof Error ? e.message : e}); fix the permissions and start again`,
      );
    }
  }
}

/** Who holds a world. */
export interface HostInfo {
  pid: number;
  hostname: string;
  started: string;
  command: string;
}

/**
 * An exclusive lock on a world (`state/core/host.lock`, an OS file lock that
 * dies with its process), so that two hosts never run one world.
 */
export class HostLock {
  readonly #file: Deno.FsFile;
  /**
   * The run before this one when it did not stop cleanly (killed or crashed):
   * its holder's info, which only a clean release clears; else `null`.
   */
  readonly uncleanStop: HostInfo | null;

  private constructor(file: Deno.FsFile, uncleanStop: HostInfo | null) {
    this.#file = file;
    this.uncleanStop = uncleanStop;
  }

  /** Takes the lock, or throws a {@linkcode WorldError} that names the holder. */
  static async acquire(world: World): Promise<HostLock> {
    await Deno.mkdir(world.coreStateDir, { recursive: true });
    const path = join(world.coreStateDir, "host.lock");
    const file = await Deno.open(path, { read: true, write: true, create: true });
    if (!(await file.tryLock(true))) {
      file.close();
      let holder = "another process";
      try {
        const info = JSON.parse(await Deno.readTextFile(path)) as HostInfo;
        holder =
          `process ${info.pid} on ${info.hostname} (started ${info.started}: ${info.command})`;
      } catch {
        // the holder is still writing its info
      }
      throw new WorldError(
        `the world ${world.root} is already run by ${holder}. ` +
          "Reach it with `sausage attach`, `call`, `ps` or `log` (through its control endpoint), " +
          "or stop it first.",
      );
    }
    // a clean release empties the file: what is left was written by a run that never released it
    let uncleanStop: HostInfo | null = null;
    const left = (await Deno.readTextFile(path)).trim();
    if (left !== "") {
      try {
        uncleanStop = JSON.parse(left) as HostInfo;
      } catch {
        uncleanStop = { pid: 0, hostname: "?", started: "?", command: "?" };
      }
    }
    const info: HostInfo = {
      pid: Deno.pid,
      hostname: Deno.hostname(),
      started: new Date().toISOString(),
      command: ["sausage", ...Deno.args].join(" "),
    };
    await file.truncate(0);
    await file.write(new TextEncoder().encode(JSON.stringify(info) + "\n"));
    return new HostLock(file, uncleanStop);
  }

  /** Releases the lock, and marks the run as stopped cleanly. */
  release(): void {
    try {
      try {
        this.#file.truncateSync(0);
      } catch {
        // the next start then says the stop was unclean, which errs on the safe side
      }
      this.#file.unlockSync();
    } finally {
      this.#file.close();
    }
  }
}
