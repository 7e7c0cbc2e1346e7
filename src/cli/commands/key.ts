/**
 * `continuity key init | rotate | show`: the approver key, made and replaced by a human at a
 * terminal (docs/security.md).
 *
 * - `init` makes the key: the passphrase typed twice at the controlling terminal, the private key
 *   stored encrypted under it (0600, in the user's configuration directory), and the key pinned on
 *   the ledger. Refuses when a key exists, and when the ledger already trusts another key.
 * - `rotate` replaces the key: the current passphrase unlocks the old key, which signs the new
 *   key's certificate, so every ledger pinned to the old key accepts the new one.
 * - `show` prints the key id, the public key (for `continuity serve --approver-key`) and what the
 *   ledger's pin says; it needs no passphrase.
 */

import { createPrivateKey } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import {
  approverDir,
  certify,
  generateKey,
  keyStoreFiles,
  MIN_PASSPHRASE_LENGTH,
  readKeyStore,
  unlockKey,
  writeKeyStore,
} from '../../authority/key-store.js';
import { planPin, writePin } from '../../authority/pin.js';
import { evaluateChain, type KeyCertificate, readPin, trustedKeysOf } from '../../authority/trust.js';
import { newPassphrase } from '../../authority/tty.js';
import { formatRfc3339Utc } from '../../decision/time.js';
import { readApproverKeyRecords } from '../../ledger/latest.js';
import { Ledger } from '../../ledger/ledger.js';
import { CliError, EXIT } from '../exit-codes.js';
import { atTerminal, certificateRecord, ledgerPin } from './human.js';
import {
  addLedgerOptions,
  approverRootsOfEnv,
  chainKeyOf,
  type LedgerFlags,
  ledgerPathOf,
} from './ledger-options.js';

/** Pins `chain` on the ledger (appending the certificates it lacks); refuses a conflicting pin. */
async function pinOnLedger(what: string, flags: LedgerFlags, chain: KeyCertificate[]): Promise<string> {
  const path = ledgerPathOf(flags);
  const plan = planPin(ledgerPin(path), chain);
  if (plan.kind === 'conflict') throw new CliError(`${what}: ${plan.message}`, EXIT.noHuman);
  if (plan.kind === 'current') return 'already pinned on the ledger';
  const ledger = Ledger.open(path, { chainKey: chainKeyOf(flags) });
  try {
    await ledger.appendBatch(plan.add.map(certificateRecord));
  } finally {
    await ledger.close();
  }
  writePin(path, [...plan.pinned, ...plan.add]);
  return 'pinned on the ledger';
}

/** Refuses `init` before anything is made when the ledger already trusts a key. */
function checkLedgerFree(flags: LedgerFlags): void {
  const pin = ledgerPin(ledgerPathOf(flags));
  if (pin.kind === 'absent' && readPin(ledgerPathOf(flags)).kind === 'absent') return;
  const trust = pin.kind === 'pinned' ? evaluateChain(pin.certificates) : undefined;
  throw new CliError(
    `key init: this ledger already trusts approver key ${trust?.current ?? '(unreadable pin)'}; an approver key can only be replaced by a certificate the pinned key signs (\`continuity key rotate\` from the key store that holds it). If you never made that key, someone else did: that is evidence (approver_key_changed); keep the pin and the ledger, and see docs/security.md`,
    EXIT.noHuman,
  );
}

/** Registers `continuity key`. */
export function registerKey(program: Command): void {
  const key = program
    .command('key')
    .description('the approver key that signs approvals and seals (a human at a terminal)');

  addLedgerOptions(
    key
      .command('init')
      .description('make the approver key: passphrase typed twice at this terminal; pins it on the ledger'),
  ).action(async (flags: LedgerFlags) => {
    const dir = approverDir(process.env);
    if (readKeyStore(dir)) {
      throw new CliError(
        'key init: an approver key exists already; use `continuity key rotate` to replace it (needs its passphrase)',
        EXIT.noHuman,
      );
    }
    checkLedgerFree(flags);
    const chain = await atTerminal('key init', async (term) => {
      term.say(
        `Making the approver key. Its passphrase (at least ${MIN_PASSPHRASE_LENGTH} characters) is asked for every approval and seal; it is stored nowhere.\n`,
      );
      const pass = await newPassphrase(term, 'key init', MIN_PASSPHRASE_LENGTH);
      const made = generateKey(pass);
      const cert = certify(
        made.publicHex,
        formatRfc3339Utc(Date.now()),
        null,
        createPrivateKey({ key: made.privatePem, passphrase: pass }),
      );
      writeKeyStore(dir, made.privatePem, made.publicPem, [cert]);
      return [cert];
    });
    const pinned = await pinOnLedger('key init', flags, chain);
    process.stdout.write(`approver key ${chain[0]!.keyId} made; ${pinned}\n`);
  });

  addLedgerOptions(
    key.command('rotate').description('replace the approver key: the current passphrase signs the new key'),
  ).action(async (flags: LedgerFlags) => {
    const dir = approverDir(process.env);
    const store = readKeyStore(dir);
    if (!store)
      throw new CliError('key rotate: no approver key to rotate; run `continuity key init`', EXIT.noHuman);
    const chain = await atTerminal('key rotate', async (term) => {
      const old = store.chain.at(-1)!;
      term.say(`Replacing approver key ${old.keyId}.\n`);
      const oldKey = unlockKey(store, await term.secret('Current approver passphrase: '));
      const pass = await newPassphrase(term, 'key rotate', MIN_PASSPHRASE_LENGTH);
      const made = generateKey(pass);
      const cert = certify(made.publicHex, formatRfc3339Utc(Date.now()), old.keyId, oldKey);
      const next = [...store.chain, cert];
      writeKeyStore(dir, made.privatePem, made.publicPem, next);
      return next;
    });
    const pinned = await pinOnLedger('key rotate', flags, chain);
    process.stdout.write(`approver key ${chain.at(-1)!.keyId} replaces ${chain.at(-2)!.keyId}; ${pinned}\n`);
  });

  addLedgerOptions(
    key.command('show').description("print the approver key's id and public key, and the ledger's pin"),
  ).action((flags: LedgerFlags) => {
    const dir = approverDir(process.env);
    const store = readKeyStore(dir);
    const path = ledgerPathOf(flags);
    const records = readApproverKeyRecords(path);
    const trust = trustedKeysOf(path, records, approverRootsOfEnv());
    const lines: string[] = [];
    if (store) {
      lines.push(`key: ${store.chain.at(-1)!.keyId}`);
      lines.push(readFileSync(keyStoreFiles(dir).publicKey, 'utf8').trimEnd());
      // The chain's first key, for the environment the runtime starts with (docs/security.md).
      lines.push(`anchor: CONTINUITY_APPROVER_KEYS=${store.chain[0]!.keyId}`);
    } else lines.push('key: none (run `continuity key init` in a terminal)');
    if (records.length === 0 && trust.pin === 'absent')
      lines.push('ledger: no approver key pinned yet (no approval can count)');
    else lines.push(`ledger: trusts ${[...trust.keys.keys()].join(', ') || 'nothing'}`);
    if (trust.broken) lines.push(`ledger: approver_key_changed: ${trust.broken.message}`);
    process.stdout.write(`${lines.join('\n')}\n`);
    if (trust.broken) process.exitCode = EXIT.checkFailed;
  });
}
