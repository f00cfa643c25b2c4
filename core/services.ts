/**
 * Services (PROTOCOL section 8): the calls in `config/boot.yaml`, made at
 * each start, in order, each a detached call with the parent `core`.
 *
 * @module
 */
import { parse } from "yaml";
import type { Client } from "./client.ts";
import type { Journal } from "./journal.ts";

/** One entry of boot.yaml. */
export interface Service {
  method: string;
  params: Record<string, unknown>;
}

/** Raised for a boot.yaml that cannot be read; the message says where. */
export class BootFileError extends Error {
  override name = "BootFileError";
}

/** Reads and checks `config/boot.yaml`. A missing file means no services. */
export async function readServices(path: string): Promise<Service[]> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return [];
    throw new BootFileError(`cannot read ${path}: ${(e as Error).message}`);
  }
  let value: unknown;
  try {
    value = parse(text);
  } catch (e) {
    throw new BootFileError(`${path} is not valid YAML: ${(e as Error).message}`);
  }
  if (value === null || value === undefined) return [];
  if (!Array.isArray(value)) {
    throw new BootFileError(`${path} must be a list of services (- method: ..., params: {...})`);
  }
  return value.map((entry, i) => {
    const where = `${path}, service ${i + 1}`;
    if (typeof entry !== "object" || entry === null || Array.isArray(entry)) {
      throw new BootFileError(`${where}: expected "method" and "params"`);
    }
    const { method, params } = entry as Record<string, unknown>;
    if (typeof method !== "string" || !method.includes(".")) {
      throw new BootFileError(
        `${where}: "method" must be <plugin>.<method>, for example www.start`,
      );
    }
    if (
      params !== undefined &&
      (typeof params !== "object" || params === null || Array.isArray(params))
    ) {
      throw new BootFileError(`${where}: "params" must be a mapping (params are by name)`);
    }
    return { method, params: (params ?? {}) as Record<string, unknown> };
  });
}

/**
 * Starts each service in order with the core as caller, waiting for each
 * result (the service is ready) before the next. Failures are journaled and
 * the next service starts anyway.
 */
export async function startServices(
  services: Service[],
  core: Client,
  journal: Journal,
  onProgress?: (text: string) => void,
): Promise<void> {
  for (const service of services) {
    journal.event(null, null, `service ${service.method}: starting`);
    const response = await core.request("core.call", {
      method: service.method,
      params: service.params,
      detach: true,
    });
    if (response.error) {
      const text = `service ${service.method} failed: ${response.error.message}`;
      journal.event(null, null, text);
      onProgress?.(text);
    } else {
      journal.event(null, null, `service ${service.method}: ready`);
      onProgress?.(`service ${service.method}: ready`);
    }
  }
}
