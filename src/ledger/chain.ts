/**
 * The hash chain. Every line carries `seq`, `prev` (the previous line's hash, `null` on the first)
 * and `hash`: SHA-256 of the record's canonical JSON (RFC 8785) without `hash`, or, with a chain
 * key, HMAC-SHA-256 under that key, so whoever edits the file cannot recompute the chain.
 *
 * Hashes are self-describing like digests: `sha256:<hex>` or `hmac-sha256:<keyId>:<hex>`. The
 * line itself is the canonical JSON of the whole record, so a byte-level edit that leaves the
 * parsed value unchanged (white space, key order, a duplicate key) is also caught by `verify`.
 *
 * Imports only node:crypto and canonicalize (no zod): the lean paths use it.
 */
import { createHash, createHmac } from 'node:crypto';
import canonicalize from 'canonicalize';

/** A chain key. Keep the object out of logs, spans and files: only `keyId` may be written. */
export interface ChainKey {
  /** 16 hex characters identifying the key; stored in every keyed hash. */
  readonly keyId: string;
  /** @internal the secret bytes. */
  readonly secret: Buffer;
}

/** Fewest bytes accepted for a chain key. */
export const MIN_CHAIN_KEY_BYTES = 16;

// Domain-separated from the digest key id, so the same bytes used for both give different ids.
const CHAIN_KEY_ID_LABEL = 'agent-continuity/chain-key-id/v1';

/** Builds a {@link ChainKey} from secret bytes. Throws when the key is too short. */
export function createChainKey(secret: Uint8Array): ChainKey {
  if (secret.length < MIN_CHAIN_KEY_BYTES) {
    throw new Error(`chain key too short: need at least ${MIN_CHAIN_KEY_BYTES} bytes, got ${secret.length}`);
  }
  const buf = Buffer.from(secret);
  const keyId = createHmac('sha256', buf).update(CHAIN_KEY_ID_LABEL).digest('hex').slice(0, 16);
  const key = { keyId, secret: buf };
  // Keep the secret out of JSON.stringify and util.inspect by accident.
  Object.defineProperty(key, 'secret', { enumerable: false });
  Object.defineProperty(key, 'toJSON', { enumerable: false, value: () => ({ keyId }) });
  return Object.freeze(key);
}

/** The chain scheme a key gives: `sha256` without a key, `hmac-sha256:<keyId>` with one. */
export function chainSchemeOf(key: ChainKey | undefined): string {
  return key ? `hmac-sha256:${key.keyId}` : 'sha256';
}

/** Canonical JSON (RFC 8785) of a record. */
export function canonicalJson(value: unknown): string {
  return canonicalize(value) as string;
}

/** Hashes the canonical text of a record without its `hash` field. */
export function hashCanonical(canonical: string, key: ChainKey | undefined): string {
  if (key) {
    return `hmac-sha256:${key.keyId}:${createHmac('sha256', key.secret).update(canonical, 'utf8').digest('hex')}`;
  }
  return `sha256:${createHash('sha256').update(canonical, 'utf8').digest('hex')}`;
}

/** The hash a record must carry: over every field except `hash`. */
export function recordHash(record: Record<string, unknown>, key: ChainKey | undefined): string {
  const { hash: _ignored, ...body } = record;
  return hashCanonical(canonicalJson(body), key);
}

/** True when every object in `v` has its keys in RFC 8785 order (UTF-16 code units, no repeats). */
function keysInOrder(v: unknown): boolean {
  if (v === null || typeof v !== 'object') return true;
  if (Array.isArray(v)) return v.every(keysInOrder);
  let prev: string | undefined;
  for (const k of Object.keys(v)) {
    if (prev !== undefined && !(prev < k)) return false;
    if (!keysInOrder((v as Record<string, unknown>)[k])) return false;
    prev = k;
  }
  return true;
}

/**
 * For a record parsed from the line `text`: when `text` is the canonical JSON (RFC 8785) of the
 * record, returns the canonical JSON of the record without `hash` (what its hash is computed
 * over); otherwise undefined. `verify` calls it for every line.
 *
 * One pass of the native `JSON.stringify` instead of two of canonicalize: for a value parsed from
 * JSON text whose objects all hold their keys in canonical order, and whose text has no `\u`
 * escape (so no lone surrogate, which RFC 8785 forbids), canonicalize's output is exactly
 * `JSON.stringify`'s, since canonicalize serializes every string and number with
 * `JSON.stringify`. Anything else takes canonicalize itself, so the answer is the same.
 */
export function canonicalBodyOf(record: Record<string, unknown>, text: string): string | undefined {
  if (!text.includes('\\u') && keysInOrder(record)) {
    if (JSON.stringify(record) !== text) return undefined;
    const cut = withoutHashMember(text, record.hash);
    if (cut !== undefined) return cut;
    const { hash: _ignored, ...body } = record;
    return JSON.stringify(body);
  }
  try {
    if (canonicalJson(record) !== text) return undefined;
    const { hash: _ignored, ...body } = record;
    return canonicalJson(body);
  } catch {
    return undefined; // a lone surrogate: not canonical JSON
  }
}

/**
 * The canonical text of a record without its `hash` member, cut from the canonical text of the
 * whole record. The member is found by its text, `"hash":"<the hash>"`. Only a record that also
 * holds that very text deeper inside could be cut at the wrong place, and such a record cannot
 * carry a valid hash anyway (its hash would be an input of itself), so the verdict is the same.
 */
function withoutHashMember(text: string, hash: unknown): string | undefined {
  if (typeof hash !== 'string') return undefined;
  const member = `"hash":${JSON.stringify(hash)}`;
  const at = text.indexOf(member);
  if (at === -1) return undefined;
  const end = at + member.length;
  if (text[at - 1] === ',') return text.slice(0, at - 1) + text.slice(end);
  if (text[end] === ',') return text.slice(0, at) + text.slice(end + 1);
  return text.slice(0, at) + text.slice(end);
}

/**
 * Seals a record: adds `hash` and returns the line to write (canonical JSON of the whole record
 * and a newline) together with the hash. Each top-level value is canonicalized once: the hashed
 * text and the line differ only by the `hash` member, which RFC 8785 places by key order.
 */
export function sealRecord(
  body: Record<string, unknown>,
  key: ChainKey | undefined,
): { line: string; hash: string } {
  // Default sort compares UTF-16 code units, the order RFC 8785 prescribes for keys.
  const keys = Object.keys(body)
    .filter((k) => body[k] !== undefined)
    .sort();
  const members = keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(body[k])}`);
  const hash = hashCanonical(`{${members.join(',')}}`, key);
  let at = keys.findIndex((k) => k > 'hash');
  if (at === -1) at = keys.length;
  members.splice(at, 0, `"hash":${JSON.stringify(hash)}`);
  return { line: `{${members.join(',')}}\n`, hash };
}
