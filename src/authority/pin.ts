/**
 * Pinning: what a human's key adds to the pin beside a ledger (pure), and writing the pin.
 *
 * A ledger with no pin takes the key store's whole chain (trust on first use). A ledger pinned to
 * an earlier key of the same chain takes the certificates after it (each signed by the key before
 * it). A ledger pinned to a key that is not in the chain refuses the key: that is either the
 * human's other key store or a key someone else made, and either way only a certificate signed by
 * the pinned key can move the pin.
 */
import { renameSync, writeFileSync } from 'node:fs';
import { evaluateChain, KEY_CHANGED, type KeyCertificate, type PinRead, pinPathOf } from './trust.js';

/** What using a key store on a ledger does to its pin. */
export type PinPlan =
  | { kind: 'current' }
  | { kind: 'extend'; pinned: KeyCertificate[]; add: KeyCertificate[] }
  | { kind: 'conflict'; code: typeof KEY_CHANGED; message: string };

/** The certificates of a ledger's `approver_key` records (their chain fields dropped). */
export function certificatesOf(records: ReadonlyArray<Record<string, unknown>>): KeyCertificate[] {
  return records.map((r) => ({
    keyId: r.keyId as string,
    publicKey: r.publicKey as string,
    createdAt: r.createdAt as string,
    previous: (r.previous ?? null) as string | null,
    signature: r.signature as string,
  }));
}

/**
 * Plans the pin of a ledger for a key store's chain (pure). `ledger` is what the ledger trusts
 * now: its certificates as {@link trustedKeysOf} read them with the pin (absent when it holds
 * none, unreadable when the two disagree).
 */
export function planPin(pin: PinRead, chain: readonly KeyCertificate[]): PinPlan {
  const own = evaluateChain(chain);
  if (own.broken) {
    return {
      kind: 'conflict',
      code: KEY_CHANGED,
      message: `the key store's own chain does not hold: ${own.broken.message}`,
    };
  }
  if (pin.kind === 'unreadable') {
    return {
      kind: 'conflict',
      code: KEY_CHANGED,
      message: `the approver pin beside the ledger cannot be used (${pin.message}); it is evidence: inspect it, then move it aside yourself`,
    };
  }
  if (pin.kind === 'absent') return { kind: 'extend', pinned: [], add: [...chain] };
  const pinned = evaluateChain(pin.certificates);
  if (pinned.broken || pinned.current === null) {
    return {
      kind: 'conflict',
      code: KEY_CHANGED,
      message: `the approver pin beside the ledger does not hold: ${pinned.broken?.message ?? 'it is empty'}`,
    };
  }
  const at = chain.findIndex((c) => c.keyId === pinned.current);
  const same =
    pin.certificates.length === at + 1 &&
    chain.slice(0, at + 1).every((c, i) => {
      const p = pin.certificates[i] as KeyCertificate;
      return p.keyId === c.keyId && p.signature === c.signature;
    });
  if (at === -1 || !same) {
    return {
      kind: 'conflict',
      code: KEY_CHANGED,
      message: `this ledger trusts approver key ${pinned.current}, and your key ${own.current} does not descend from it (${KEY_CHANGED}): use the key store that holds ${pinned.current}, or rotate from it with \`continuity key rotate\``,
    };
  }
  if (at === chain.length - 1) return { kind: 'current' };
  return { kind: 'extend', pinned: pin.certificates as KeyCertificate[], add: chain.slice(at + 1) };
}

/** Writes the pin beside a ledger (0600), replaced whole. */
export function writePin(ledgerPath: string, certificates: readonly KeyCertificate[]): void {
  const file = pinPathOf(ledgerPath);
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, `${JSON.stringify({ v: 1, keys: certificates }, null, 2)}\n`, {
    mode: 0o600,
    flag: 'wx',
  });
  renameSync(tmp, file);
}
