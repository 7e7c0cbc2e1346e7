/**
 * What a human signs, as plain objects (no I/O, no dependency): the kinds of signed statements and
 * the approval statement. Apart from src/authority/signing.ts so the SDK extension can build the
 * statement an app's signer signs without loading node:crypto or canonicalize at import.
 */

/** Kinds of signed statements. */
export const SIGNED_KINDS = {
  approval: 'continuity.approval/v1',
  key: 'continuity.approver_key/v1',
  seal: 'continuity.seal/v1',
  configSeal: 'continuity.config_seal/v1',
} as const;

/** What an approval's signature covers. */
export interface ApprovalStatementInput {
  sessionId: string;
  boundaryId: string;
  decision: string;
  fromDigest: string;
  toDigest: string;
  approvalRef: string;
  approvedBy: string;
  approvedAt: string;
  keyId: string;
}

/**
 * The statement a human signs to approve one decision's change: the session and the boundary it
 * is for (so a copy appended later, or under another session, is worth nothing), the decision,
 * the from and to digests, the reference, who, when, and with which key.
 */
export function approvalStatement(a: ApprovalStatementInput): Record<string, unknown> {
  return {
    kind: SIGNED_KINDS.approval,
    sessionId: a.sessionId,
    boundaryId: a.boundaryId,
    decision: a.decision,
    fromDigest: a.fromDigest,
    toDigest: a.toDigest,
    approvalRef: a.approvalRef,
    approvedBy: a.approvedBy,
    approvedAt: a.approvedAt,
    keyId: a.keyId,
  };
}
