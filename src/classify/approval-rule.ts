/**
 * Which approvals count toward a boundary: the one rule the ledger, the gate, the SDK processor
 * and `continuity serve` apply. An approval counts only when it was recorded after the boundary's
 * pre snapshot (the latest one, when the pre was re-captured), so an approval given before the
 * decisions it would change were captured, or for an earlier boundary, never turns this boundary's
 * change into `approved_change`.
 *
 * "Recorded after" is read from the records' own times: the approval's `approvedAt` at or after
 * the pre snapshot's `capturedAt` (both written by this package from the same clock when the
 * record was made; equal milliseconds count, as the ledger's order would have them). The ledger
 * also has the records' order and requires both. The service has only the times: OTLP batches
 * arrive in any order, and an approval that arrived up to the reorder grace before the next pre
 * used to count toward it, though it was recorded before it (issue 26).
 *
 * Lean on purpose (the gate's fast path imports it through the ledger): no I/O, one import.
 */
import { parseRfc3339Utc } from '../decision/time.js';

/**
 * Whether an approval recorded at `approvedAt` counts toward a boundary whose pre snapshot was
 * captured at `preCapturedAt` (no pre: true, the classifier answers `pre_snapshot_missing`
 * anyway). A time that does not parse never counts.
 */
export function approvalCountsTowardPre(approvedAt: string, preCapturedAt: string | null): boolean {
  if (preCapturedAt === null) return true;
  const approved = parseRfc3339Utc(approvedAt);
  const captured = parseRfc3339Utc(preCapturedAt);
  return approved !== undefined && captured !== undefined && approved >= captured;
}
