/**
 * Loading the chain key from a file outside the agent's context (an edge: reads the environment
 * and a file). The key text is decoded like a digest key: 32+ hex digits, else base64, else the
 * UTF-8 bytes of the text.
 */
import { readKeyFile } from '../digest/key-file.js';
import { type ChainKey, createChainKey } from './chain.js';
import { CHAIN_KEY_FILE_ENV } from './types.js';

/** Where to look for a chain key. */
export interface ChainKeyOptions {
  /** A key file given on the command line; wins over the environment. */
  file?: string | undefined;
  /** Environment to read `CONTINUITY_CHAIN_KEY_FILE` from. Default `process.env`. */
  env?: NodeJS.ProcessEnv;
}

/** A chain key that is configured but cannot be used. The message names the file, never the key. */
export class ChainKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ChainKeyError';
  }
}

/**
 * Loads the chain key from `file`, else from the file named by `CONTINUITY_CHAIN_KEY_FILE`.
 * Returns `undefined` when none is configured (the chain is then plain SHA-256). Throws
 * {@link ChainKeyError} when the file cannot be read, is readable by other users, or is too short.
 */
export function loadChainKey(options: ChainKeyOptions = {}): ChainKey | undefined {
  const env = options.env ?? process.env;
  const file = options.file ?? env[CHAIN_KEY_FILE_ENV];
  if (!file) return undefined;
  let bytes: Uint8Array;
  try {
    bytes = readKeyFile(file, 'chain key file');
  } catch (e) {
    throw new ChainKeyError((e as Error).message);
  }
  try {
    return createChainKey(bytes);
  } catch (e) {
    throw new ChainKeyError(`chain key file ${file}: ${(e as Error).message}`);
  }
}
