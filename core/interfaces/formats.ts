/**
 * The number `format`s that schemars writes (`uint8`…`uint64`, `int8`…`int64`,
 * `uint`, `int`, `double`, `float`), known to an ajv validator: without them
 * ajv warns `unknown format "uint64" ignored in schema` for every field of
 * every plugin's schema it compiles, and checks nothing of them.
 *
 * @module
 */
import type { Ajv } from "ajv";
import { INTEGER_FORMATS } from "./numbers.ts";

/** The float formats: any JSON number is one (a `f32` that overflows is the plugin's to refuse). */
const FLOAT_FORMATS = ["double", "float"] as const;

/**
 * Registers the number formats on `ajv`: an integer format checks its range,
 * a float format any number. Gives `ajv` back.
 *
 * @example
 * ```ts
 * import { Ajv } from "ajv";
 * const check = addNumberFormats(new Ajv()).compile({ type: "integer", format: "uint8" });
 * check(255); // true
 * check(256); // false
 * ```
 */
export function addNumberFormats<T extends Ajv>(ajv: T): T {
  for (const [name, [min, max]] of Object.entries(INTEGER_FORMATS)) {
    ajv.addFormat(name, {
      type: "number",
      validate: (x: number) => Number.isInteger(x) && x >= min && x <= max,
    });
  }
  for (const name of FLOAT_FORMATS) ajv.addFormat(name, { type: "number", validate: () => true });
  return ajv;
}
