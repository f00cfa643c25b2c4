/**
 * The host: runs one world. It checks and locks the world, opens the
 * journal, starts the plugin workers, routes calls, starts the services, and
 * shuts everything down in parallel.
 *
 * @module
 */
import { Client } from "./client.ts";
import { ComponentCache, type LoadedComponent } from "./components/cache.ts";
import { CoreApi } from "./core_api.ts";
import { CoreFiles } from "./core_files.ts";
import { Discovery } from "./discovery.ts";
import { DOCS_DIR, MAIN, PROTOCOL_MD } from "./embedded.ts";
import { PluginDocuments } from "./documents.ts";
import { Graph } from "./graph.ts";
import { Activation } from "./activation.ts";
import { FileSystemServer } from "../vfs/mod.ts";
import { Journal } from "./journal.ts";
import { LockTable } from "./locks.ts";
import { WorkerPool } from "./pool.ts";
import { ProcessManager } from "./process_table.ts";
import { processLimits, readLimits } from "./limits.ts";
import { Router } from "./router.ts";
import { readServices, Services } from "./services.ts";
import type { SupervisionOptions } from "./supervision.ts";
import { Upgrades } from "./upgrades.ts";
import { PluginWatcher } from "./watcher.ts";
import { cargoPlugin } from "./cargo/build.ts";
import { McpServers } from "./mcp_servers/plugin.ts";
import { installSdk } from "./cargo/sdk.ts";
import { ClientCode } from "./cargo/client_code.ts";
import { join } from "node:path";
import { PluginVersions } from "./versions.ts";
import { installAgent } from "./shipped_agent.ts";
import { HostLock, World } from "./world.ts";

/**
 * The command that runs this `sausage` with `args`: the executable itself
 * when compiled, `deno run` of main.ts with the host's flags otherwise.
 */
export function sausageCommand(args: string[]): string[] {
  const exe = Deno.execPath();
  if (!/^deno(\.exe)?$/.test(exe.split(/[\\/]/).pop() ?? "")) return [exe, ...args];
  return [exe, "run", ...SAUSAGE_FLAGS, MAIN, ...args];
}

/** The flags of `deno run` that the `sausage` executable is compiled with (deno.json's tasks). */
export const SAUSAGE_FLAGS: readonly string[] = [
  "--no-prompt",
  "--allow-read",
  "--allow-write",
  "--allow-net",
  "--allow-env",
  "--allow-run",
  "--allow-sys",
  "--allow-ffi",
  "--unstable-worker-options",
];

/** Exit code after `core.exit`. */
export const EXIT_CODE_CORE_EXIT = 75;

/**
 * How long `core.activate` waits for the new versions' `client.rs`: the
 * shipped generator makes one in milliseconds; an edited one is built first.
 */
const CLIENT_CODE_WAIT_MS = 10_000;

/** Options of a host. */
export interface HostOptions {
  /** The world folder. */
  world: string;
  /** The component cache folder. */
  cacheDir: string;
  /** Plugin workers (default: cores, at least 2). */
  workers?: number;
  /** The most plugin workers when all of them compute (default: 4 × `workers`). */
  maxWorkers?: number;
  /**
   * Link the next instance of a version ahead, on an idle worker (default
   * true; the benchmark turns it off to measure what it saves).
   */
  prepareAhead?: boolean;
  /**
   * Run a process on an instance an earlier process of its version left,
   * put back as linking left it (default true; the benchmark turns it off
   * to measure what it saves).
   */
  reuseInstances?: boolean;
  /**
   * Put a process called by another on its caller's worker, so that its
   * answer needs no hop through the host's thread (default true; the
   * benchmark turns it off to measure what it saves).
   */
  nearCaller?: boolean;
  /** Start the services of boot.yaml (default true). */
  services?: boolean;
  /**
   * Bring the agent the host ships to its version in a world that `sausage
   * init` gave it, unless the world's agent was changed (default true).
   */
  installAgent?: boolean;
  /** Messages for the person running the host (service failures, journal trouble). */
  onNote?: (text: string) => void;
  /** Backoffs of services and refusals after crashes of plugin workers (tests shorten them). */
  supervision?: Partial<SupervisionOptions>;
}

/** A running world. */
export class Host {
  readonly world: World;
  readonly journal: Journal;
  readonly cache: ComponentCache;
  readonly pool: WorkerPool;
  readonly locks = new LockTable();
  /** `/proc`, `/self` and `/run`. */
  readonly files: CoreFiles;
  readonly processes: ProcessManager;
  readonly versions: PluginVersions;
  readonly discovery: Discovery;
  readonly services: Services;
  readonly graph: Graph;
  /** The current document of each plugin. */
  readonly documents: PluginDocuments;
  readonly activation: Activation;
  readonly clientCode: ClientCode;
  readonly upgrades: Upgrades;
  /** The connections to the world's external MCP servers: the native plugin `mcp`. */
  readonly mcpServers: McpServers;
  readonly router: Router;
  readonly core: CoreApi;
  /** The client for calls the core itself makes (services): parent `core`. */
  readonly coreClient: Client;
  /** Settles once every plugin present at start was discovered (or failed). */
  discovered: Promise<void> = Promise.resolve();
  /** Settles once the services of boot.yaml were started (or failed). */
  readonly servicesStarted: Promise<void>;
  /** Resolves with an exit code when something asked the host to stop (`core.exit`). */
  readonly exitRequested: Promise<number>;
  /**
   * Where notes for the person running the host go (service failures,
   * journal trouble, first runs). The console replaces it while it runs.
   */
  onNote: (text: string) => void;
  /** Front ends on the control endpoint that get each note too. */
  readonly #noteWatchers = new Set<(text: string) => void>();
  #watcher: PluginWatcher | undefined;
  readonly #lock: HostLock;
  readonly #requestExit: (code: number) => void;
  #shutdown: Promise<void> | undefined;

  private constructor(
    world: World,
    lock: HostLock,
    options: HostOptions,
    protocol: string,
    docs: Record<string, string>,
  ) {
    this.world = world;
    this.#lock = lock;
    this.onNote = options.onNote ?? (() => {});
    const note = (text: string) => this.note(text);
    // the limits of PROTOCOL 3.10: compiled modules, workers, /self and /run and the table apply them
    const { limits, problems } = readLimits(world.limitsPath);
    this.journal = new Journal(world.journalPath, {
      onTrouble: note,
      retention: { mib: limits.journal_mib, days: limits.journal_days },
    });
    for (const p of problems) this.journal.event(null, null, `warning: ${p}`);
    this.cache = new ComponentCache(options.cacheDir, {
      limits: processLimits(limits),
      onWarning: (m) => {
        this.journal.event(null, null, `warning: ${m}`);
        note(m);
      },
      onTranspile: (name) => {
        this.journal.event(null, null, `preparing ${name} (the first run of this version)`);
        note(`preparing ${name} (the first run of this version takes a moment)…`);
      },
    });
    this.files = new CoreFiles({
      filesLimitMib: limits.files_mib,
      protocol,
      docs,
      processes: () => this.processes.list(),
      locks: this.locks,
      journal: this.journal,
      worldRoot: world.root,
      graph: () => this.graph.view,
      client: (plugin) => {
        const known = this.documents.known(plugin);
        if (!known || !("document" in known)) return undefined;
        return this.#clientCodeOf(plugin, known.version, known.document);
      },
      natives: () => this.processes.natives(),
      discover: (plugin) => {
        const known = this.documents.known(plugin);
        return known ? ("document" in known ? known.document : { error: known.unavailable }) : null;
      },
    });
    this.pool = new WorkerPool({
      size: options.workers,
      maxSize: options.maxWorkers,
      files: new FileSystemServer((name) => this.files.layer(name)),
      permissions: { read: [world.root, options.cacheDir], write: [world.root], net: true },
      onFault: (m) => this.journal.event(null, null, `plugin worker fault: ${m}`),
      onCrash: (crash) => this.processes.workerCrashed(crash),
      crashMarker: options.supervision?.crashMarker,
      prepareAhead: options.prepareAhead,
      nearCaller: options.nearCaller,
      reuseInstances: options.reuseInstances,
    });
    this.clientCode = new ClientCode({
      cacheDir: options.cacheDir,
      cache: this.cache,
      pool: this.pool,
      worldSdk: join(world.pluginDir("cargo"), "sdk"),
    });
    this.versions = new PluginVersions(world, this.cache, {
      onChange: (plugin, previous, next) => this.#versionChanged(plugin, previous, next),
    });
    this.mcpServers = new McpServers({
      configPath: world.agentConfigPath,
      log: (line) => this.journal.event(null, "mcp", line),
    });
    this.processes = new ProcessManager({
      world,
      versions: this.versions,
      pool: this.pool,
      journal: this.journal,
      locks: this.locks,
      files: this.files,
      supervision: options.supervision,
      limits,
      onMessages: (from, messages) => this.router.receiveAll(from, messages),
      natives: {
        cargo: cargoPlugin({
          world,
          cacheDir: options.cacheDir,
          cache: this.cache,
          discover: async (plugin, wasm) =>
            await this.discovery.discover(
              plugin,
              await this.versions.load(wasm, `the built ${plugin}`),
            ),
        }),
        mcp: this.mcpServers.plugin(),
      },
    });
    this.discovery = new Discovery({
      processes: this.processes,
      journal: this.journal,
      cacheDir: options.cacheDir,
    });
    this.services = new Services({
      processes: this.processes,
      journal: this.journal,
      onProgress: note,
    });
    this.upgrades = new Upgrades({
      processes: this.processes,
      discovery: this.discovery,
      services: this.services,
      journal: this.journal,
    });
    this.documents = new PluginDocuments({
      versions: this.versions,
      discovery: this.discovery,
      natives: this.processes,
    });
    this.graph = new Graph({
      world,
      versions: this.versions,
      documents: this.documents,
      journal: this.journal,
    });
    this.activation = new Activation({
      world,
      files: this.files,
      versions: this.versions,
      discovery: this.discovery,
      graph: this.graph,
      builtIn: (plugin) => this.processes.native(plugin) !== undefined,
      journal: this.journal,
      activated: (documents) => this.#makeClientCode(documents, CLIENT_CODE_WAIT_MS),
    });
    const exit = Promise.withResolvers<number>();
    this.exitRequested = exit.promise;
    this.#requestExit = exit.resolve;
    this.router = new Router({
      processes: this.processes,
      journal: this.journal,
      core: (router) =>
        new CoreApi({
          locks: this.locks,
          journal: this.journal,
          world: {
            processes: this.processes,
            router,
            activation: this.activation,
            requestExit: () => this.#requestExit(EXIT_CODE_CORE_EXIT),
          },
        }),
    });
    this.core = this.router.core;
    this.coreClient = new Client("core", this.router);
    this.servicesStarted = Promise.resolve();
  }

  /** Checks and locks the world, and starts everything. */
  static async start(options: HostOptions): Promise<Host> {
    const world = new World(options.world);
    await world.check();
    const protocol = await Deno.readTextFile(PROTOCOL_MD);
    const docs = await readDocs(DOCS_DIR);
    const lock = await HostLock.acquire(world);
    let host: Host;
    let sealed: string[];
    let workers: Promise<void>;
    try {
      sealed = world.sealLinks(); // with the lock held: no other host runs this world
      host = new Host(world, lock, options, protocol, docs);
      // the workers start (about 40 ms each, on their own threads) while the files below are done
      workers = host.pool.start();
      workers.catch(() => {}); // awaited below
    } catch (e) {
      lock.release();
      throw e;
    }
    host.journal.event(null, null, `host start: world ${world.root}, pid ${Deno.pid}`);
    if (lock.uncleanStop) {
      const { pid, started } = lock.uncleanStop;
      const text = `the previous run (pid ${pid}, started ${started}) did not stop cleanly: ` +
        "it was killed or crashed, so its last entries and open work may be missing";
      host.journal.event(null, null, text);
      host.note(text);
    }
    if (sealed.length > 0) {
      const shown = sealed.slice(0, 20).join(", ") + (sealed.length > 20 ? ", …" : "");
      host.journal.event(
        null,
        null,
        `rewrote ${sealed.length} symbolic links made on the host, so that the host cannot ` +
          `follow them out of the world (processes see the same targets): ${shown}`,
      );
    }
    for (const note of await host.activation.recover()) host.note(note);
    await Deno.mkdir(world.pluginsDir, { recursive: true });
    // a folder whose name is not a plugin name is never called: say so at start
    for (const warning of await host.versions.folderWarnings()) {
      host.journal.event(null, null, warning);
    }
    // /plugins/cargo/sdk/ is the SDK this host ships; cargo.build compiles against it. Both go
    // before the watcher and the discovery, which find the agent's version installed here; they
    // touch different folders, so they run together
    await Promise.all([
      installSdk(join(world.pluginDir("cargo"), "sdk")).catch((e) =>
        host.journal.event(null, null, `warning: cannot install the SDK in plugins/cargo/sdk: ${e}`)
      ),
      (options.installAgent ?? true)
        ? installAgent(world, { journal: host.journal }).catch((e) =>
          host.journal.event(
            null,
            "agent",
            `warning: cannot install the agent in plugins/agent: ${e}`,
          )
        )
        : undefined,
    ]);
    try {
      await workers;
    } catch (e) {
      lock.release();
      throw e;
    }
    // a new version updates the graph after its discovery; a removed or broken file at once
    host.#watcher = new PluginWatcher(world, host.versions, host.journal, () => {
      host.graph.update().catch(() => {});
    });
    host.discovered = host.#discoverAll();
    if (options.services ?? true) {
      (host as { servicesStarted: Promise<void> }).servicesStarted = host.#startServices(
        (text) => host.note(text),
      );
    }
    return host;
  }

  /** Tells the person a note: {@linkcode onNote}, and each front end that watches notes. */
  note(text: string): void {
    this.onNote(text);
    for (const watcher of this.#noteWatchers) watcher(text);
  }

  /** Gets each note from now on, until the returned function is called. */
  watchNotes(watcher: (text: string) => void): () => void {
    this.#noteWatchers.add(watcher);
    return () => this.#noteWatchers.delete(watcher);
  }

  /** A client for calls from outside, e.g. `console` (its name is the parent of what it calls). */
  client(name: string): Client {
    return new Client(name, this.router);
  }

  /**
   * Stops every process in parallel (killing those that take more than 5 s),
   * then the workers, the journal and the lock. Safe to call twice.
   */
  shutdown(): Promise<void> {
    this.#shutdown ??= this.#doShutdown();
    return this.#shutdown;
  }

  /** Kills every process now (a second interrupt during shutdown). */
  async killAll(): Promise<void> {
    await this.processes.killAll("the host was interrupted twice");
  }

  /**
   * Kills now the processes that `parent` (a client such as `console`)
   * called; the processes attached to them stop with them.
   */
  async killCallsOf(parent: string, why: string): Promise<void> {
    const calls = this.processes.list().filter((p) => p.parent?.name === parent);
    await Promise.all(calls.map((p) => this.processes.kill(p, why)));
  }

  async #doShutdown(): Promise<void> {
    this.journal.event(null, null, "host stop: stopping every process");
    this.upgrades.close();
    this.services.close();
    this.clientCode.close();
    await this.#watcher?.close();
    await this.processes.shutdown();
    await this.mcpServers.close();
    await this.discovered;
    this.pool.close();
    this.cache.close();
    this.journal.event(null, null, "host stopped");
    this.journal.close();
    this.#lock.release();
  }

  /** A plugin's current version is a new one: refusals end, old processes upgrade, the graph follows. */
  #versionChanged(plugin: string, previous: string | undefined, next: LoadedComponent): void {
    this.processes.newVersion(plugin);
    this.upgrades.upgraded(plugin, previous, next);
    if (previous !== undefined) {
      this.discovery.discover(plugin, next).then(() => this.graph.update()).catch(() => {});
    }
  }

  /** `client.rs` of a plugin version, or a note to read it again while it is generated. */
  #clientCodeOf(plugin: string, version: string, document: unknown): string {
    const text = this.clientCode.text(plugin, version);
    if (text !== undefined) return text;
    this.clientCode.generate(plugin, version, document);
    return `// The code of import!("${plugin}") is being generated: read this file again in a moment.\n`;
  }

  /** Gets the documents of all plugins in the background, one at a time. */
  async #discoverAll(): Promise<void> {
    for (const plugin of await this.world.plugins()) {
      if (!this.processes.accepting) return;
      try {
        await this.discovery.discover(plugin, await this.versions.current(plugin));
      } catch (e) {
        this.journal.event(null, plugin, `discovery of ${plugin} failed: ${(e as Error).message}`);
      }
    }
    if (this.processes.accepting) await this.graph.update();
    // each plugin's client.rs, ready before anyone reads it, and the generator for new ones
    this.clientCode.warm();
    const documents = [];
    for (const plugin of await this.world.plugins()) {
      const known = this.documents.known(plugin);
      if (known && "document" in known && known.version !== null) {
        documents.push({ plugin, version: known.version, document: known.document });
      }
    }
    await this.#makeClientCode(documents);
  }

  /**
   * Makes the `client.rs` of these versions; waits at most `waitMs` (an
   * edited generator may have to be built first: the file says so meanwhile).
   */
  async #makeClientCode(
    documents: { plugin: string; version: string; document: unknown }[],
    waitMs?: number,
  ): Promise<void> {
    const made = Promise.all(
      documents.map((d) => this.clientCode.generate(d.plugin, d.version, d.document)),
    );
    if (waitMs === undefined) return void await made;
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([made, new Promise((r) => timer = setTimeout(r, waitMs))]);
    clearTimeout(timer);
  }

  async #startServices(note: (text: string) => void): Promise<void> {
    try {
      await this.services.startAll(await readServices(this.world.bootPath));
    } catch (e) {
      const text = `services not started: ${(e as Error).message}`;
      this.journal.event(null, null, text);
      note(text);
    }
  }
}

/** The Markdown files of `dir` by name (the documents PROTOCOL.md links); none when it is missing. */
async function readDocs(dir: string): Promise<Record<string, string>> {
  const docs: Record<string, string> = {};
  try {
    for await (const entry of Deno.readDir(dir)) {
      if (entry.isFile && entry.name.endsWith(".md")) {
        docs[entry.name] = await Deno.readTextFile(`${dir}${entry.name}`);
      }
    }
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  return docs;
}
