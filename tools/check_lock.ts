/**
 * Fails when `deno.lock` holds a package that nothing in `deno.json` reaches
 * (`deno task check` runs it). Deno keeps such entries after an import moves
 * to another version, and a cold cache downloads every npm package the lock
 * file holds: stale versions made the first run download 1.2 GB.
 *
 * ```text
 * deno run --allow-read --allow-write tools/check_lock.ts [--fix] [deno.lock]
 * ```
 *
 * `--fix` writes the lock file without them; the versions of what stays are
 * untouched.
 *
 * @module
 */

/** The parts of a `deno.lock` (version 5) this check reads. */
export interface LockFile {
  /** A specifier of `deno.json` or of a package → the version it resolved to. */
  specifiers?: Record<string, string>;
  /** npm packages by `name@version[_peer@version...]`. */
  npm?: Record<string, { dependencies?: string[]; optionalDependencies?: string[] }>;
  /** JSR packages by `name@version`. */
  jsr?: Record<string, { dependencies?: string[] }>;
  /** What the workspace's configuration files import. */
  workspace?: {
    dependencies?: string[];
    packageJson?: { dependencies?: string[] };
    members?: Record<string, { dependencies?: string[] }>;
  };
  [key: string]: unknown;
}

/** What the lock file holds that nothing reaches. */
export interface Unreached {
  /** Keys of `specifiers`. */
  specifiers: string[];
  /** Keys of `npm`. */
  npm: string[];
  /** Keys of `jsr`. */
  jsr: string[];
}

/** `@scope/name@1.2.3_peer@4` → `@scope/name` (a scope's `@` is not the version's). */
function packageName(key: string): string {
  const at = key.indexOf("@", 1);
  return at < 0 ? key : key.slice(0, at);
}

/**
 * What in `lock` nothing in its workspace reaches, following specifiers to
 * packages and packages to their dependencies.
 *
 * @example
 * ```ts
 * unreached({
 *   specifiers: { "npm:a@1": "1.0.0", "npm:a@0.9": "0.9.0" },
 *   npm: { "a@1.0.0": { dependencies: ["b"] }, "a@0.9.0": {}, "b@2.0.0": {} },
 *   workspace: { dependencies: ["npm:a@1"] },
 * }); // { specifiers: ["npm:a@0.9"], npm: ["a@0.9.0"], jsr: [] }
 * ```
 */
export function unreached(lock: LockFile): Unreached {
  const specifiers = lock.specifiers ?? {};
  const npm = lock.npm ?? {};
  const jsr = lock.jsr ?? {};
  const npmByName = new Map<string, string[]>();
  for (const key of Object.keys(npm)) {
    const name = packageName(key);
    npmByName.set(name, [...(npmByName.get(name) ?? []), key]);
  }
  const seenSpecifiers = new Set<string>();
  const seenNpm = new Set<string>();
  const seenJsr = new Set<string>();

  // An npm package's dependency: `name` (the lock's only version of it),
  // `name@version[_peers]`, or `alias@npm:name@version`.
  const npmDependency = (dep: string): string[] => {
    const alias = dep.indexOf("@npm:");
    const target = alias > 0 ? dep.slice(alias + "@npm:".length) : dep;
    if (npm[target]) return [target];
    const name = packageName(target);
    const candidates = npmByName.get(name) ?? [];
    if (name === target) return candidates;
    return candidates.filter((key) => key.startsWith(`${target}_`));
  };
  const visitNpm = (key: string) => {
    if (seenNpm.has(key) || !npm[key]) return;
    seenNpm.add(key);
    const entry = npm[key];
    for (const dep of [...(entry.dependencies ?? []), ...(entry.optionalDependencies ?? [])]) {
      for (const target of npmDependency(dep)) visitNpm(target);
    }
  };
  const visitSpecifier = (specifier: string) => {
    if (seenSpecifiers.has(specifier)) return;
    const resolved = specifiers[specifier];
    if (resolved === undefined) return;
    seenSpecifiers.add(specifier);
    const name = packageName(specifier.replace(/^(npm|jsr):/, ""));
    if (specifier.startsWith("npm:")) visitNpm(`${name}@${resolved}`);
    if (specifier.startsWith("jsr:")) {
      const key = `${name}@${resolved}`;
      if (seenJsr.has(key) || !jsr[key]) return;
      seenJsr.add(key);
      for (const dep of jsr[key].dependencies ?? []) visitSpecifier(dep);
    }
  };

  const workspace = lock.workspace ?? {};
  const roots = [
    ...(workspace.dependencies ?? []),
    ...(workspace.packageJson?.dependencies ?? []),
    ...Object.values(workspace.members ?? {}).flatMap((m) => m.dependencies ?? []),
  ];
  for (const root of roots) visitSpecifier(root);

  return {
    specifiers: Object.keys(specifiers).filter((k) => !seenSpecifiers.has(k)),
    npm: Object.keys(npm).filter((k) => !seenNpm.has(k)),
    jsr: Object.keys(jsr).filter((k) => !seenJsr.has(k)),
  };
}

/** `lock` without what `unreached` found. */
export function pruned(lock: LockFile, gone: Unreached): LockFile {
  const without = <T>(record: Record<string, T> | undefined, keys: string[]) =>
    record && Object.fromEntries(Object.entries(record).filter(([k]) => !keys.includes(k)));
  return {
    ...lock,
    specifiers: without(lock.specifiers, gone.specifiers),
    ...(lock.npm ? { npm: without(lock.npm, gone.npm) } : {}),
    ...(lock.jsr ? { jsr: without(lock.jsr, gone.jsr) } : {}),
  };
}

/**
 * `lock` as Deno writes it: two spaces, and the `os` and `cpu` lists of a
 * package on one line.
 */
export function formatLock(lock: LockFile): string {
  return JSON.stringify(lock, null, 2).replace(
    /("(?:os|cpu)": )\[\n([^\]]*)\n\s*\]/g,
    (_, key: string, items: string) =>
      `${key}[${items.split("\n").map((line) => line.trim()).join(" ")}]`,
  ) + "\n";
}

if (import.meta.main) {
  const fix = Deno.args.includes("--fix");
  const path = Deno.args.find((a) => !a.startsWith("--")) ?? "deno.lock";
  const lock = JSON.parse(await Deno.readTextFile(path)) as LockFile;
  const gone = unreached(lock);
  const count = gone.specifiers.length + gone.npm.length + gone.jsr.length;
  if (count === 0) Deno.exit(0);
  if (fix) {
    await Deno.writeTextFile(path, formatLock(pruned(lock, gone)));
    console.log(`${path}: removed ${gone.npm.length + gone.jsr.length} packages nothing reaches`);
    Deno.exit(0);
  }
  console.error(`${path} holds what nothing in deno.json reaches (a cold cache downloads it):`);
  for (const key of [...gone.specifiers, ...gone.npm, ...gone.jsr]) console.error(`  ${key}`);
  console.error(`fix: deno run --allow-read --allow-write tools/check_lock.ts --fix ${path}`);
  Deno.exit(1);
}
