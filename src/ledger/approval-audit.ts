/**
 * The approvals of a whole ledger judged against its approver key chain, for `ledger verify`:
 * how many a trusted key signed, and how many do not count and why (unsigned ones include every
 * approval recorded before approvals were signed: the migration report). Whether a signed one
 * counts for a boundary is the evidence builder's question (`./evidence.ts`); this only reads the
 * signatures.
 */
import { closeSync, constants, fstatSync } from 'node:fs';
import { APPROVAL_ATTEMPT_RESULTS, judgeApproval, trustedKeysOf } from '../authority/trust.js';
import { onFile, openNoFollow } from './files.js';
import { forEachLine, parseRecordLine } from './scan.js';

/** What the audit found. */
export interface ApprovalAudit {
  /** Approvals signed by a key of the ledger's trusted chain. */
  signed: number;
  /** Approvals that do not count, by why. */
  attempts: Record<(typeof APPROVAL_ATTEMPT_RESULTS)[number], number>;
  /** The trusted key ids. */
  keys: string[];
  /** Why the approver key chain does not hold (`approver_key_changed`), when it does not. */
  keyChanged?: string;
}

/** Audits every approval of the ledger at `ledgerPath` (one scan). */
export function auditApprovals(ledgerPath: string, approverRoots: readonly string[] = []): ApprovalAudit {
  const fd = openNoFollow(ledgerPath, constants.O_RDONLY);
  const approvals: Array<Record<string, unknown>> = [];
  const keyRecords: Array<Record<string, unknown>> = [];
  try {
    onFile(ledgerPath, 'read', () =>
      forEachLine(
        fd,
        (line) => {
          if (!line.complete) return;
          const rec = parseRecordLine(line.text);
          if (rec?.type === 'approval') approvals.push(rec);
          else if (rec?.type === 'approver_key') keyRecords.push(rec);
        },
        0,
        fstatSync(fd).size,
      ),
    );
  } finally {
    closeSync(fd);
  }
  const trust = trustedKeysOf(ledgerPath, keyRecords, approverRoots);
  const attempts = Object.fromEntries(
    APPROVAL_ATTEMPT_RESULTS.map((r) => [r, 0]),
  ) as ApprovalAudit['attempts'];
  let signed = 0;
  for (const a of approvals) {
    const result = judgeApproval(a as never, trust);
    if (result === 'signed') signed++;
    else attempts[result]++;
  }
  return {
    signed,
    attempts,
    keys: [...trust.keys.keys()],
    ...(trust.broken && { keyChanged: trust.broken.message }),
  };
}
