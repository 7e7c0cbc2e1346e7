/**
 * Golden vectors (test/vectors/*.json, written by test/vectors/generate.py from an independent
 * Python implementation): canonical JSON, SHA-256 and HMAC digests.
 */
import { readFileSync } from 'node:fs';
import canonicalize from 'canonicalize';
import { describe, expect, it } from 'vitest';
import { createDigestKey, digestValue, sha256Digest } from '../../src/digest/digest.js';
import { decodeKeyText } from '../../src/digest/key-file.js';
import { normalize } from '../../src/digest/normalize.js';

interface CanonicalVector {
  name: string;
  input: string;
  canonical: string;
  rfc8785?: string;
  utf8Hex?: string;
}
interface DigestVector {
  name: string;
  input: string;
  canonical: string;
  digest: string;
}

function load<T>(name: string): T {
  return JSON.parse(readFileSync(new URL(`../vectors/${name}`, import.meta.url), 'utf8')) as T;
}

const canonical = load<{
  vectors: CanonicalVector[];
  rejected: Array<{ name: string; input: string; code: string }>;
  numbers: Array<{ ieee754: string; canonical?: string; code?: string }>;
}>('canonical-json.json');
const sha256 = load<{ vectors: DigestVector[] }>('sha256.json');
const hmac = load<{
  key: { hex: string; base64: string; keyId: string };
  otherKeys: Array<{ utf8?: string; hex?: string; keyId: string }>;
  vectors: DigestVector[];
}>('hmac.json');

function doubleFromBits(hex: string): number {
  const view = new DataView(new ArrayBuffer(8));
  view.setBigUint64(0, BigInt(`0x${hex}`));
  return view.getFloat64(0);
}

describe('golden vectors', () => {
  it('has the vectors the spec asks for', () => {
    const names = canonical.vectors.map((v) => v.name);
    expect(names).toContain('rfc8785 3.2.2 sample');
    expect(names).toContain('rfc8785 3.2.3 sorting');
    expect(canonical.numbers.length).toBeGreaterThanOrEqual(26);
    expect(sha256.vectors.length).toBe(canonical.vectors.length);
    expect(hmac.vectors.length).toBe(canonical.vectors.length);
  });

  describe('canonical JSON (normalizer v1)', () => {
    it.each(canonical.vectors.map((v) => [v.name, v] as const))('%s', (_name, v) => {
      const r = normalize(JSON.parse(v.input));
      expect(r).toEqual({ ok: true, canonical: v.canonical, normalizerVersion: 1 });
    });

    it('reproduces the UTF-8 bytes RFC 8785 prints for its sample', () => {
      const v = canonical.vectors.find((x) => x.utf8Hex)!;
      expect(Buffer.from(normalize(JSON.parse(v.input)).canonical!, 'utf8').toString('hex')).toBe(v.utf8Hex);
    });

    it.each(canonical.rejected.map((v) => [v.name, v] as const))('rejects %s', (_name, v) => {
      const r = normalize(JSON.parse(v.input));
      expect(r.ok).toBe(false);
      expect(r.problem?.code).toBe(v.code);
    });
  });

  describe('plain RFC 8785 (the canonicalize dependency the normalizer builds on)', () => {
    it.each(canonical.vectors.map((v) => [v.name, v] as const))('%s', (_name, v) => {
      expect(canonicalize(JSON.parse(v.input))).toBe(v.rfc8785 ?? v.canonical);
    });

    it('differs from normalizer v1 only where NFC changes a string (the RFC sorting example)', () => {
      const differing = canonical.vectors.filter((v) => v.rfc8785 !== undefined).map((v) => v.name);
      expect(differing).toContain('rfc8785 3.2.3 sorting');
      for (const v of canonical.vectors.filter((x) => x.rfc8785 !== undefined)) {
        expect(v.rfc8785!.normalize('NFC')).not.toBe(v.rfc8785);
      }
    });
  });

  describe('RFC 8785 Appendix B numbers', () => {
    it.each(canonical.numbers.map((n) => [n.ieee754, n] as const))('0x%s', (_bits, n) => {
      const r = normalize(doubleFromBits(n.ieee754));
      if (n.canonical !== undefined)
        expect(r).toEqual({ ok: true, canonical: n.canonical, normalizerVersion: 1 });
      else expect(r.problem?.code).toBe(n.code);
    });
  });

  describe('SHA-256 digests', () => {
    it.each(sha256.vectors.map((v) => [v.name, v] as const))('%s', (_name, v) => {
      expect(sha256Digest(v.canonical)).toBe(v.digest);
      expect(digestValue(JSON.parse(v.input))).toBe(v.digest);
    });
  });

  describe('HMAC-SHA-256 digests with the public test key', () => {
    const key = createDigestKey(Buffer.from(hmac.key.hex, 'hex'));

    it('derives the key id from the key', () => {
      expect(key.keyId).toBe(hmac.key.keyId);
      expect(createDigestKey(decodeKeyText(hmac.key.hex)).keyId).toBe(hmac.key.keyId);
      expect(createDigestKey(decodeKeyText(hmac.key.base64)).keyId).toBe(hmac.key.keyId);
    });

    it('derives the key id of other keys the same way', () => {
      for (const k of hmac.otherKeys) {
        const bytes = k.utf8 !== undefined ? Buffer.from(k.utf8, 'utf8') : Buffer.from(k.hex!, 'hex');
        expect(createDigestKey(bytes).keyId).toBe(k.keyId);
      }
    });

    it.each(hmac.vectors.map((v) => [v.name, v] as const))('%s', (_name, v) => {
      expect(digestValue(JSON.parse(v.input), key)).toBe(v.digest);
    });
  });
});
