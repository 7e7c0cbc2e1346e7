/**
 * The chain's hash and line format: fixed vectors (so the format cannot drift silently) and the
 * equivalence of the sealed line with the canonical JSON of the whole record.
 */
import { createHash, createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  canonicalBodyOf,
  canonicalJson,
  createChainKey,
  recordHash,
  sealRecord,
} from '../../src/ledger/chain.js';
import { hashScheme } from '../../src/ledger/hash-scheme.js';
import { repoRoot } from './helpers.js';

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

describe('canonicalBodyOf (the check verify runs on every line)', () => {
  const vectors = (
    JSON.parse(readFileSync(join(repoRoot, 'test', 'vectors', 'canonical-json.json'), 'utf8')) as {
      vectors: Array<{ name: string; input: string; canonical: string; rfc8785?: string }>;
    }
  ).vectors;
  const hash = `sha256:${'ab'.repeat(32)}`;

  it('accepts the canonical text of every object vector and returns the canonical text without hash', () => {
    let objects = 0;
    for (const v of vectors) {
      const value = JSON.parse(v.input) as unknown;
      if (value === null || typeof value !== 'object' || Array.isArray(value)) continue;
      objects++;
      const record = { ...(value as Record<string, unknown>), hash };
      const text = canonicalJson(record);
      expect(canonicalBodyOf(JSON.parse(text), text), v.name).toBe(canonicalJson(value));
    }
    expect(objects).toBeGreaterThan(10);
  });

  it('refuses every vector input that is not already canonical, exactly as canonicalize decides', () => {
    for (const v of vectors) {
      const value = JSON.parse(v.input) as unknown;
      if (value === null || typeof value !== 'object' || Array.isArray(value)) continue;
      const canonical = canonicalJson(value) === v.input;
      expect(canonicalBodyOf(value as Record<string, unknown>, v.input) !== undefined, v.name).toBe(
        canonical,
      );
    }
  });

  it('refuses byte changes that keep the parsed value', () => {
    const text = canonicalJson({ a: 1, b: 'x/y', c: { d: [1, 2] }, hash });
    const variants = [
      text.replace('{', '{ '),
      text.replace('"a":1', '"a":1.0'),
      text.replace('"a":1', '"a":1e0'),
      text.replace('x/y', 'x\\/y'),
      text.replace('"b":"x', '"b":"\\u0078'),
      text.replace('"a":1,', '"a":0,"a":1,'),
      `{"c":{"d":[1,2]},${text.slice(1).replace(',"c":{"d":[1,2]}', '')}`,
    ];
    for (const t of variants) {
      expect(t).not.toBe(text);
      expect(canonicalBodyOf(JSON.parse(t), t), t).toBeUndefined();
    }
    expect(canonicalBodyOf(JSON.parse(text), text)).toBe(canonicalJson({ a: 1, b: 'x/y', c: { d: [1, 2] } }));
  });

  it('orders integer-like keys as RFC 8785 does (by code unit, not as V8 enumerates them)', () => {
    const text = canonicalJson({ '10': 1, '9': 2, hash });
    expect(text).toBe(`{"10":1,"9":2,"hash":"${hash}"}`);
    expect(canonicalBodyOf(JSON.parse(text), text)).toBe('{"10":1,"9":2}');
  });

  it('refuses a lone surrogate, which canonical JSON cannot hold', () => {
    const text = `{"a":"\\ud800","hash":"${hash}"}`;
    expect(canonicalBodyOf(JSON.parse(text), text)).toBeUndefined();
  });

  it('cuts the hash member wherever it sits among the keys', () => {
    for (const record of [{ hash }, { a: 1, hash }, { hash, z: 1 }, { a: 1, hash, z: { hash: 'x' } }]) {
      const text = canonicalJson(record);
      const { hash: _h, ...body } = record;
      expect(canonicalBodyOf(JSON.parse(text), text)).toBe(canonicalJson(body));
    }
  });
});
