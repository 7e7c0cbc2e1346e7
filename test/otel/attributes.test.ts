import { describe, expect, it } from 'vitest';
import type { Approval, Snapshot } from '../../src/decision/model.js';
import { digestValue } from '../../src/digest/digest.js';
import {
  approvalAttributes,
  classificationAttributes,
  evidenceMissingAttributes,
  formatNs,
  isCompactionSpanName,
  readCompactionSpan,
  snapshotAttributes,
  toNs,
} from '../../src/otel/attributes.js';
import {
  ATTR_CONTINUITY_STATE,
  ATTR_DECISION_NAMES,
  ATTR_GEN_AI_CONVERSATION_COMPACTED,
  ATTR_GEN_AI_CONVERSATION_ID,
  ATTR_SESSION_ID,
  decisionAttr,
  EVIDENCE_MISSING_REASONS,
  SPAN_ACTIVITY,
  SPAN_COMPACTION_POST,
  SPAN_COMPACTION_PRE,
  SPAN_DECISION_APPROVAL,
} from '../../src/otel/semconv.js';

const scope = digestValue({ repository: 'acme/payments' });
const test1 = digestValue({ command: 'npm test' });
const snapshot: Snapshot = {
  sessionId: 'sess-1',
  capturedAt: '2026-11-30T10:00:00Z',
  normalizerVersion: 1,
  decisions: {
    scope: { digest: scope, revision: 1, observedAt: '2026-11-30T10:00:00Z', source: 'task-record' },
    acceptance_test: { digest: test1, revision: 2, observedAt: '2026-11-30T10:00:00Z', approvalRef: 'ap-1' },
  },
};
const T0 = 1_780_000_000_000_000_000n;

describe('attribute codec', () => {
  describe('writing', () => {
    it('writes digests, names as a string array and per-decision fields with semconv keys', () => {
      const attrs = snapshotAttributes('pre', snapshot, {
        boundaryId: 'b-1',
        runtime: 'sdk',
        trigger: 'auto',
      });
      expect(attrs[ATTR_SESSION_ID]).toBe('sess-1');
      expect(attrs[ATTR_DECISION_NAMES]).toEqual(['scope', 'acceptance_test']);
      expect(attrs[decisionAttr('scope', 'digest')]).toBe(scope);
      expect(attrs[decisionAttr('acceptance_test', 'revision')]).toBe(2);
      expect(attrs[decisionAttr('acceptance_test', 'approval_ref')]).toBe('ap-1');
      expect(attrs[ATTR_GEN_AI_CONVERSATION_COMPACTED]).toBeUndefined();
      expect(JSON.stringify(attrs)).not.toContain('acme/payments');
    });
    it('marks the post span as compacted', () => {
      expect(snapshotAttributes('post', snapshot)[ATTR_GEN_AI_CONVERSATION_COMPACTED]).toBe(true);
      expect(
        evidenceMissingAttributes('post', 's', 'capture_failed')[ATTR_GEN_AI_CONVERSATION_COMPACTED],
      ).toBe(true);
    });
    it('writes the verdicts of a classification', () => {
      const attrs = classificationAttributes({
        state: 'dropped',
        action: 'pause_and_restore',
        reason: 'absent_after_compaction',
        primaryDecision: 'scope',
        decisions: { scope: { verdict: 'dropped', reason: 'absent_after_compaction' } },
      });
      expect(attrs[ATTR_CONTINUITY_STATE]).toBe('dropped');
      expect(attrs[decisionAttr('scope', 'verdict')]).toBe('dropped');
    });
  });

  describe('reading', () => {
    it('round-trips a snapshot', () => {
      const attrs = snapshotAttributes('pre', snapshot, {
        boundaryId: 'b-1',
        runtime: 'sdk',
        trigger: 'auto',
      });
      const ev = readCompactionSpan(SPAN_COMPACTION_PRE, attrs, T0, {
        traceId: 'a'.repeat(32),
        spanId: 'b'.repeat(16),
      });
      expect(ev).toMatchObject({
        kind: 'pre',
        sessionId: 'sess-1',
        boundaryId: 'b-1',
        runtime: 'sdk',
        trigger: 'auto',
      });
      expect(ev?.kind === 'pre' && ev.snapshot).toEqual(snapshot);
      expect(ev?.span?.spanId).toBe('b'.repeat(16));
    });
    it('returns undefined for ordinary spans', () => {
      expect(readCompactionSpan('GET /users', { [ATTR_SESSION_ID]: 's' }, T0)).toBeUndefined();
      expect(readCompactionSpan('agent.tool.call', { [ATTR_SESSION_ID]: 's' }, T0)).toBeUndefined();
      expect(isCompactionSpanName('continuity.compaction.pre')).toBe(true);
      expect(isCompactionSpanName('http')).toBe(false);
    });
    it('accepts gen_ai.conversation.id as the session key and refuses a compaction span without one', () => {
      const attrs = snapshotAttributes('pre', snapshot);
      delete attrs[ATTR_SESSION_ID];
      expect(readCompactionSpan(SPAN_COMPACTION_PRE, attrs, T0)).toBeUndefined();
      attrs[ATTR_GEN_AI_CONVERSATION_ID] = 'conv-9';
      expect(readCompactionSpan(SPAN_COMPACTION_PRE, attrs, T0)?.sessionId).toBe('conv-9');
    });
    it('reads decision names that are also Object.prototype keys', () => {
      const s = {
        ...snapshot,
        decisions: { constructor: snapshot.decisions.scope!, scope: snapshot.decisions.scope! },
      };
      const ev = readCompactionSpan(SPAN_COMPACTION_PRE, snapshotAttributes('pre', s), T0);
      expect(ev?.kind === 'pre' && Object.keys(ev.snapshot?.decisions ?? {})).toEqual([
        'constructor',
        'scope',
      ]);
    });
    it('reads OTLP-style int64 strings', () => {
      const attrs = snapshotAttributes('post', snapshot);
      attrs[decisionAttr('scope', 'revision')] = '1';
      const ev = readCompactionSpan(SPAN_COMPACTION_POST, attrs, String(T0));
      expect(ev?.kind === 'post' && ev.snapshot?.decisions.scope?.revision).toBe(1);
    });
    it('falls back to the span start time for the capture time', () => {
      const attrs = snapshotAttributes('pre', snapshot);
      delete attrs['continuity.captured_at'];
      const ev = readCompactionSpan(SPAN_COMPACTION_PRE, attrs, [1_780_000_000, 5]);
      expect(ev?.kind === 'pre' && ev.snapshot?.capturedAt).toBe('2026-05-28T20:26:40.000000005Z');
    });
    it.each([
      ['a bad digest', decisionAttr('scope', 'digest'), 'sha256:nothex'],
      ['a revision of 0', decisionAttr('scope', 'revision'), 0],
      ['a fractional revision', decisionAttr('scope', 'revision'), 1.5],
      ['a non-UTC observation time', decisionAttr('scope', 'observed_at'), '2026-11-30T10:00:00+01:00'],
      ['a path as source', decisionAttr('scope', 'source'), '/home/me/task.md'],
      ['names that are not an array', ATTR_DECISION_NAMES, 'scope'],
      ['a bad decision name', ATTR_DECISION_NAMES, ['Scope']],
      ['duplicate names', ATTR_DECISION_NAMES, ['scope', 'scope']],
      ['a missing normalizer version', 'continuity.normalizer.version', undefined],
    ])('reads %s as evidence missing, never as a snapshot', (_label, key, value) => {
      const attrs = { ...snapshotAttributes('post', snapshot), [key]: value };
      const ev = readCompactionSpan(SPAN_COMPACTION_POST, attrs, T0);
      expect(ev).toMatchObject({
        kind: 'post',
        snapshot: null,
        evidenceMissing: EVIDENCE_MISSING_REASONS.invalidAttributes,
      });
    });
    it('reads the evidence-missing mark', () => {
      const ev = readCompactionSpan(
        SPAN_COMPACTION_PRE,
        evidenceMissingAttributes('pre', 's-2', 'capture_failed'),
        T0,
      );
      expect(ev).toMatchObject({
        kind: 'pre',
        sessionId: 's-2',
        snapshot: null,
        evidenceMissing: 'capture_failed',
      });
    });
    it('reads approvals and marks malformed ones', () => {
      const approval: Approval = {
        decision: 'acceptance_test',
        fromDigest: test1,
        toDigest: scope,
        approvalRef: 'ap-1',
        approvedBy: 'reviewer-17',
        approvedAt: '2026-11-30T10:03:00Z',
      };
      const ev = readCompactionSpan(SPAN_DECISION_APPROVAL, approvalAttributes('s', approval), T0);
      expect(ev).toMatchObject({ kind: 'approval', approval });
      const bad = { ...approvalAttributes('s', approval), 'continuity.approval.to_digest': 42 };
      expect(readCompactionSpan(SPAN_DECISION_APPROVAL, bad, T0)).toMatchObject({ approval: null });
    });
    it('reads activity and ignores unknown activity values', () => {
      expect(
        readCompactionSpan(
          SPAN_ACTIVITY,
          { [ATTR_SESSION_ID]: 's', 'continuity.activity.state': 'idle' },
          T0,
        ),
      ).toMatchObject({
        kind: 'activity',
        state: 'idle',
      });
      expect(
        readCompactionSpan(
          SPAN_ACTIVITY,
          { [ATTR_SESSION_ID]: 's', 'continuity.activity.state': 'busy' },
          T0,
        ),
      ).toBeUndefined();
    });
    it('never throws on hostile attribute records', () => {
      const hostile = new Proxy(
        {},
        {
          get: () => {
            throw new Error('boom');
          },
        },
      );
      expect(readCompactionSpan(SPAN_COMPACTION_PRE, hostile, T0)).toBeUndefined();
      expect(readCompactionSpan(SPAN_COMPACTION_PRE, { [ATTR_SESSION_ID]: 's' }, 'garbage')).toMatchObject({
        snapshot: null,
      });
    });
  });

  it('converts times', () => {
    expect(toNs([1, 2])).toBe(1_000_000_002n);
    expect(toNs('-1')).toBeNull();
    expect(toNs(1e300)).toBeNull();
    expect(formatNs(1_000_000_002n)).toBe('1970-01-01T00:00:01.000000002Z');
  });
});
