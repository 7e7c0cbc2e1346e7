/**
 * Normalizer v1: turns a JSON decision value into one canonical text, so that harmless
 * formatting differences (key order, Unicode composition, 1 vs 1.0) never look like drift.
 *
 * Steps: validate that the value is plain JSON; normalize every string, keys included, to Unicode
 * NFC; serialize as RFC 8785 canonical JSON (sorted keys, one encoding, ECMAScript number form).
 * `null` and a missing field stay different because canonical JSON keeps both as they are.
 */
import canonicalize from 'canonicalize';
import { NORMALIZER_VERSION } from '../decision/rules.js';

/** Why a value cannot be normalized. `path` is a JSON path into the value, `$` for the root. */
export interface NormalizeProblem {
  code:
    | 'undefined_value'
    | 'function_value'
    | 'symbol_value'
    | 'bigint_value'
    | 'non_finite_number'
    | 'lone_surrogate'
    | 'cycle'
    | 'non_plain_object'
    | 'duplicate_key_after_nfc'
    | 'sparse_array';
  path: string;
  message: string;
}

/** The result of normalizing: the canonical text, or the first problem found. */
export type NormalizeResult =
  | { ok: true; canonical: string; normalizerVersion: typeof NORMALIZER_VERSION; problem?: never }
  | { ok: false; canonical?: never; normalizerVersion?: never; problem: NormalizeProblem };

/** Thrown by {@link normalizeOrThrow}; carries the problem for callers that want the code. */
export class NormalizeError extends Error {
  readonly problem: NormalizeProblem;
  constructor(problem: NormalizeProblem) {
    super(`${problem.path}: ${problem.message}`);
    this.name = 'NormalizeError';
    this.problem = problem;
  }
}

// A high surrogate not followed by a low one, or a low one not preceded by a high one.
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function childPath(path: string, key: string | number): string {
  if (typeof key === 'number') return `${path}[${key}]`;
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}

function fail(code: NormalizeProblem['code'], path: string, message: string): never {
  throw new NormalizeError({ code, path, message });
}

function nfcString(s: string, path: string): string {
  if (LONE_SURROGATE.test(s))
    fail('lone_surrogate', path, 'string has a lone UTF-16 surrogate, which JSON cannot carry');
  return s.normalize('NFC');
}

/** Rebuilds `value` as plain JSON with NFC strings, rejecting anything JSON cannot carry. */
function toNormalJson(value: unknown, path: string, stack: Set<object>): unknown {
  switch (typeof value) {
    case 'string':
      return nfcString(value, path);
    case 'boolean':
      return value;
    case 'number':
      if (!Number.isFinite(value)) fail('non_finite_number', path, `${value} is not a JSON number`);
      return value;
    case 'undefined':
      fail('undefined_value', path, 'undefined is not JSON; omit the field or use null');
      break;
    case 'function':
      fail('function_value', path, 'a function is not JSON');
      break;
    case 'symbol':
      fail('symbol_value', path, 'a symbol is not JSON');
      break;
    case 'bigint':
      fail('bigint_value', path, 'a BigInt is not JSON; use a number or a string');
      break;
  }
  if (value === null) return null;
  const obj = value as object;
  if (stack.has(obj)) fail('cycle', path, 'the value refers to itself (a cycle)');
  stack.add(obj);
  try {
    if (Array.isArray(obj)) {
      const out: unknown[] = [];
      for (let i = 0; i < obj.length; i++) {
        if (!(i in obj)) fail('sparse_array', childPath(path, i), 'array has a hole; use null');
        out.push(toNormalJson(obj[i], childPath(path, i), stack));
      }
      return out;
    }
    const proto = Object.getPrototypeOf(obj);
    if (proto !== Object.prototype && proto !== null) {
      const kind = (obj as { constructor?: { name?: string } }).constructor?.name ?? 'object';
      fail(
        'non_plain_object',
        path,
        `a ${kind} is not plain JSON; convert it to a string, number or plain object`,
      );
    }
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(obj)) {
      const child = childPath(path, key);
      const nkey = nfcString(key, child);
      if (Object.hasOwn(out, nkey)) {
        fail('duplicate_key_after_nfc', child, 'two keys become the same after Unicode NFC normalization');
      }
      // defineProperty, not assignment: `out["__proto__"] = v` would set the prototype and drop the
      // key, so {"__proto__": 1} and {} would share a digest.
      Object.defineProperty(out, nkey, {
        value: toNormalJson((obj as Record<string, unknown>)[key], child, stack),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  } finally {
    stack.delete(obj);
  }
}

/** Normalizes a decision value with normalizer v1. Never throws. */
export function normalize(value: unknown): NormalizeResult {
  try {
    const normal = toNormalJson(value, '$', new Set());
    // Validated above, so canonicalize cannot meet a function or undefined and emit invalid JSON.
    const canonical = canonicalize(normal) as string;
    return { ok: true, canonical, normalizerVersion: NORMALIZER_VERSION };
  } catch (e) {
    if (e instanceof NormalizeError) return { ok: false, problem: e.problem };
    throw e;
  }
}

/** Normalizes a decision value, throwing {@link NormalizeError} when it is not plain JSON. */
export function normalizeOrThrow(value: unknown): string {
  const r = normalize(value);
  if (!r.ok) throw new NormalizeError(r.problem);
  return r.canonical;
}
