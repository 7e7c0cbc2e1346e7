/**
 * Classifying a boundary from its evidence with the core classifier, and the receipt record that
 * may be appended afterwards. The receipt is an audit trail, never a substitute: readers always
 * recompute the classification from the evidence.
 */
import { type Classification, classify } from '../classify/classify.js';
import { formatRfc3339Utc } from '../decision/time.js';
import type { BoundaryEvidence } from './evidence.js';
import type { ClassificationRecord } from './records.js';

/** Classifies a boundary's evidence with the core `classify()`. */
export function classifyEvidence(evidence: BoundaryEvidence): Classification {
  return classify({
    pre: evidence.pre,
    post: evidence.post,
    approvals: evidence.approvals,
    ...(evidence.compactedAt !== undefined && { compactedAt: evidence.compactedAt }),
  });
}

/** A `classification` receipt for `evidence`, naming the seqs it was computed from. */
export function classificationRecord(
  evidence: BoundaryEvidence,
  classification: Classification,
  nowMs: number,
): ClassificationRecord {
  return {
    type: 'classification',
    sessionId: evidence.sessionId,
    boundaryId: evidence.boundaryId,
    state: classification.state,
    action: classification.action,
    reason: classification.reason,
    primaryDecision: classification.primaryDecision,
    decisions: classification.decisions,
    evidence: {
      pre: evidence.seqs.pre,
      post: evidence.seqs.post,
      boundary: evidence.seqs.boundary,
      approvals: evidence.seqs.approvals,
    },
    classifiedAt: formatRfc3339Utc(nowMs),
  };
}

/** True when the boundary's latest receipt already records this state from the same evidence. */
export function receiptIsCurrent(evidence: BoundaryEvidence, classification: Classification): boolean {
  const r = evidence.receipt;
  if (!r) return false;
  const same = (a: number[], b: number[]) => a.length === b.length && a.every((x, i) => x === b[i]);
  return (
    r.state === classification.state &&
    r.reason === classification.reason &&
    r.evidence.pre === evidence.seqs.pre &&
    r.evidence.post === evidence.seqs.post &&
    r.evidence.boundary === evidence.seqs.boundary &&
    same(r.evidence.approvals, evidence.seqs.approvals)
  );
}
