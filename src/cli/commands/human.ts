/**
 * What every command that exercises a human's authority shares: the terminal, the key store, the
 * passphrase typed for this one signature, and the pin of the ledger the signature is for.
 *
 * The order is deliberate: the person sees what they are about to sign before they are asked for
 * the passphrase, on the terminal (never on standard output, which the agent may be reading).
 */
import type { KeyObject } from 'node:crypto';
import { approverDir, KeyStoreError, readKeyStore, unlockKey } from '../../authority/key-store.js';
import { certificatesOf, planPin, writePin } from '../../authority/pin.js';
import { type KeyCertificate, type PinRead, trustedKeysOf } from '../../authority/trust.js';
import { NoTerminalError, openTerminal, PromptAbortedError, type Terminal } from '../../authority/tty.js';
import { readApproverKeyRecords } from '../../ledger/latest.js';
import { Ledger, type LedgerOptions } from '../../ledger/ledger.js';
import type { ApproverKeyRecord } from '../../ledger/records.js';
import { CliError, EXIT } from '../exit-codes.js';
import { approverRootsOfEnv } from './ledger-options.js';

/** Runs `fn` with the controlling terminal open; maps a missing terminal or a cancel to exit 4. */
export async function atTerminal<T>(what: string, fn: (term: Terminal) => Promise<T>): Promise<T> {
  let term: Terminal;
  try {
    term = openTerminal(what);
  } catch (e) {
    if (e instanceof NoTerminalError) throw new CliError(e.message, EXIT.noHuman);
    throw e;
  }
  try {
    return await fn(term);
  } catch (e) {
    if (e instanceof PromptAbortedError || e instanceof KeyStoreError)
      throw new CliError(e.message, EXIT.noHuman);
    throw e;
  } finally {
    term.close();
  }
}

/** An unlocked approver key and what its use adds to the ledger's pin. */
export interface HumanKey {
  privateKey: KeyObject;
  keyId: string;
  /** Certificates the ledger's pin does not have yet, to append as `approver_key` records. */
  newCertificates: KeyCertificate[];
  /** Writes the extended pin; call after the records are appended. */
  commitPin: () => void;
}

/**
 * What a ledger trusts, as a pin for {@link planPin}: its own `approver_key` records, unless they
 * and the pin beside the ledger disagree (then the pin is unusable: `approver_key_changed`).
 */
export function ledgerPin(ledgerPath: string): PinRead {
  const records = readApproverKeyRecords(ledgerPath);
  const trust = trustedKeysOf(ledgerPath, records, approverRootsOfEnv());
  if (trust.broken && trust.keys.size === 0) {
    return { kind: 'unreadable', message: trust.broken.message };
  }
  return records.length === 0
    ? { kind: 'absent' }
    : { kind: 'pinned', certificates: certificatesOf(records) };
}

/** The ledger record of a certificate. */
export function certificateRecord(c: KeyCertificate): ApproverKeyRecord {
  return {
    type: 'approver_key',
    keyId: c.keyId,
    publicKey: c.publicKey,
    createdAt: c.createdAt,
    previous: c.previous,
    signature: c.signature,
  };
}

/**
 * Shows `statement` (what is about to be signed) on the terminal, asks for the passphrase, and
 * unlocks the key, checking first that the ledger's pin accepts it (exit 4 when not).
 */
export async function unlockForLedger(
  term: Terminal,
  what: string,
  ledgerPath: string,
  env: NodeJS.ProcessEnv,
  statement: string,
): Promise<HumanKey> {
  const store = readKeyStore(approverDir(env));
  if (!store) {
    throw new CliError(
      `${what}: no approver key yet; run \`continuity key init\` yourself, in a terminal, to make one`,
      EXIT.noHuman,
    );
  }
  const plan = planPin(ledgerPin(ledgerPath), store.chain);
  if (plan.kind === 'conflict') throw new CliError(`${what}: ${plan.message}`, EXIT.noHuman);
  const current = store.chain.at(-1)!;
  term.say(`${statement}\nSigning with approver key ${current.keyId}.\n`);
  const privateKey = unlockKey(store, await term.secret('Approver passphrase: '));
  return {
    privateKey,
    keyId: current.keyId,
    newCertificates: plan.kind === 'extend' ? plan.add : [],
    commitPin: () => {
      if (plan.kind === 'extend') writePin(ledgerPath, [...plan.pinned, ...plan.add]);
    },
  };
}

/**
 * Appends the certificates a seal's key adds to the ledger's pin, then writes the pin: a seal is
 * kept beside the state, not on the ledger, so only its key's new certificates are appended
 * (an approval appends them in one batch with its own record instead).
 */
export async function recordNewCertificates(
  key: HumanKey,
  ledgerPath: string,
  options: LedgerOptions,
): Promise<void> {
  if (key.newCertificates.length === 0) return;
  const ledger = Ledger.open(ledgerPath, options);
  try {
    await ledger.appendBatch(key.newCertificates.map(certificateRecord));
  } finally {
    await ledger.close();
  }
  key.commitPin();
}
