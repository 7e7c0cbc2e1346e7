/**
 * The spans of recorded evidence: a pre or post snapshot (`continuity.compaction.pre` / `.post`) and a
 * human approval (`continuity.approval`), with the attributes of the shared codec
 * (`src/otel/attributes.ts`: digests, names, revisions, times and opaque ids, never a value).
 *
 * Ids are derived, not random, wherever the evidence allows: every span of a boundary lives in the
 * boundary's trace (derived from the session and boundary ids, `src/otel/boundary-trace.ts`), the
 * boundary's first pre span is its root and every other span of the boundary is its child (the post
 * span also links to it), and a span derived from a ledger seq is the same span whenever it is sent again (a spooled
 * retry, or `continuity observe` re-sending approvals), which a processor and a backend de-duplicate.
 */
import type { Approval, Snapshot } from '../decision/model.js';
import { approvalAttributes, type BoundaryContext, snapshotAttributes } from '../otel/attributes.js';
import { SPAN_COMPACTION_POST, SPAN_COMPACTION_PRE, SPAN_DECISION_APPROVAL } from '../otel/semconv.js';
import { boundarySpanIds, type ExportSpan, randomSpanIds, sessionSpanIds, timeNs } from './spans.js';

/** The boundary a compaction span belongs to: its id is required to place it in the boundary's trace. */
export type SpanBoundary = BoundaryContext & { boundaryId: string };

/** When a span ran, and which of the boundary's spans it is. */
export interface SpanTiming {
  startNs: bigint;
  endNs: bigint;
  /**
   * The span's part of the boundary (e.g. `post-12` from the ledger seq), from which its span id is
   * derived. Default: the pre span's own id for `pre` (what the post span links to), a random id
   * for `post`.
   */
  part?: string;
}

/**
 * A `continuity.compaction.pre` or `continuity.compaction.post` span for `snapshot` in the boundary's
 * trace: the boundary's first pre span (no `part`) is the trace's root, any other is a child of
 * it. The post span carries `gen_ai.conversation.compacted` (from the codec) and a link to the
 * boundary's pre span.
 */
export function compactionSpan(
  phase: 'pre' | 'post',
  snapshot: Snapshot,
  boundary: SpanBoundary,
  timing: SpanTiming,
): ExportSpan {
  const pre = boundarySpanIds(snapshot.sessionId, boundary.boundaryId, 'pre');
  const spanId =
    timing.part !== undefined
      ? boundarySpanIds(snapshot.sessionId, boundary.boundaryId, phase, timing.part).spanId
      : phase === 'pre'
        ? pre.spanId
        : randomSpanIds().spanId;
  return {
    name: phase === 'pre' ? SPAN_COMPACTION_PRE : SPAN_COMPACTION_POST,
    ids: { traceId: pre.traceId, spanId },
    startNs: timing.startNs,
    endNs: timing.endNs,
    attributes: snapshotAttributes(phase, snapshot, boundary),
    ...(spanId !== pre.spanId && { parent: pre }),
    ...(phase === 'post' ? { links: [pre] } : {}),
  };
}

/**
 * The `continuity.approval` span of the approval recorded at ledger `seq`, at its approval
 * time. In the trace of the session's boundary `boundaryId`, a child of its pre span, when there
 * is one (else the root of a trace of its own); the span id is derived from the seq, so every sender (`continuity approve`,
 * `continuity observe`) sends the same span.
 */
export function approvalSpan(
  sessionId: string,
  approval: Approval,
  seq: number,
  boundaryId: string | null,
): ExportSpan {
  const part = `approval-${seq}`;
  const ids =
    boundaryId !== null
      ? boundarySpanIds(sessionId, boundaryId, 'pre', part)
      : sessionSpanIds(sessionId, part);
  const at = timeNs(approval.approvedAt);
  return {
    name: SPAN_DECISION_APPROVAL,
    ids,
    ...(boundaryId !== null && { parent: boundarySpanIds(sessionId, boundaryId, 'pre') }),
    startNs: at,
    endNs: at,
    attributes: approvalAttributes(sessionId, approval),
  };
}
