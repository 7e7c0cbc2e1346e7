/**
 * The shapes of the approver's key ids, public keys and signatures as stored and exported.
 * Imports nothing, so the schemas (and the browser bundle that shares them) need no crypto.
 */

/** A key id: `ed25519:` and the first 128 bits of the SHA-256 of the raw public key, in hex. */
export const KEY_ID_PATTERN = /^ed25519:[0-9a-f]{32}$/;
/** A signature as stored: 64 bytes in hex. */
export const SIGNATURE_PATTERN = /^[0-9a-f]{128}$/;
/** A public key as stored: the raw 32 bytes in hex. */
export const PUBLIC_KEY_PATTERN = /^[0-9a-f]{64}$/;

/**
 * The approver keys a run was started with (`CONTINUITY_APPROVER_KEYS`: key ids, comma-separated),
 * or none when unset. A word that is not a key id is kept as it is: it matches no key, so a
 * mistyped value trusts nothing rather than falling back to the ledger's own pin.
 */
export function approverRootsOf(value: string | undefined): readonly string[] {
  if (value === undefined) return [];
  const words = value
    .split(',')
    .map((w) => w.trim())
    .filter((w) => w.length > 0);
  return words.length > 0 ? words : ['(empty)'];
}
