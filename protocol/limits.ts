/**
 * Every fixed limit of the protocol, each with the section of PROTOCOL.md
 * that states it. The modules that apply a limit import it from here, so a
 * number the contract names is written once. The limits a world can raise
 * (section 3.10) are here at their defaults; `core/limits.ts` reads
 * `config/limits.yaml`.
 *
 * @example
 * ```ts
 * console.log(`a line of stdout holds at most ${MAX_MESSAGE_BYTES} bytes`);
 * ```
 *
 * @module
 */

const KiB = 1024;
const MiB = 1024 * KiB;

// --- 2. The world folder ---

/** The longest plugin name: a folder name, and part of every process ID (PROTOCOL 2). */
export const MAX_PLUGIN_NAME = 64;

// --- 3.1 The wire ---

/** The longest line of stdout, one JSON-RPC message (PROTOCOL 3.1). */
export const MAX_MESSAGE_BYTES = 16 * MiB;
/** The longest stderr line kept in the journal; the rest is cut (PROTOCOL 3.1). */
export const MAX_LOG_LINE_BYTES = 16 * KiB;
/** Stderr lines a process may write per second on average, bursts up to twice that (PROTOCOL 3.1). */
export const LOG_LINES_PER_SECOND = 1000;
/**
 * The deepest nesting of arrays and objects in a message; the message
 * object itself is level 1 (PROTOCOL 3.1). Rust's `serde_json` stops at
 * 128, and the host's recursive code (structured cloning, `JSON.stringify`)
 * overflows past about 2,000, so 256 refuses nothing a plugin could read
 * and keeps a wide margin.
 */
export const MAX_JSON_DEPTH = 256;

// --- 3.6 Lifetime, 3.7 Upgrades ---

/** How long a stopping process may take before it is killed (PROTOCOL 3.6). */
export const STOP_GRACE_MS = 5000;
/**
 * The longest deadline of a call, `timeout_ms` of `core.call`: what a
 * timer can wait, 2^31 - 1 ms or about 24.8 days (PROTOCOL 3.4).
 */
export const MAX_TIMEOUT_MS = 2 ** 31 - 1;
/** The grace period of a version that declares none, in seconds (PROTOCOL 3.7). */
export const DEFAULT_GRACE_SECONDS = 60;

// --- 3.8 Environment and network ---

/** Most sockets (TCP and UDP, accepted ones included) one process may hold (PROTOCOL 3.8). */
export const MAX_SOCKETS_PER_PROCESS = 256;
/** Most HTTP requests one process may have in flight, body not yet read (PROTOCOL 3.8). */
export const MAX_REQUESTS_PER_PROCESS = 64;

// --- 3.10 Limits ---

/** The limits a world can raise in `config/limits.yaml` (PROTOCOL 3.10). */
export interface Limits {
  /** Live processes in the whole world. */
  processes: number;
  /** Live processes in one call tree (a process started from outside and its attached descendants). */
  processes_per_tree: number;
  /** Nested calls: a process started from outside has depth 1. */
  call_depth: number;
  /** Processes started by one sender's notifications that have not ended. */
  notifications_per_sender: number;
  /** MiB of one linear memory of a process (tables: one element per KiB of it). */
  memory_mib: number;
  /** MiB of stdin a process has not read yet (answers and calls waiting for it). */
  stdin_mib: number;
  /** MiB of file content and link targets in `/self` and `/run`, all processes together. */
  files_mib: number;
  /** MiB of the journal's file; past it the oldest entries are pruned (PROTOCOL 7). */
  journal_mib: number;
  /** Days a journal entry is kept (PROTOCOL 7). */
  journal_days: number;
}

/** The limits of PROTOCOL 3.10 when `config/limits.yaml` does not raise them. */
export const DEFAULT_LIMITS: Readonly<Limits> = Object.freeze({
  processes: 1000,
  processes_per_tree: 256,
  call_depth: 32,
  notifications_per_sender: 100,
  // the agent holds a 128k-token context and 16 MiB messages in a few tens of MiB
  memory_mib: 1024,
  // four messages of the 16 MiB maximum waiting at once
  stdin_mib: 64,
  // /run's own 256 MiB, and room for the /self of many processes
  files_mib: 512,
  // about four million entries of 250 bytes, a month of a busy world
  journal_mib: 1024,
  journal_days: 90,
});

// --- 4. The filesystem ---

/** The longest name in a path, and the longest path (PROTOCOL 4); the VFS applies them. */
export { NAME_MAX, PATH_MAX } from "../vfs/mod.ts";

/** Most descriptors (files and folders, preopens not counted) one process may hold (PROTOCOL 4). */
export const MAX_DESCRIPTORS_PER_PROCESS = 1024;
/** Bytes of files in `/run`, its own limit inside `files_mib` (PROTOCOL 4). */
export const RUN_BYTES = 256 * MiB;
/** Bytes of files in one process's `/self`, its own limit inside `files_mib` (PROTOCOL 4). */
export const SELF_BYTES = 64 * MiB;
/** The lines `/proc/<pid>/log` shows: the last ones of the process (PROTOCOL 4). */
export const LOG_LINES = 10_000;

// --- 7. The journal ---

/** Entries `core.log` answers when the query gives no `limit` (PROTOCOL 7). */
export const DEFAULT_LIMIT = 100;
/** The largest `limit` of a `core.log` query (PROTOCOL 7). */
export const MAX_LIMIT = 10_000;
/** The longest `grep`: compiling costs time in the length of the pattern (PROTOCOL 7). */
export const MAX_GREP_LENGTH = 1000;
/**
 * The most a `core.log` answer holds: the lines' UTF-8 bytes plus 200 per
 * entry; older entries are left out and `cut` says so (PROTOCOL 7).
 */
export const MAX_ANSWER_BYTES = 4 * MiB;
/** The longest a `core.log` query scans the journal, on the host's thread (PROTOCOL 7). */
export const MAX_QUERY_MS = 250;

// --- 10. Interfaces ---

/** How long a plugin has to answer `rpc.discover` (PROTOCOL 10.1). */
export const DISCOVERY_TIMEOUT_MS = 10_000;

// --- 11. Building and tests ---

/** Most bytes the world's `/plugins/cargo/sdk/` may hold, so a build never reads a disk's worth (PROTOCOL 11). */
export const MAX_SDK_BYTES = 64 * MiB;

// --- 12. The control endpoint ---

/** A Unix socket's path must fit `sun_path`: 108 bytes on Linux, 104 on macOS (PROTOCOL 12). */
export const MAX_SOCKET_PATH_BYTES = 103;
/** The most `host/cat` reads of a file; its answer is base64, a third larger (PROTOCOL 12). */
export const MAX_CAT_BYTES = 8 * MiB;
/** Answers a connection has not read yet; past this it is closed (PROTOCOL 12). */
export const MAX_UNREAD_ANSWER_BYTES = 64 * MiB;
