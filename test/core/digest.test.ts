/**
 * Digests (issue 2 §3): self-describing `sha256:` and `hmac-sha256:<keyId>:` strings, keys that
 * never leak, and key loading from a file or the environment.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { DIGEST_PATTERN } from '../../src/decision/model.js';
import {
  createDigestKey,
  digestScheme,
  digestValue,
  hmacDigest,
  MIN_KEY_BYTES,
  sha256Digest,
} from '../../src/digest/digest.js';
import {
  DIGEST_KEY_ENV,
  DIGEST_KEY_FILE_ENV,
  decodeKeyText,
  loadDigestKey,
} from '../../src/digest/key-file.js';

const SECRET_HEX = '5f'.repeat(16) + 'a1'.repeat(16);
const secret = Buffer.from(SECRET_HEX, 'hex');

describe('digestValue', () => {
  it('writes plain digests as sha256:<64 hex>', () => {
    const d = digestValue({ scope: 'acme/payments' });
    expect(d).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(d).toMatch(DIGEST_PATTERN);
  });

  it('writes keyed digests as hmac-sha256:<keyId>:<64 hex>', () => {
    const key = createDigestKey(secret);
    const d = digestValue('yes', key);
    expect(d).toMatch(/^hmac-sha256:[0-9a-f]{16}:[0-9a-f]{64}$/);
    expect(d.split(':')[1]).toBe(key.keyId);
    expect(d).toMatch(DIGEST_PATTERN);
  });

  it('gives a keyed digest that a plain hash of the same value cannot match', () => {
    const key = createDigestKey(secret);
    const keyed = digestValue('yes', key).split(':')[2];
    const plain = digestValue('yes').split(':')[1];
    expect(keyed).not.toBe(plain);
  });

  it('gives different keyed digests under different keys', () => {
    const a = createDigestKey(secret);
    const b = createDigestKey(Buffer.alloc(32, 7));
    expect(a.keyId).not.toBe(b.keyId);
    expect(digestValue('main', a)).not.toBe(digestValue('main', b));
  });

  it('digests the canonical text: sha256Digest/hmacDigest agree with digestValue', () => {
    const key = createDigestKey(secret);
    expect(digestValue({ b: 1, a: 2 })).toBe(sha256Digest('{"a":2,"b":1}'));
    expect(digestValue({ b: 1, a: 2 }, key)).toBe(hmacDigest('{"a":2,"b":1}', key));
  });
});

describe('digestScheme', () => {
  it('is the algorithm for plain digests and the algorithm with key id for keyed ones', () => {
    const key = createDigestKey(secret);
    expect(digestScheme(digestValue(1))).toBe('sha256');
    expect(digestScheme(digestValue(1, key))).toBe(`hmac-sha256:${key.keyId}`);
  });
});

describe('createDigestKey', () => {
  it(`refuses keys shorter than ${MIN_KEY_BYTES} bytes`, () => {
    expect(() => createDigestKey(Buffer.alloc(MIN_KEY_BYTES - 1))).toThrow(/too short/);
    expect(() => createDigestKey(Buffer.alloc(MIN_KEY_BYTES))).not.toThrow();
  });

  it('derives a 16-hex key id that is stable for the same key', () => {
    expect(createDigestKey(secret).keyId).toMatch(/^[0-9a-f]{16}$/);
    expect(createDigestKey(Buffer.from(secret)).keyId).toBe(createDigestKey(secret).keyId);
  });

  it('keeps the secret out of JSON, inspect and enumeration', () => {
    const key = createDigestKey(secret);
    expect(JSON.stringify(key)).toBe(JSON.stringify({ keyId: key.keyId }));
    expect(Object.keys(key)).toEqual(['keyId']);
    const shown = inspect(key, { depth: 5 });
    expect(shown).not.toContain(SECRET_HEX.slice(0, 8));
    expect(shown).not.toContain('secret');
    expect(JSON.stringify({ nested: key })).not.toContain(secret.toString('base64').slice(0, 8));
  });

  it('copies the secret, so changing the caller buffer later changes nothing', () => {
    const buf = Buffer.from(secret);
    const key = createDigestKey(buf);
    const before = digestValue('x', key);
    buf.fill(0);
    expect(digestValue('x', key)).toBe(before);
  });

  it('is frozen', () => {
    const key = createDigestKey(secret);
    expect(Object.isFrozen(key)).toBe(true);
  });
});

describe('decodeKeyText', () => {
  it('reads 32 or more hex digits as hex', () => {
    expect(Buffer.from(decodeKeyText(`${SECRET_HEX}\n`)).toString('hex')).toBe(SECRET_HEX);
  });

  it('reads base64 when the text is not hex', () => {
    expect(Buffer.from(decodeKeyText(secret.toString('base64'))).equals(secret)).toBe(true);
  });

  it('falls back to the UTF-8 bytes of the text', () => {
    expect(Buffer.from(decodeKeyText('correct horse battery staple')).toString('utf8')).toBe(
      'correct horse battery staple',
    );
  });
});

describe('loadDigestKey', () => {
  const dir = mkdtempSync(join(tmpdir(), 'continuity-key-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  function keyFile(name: string, text: string, mode: number): string {
    const path = join(dir, name);
    writeFileSync(path, text, { mode });
    chmodSync(path, mode);
    return path;
  }

  it('returns undefined when no key is configured', () => {
    expect(loadDigestKey({ env: {} })).toBeUndefined();
  });

  it('loads a 0600 key file given directly', () => {
    const path = keyFile('direct.key', `${SECRET_HEX}\n`, 0o600);
    expect(loadDigestKey({ file: path, env: {} })?.keyId).toBe(createDigestKey(secret).keyId);
  });

  it(`loads the file named by ${DIGEST_KEY_FILE_ENV}`, () => {
    const path = keyFile('env.key', SECRET_HEX, 0o600);
    expect(loadDigestKey({ env: { [DIGEST_KEY_FILE_ENV]: path } })?.keyId).toBe(
      createDigestKey(secret).keyId,
    );
  });

  it(`loads the key from ${DIGEST_KEY_ENV} when no file is named`, () => {
    expect(loadDigestKey({ env: { [DIGEST_KEY_ENV]: secret.toString('base64') } })?.keyId).toBe(
      createDigestKey(secret).keyId,
    );
  });

  it('prefers the file over the inline variable', () => {
    const path = keyFile('preferred.key', SECRET_HEX, 0o600);
    const other = Buffer.alloc(32, 9).toString('hex');
    const key = loadDigestKey({ env: { [DIGEST_KEY_FILE_ENV]: path, [DIGEST_KEY_ENV]: other } });
    expect(key?.keyId).toBe(createDigestKey(secret).keyId);
  });

  it('refuses a key file that other users can read, and says how to fix it', () => {
    const path = keyFile('open.key', SECRET_HEX, 0o644);
    expect(() => loadDigestKey({ file: path, env: {} })).toThrow(/chmod 600/);
  });

  it('names the file, never the key, when the file cannot be read', () => {
    const missing = join(dir, 'missing.key');
    expect(() => loadDigestKey({ file: missing, env: {} })).toThrow(`${missing}: cannot read (ENOENT)`);
  });

  it('refuses a short key without echoing it', () => {
    const path = keyFile('short.key', 'abcd', 0o600);
    let message = '';
    try {
      loadDigestKey({ file: path, env: {} });
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toMatch(/too short/);
    expect(message).toContain(path);
    expect(message).not.toContain('abcd');
    expect(() => loadDigestKey({ env: { [DIGEST_KEY_ENV]: 'tiny' } })).toThrow(
      new RegExp(`^${DIGEST_KEY_ENV}: `),
    );
  });
});
