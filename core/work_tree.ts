/**
 * Whether a world sits in a git work tree that would commit it: its
 * `config/agent.yaml` may hold an API key, one `git add .` away from a
 * commit. `sausage init` warns about such a world.
 *
 * @module
 */

/** What `git` says, or undefined when it cannot run or fails. */
async function git(cwd: string, ...args: string[]): Promise<string | undefined> {
  try {
    const out = await new Deno.Command("git", {
      args: ["-C", cwd, ...args],
      stdout: "piped",
      stderr: "null",
    }).output();
    return out.success ? new TextDecoder().decode(out.stdout).trim() : undefined;
  } catch {
    return undefined; // no git: nothing can be committed by it
  }
}

/**
 * The top of the git work tree that holds the folder `root` below its top
 * and does not ignore it, or undefined (no git, no work tree, the world is
 * the work tree itself, or ignored).
 *
 * @example
 * ```ts
 * const tree = await unignoredWorkTree("/home/me/src/sausage/world");
 * if (tree) console.error(`warning: ${tree} would commit the world: add it to .gitignore`);
 * ```
 */
export async function unignoredWorkTree(root: string): Promise<string | undefined> {
  const top = await git(root, "rev-parse", "--show-toplevel");
  if (top === undefined || top === "") return undefined;
  const [here, tree] = await Promise.all([Deno.realPath(root), Deno.realPath(top)]);
  if (here === tree) return undefined; // a world kept in git on purpose
  // check-ignore exits 0 when the folder is ignored, 1 when not
  return await git(root, "check-ignore", "-q", ".") === undefined ? tree : undefined;
}
