/**
 * Digests of normalized decision values. Self-describing strings:
 * `sha256:<64 hex>` (plain) and `hmac-sha256:<keyId>:<64 hex>` (keyed).
 *
 * A plain hash of a low-entropy value (yes/no, a short branch name) can be guessed by
 * enumeration, so sensitive decisions use a keyed digest. The key never leaves the
 * {@link DigestKey} object: only its fingerprint, `keyId`, is written anywhere.
 */
import { createHash, createHmac } from 'node:crypto';
import { normalizeOrThrow } from './normalize.js';

/** A key for keyed digests. Keep the object itself out of logs, spans and files. */
export interface DigestKey {
  /** 16 hex characters identifying the key; safe to store and export. */
  readonly keyId: string;
  /** @internal the secret bytes. */
  readonly secret: Buffer;
}

/** Fewest bytes accepted for a digest key. */
export const MIN_KEY_BYTES = 16;

// Domain-separated, so the key id is not a digest of any decision value.
const KEY_ID_LABEL = 'agent-continuity/key-id/v1';

/** Builds a {@link DigestKey} from secret bytes. Throws when the key is too short. */
export function createDigestKey(secret: Uint8Array): DigestKey {
  if (secret.length < MIN_KEY_BYTES) {
    throw new Error(`digest key too short: need at least ${MIN_KEY_BYTES} bytes, got ${secret.length}`);
  }
  const buf = Buffer.from(secret);
  const keyId = createHmac('sha256', buf).update(KEY_ID_LABEL).digest('hex').slice(0, 16);
  const key = { keyId, secret: buf };
  // Keep the secret out of JSON.stringify and util.inspect by accident.
  Object.defineProperty(key, 'secret', { enumerable: false });
  Object.defineProperty(key, 'toJSON', { enumerable: false, value: () => ({ keyId }) });
  return Object.freeze(key);
}

/** SHA-256 of a canonical text, as `sha256:<hex>`. */
export function sha256Digest(canonical: string): string {
  return `sha256:${createHash('sha256').update(canonical, 'utf8').digest('hex')}`;
}

/** HMAC-SHA-256 of a canonical text, as `hmac-sha256:<keyId>:<hex>`. */
export function hmacDigest(canonical: string, key: DigestKey): string {
  return `hmac-sha256:${key.keyId}:${createHmac('sha256', key.secret).update(canonical, 'utf8').digest('hex')}`;
}

/**
 * Normalizes a decision value (normalizer v1) and digests it: keyed when a key is given.
 * Throws {@link NormalizeError} when the value is not plain JSON.
 */
export function digestValue(value: unknown, key?: DigestKey): string {
  const canonical = normalizeOrThrow(value);
  return key ? hmacDigest(canonical, key) : sha256Digest(canonical);
}

// The scheme parser lives apart so the classifier (and the span processor) need not load the normalizer.
export { digestScheme } from './scheme.js';
