/**
 * The approver's key store: an Ed25519 key pair in the user's configuration directory
 * (`$XDG_CONFIG_HOME/agent-continuity/approver/`, else `~/.config/agent-continuity/approver/`),
 * outside every repository and every project the agent works in.
 *
 * - `key.pem`: the private key, PKCS#8 encrypted under the passphrase (AES-256-CBC, the key
 *   derived with PBKDF2 by OpenSSL), mode 0600. Without the passphrase it is useless.
 * - `key.pub.pem`: the public key (SPKI PEM), to give to `continuity serve --approver-key`.
 * - `chain.json`: the key's certificates from the first key on (./trust.ts), so a ledger pinned
 *   to an earlier key learns the rotation from a certificate the earlier key signed.
 *
 * The passphrase is an argument here; only `./tty.ts` reads one, from the controlling terminal.
 */
import { createPrivateKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { homeOf } from '../ledger/state-home.js';
import { keyIdOfHex, publicKeyHex, signStatement } from './signing.js';
import { type KeyCertificate, keyStatement } from './trust.js';

/** Shortest passphrase accepted: the encrypted key file can be read, and guessed at offline. */
export const MIN_PASSPHRASE_LENGTH = 12;

/** The approver key store directory for this environment. */
export function approverDir(env: NodeJS.ProcessEnv): string {
  const xdg = env.XDG_CONFIG_HOME;
  if (xdg && isAbsolute(xdg)) return join(xdg, 'agent-continuity', 'approver');
  // The state directory's home rule: an absolute HOME, else the account's home.
  return join(homeOf(env), '.config', 'agent-continuity', 'approver');
}

/** The files of a key store. */
export function keyStoreFiles(dir: string): { privateKey: string; publicKey: string; chain: string } {
  return {
    privateKey: join(dir, 'key.pem'),
    publicKey: join(dir, 'key.pub.pem'),
    chain: join(dir, 'chain.json'),
  };
}

/** A key store as read: the encrypted private key and the chain ending at it. */
export interface KeyStore {
  privatePem: string;
  chain: KeyCertificate[];
}

/** A key store file could not be used. */
export class KeyStoreError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KeyStoreError';
  }
}

/** Reads the key store in `dir`, or undefined when there is none. Throws {@link KeyStoreError}. */
export function readKeyStore(dir: string): KeyStore | undefined {
  const files = keyStoreFiles(dir);
  let privatePem: string;
  try {
    privatePem = readFileSync(files.privateKey, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new KeyStoreError(`approver key: cannot read key.pem (${(e as NodeJS.ErrnoException).code})`);
  }
  let chain: unknown;
  try {
    chain = JSON.parse(readFileSync(files.chain, 'utf8'));
  } catch {
    throw new KeyStoreError(
      'approver key: chain.json is missing or not JSON; restore it from a backup, or start over with a new key (the ledgers pinned to the old one will not accept it)',
    );
  }
  if (!Array.isArray(chain) || chain.length === 0)
    throw new KeyStoreError('approver key: chain.json: expected a non-empty list of certificates');
  return { privatePem, chain: chain as KeyCertificate[] };
}

/** Decrypts the private key; throws {@link KeyStoreError} for a wrong passphrase. */
export function unlockKey(store: KeyStore, passphrase: string): KeyObject {
  try {
    return createPrivateKey({ key: store.privatePem, format: 'pem', passphrase });
  } catch {
    throw new KeyStoreError('approver key: wrong passphrase (nothing was signed)');
  }
}

/** A new key pair, its private half encrypted under `passphrase`. */
export function generateKey(passphrase: string): {
  privatePem: string;
  publicPem: string;
  publicHex: string;
} {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519', {
    privateKeyEncoding: { type: 'pkcs8', format: 'pem', cipher: 'aes-256-cbc', passphrase },
    publicKeyEncoding: { type: 'spki', format: 'pem' },
  });
  const publicHex = publicKeyHex(createPrivateKey({ key: privateKey, passphrase }));
  return { privatePem: privateKey, publicPem: publicKey, publicHex };
}

/** A certificate for `publicHex`, signed by `signer` (its own private key for the first key). */
export function certify(
  publicHex: string,
  createdAt: string,
  previous: string | null,
  signer: KeyObject,
): KeyCertificate {
  const body = { keyId: keyIdOfHex(publicHex), publicKey: publicHex, createdAt, previous };
  return { ...body, signature: signStatement(keyStatement(body), signer) };
}

function writePrivate(file: string, text: string): void {
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, text, { mode: 0o600, flag: 'wx' });
  renameSync(tmp, file);
}

/** Writes a key store (directory 0700, files 0600), each file replaced whole. */
export function writeKeyStore(
  dir: string,
  privatePem: string,
  publicPem: string,
  chain: KeyCertificate[],
): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const files = keyStoreFiles(dir);
  writePrivate(files.chain, `${JSON.stringify(chain, null, 2)}\n`);
  writePrivate(files.publicKey, publicPem);
  writePrivate(files.privateKey, privatePem);
}
