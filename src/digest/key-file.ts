/**
 * Loading a digest key from outside the agent's context (an edge: reads the environment and files).
 */
import { readFileSync, statSync } from 'node:fs';
import { createDigestKey, type DigestKey } from './digest.js';

/** Environment variable naming a key file. */
export const DIGEST_KEY_FILE_ENV = 'CONTINUITY_DIGEST_KEY_FILE';
/** Environment variable holding the key itself (hex or base64, at least 16 bytes). */
export const DIGEST_KEY_ENV = 'CONTINUITY_DIGEST_KEY';

/** Decodes key text: 32+ hex digits, else base64, else the UTF-8 bytes of the text. */
export function decodeKeyText(text: string): Uint8Array {
  const t = text.trim();
  if (/^(?:[0-9a-fA-F]{2}){16,}$/.test(t)) return Buffer.from(t, 'hex');
  if (/^[A-Za-z0-9+/]{22,}={0,2}$/.test(t) && t.length % 4 === 0) return Buffer.from(t, 'base64');
  return Buffer.from(t, 'utf8');
}

/**
 * Reads a key file and decodes its text ({@link decodeKeyText}). Throws an error that starts with
 * `label` and the file name (never the key) when the file cannot be read or other users can read
 * it: a key others can read does not keep anything secret. Shared by digest keys and chain keys.
 */
export function readKeyFile(file: string, label: string): Uint8Array {
  let mode: number;
  let text: string;
  try {
    mode = statSync(file).mode;
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new Error(`${label} ${file}: cannot read (${(e as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  if ((mode & 0o077) !== 0) {
    throw new Error(`${label} ${file}: readable by other users; run chmod 600 on it`);
  }
  return decodeKeyText(text);
}

/**
 * Loads a digest key from `file`, else from the file named by `CONTINUITY_DIGEST_KEY_FILE`,
 * else from `CONTINUITY_DIGEST_KEY`. Returns `undefined` when none is configured. Throws an error
 * that names the source (never the key) when a configured key cannot be used. A key file that
 * other users can read is refused: the key is what stops enumeration of low-entropy values.
 */
export function loadDigestKey(
  options: { file?: string | undefined; env?: NodeJS.ProcessEnv } = {},
): DigestKey | undefined {
  const env = options.env ?? process.env;
  const file = options.file ?? env[DIGEST_KEY_FILE_ENV];
  if (file) {
    const bytes = readKeyFile(file, 'digest key file');
    try {
      return createDigestKey(bytes);
    } catch (e) {
      throw new Error(`digest key file ${file}: ${(e as Error).message}`);
    }
  }
  const inline = env[DIGEST_KEY_ENV];
  if (inline) {
    try {
      return createDigestKey(decodeKeyText(inline));
    } catch (e) {
      throw new Error(`${DIGEST_KEY_ENV}: ${(e as Error).message}`);
    }
  }
  return undefined;
}
