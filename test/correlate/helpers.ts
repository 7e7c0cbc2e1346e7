/**
 * Test helpers: compaction events built through the real attribute codec (write, then read back).
 */
import { readFileSync } from 'node:fs';
import type { Approval, Snapshot } from '../../src/decision/model.js';
import { digestValue } from '../../src/digest/digest.js';
import { type FixtureBoundary, parseFixture } from '../../src/fixture/cases.js';
import {
  type ApprovalEvent,
  approvalAttributes,
  type BoundaryContext,
  type CompactionEvent,
  evidenceMissingAttributes,
  type PostCompactionEvent,
  type PreCompactionEvent,
  readCompactionSpan,
  snapshotAttributes,
} from '../../src/otel/attributes.js';
import { SPAN_COMPACTION_POST, SPAN_COMPACTION_PRE, SPAN_DECISION_APPROVAL } from '../../src/otel/semconv.js';

export const A = digestValue({ scope: 'acme/payments' });
export const B = digestValue({ scope: 'acme/billing' });
export const T = digestValue({ test: 'npm test' });

let spanCounter = 0;
/** A fresh span ref. */
export function spanRef() {
  spanCounter++;
  return {
    traceId: spanCounter.toString(16).padStart(32, '0'),
    spanId: spanCounter.toString(16).padStart(16, '0'),
  };
}

/** Nanoseconds for an RFC 3339 time. */
export function ns(iso: string): bigint {
  return BigInt(Date.parse(iso)) * 1_000_000n;
}

/** A snapshot of `scope` (and `acceptance_test`) at `at`. */
export function snap(sessionId: string, at: string, scope = A, observedAt = at): Snapshot {
  return {
    sessionId,
    capturedAt: at,
    normalizerVersion: 1,
    decisions: {
      scope: { digest: scope, revision: 1, observedAt },
      acceptance_test: { digest: T, revision: 1, observedAt },
    },
  };
}

export function preEvent(s: Snapshot, ctx: BoundaryContext = {}, span = spanRef()): PreCompactionEvent {
  return readCompactionSpan(
    SPAN_COMPACTION_PRE,
    snapshotAttributes('pre', s, ctx),
    ns(s.capturedAt),
    span,
  ) as PreCompactionEvent;
}

export function postEvent(s: Snapshot, ctx: BoundaryContext = {}, span = spanRef()): PostCompactionEvent {
  return readCompactionSpan(
    SPAN_COMPACTION_POST,
    snapshotAttributes('post', s, ctx),
    ns(s.capturedAt),
    span,
  ) as PostCompactionEvent;
}

export function missingPre(sessionId: string, at: string, ctx: BoundaryContext = {}): PreCompactionEvent {
  return readCompactionSpan(
    SPAN_COMPACTION_PRE,
    evidenceMissingAttributes('pre', sessionId, 'capture_failed', ctx),
    ns(at),
    spanRef(),
  ) as PreCompactionEvent;
}

export function approvalEvent(sessionId: string, approval: Approval): ApprovalEvent {
  return readCompactionSpan(
    SPAN_DECISION_APPROVAL,
    approvalAttributes(sessionId, approval),
    ns(approval.approvedAt),
    spanRef(),
  ) as ApprovalEvent;
}

export function approval(
  from: string,
  to: string,
  ref = 'approval-1',
  at = '2026-11-30T10:03:00Z',
): Approval {
  return {
    decision: 'scope',
    fromDigest: from,
    toDigest: to,
    approvalRef: ref,
    approvedBy: 'reviewer-17',
    approvedAt: at,
  };
}

/** The six cases of examples/six-case/cases.json, digested. */
export function sixCases(): FixtureBoundary[] {
  const path = new URL('../../examples/six-case/cases.json', import.meta.url);
  return parseFixture(JSON.parse(readFileSync(path, 'utf8')), 'examples/six-case/cases.json');
}

/** The events of one fixture boundary, in causal order (pre, approvals, post). */
export function fixtureEvents(c: FixtureBoundary, sessionId = c.id): CompactionEvent[] {
  const events: CompactionEvent[] = [];
  if (c.pre) events.push(preEvent({ ...c.pre, sessionId }, { runtime: 'sdk', trigger: 'auto' }));
  for (const a of c.approvals) events.push(approvalEvent(sessionId, a));
  if (c.post) events.push(postEvent({ ...c.post, sessionId }, { runtime: 'sdk', trigger: 'auto' }));
  return events;
}
