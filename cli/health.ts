/**
 * `sausage health WORLD`: a container's health check. Healthy (exit 0) when
 * the host that runs WORLD answers on its control endpoint and every service
 * of `config/boot.yaml` has a running process; else exit 1, with why.
 *
 * @module
 */
import { ControlClient } from "../core/control_client.ts";
import type { ProcessInfo } from "../core/host_view.ts";
import { readServices, type Service } from "../core/services.ts";
import { World } from "../core/world.ts";

/** What the check found. */
export interface Health {
  healthy: boolean;
  /** The host's OS process, when one answered. */
  pid?: number;
  /** Each service of boot.yaml, and the process that serves it (null: none runs). */
  services: { method: string; pid: string | null }[];
  /** Why it is not healthy. */
  problems: string[];
}

/** The exit codes of `sausage health`. */
export const HealthExit = { Healthy: 0, Unhealthy: 1 } as const;

/** Whether `p` is a running process of the service `s` (a service's parent is `core`). */
function serves(p: ProcessInfo, s: Service): boolean {
  const method = p.method.includes(".") ? p.method : `${p.plugin}.${p.method}`;
  return p.parent === "core" && p.state === "running" && method === s.method;
}

/** Asks the host that runs `root`; gives up after `timeoutMs`. */
export async function checkHealth(root: string, timeoutMs = 5000): Promise<Health> {
  const world = new World(root);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<Health>((resolve) => {
    timer = setTimeout(() =>
      resolve({
        healthy: false,
        services: [],
        problems: [`the host did not answer within ${timeoutMs / 1000} s`],
      }), timeoutMs);
  });
  try {
    return await Promise.race([ask(world), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

async function ask(world: World): Promise<Health> {
  let remote: ControlClient | null;
  try {
    remote = await ControlClient.connect(world.root);
  } catch (e) {
    return { healthy: false, services: [], problems: [(e as Error).message] };
  }
  if (!remote) {
    return {
      healthy: false,
      services: [],
      problems: [`no host runs ${world.root} (start it with sausage --headless ${world.root})`],
    };
  }
  try {
    const processes = await remote.processes();
    let wanted: Service[] = [];
    const problems: string[] = [];
    try {
      wanted = await readServices(world.bootPath);
    } catch (e) {
      problems.push((e as Error).message);
    }
    const services = wanted.map((s) => ({
      method: s.method,
      pid: processes.find((p) => serves(p, s))?.pid ?? null,
    }));
    for (const s of services) {
      if (s.pid === null) problems.push(`the service ${s.method} of boot.yaml does not run`);
    }
    return { healthy: problems.length === 0, pid: remote.info.pid, services, problems };
  } finally {
    await remote.close();
  }
}

/** The report as text. */
export function formatHealth(root: string, h: Health): string {
  const lines = [
    h.healthy ? `healthy: ${root} (host pid ${h.pid})` : `unhealthy: ${root}`,
    ...h.services.map((s) =>
      `  service ${s.method}: ${s.pid ? `process ${s.pid}` : "not running"}`
    ),
    ...h.problems.map((p) => `  ${p}`),
  ];
  return lines.join("\n");
}
