/**
 * `wasi:random` 0.2: secure and insecure random bytes (both from the OS CSPRNG).
 *
 * @module
 */

/** `crypto.getRandomValues` fills at most 64 KiB per call. */
const CHUNK = 65536;

/** `len` random bytes. */
export function randomBytes(len: bigint | number): Uint8Array {
  const out = new Uint8Array(Number(len));
  for (let at = 0; at < out.length; at += CHUNK) {
    crypto.getRandomValues(out.subarray(at, Math.min(at + CHUNK, out.length)));
  }
  return out;
}

/** A random u64. */
export function randomU64(): bigint {
  return crypto.getRandomValues(new BigUint64Array(1))[0];
}

/** The `wasi:random` interfaces. */
export function randomImports(): Record<string, Record<string, unknown>> {
  return {
    "wasi:random/random": { getRandomBytes: randomBytes, getRandomU64: randomU64 },
    "wasi:random/insecure": {
      getInsecureRandomBytes: randomBytes,
      getInsecureRandomU64: randomU64,
    },
    "wasi:random/insecure-seed": { insecureSeed: () => [randomU64(), randomU64()] },
  };
}
