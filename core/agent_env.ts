/**
 * The agent's key from the host's environment (PROTOCOL section 3.8): when
 * `/config/agent.yaml` says `token_env: NAME`, the processes of the plugin
 * `agent`, and no others, get the host's variable `NAME` under that name, so
 * the key need not be written into the world.
 *
 * @module
 */
import { parse } from "yaml";

/** What a variable name may be: what a shell can export. */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/** Names the host sets for every process itself (3.8): `token_env` cannot replace them. */
const RESERVED = new Set(["SAUSAGE_PID", "SAUSAGE_PLUGIN", "SAUSAGE_PARENT"]);

/** `token_env` of one `agent.yaml`, read again only when the file changes. */
export class AgentEnv {
  readonly #path: string;
  readonly #getEnv: (name: string) => string | undefined;
  #seen: { mtime: number; size: number; name: string | null } | undefined;

  /** `getEnv` reads the host's environment (tests give their own). */
  constructor(path: string, getEnv: (name: string) => string | undefined = readEnv) {
    this.#path = path;
    this.#getEnv = getEnv;
  }

  /**
   * The variables a process of the agent gets beyond the `SAUSAGE_*` ones:
   * `[[NAME, value]]`, or none when agent.yaml names no variable, does not
   * parse (the agent reports its own config errors), or the host lacks it.
   * Costs one `stat` while the file is unchanged.
   *
   * @example
   * ```ts
   * const env = new AgentEnv("/path/to/world/config/agent.yaml");
   * console.log(env.vars()); // [["OPENAI_API_KEY", "sk-..."]] with token_env: OPENAI_API_KEY
   * ```
   */
  vars(): [string, string][] {
    const name = this.#tokenEnv();
    const value = name === null ? undefined : this.#getEnv(name);
    return name === null || value === undefined ? [] : [[name, value]];
  }

  #tokenEnv(): string | null {
    let info: Deno.FileInfo;
    try {
      info = Deno.statSync(this.#path);
    } catch {
      this.#seen = undefined;
      return null;
    }
    const mtime = info.mtime?.getTime() ?? 0;
    const seen = this.#seen;
    if (seen && seen.mtime === mtime && seen.size === info.size) return seen.name;
    let name: string | null = null;
    try {
      const config = parse(Deno.readTextFileSync(this.#path), { logLevel: "error" });
      const value = (config as { token_env?: unknown } | null)?.token_env;
      if (typeof value === "string" && ENV_NAME.test(value) && !RESERVED.has(value)) name = value;
    } catch {
      // unreadable or not YAML: no variable
    }
    this.#seen = { mtime, size: info.size, name };
    return name;
  }
}

function readEnv(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined; // no permission to read it
  }
}
