/**
 * Normalizer v1 (issue 2 §3): NFC on every string, RFC 8785 canonical JSON, null ≠ missing, and
 * a clear rejection of everything JSON cannot carry.
 */
import { describe, expect, it } from 'vitest';
import { NORMALIZER_VERSION } from '../../src/decision/model.js';
import { digestValue } from '../../src/digest/digest.js';
import { NormalizeError, normalize, normalizeOrThrow } from '../../src/digest/normalize.js';

function canonical(value: unknown): string {
  const r = normalize(value);
  if (!r.ok) throw new Error(`unexpected problem ${r.problem.code} at ${r.problem.path}`);
  return r.canonical;
}

function problem(value: unknown) {
  const r = normalize(value);
  expect(r.ok).toBe(false);
  return r.problem!;
}

describe('normalize', () => {
  it('is normalizer version 1, and says so in its result', () => {
    expect(NORMALIZER_VERSION).toBe(1);
    expect(normalize({ a: 1 })).toEqual({ ok: true, canonical: '{"a":1}', normalizerVersion: 1 });
  });

  describe('key order', () => {
    it('sorts object keys, so insertion order never changes the digest', () => {
      expect(canonical({ b: 1, a: 2 })).toBe('{"a":2,"b":1}');
      expect(digestValue({ b: 1, a: 2 })).toBe(digestValue({ a: 2, b: 1 }));
    });

    it('sorts nested objects and keeps array order', () => {
      expect(canonical({ z: [3, { d: 4, c: 5 }], a: { y: 1, x: 2 } })).toBe(
        '{"a":{"x":2,"y":1},"z":[3,{"c":5,"d":4}]}',
      );
      expect(canonical([2, 1])).not.toBe(canonical([1, 2]));
    });

    it('sorts by UTF-16 code unit, not by locale', () => {
      expect(canonical({ b: 1, B: 2, ä: 3, a: 4 })).toBe('{"B":2,"a":4,"b":1,"ä":3}');
    });
  });

  describe('null and missing', () => {
    it('keeps a null member and a missing member different', () => {
      expect(canonical({ a: null, b: 1 })).toBe('{"a":null,"b":1}');
      expect(canonical({ b: 1 })).toBe('{"b":1}');
      expect(digestValue({ a: null, b: 1 })).not.toBe(digestValue({ b: 1 }));
    });

    it('keeps null in arrays', () => {
      expect(canonical([null])).toBe('[null]');
      expect(canonical([null])).not.toBe(canonical([]));
    });
  });

  describe('Unicode', () => {
    it('turns NFD strings into NFC, so composed and decomposed text share a digest', () => {
      const nfc = 'caf\u00e9';
      const nfd = 'cafe\u0301';
      expect(nfc).not.toBe(nfd);
      expect(canonical(nfd)).toBe(`"${nfc}"`);
      expect(digestValue({ name: nfd })).toBe(digestValue({ name: nfc }));
    });

    it('normalizes keys too', () => {
      expect(canonical({ 'cafe\u0301': 1 })).toBe('{"caf\u00e9":1}');
    });

    it('keeps characters outside the BMP as valid surrogate pairs', () => {
      expect(canonical('\u{1F600}')).toBe('"\u{1F600}"');
    });

    it('keeps different text different', () => {
      expect(digestValue('main')).not.toBe(digestValue('Main'));
      expect(digestValue('main')).not.toBe(digestValue('main '));
    });
  });

  describe('numbers', () => {
    it('gives 1, 1.0 and 1e0 one form', () => {
      const forms = ['1', '1.0', '1e0', '1E+0', '10e-1', '0.1e1'].map((t) => canonical(JSON.parse(t)));
      expect(new Set(forms)).toEqual(new Set(['1']));
      expect(digestValue(JSON.parse('{"n":1.0}'))).toBe(digestValue({ n: 1 }));
    });

    it('writes -0 as 0', () => {
      expect(canonical(-0)).toBe('0');
      expect(canonical(JSON.parse('-0.0'))).toBe('0');
      expect(digestValue({ n: -0 })).toBe(digestValue({ n: 0 }));
    });

    it('uses the ECMAScript number form', () => {
      expect(canonical(1e21)).toBe('1e+21');
      expect(canonical(1e20)).toBe('100000000000000000000');
      expect(canonical(1e-7)).toBe('1e-7');
      expect(canonical(0.000001)).toBe('0.000001');
      expect(canonical(4.5)).toBe('4.5');
    });

    it('keeps a number and its string different', () => {
      expect(digestValue(1)).not.toBe(digestValue('1'));
    });
  });

  describe('plain JSON that is accepted', () => {
    it('accepts scalars, nested structures and objects without a prototype', () => {
      const bare = Object.assign(Object.create(null) as object, { b: true, a: 'x' });
      expect(canonical(bare)).toBe('{"a":"x","b":true}');
      expect(canonical(null)).toBe('null');
      expect(canonical('')).toBe('""');
      expect(canonical({ a: [[], {}] })).toBe('{"a":[[],{}]}');
    });

    it('accepts the same object twice when it is not a cycle', () => {
      const shared = { x: 1 };
      expect(canonical({ a: shared, b: shared })).toBe('{"a":{"x":1},"b":{"x":1}}');
    });

    it('keeps a "__proto__" key as an ordinary member', () => {
      const parsed = JSON.parse('{"__proto__":{"a":1},"b":2}') as unknown;
      expect(canonical(parsed)).toBe('{"__proto__":{"a":1},"b":2}');
      expect(digestValue(JSON.parse('{"__proto__":1}'))).not.toBe(digestValue({}));
    });

    it('does not modify its input', () => {
      const input = Object.freeze({ b: Object.freeze(['e\u0301']), a: 1 });
      canonical(input);
      expect(input).toEqual({ b: ['e\u0301'], a: 1 });
    });
  });

  describe('values JSON cannot carry', () => {
    it('rejects undefined, at the root and in a member', () => {
      expect(problem(undefined)).toMatchObject({ code: 'undefined_value', path: '$' });
      expect(problem({ a: { b: undefined } })).toMatchObject({ code: 'undefined_value', path: '$.a.b' });
    });

    it('rejects undefined in an array', () => {
      expect(problem([1, undefined])).toMatchObject({ code: 'undefined_value', path: '$[1]' });
    });

    it('rejects functions (which canonicalize 4 would silently turn into invalid JSON)', () => {
      expect(problem(() => 1)).toMatchObject({ code: 'function_value', path: '$' });
      expect(problem({ f() {} })).toMatchObject({ code: 'function_value', path: '$.f' });
      expect(problem({ toJSON: () => 'x' })).toMatchObject({ code: 'function_value', path: '$.toJSON' });
    });

    it('rejects NaN', () => {
      expect(problem({ n: Number.NaN })).toMatchObject({ code: 'non_finite_number', path: '$.n' });
    });

    it('rejects Infinity and -Infinity', () => {
      expect(problem(Number.POSITIVE_INFINITY)).toMatchObject({ code: 'non_finite_number' });
      expect(problem([Number.NEGATIVE_INFINITY])).toMatchObject({ code: 'non_finite_number', path: '$[0]' });
    });

    it('rejects BigInt', () => {
      expect(problem({ n: 10n })).toMatchObject({ code: 'bigint_value', path: '$.n' });
    });

    it('rejects symbols', () => {
      expect(problem({ s: Symbol('x') })).toMatchObject({ code: 'symbol_value', path: '$.s' });
    });

    it('rejects cycles through objects and arrays', () => {
      const o: Record<string, unknown> = { a: 1 };
      o.self = o;
      expect(problem(o)).toMatchObject({ code: 'cycle', path: '$.self' });
      const arr: unknown[] = [];
      arr.push({ back: arr });
      expect(problem(arr)).toMatchObject({ code: 'cycle', path: '$[0].back' });
    });

    it('rejects lone surrogates in values and in keys', () => {
      expect(problem('a\uD800b')).toMatchObject({ code: 'lone_surrogate', path: '$' });
      expect(problem(['\uDC00'])).toMatchObject({ code: 'lone_surrogate', path: '$[0]' });
      expect(problem({ '\uDBFF': 1 })).toMatchObject({ code: 'lone_surrogate' });
      expect(problem('x\uDE00\uD83D')).toMatchObject({ code: 'lone_surrogate' });
    });

    it('rejects objects that are not plain: Date, Map, Set, class instances, boxed strings, byte arrays', () => {
      class Branch {
        name = 'main';
      }
      for (const value of [
        new Date(0),
        new Map([['a', 1]]),
        new Set([1]),
        new Branch(),
        Object('x'),
        new Uint8Array(2),
        /re/,
      ]) {
        expect(problem({ v: value })).toMatchObject({ code: 'non_plain_object', path: '$.v' });
      }
      expect(problem({ v: new Date(0) }).message).toContain('Date');
    });

    it('rejects two keys that become one after NFC', () => {
      expect(problem({ 'caf\u00e9': 1, 'cafe\u0301': 2 })).toMatchObject({ code: 'duplicate_key_after_nfc' });
    });

    it('rejects sparse arrays, naming the hole', () => {
      // biome-ignore lint/suspicious/noSparseArray: the hole is what is tested
      expect(problem([1, , 3])).toMatchObject({ code: 'sparse_array', path: '$[1]' });
      expect(problem(new Array(2))).toMatchObject({ code: 'sparse_array', path: '$[0]' });
    });

    it('names awkward keys in the path so a person can find them', () => {
      expect(problem({ 'a b': { 'x-y': undefined } }).path).toBe('$["a b"]["x-y"]');
    });

    it('gives a message that says what to do', () => {
      expect(problem({ a: undefined }).message).toMatch(/omit the field or use null/);
      expect(problem(new Array(1)).message).toMatch(/use null/);
    });
  });

  describe('normalizeOrThrow', () => {
    it('returns the canonical text', () => {
      expect(normalizeOrThrow({ b: 1, a: [true] })).toBe('{"a":[true],"b":1}');
    });

    it('throws a NormalizeError carrying the problem code and path', () => {
      let thrown: unknown;
      try {
        normalizeOrThrow({ a: [1, Number.NaN] });
      } catch (e) {
        thrown = e;
      }
      expect(thrown).toBeInstanceOf(NormalizeError);
      expect((thrown as NormalizeError).problem).toMatchObject({ code: 'non_finite_number', path: '$.a[1]' });
      expect((thrown as NormalizeError).message).toMatch(/^\$\.a\[1\]: /);
    });

    it('makes digestValue refuse the same values', () => {
      expect(() => digestValue({ f: () => 1 })).toThrow(NormalizeError);
      expect(() => digestValue(10n)).toThrow(NormalizeError);
    });
  });
});
