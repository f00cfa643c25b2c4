/**
 * Links a component's core modules without jco's fixup module, and with a
 * shim that exports only what is still called through it.
 *
 * A component made from a wasip1 module (Rust's `wasm32-wasip2` is one) has
 * two small core modules beside the main module and the preview1 adapter: a
 * shim, whose table holds every lowered import and whose exports call
 * through that table, and a fixup, instantiated last, that fills the table.
 * The main module and the adapter import the shim's exports. That breaks the
 * cycle between the main module and the adapter (each imports from the
 * other), but it also sends every host function the glue made (a
 * "trampoline", defined before any instance exists) through the shim,
 * though nothing stops the glue from giving it directly.
 *
 * So the glue is edited: an import that the fixup would have filled with a
 * trampoline gets the trampoline itself; the few slots that hold an
 * adapter's export (the cycle) are set from JS with `Table.set` where the
 * fixup was instantiated; and the shim keeps only the exports still
 * imported. A `probe` process makes 3 core instances rather than 4, and
 * its shim 20 export functions rather than 56: V8 makes the JS function of
 * each export, and the record of each import, anew for each instance, in
 * the old generation.
 *
 * A glue of another form is left as it is; the test of a real component's
 * glue says when that happens.
 *
 * @example
 * ```ts
 * import { linkDirect } from "./direct_link.ts";
 * const glue = "export function instantiate() {}"; // no shim: nothing to do
 * console.log(linkDirect(glue)); // undefined
 * ```
 *
 * @module
 */

/** What {@linkcode linkDirect} changed. */
export interface DirectLink {
  /** The edited glue. */
  glue: string;
  /** The shim's file, and the names of the exports still used (its table among them). */
  shim: { file: string; keep: Set<string>; exports: string };
  /** The fixup's file: still compiled, no longer instantiated. */
  fixup: string;
  /** Imports given the trampoline itself. */
  direct: number;
  /** Slots set from JS. */
  tableSets: number;
}

/** The file the glue loads as `module` (`const module2 = getCoreModule('plugin.core3.wasm');`). */
export function coreModuleFile(glue: string, module: string): string | undefined {
  return new RegExp(String.raw`const ${module} = getCoreModule\('([^']+)'\);`).exec(glue)?.[1];
}

/** jco's instantiation of the fixup: the shim's table and one import per slot, named by it. */
const FIXUP = new RegExp(
  String.raw`^  \(\{ exports: (exports\d+) \} = yield instantiateCore\(yield (module\d+), \{\n` +
    String.raw`    '': \{\n` +
    String.raw`      \$imports: (exports\d+)\.\$imports,\n` +
    String.raw`((?:      '\d+': [\w$.]+,\n)+)` +
    String.raw`    \},\n` +
    String.raw`  \}\)\);\n`,
  "m",
);
const SLOT = /^ {6}'(\d+)': ([\w$.]+),$/gm;
const TRAMPOLINE = /^trampoline\d+$/;
/** An export of a core instance: a wasm function, which `Table.set` takes. */
const CORE_EXPORT = /^exports\d+\.[\w$]+$/;

/**
 * The glue edited to link without the fixup (see the module's comment), or
 * undefined when it has no shim and fixup of the form jco 1.x emits.
 */
export function linkDirect(glue: string): DirectLink | undefined {
  const fixup = FIXUP.exec(glue);
  if (!fixup) return undefined;
  const [block, fixupExports, fixupModule, shimExports, slotLines] = fixup;
  // the shim: instantiated first, with no imports
  const shimAt = glue.indexOf(
    `({ exports: ${shimExports} } = yield instantiateCore(yield `,
  );
  const shimModule = new RegExp(
    String.raw`\(\{ exports: ${shimExports} \} = yield instantiateCore\(yield (module\d+)\)\);`,
  ).exec(glue)?.[1];
  const fileOf = (module: string) => coreModuleFile(glue, module);
  const shimFile = shimModule && fileOf(shimModule);
  const fixupFile = fileOf(fixupModule);
  if (shimAt < 0 || !shimFile || !fixupFile) return undefined;
  // the fixup's exports are never read
  if (glue.split(new RegExp(String.raw`\b${fixupExports}\b`)).length !== 3) return undefined;

  const direct = new Map<string, string>();
  const sets: string[] = [];
  for (const [, slot, value] of slotLines.matchAll(SLOT)) {
    // a trampoline defined before the first instance can be given as it is
    const defined = Math.max(
      glue.indexOf(`const ${value} = `),
      glue.indexOf(`function ${value}(`),
    );
    if (TRAMPOLINE.test(value) && defined >= 0 && defined < shimAt) {
      direct.set(slot, value);
    } else if (CORE_EXPORT.test(value)) {
      sets.push(`  ${shimExports}.$imports.set(${slot}, ${value});\n`);
    } else {
      // only a wasm function goes into a table from JS: the fixup must wrap this one
      return undefined;
    }
  }
  const use = new RegExp(String.raw`\b${shimExports}\['(\d+)'\]`, "g");
  let replaced = 0;
  const edited = glue.replace(block, () => sets.join("")).replace(use, (whole, slot: string) => {
    const trampoline = direct.get(slot);
    if (!trampoline) return whole;
    replaced++;
    return trampoline;
  });
  const keep = new Set(["$imports", ...[...edited.matchAll(use)].map((m) => m[1])]);
  return {
    glue: edited,
    shim: { file: shimFile, keep, exports: shimExports },
    fixup: fixupFile,
    direct: replaced,
    tableSets: sets.length,
  };
}
