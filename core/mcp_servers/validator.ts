/**
 * The JSON Schema validator of an MCP client (the host's, to the servers of
 * `config/agent.yaml`, and the tests'): the SDK's own ajv setup, with the
 * number formats of schemars known, so that a tool's `outputSchema` from a
 * Rust plugin (`"format": "uint64"`) is checked, not warned about.
 *
 * @module
 */
// @ts-types="@modelcontextprotocol/sdk/validation/ajv"
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import { Ajv } from "ajv";
import addFormats from "ajv-formats";
import { addNumberFormats } from "../interfaces/formats.ts";

/**
 * A validator for `new Client(info, { jsonSchemaValidator })`.
 *
 * @example
 * ```ts
 * import { Client } from "@modelcontextprotocol/sdk/client/index.js";
 * const client = new Client({ name: "me", version: "1" }, {
 *   jsonSchemaValidator: jsonSchemaValidator(),
 * });
 * ```
 */
export function jsonSchemaValidator(): AjvJsonSchemaValidator {
  // as the SDK's default instance, and the number formats
  const ajv = new Ajv({
    strict: false,
    validateFormats: true,
    validateSchema: false,
    allErrors: true,
  });
  (addFormats as unknown as (ajv: Ajv) => Ajv)(ajv);
  return new AjvJsonSchemaValidator(addNumberFormats(ajv));
}
