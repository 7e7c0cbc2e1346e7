/**
 * The chain's hash and line format: fixed vectors (so the format cannot drift silently) and the
 * equivalence of the sealed line with the canonical JSON of the whole record.
 */
import { createHash, createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { canonicalJson, createChainKey, recordHash, sealRecord } from '../../src/ledger/chain.js';
import { hashScheme } from '../../src/ledger/hash-scheme.js';

const body = {
  v: 1,
  type: 'activity',
  sessionId: 'session-1',
  state: 'working',
  at: '2026-11-30T12:00:00Z',
  seq: 1,
  prev: null,
};
const CANONICAL =
  '{"at":"2026-11-30T12:00:00Z","prev":null,"seq":1,"sessionId":"session-1","state":"working","type":"activity","v":1}';

describe('sealRecord', () => {
  it('hashes the canonical JSON of the record without hash (SHA-256)', () => {
    expect(canonicalJson(body)).toBe(CANONICAL);
    const { line, hash } = sealRecord(body, undefined);
    expect(hash).toBe(`sha256:${createHash('sha256').update(CANONICAL).digest('hex')}`);
    expect(line).toBe(`${CANONICAL.replace('"prev":null', `"hash":"${hash}","prev":null`)}\n`);
    expect(recordHash(JSON.parse(line), undefined)).toBe(hash);
  });

  it('hashes with HMAC-SHA-256 under a chain key, naming the key id', () => {
    const secret = Buffer.alloc(32, 1);
    const key = createChainKey(secret);
    const { hash } = sealRecord(body, key);
    expect(hash).toBe(
      `hmac-sha256:${key.keyId}:${createHmac('sha256', secret).update(CANONICAL).digest('hex')}`,
    );
    expect(hashScheme(hash)).toBe(`hmac-sha256:${key.keyId}`);
    expect(JSON.stringify(key)).toBe(`{"keyId":"${key.keyId}"}`);
  });

  it('writes exactly the canonical JSON of the whole record, whatever the keys', () => {
    for (let i = 0; i < 500; i++) {
      const b: Record<string, unknown> = {
        v: 1,
        zeta: i,
        alpha: { b: [i, 'x', { d: null, c: 1.5 }], a: 'é' },
        hasa: i % 2 === 0,
        has: 'x',
        hashes: [],
        seq: i,
        prev: i % 3 ? null : `sha256:${'0'.repeat(64)}`,
        skipped: undefined,
      };
      const { line, hash } = sealRecord(b, undefined);
      expect(line).toBe(`${canonicalJson({ ...b, hash })}\n`);
    }
  });

  it('refuses chain keys shorter than 16 bytes', () => {
    expect(() => createChainKey(Buffer.alloc(15))).toThrow(/at least 16 bytes/);
  });
});
