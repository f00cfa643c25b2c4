/**
 * What a folder Sausage writes (a world, the cache) must allow, said with
 * the fix: writable by this user, on a file system that is not read-only,
 * owned by the user that runs the host.
 *
 * @module
 */
import { join } from "node:path";

/** A problem with a folder, and what to do about it. */
export interface FolderProblem {
  level: "warning" | "error";
  text: string;
  fix: string;
}

/** Which folder: they differ in what the host keeps there and in the way around. */
export type FolderRole = "world" | "cache";

/** The errno name Deno gives a filesystem error (`EROFS`, `EACCES`…), if it has one. */
function errnoOf(e: unknown): string | undefined {
  const code = (e as { code?: unknown })?.code;
  return typeof code === "string" ? code : undefined;
}

function readOnlyFs(e: unknown): boolean {
  return errnoOf(e) === "EROFS";
}

function denied(e: unknown): boolean {
  return e instanceof Deno.errors.PermissionDenied || errnoOf(e) === "EACCES" ||
    errnoOf(e) === "EPERM";
}

function whoAmI(): string {
  const uid = Deno.uid();
  return uid === null ? "this user" : `the user ${uid}`;
}

function ownerOf(path: string): number | null {
  try {
    return Deno.statSync(path).uid;
  } catch {
    return null;
  }
}

function fixFor(role: FolderRole, path: string, readOnly: boolean): string {
  const uid = Deno.uid();
  if (role === "cache") {
    return readOnly
      ? `put the cache on a writable disk: --cache-dir DIR, or set XDG_CACHE_HOME (in a container, a volume at /cache)`
      : `make it writable (chown -R ${
        uid ?? "$(id -u)"
      } ${path}), or use another cache: --cache-dir DIR, or set XDG_CACHE_HOME`;
  }
  if (readOnly) {
    return `a host writes its journal, lock and processes' files in the world: mount it ` +
      `read-write (in a container, -v DIR:/world without :ro), or copy it to a writable disk`;
  }
  const owner = ownerOf(path);
  return `run Sausage as the user that owns it${owner === null ? "" : ` (${owner})`}, or give ` +
    `it to this one: chown -R ${uid ?? "$(id -u)"} ${path}`;
}

/**
 * The problem an error of a file operation under `path` shows, with the
 * fix; null when it is not one of a read-only or forbidden folder.
 */
export function explainFsError(
  e: unknown,
  path: string,
  role: FolderRole,
): FolderProblem | null {
  const readOnly = readOnlyFs(e);
  if (!readOnly && !denied(e)) return null;
  const what = role === "world" ? `the world ${path}` : `the cache ${path}`;
  const text = readOnly
    ? `${what} is on a read-only file system (${(e as Error).message})`
    : `${what} is not writable by ${whoAmI()} (${(e as Error).message})`;
  return { level: "error", text, fix: fixFor(role, path, readOnly) };
}

/**
 * Whether this user can write in `path` (made when missing): a file is
 * created and removed there, which is what a host does.
 */
export async function writableProblem(
  path: string,
  role: FolderRole,
): Promise<FolderProblem | null> {
  try {
    if (role === "cache") await Deno.mkdir(path, { recursive: true });
    const probe = join(path, `.sausage-write-check-${crypto.randomUUID()}`);
    await Deno.writeTextFile(probe, "");
    await Deno.remove(probe);
    // the host writes under state/core: a folder there that another user made stops it too
    if (role === "world") {
      const core = join(path, "state", "core");
      const info = await Deno.stat(core).catch(() => null);
      if (info?.isDirectory) {
        const inner = join(core, `.sausage-write-check-${crypto.randomUUID()}`);
        await Deno.writeTextFile(inner, "");
        await Deno.remove(inner);
      }
    }
    return null;
  } catch (e) {
    return explainFsError(e, path, role) ?? {
      level: "error",
      text: `cannot write in ${path}: ${(e as Error).message}`,
      fix: fixFor(role, path, false),
    };
  }
}

/**
 * A world owned by another user than the one that runs the host: root's
 * files in it would lock its owner out; another user's host cannot write.
 */
export async function ownerProblem(root: string): Promise<FolderProblem | null> {
  const uid = Deno.uid();
  const info = await Deno.stat(root).catch(() => null);
  if (uid === null || !info || info.uid === null || info.uid === uid) return null;
  if (uid === 0) {
    return {
      level: "warning",
      text: `the world ${root} belongs to the user ${info.uid}, and Sausage runs as root: ` +
        `what it writes there will be root's, which the user ${info.uid} cannot change`,
      fix: `run Sausage as the user ${info.uid} (su, sudo -u, or podman run --user ${info.uid}), ` +
        `or give the world to root: chown -R 0 ${root}`,
    };
  }
  return {
    level: "warning",
    text: `the world ${root} belongs to the user ${info.uid}, not to ${whoAmI()}`,
    fix: `run Sausage as the user ${info.uid}, or give it to this one: chown -R ${uid} ${root}`,
  };
}

/**
 * The message for a host that cannot start: a read-only or forbidden world
 * or cache said with its fix, else the error's own message.
 */
export function startFailure(e: unknown, world: string, cacheDir: string): string {
  const message = (e as Error)?.message ?? String(e);
  const inCache = message.includes(cacheDir);
  const problem = explainFsError(e, inCache ? cacheDir : world, inCache ? "cache" : "world");
  return problem ? `${problem.text}. Fix: ${problem.fix}` : message;
}
