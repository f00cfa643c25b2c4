/**
 * The commands for running Sausage where its users run it: `--version`,
 * `help [COMMAND]`, `--log-format`, `doctor`, `cache`, `cache gc` and
 * `health`, added to the `sausage` program by {@linkcode registerOpsCommands}.
 *
 * @module
 */
import { type Command, CommanderError, Option } from "commander";
import pc from "picocolors";
import { resolveCacheDir } from "../core/components/cache.ts";
import { LOG_FORMATS, type LogFormat, logFormat, setLogFormat } from "./log_format.ts";

/** Colours on stdout: a terminal, and no `NO_COLOR`. */
function colorsOn(): boolean {
  return pc.isColorSupported && Deno.stdout.isTerminal() && logFormat() === "text";
}

/** A message on stderr, then the exit code: for what the commands refuse. */
function refuse(message: string, code: number): never {
  console.error(`${pc.red("sausage:")} ${message}`);
  throw new CommanderError(code, "sausage.refused", message);
}

/** `--cache-dir` of a command or of its parents. */
function cacheDirOf(command: Command): string | undefined {
  for (let c: Command | null = command; c; c = c.parent) {
    const dir = c.opts().cacheDir as string | undefined;
    if (dir) return dir;
  }
  return undefined;
}

function cacheOption(): Option {
  return new Option(
    "--cache-dir <dir>",
    "component cache (default: $XDG_CACHE_HOME/sausage or ~/.cache/sausage)",
  );
}

/**
 * Adds the commands to `program`; `done` receives each one's exit code.
 * Call it once the program's own commands are there.
 */
export function registerOpsCommands(program: Command, done: (code: number) => void): void {
  program
    .option("-V, --version", "print the versions of Sausage, Deno, jco and the SDK")
    .addOption(
      new Option(
        "--log-format <format>",
        "the host's own lines on stderr: text, or json (one " +
          "object a line: time, level, event, message, fields)",
      )
        .choices([...LOG_FORMATS]).default("text"),
    )
    .helpCommand("help [command]", "show the help of a command")
    .hook("preAction", async (self) => {
      setLogFormat(self.opts().logFormat as LogFormat);
      if (self.opts().version) {
        const { formatVersions, versions } = await import("./version.ts");
        console.log(formatVersions(await versions()));
        throw new CommanderError(0, "commander.version", "");
      }
    });

  program.command("doctor")
    .description(
      "check the machine (Rust with wasm32-wasip2, a WASI clang, the cache) and WORLD " +
        "(permissions, journal, lock, plugins' discovery, broken imports)",
    )
    .argument("[world]", "the world to check (none: only the machine)")
    .option("--json", "print the findings as a JSON array")
    .option("--no-discover", "do not start a host to discover the plugins when none runs WORLD")
    .addOption(cacheOption())
    .addHelpText(
      "after",
      `
Each line is ok, warning or error, with the fix under it. When no host runs
WORLD, doctor starts one without services to discover its plugins.
Exit codes: 0 all ok; 4 warnings, no error; 1 an error; 2 bad arguments.`,
    )
    .action(
      async (world: string | undefined, opts: { json?: boolean; discover: boolean }, command) => {
        const { doctor, exitCodeOf, formatFindings } = await import("./doctor.ts");
        const findings = await doctor({
          world,
          cacheDir: resolveCacheDir(cacheDirOf(command)),
          discover: opts.discover,
        });
        console.log(
          opts.json ? JSON.stringify(findings, null, 2) : formatFindings(findings, colorsOn()),
        );
        done(exitCodeOf(findings));
      },
    );

  const cache = program.command("cache")
    .description("what the component cache holds, by kind, and its size limit")
    .option("--json", "print it as JSON")
    .addOption(cacheOption())
    .addHelpText(
      "after",
      `
The cache is shared by all worlds. Its limit (default 10 GiB) is
SAUSAGE_CACHE_LIMIT (500MiB, 20GiB, 0 for none), applied after each
cargo.build: the least recently used entries go first, never one the host
uses or one used in the last day.`,
    )
    .action(async (opts: { json?: boolean }, command: Command) => {
      const { showCache } = await import("./cache_command.ts");
      done(
        await runCacheCommand(() =>
          showCache(resolveCacheDir(cacheDirOf(command)), { json: opts.json, color: colorsOn() })
        ),
      );
    });
  cache.command("gc")
    .description(
      "remove what no world has used for 30 days, then the least recently used entries " +
        "down to the limit",
    )
    .option("--days <n>", "remove what was not used for this many days", "30")
    .option("--max-size <size>", "the limit to apply (default: SAUSAGE_CACHE_LIMIT, else 10GiB)")
    .option("--json", "print what was removed as JSON")
    .addOption(cacheOption())
    .action(
      async (opts: { days: string; maxSize?: string; json?: boolean }, command: Command) => {
        const { collectCache } = await import("./cache_command.ts");
        done(
          await runCacheCommand(() =>
            collectCache(resolveCacheDir(cacheDirOf(command)), {
              days: opts.days,
              maxSize: opts.maxSize,
              json: opts.json,
              color: colorsOn(),
            })
          ),
        );
      },
    );

  program.command("health")
    .description(
      "exit 0 when the host that runs WORLD answers and every service of boot.yaml runs " +
        "(a container's health check), else 1",
    )
    .argument("<world>", "the world folder")
    .option("--timeout <seconds>", "give up after this many seconds", "5")
    .option("--json", "print the findings as JSON")
    .action(async (world: string, opts: { timeout: string; json?: boolean }) => {
      const seconds = Number(opts.timeout);
      if (!Number.isFinite(seconds) || seconds <= 0) {
        refuse("--timeout takes a positive number of seconds", 2);
      }
      const { checkHealth, formatHealth, HealthExit } = await import("./health.ts");
      const health = await checkHealth(world, seconds * 1000);
      const text = opts.json ? JSON.stringify(health, null, 2) : formatHealth(world, health);
      if (health.healthy) console.log(text);
      else if (opts.json) console.log(text);
      else console.error(text);
      done(health.healthy ? HealthExit.Healthy : HealthExit.Unhealthy);
    });
}

/** A cache command's exit code; its refusals (a bad size or count) are exit 2. */
async function runCacheCommand(run: () => Promise<number>): Promise<number> {
  const { CacheCommandError } = await import("./cache_command.ts");
  try {
    return await run();
  } catch (e) {
    if (e instanceof CacheCommandError) refuse(e.message, 2);
    throw e;
  }
}
