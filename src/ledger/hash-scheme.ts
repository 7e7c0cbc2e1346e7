/**
 * Reading the scheme of a stored hash. Kept apart from `chain.ts` (which loads node:crypto and
 * canonicalize) because the tail reader and the lean read path only need to parse hashes.
 */

/** The scheme of a stored hash (`sha256` or `hmac-sha256:<keyId>`), or undefined when malformed. */
export function hashScheme(hash: unknown): string | undefined {
  if (typeof hash !== 'string') return undefined;
  if (/^sha256:[0-9a-f]{64}$/.test(hash)) return 'sha256';
  const m = /^(hmac-sha256:[0-9a-f]{16}):[0-9a-f]{64}$/.exec(hash);
  return m ? m[1] : undefined;
}
