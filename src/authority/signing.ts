/**
 * Ed25519 signatures over canonical JSON: what proves a human typed the approver passphrase.
 *
 * Everything signed is a small object with a `kind` naming what it is (so a signature over one
 * kind of statement can never be replayed as another), serialized with RFC 8785 canonical JSON.
 * Keys are identified by `ed25519:<32 hex>` (the first 128 bits of the SHA-256 of the raw public
 * key); public keys travel as 64 hex digits (the raw 32 bytes) and signatures as 128 hex digits,
 * so no field looks like a random token to the ledger's leak guard.
 *
 * Imports only node:crypto and canonicalize (no zod): the write gate's slow path verifies with it.
 */
import type { KeyObject } from 'node:crypto';
import canonicalize from 'canonicalize';

import { nodeCrypto } from './builtins.js';
import { PUBLIC_KEY_PATTERN, SIGNATURE_PATTERN } from './patterns.js';

export { KEY_ID_PATTERN, PUBLIC_KEY_PATTERN, SIGNATURE_PATTERN } from './patterns.js';
export { type ApprovalStatementInput, approvalStatement, SIGNED_KINDS } from './statement.js';

/** The DER prefix of an Ed25519 SubjectPublicKeyInfo (RFC 8410); the raw key follows it. */
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

/** The raw 32-byte public key of an Ed25519 key object, in hex. */
export function publicKeyHex(key: KeyObject): string {
  const der = (key.type === 'private' ? nodeCrypto().createPublicKey(key) : key).export({
    type: 'spki',
    format: 'der',
  });
  return der.subarray(der.length - 32).toString('hex');
}

/** A public key object from its hex form; undefined when the hex is not a key. */
export function publicKeyFromHex(hex: string): KeyObject | undefined {
  if (!PUBLIC_KEY_PATTERN.test(hex)) return undefined;
  try {
    return nodeCrypto().createPublicKey({
      key: Buffer.concat([SPKI_PREFIX, Buffer.from(hex, 'hex')]),
      format: 'der',
      type: 'spki',
    });
  } catch {
    return undefined;
  }
}

/** The key id of a public key given in hex. */
export function keyIdOfHex(hex: string): string {
  return `ed25519:${nodeCrypto()
    .createHash('sha256')
    .update(Buffer.from(hex, 'hex'))
    .digest('hex')
    .slice(0, 32)}`;
}

/** The key id of a key object (public or private). */
export function keyIdOf(key: KeyObject): string {
  return keyIdOfHex(publicKeyHex(key));
}

/** The bytes signed for a statement: canonical JSON of the statement. */
export function signedBytes(statement: Record<string, unknown>): Buffer {
  return Buffer.from(canonicalize(statement) as string, 'utf8');
}

/** Signs a statement with a (decrypted) private key; the signature in hex. */
export function signStatement(statement: Record<string, unknown>, privateKey: KeyObject): string {
  return nodeCrypto().sign(null, signedBytes(statement), privateKey).toString('hex');
}

/** True when `signature` is a valid signature of `statement` by `publicKey`. Never throws. */
export function verifyStatement(
  statement: Record<string, unknown>,
  signature: unknown,
  publicKey: KeyObject,
): boolean {
  if (typeof signature !== 'string' || !SIGNATURE_PATTERN.test(signature)) return false;
  try {
    return nodeCrypto().verify(null, signedBytes(statement), publicKey, Buffer.from(signature, 'hex'));
  } catch {
    return false;
  }
}
