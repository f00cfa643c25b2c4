/**
 * Limits on processes, call depth and notifications in flight, and on the
 * resources one process or all of them hold: linear memory, unread stdin,
 * and the in-memory `/self` and `/run` (PROTOCOL 3.10), read once at start
 * from `config/limits.yaml`.
 *
 * @module
 */
import { parse } from "yaml";
import { ErrorCode, RpcError } from "./jsonrpc.ts";
import {
  LIMITS_FILE,
  type ProcessLimits,
  raiseText,
  RESOURCE_WHAT,
  type ResourceLimit,
  resourceLimitText,
} from "../runtime/messages.ts";
import { DEFAULT_LIMITS, type Limits } from "../protocol/limits.ts";
export { DEFAULT_LIMITS, type Limits };

export { LIMITS_FILE, raiseText, type ResourceLimit, resourceLimitText };

/** What each limit counts, in words for errors and the journal. */
const WHAT: Record<keyof Limits, string> = {
  processes: "live processes in the world",
  processes_per_tree: "live processes in this call tree",
  call_depth: "nested calls",
  notifications_per_sender: "notifications in flight from this sender",
  memory_mib: RESOURCE_WHAT.memory_mib,
  stdin_mib: RESOURCE_WHAT.stdin_mib,
  files_mib: RESOURCE_WHAT.files_mib,
  // never refused: past them the oldest entries are pruned (named so in the commented file)
  journal_mib: "MiB of the journal's file; past it the oldest entries are pruned",
  journal_days: "days a journal entry is kept",
};

/** The largest values that mean something. */
const MOST: Partial<Record<keyof Limits, { value: number; why: string }>> = {
  memory_mib: { value: 4096, why: "all that a 32-bit linear memory can address" },
};

/** The limits a plugin worker applies to each process. */
export function processLimits(limits: Readonly<Limits>): ProcessLimits {
  return { memoryMib: limits.memory_mib, stdinMib: limits.stdin_mib };
}

/**
 * Reads the limits from the YAML text of `config/limits.yaml` (null: no
 * file). Unknown keys and values that are not positive integers are
 * reported and replaced by the default.
 *
 * @example
 * ```ts
 * const { limits } = parseLimits("processes: 2000\n");
 * console.log(limits.processes, limits.call_depth); // 2000 32
 * ```
 */
export function parseLimits(text: string | null): { limits: Limits; problems: string[] } {
  const limits: Limits = { ...DEFAULT_LIMITS };
  const problems: string[] = [];
  if (text === null) return { limits, problems };
  let value: unknown;
  try {
    value = parse(text);
  } catch (e) {
    problems.push(`${LIMITS_FILE} is not YAML (${(e as Error).message}): the defaults apply`);
    return { limits, problems };
  }
  if (value === null || value === undefined) return { limits, problems };
  if (typeof value !== "object" || Array.isArray(value)) {
    problems.push(`${LIMITS_FILE} must be a mapping of limit names to numbers: the defaults apply`);
    return { limits, problems };
  }
  for (const [key, n] of Object.entries(value)) {
    if (!Object.hasOwn(DEFAULT_LIMITS, key)) {
      problems.push(
        `${LIMITS_FILE}: unknown limit "${key}" (known: ${Object.keys(DEFAULT_LIMITS).join(", ")})`,
      );
    } else if (typeof n !== "number" || !Number.isSafeInteger(n) || n < 1) {
      const name = key as keyof Limits;
      problems.push(
        `${LIMITS_FILE}: ${key} must be a positive integer, not ${JSON.stringify(n)}: ` +
          `the default ${DEFAULT_LIMITS[name]} applies`,
      );
    } else if ((MOST[key as keyof Limits]?.value ?? Infinity) < n) {
      const most = MOST[key as keyof Limits]!;
      problems.push(
        `${LIMITS_FILE}: ${key} must be at most ${most.value} (${most.why}), not ${n}: ` +
          `the default ${DEFAULT_LIMITS[key as keyof Limits]} applies`,
      );
    } else {
      limits[key as keyof Limits] = n;
    }
  }
  return { limits, problems };
}

/**
 * Reads `config/limits.yaml` at `path` (a missing file means the defaults).
 *
 * @example
 * ```ts
 * const { limits, problems } = readLimits("/tmp/world/config/limits.yaml");
 * for (const p of problems) console.warn(p);
 * ```
 */
export function readLimits(path: string): { limits: Limits; problems: string[] } {
  let text: string | null = null;
  try {
    text = Deno.readTextFileSync(path);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) {
      return {
        limits: { ...DEFAULT_LIMITS },
        problems: [`cannot read ${LIMITS_FILE} (${(e as Error).message}): the defaults apply`],
      };
    }
  }
  return parseLimits(text);
}

/**
 * The -32000 error of a call refused at a limit; `data` names the limit,
 * its value and how to raise it.
 *
 * @example
 * ```ts
 * const e = limitError("call_depth", 32, "probe.tree");
 * console.log(e.data); // { limit: "call_depth", value: 32, raise: "..." }
 * ```
 */
export function limitError(limit: keyof Limits, value: number, method: string): LimitError {
  return new LimitError(limit, value, method);
}

/** A call refused at a limit (the process manager journals it already). */
export class LimitError extends RpcError {
  /** Which limit was hit. */
  readonly limit: keyof Limits;

  constructor(limit: keyof Limits, value: number, method: string) {
    const raise = raiseText(limit);
    super(
      ErrorCode.ServerError,
      `${method} was refused: the limit ${limit} (${value} ${
        WHAT[limit]
      }) is reached; to raise it, ${raise}`,
      { limit, value, raise },
    );
    this.limit = limit;
  }
}
