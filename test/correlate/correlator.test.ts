import { describe, expect, it } from 'vitest';
import { classify } from '../../src/classify/classify.js';
import { Correlator } from '../../src/correlate/correlator.js';
import { readPendingState } from '../../src/correlate/persist.js';
import { DEFAULT_POST_WINDOWS_MS } from '../../src/correlate/types.js';
import { ACTIVITY_STATE_UNKNOWN } from '../../src/otel/semconv.js';
import {
  A,
  approval,
  approvalEvent,
  B,
  fixtureEvents,
  missingPre,
  postEvent,
  preEvent,
  sixCases,
  snap,
} from './helpers.js';

const PRE_AT = '2026-11-30T10:00:00Z';
const POST_AT = '2026-11-30T10:05:00Z';
const NOW = 1_000_000;

describe('Correlator', () => {
  describe('pairing', () => {
    it('resolves a pre and its post with the core classifier and the pre span for the link', () => {
      const c = new Correlator();
      const pre = preEvent(snap('s1', PRE_AT), { runtime: 'sdk', trigger: 'auto', boundaryId: 'b1' });
      expect(c.observe(pre, NOW)).toEqual([]);
      expect(c.pendingCount).toBe(1);
      const post = postEvent(snap('s1', POST_AT), { runtime: 'sdk', boundaryId: 'b1' });
      const [r, ...rest] = c.observe(post, NOW + 10);
      expect(rest).toEqual([]);
      expect(r).toMatchObject({
        sessionId: 's1',
        boundaryId: 'b1',
        runtime: 'sdk',
        trigger: 'auto',
        cause: 'post',
        resolvedAtPost: true,
        preSpan: pre.span,
        postSpan: post.span,
        reobservationSeconds: 300,
        approvalCount: 0,
        evidenceMissing: null,
        activity: ACTIVITY_STATE_UNKNOWN,
      });
      expect(r?.classification).toEqual(classify({ pre: snap('s1', PRE_AT), post: snap('s1', POST_AT) }));
      expect(r?.classification.state).toBe('preserved');
      expect(c.pendingCount).toBe(0);
    });

    it('agrees with the library on all six cases (2 preserved, 1 approved, 1 dropped, 1 conflicting, 1 unverified)', () => {
      const c = new Correlator();
      const states: Record<string, string> = {};
      for (const fixture of sixCases()) {
        for (const ev of fixtureEvents(fixture)) {
          for (const r of c.observe(ev, NOW)) {
            states[r.sessionId] = r.classification.state;
            expect(r.classification).toEqual(
              classify({ pre: fixture.pre, post: fixture.post, approvals: fixture.approvals }),
            );
          }
        }
      }
      const counts: Record<string, number> = {};
      for (const s of Object.values(states)) counts[s] = (counts[s] ?? 0) + 1;
      expect(counts).toEqual({ preserved: 2, approved_change: 1, dropped: 1, conflicting: 1, unverified: 1 });
    });

    it('keeps interleaved sessions apart', () => {
      const c = new Correlator();
      c.observe(preEvent(snap('a', PRE_AT)), NOW);
      c.observe(preEvent(snap('b', PRE_AT)), NOW);
      const [rb] = c.observe(postEvent(snap('b', POST_AT, B)), NOW);
      const [ra] = c.observe(postEvent(snap('a', POST_AT)), NOW);
      expect([rb?.sessionId, rb?.classification.state]).toEqual(['b', 'conflicting']);
      expect([ra?.sessionId, ra?.classification.state]).toEqual(['a', 'preserved']);
    });

    it('opens a new boundary on a later pre and resolves the pending one as post_observation_missing', () => {
      const c = new Correlator();
      const first = preEvent(snap('s', PRE_AT), { boundaryId: 'b1' });
      c.observe(first, NOW);
      const [superseded] = c.observe(
        preEvent(snap('s', '2026-11-30T10:10:00Z'), { boundaryId: 'b2' }),
        NOW + 1,
      );
      expect(superseded).toMatchObject({
        boundaryId: 'b1',
        cause: 'superseded',
        preSpan: first.span,
        classification: { state: 'unverified', reason: 'post_observation_missing' },
      });
      const [r] = c.observe(postEvent(snap('s', '2026-11-30T10:15:00Z'), { boundaryId: 'b2' }), NOW + 2);
      expect(r).toMatchObject({ boundaryId: 'b2', cause: 'post', classification: { state: 'preserved' } });
    });

    it('resolves two boundaries of one session one after the other', () => {
      const c = new Correlator();
      c.observe(preEvent(snap('s', PRE_AT)), NOW);
      expect(c.observe(postEvent(snap('s', POST_AT)), NOW)[0]?.classification.state).toBe('preserved');
      c.observe(preEvent(snap('s', '2026-11-30T11:00:00Z')), NOW);
      const [r] = c.observe(postEvent(snap('s', '2026-11-30T11:05:00Z', B)), NOW);
      expect(r).toMatchObject({ cause: 'post', classification: { state: 'conflicting' } });
    });

    it('treats a re-captured pre of the same boundary id as newer evidence, not a new boundary', () => {
      const c = new Correlator();
      c.observe(preEvent(snap('s', PRE_AT, B), { boundaryId: 'b1' }), NOW);
      expect(c.observe(preEvent(snap('s', PRE_AT), { boundaryId: 'b1' }), NOW)).toEqual([]);
      expect(
        c.observe(postEvent(snap('s', POST_AT), { boundaryId: 'b1' }), NOW)[0]?.classification.state,
      ).toBe('preserved');
    });

    it('does not let a post of another boundary id resolve the pending boundary', () => {
      const c = new Correlator({ reorderGraceMs: 1_000 });
      c.observe(preEvent(snap('s', PRE_AT), { boundaryId: 'b1' }), NOW);
      expect(c.observe(postEvent(snap('s', POST_AT), { boundaryId: 'b9' }), NOW)).toEqual([]);
      expect(c.pendingCount).toBe(2);
      const [orphan] = c.expire(NOW + 1_000);
      expect(orphan).toMatchObject({
        boundaryId: 'b9',
        cause: 'orphan_post',
        classification: { reason: 'pre_snapshot_missing' },
      });
    });

    it('ignores the same span seen twice (OTLP retries)', () => {
      const c = new Correlator();
      const pre = preEvent(snap('s', PRE_AT));
      const post = postEvent(snap('s', POST_AT));
      c.observe(pre, NOW);
      expect(c.observe(pre, NOW)).toEqual([]);
      expect(c.observe(post, NOW)).toHaveLength(1);
      expect(c.observe(post, NOW)).toEqual([]);
      expect(c.stats.duplicates).toBe(2);
    });
  });

  describe('arrival order', () => {
    it('pairs a post that arrives before its pre within the reorder grace (late_pre)', () => {
      const c = new Correlator({ reorderGraceMs: 5_000 });
      const post = postEvent(snap('s', POST_AT));
      expect(c.observe(post, NOW)).toEqual([]);
      expect(c.pendingCount).toBe(1);
      const pre = preEvent(snap('s', PRE_AT));
      const [r] = c.observe(pre, NOW + 4_000);
      expect(r).toMatchObject({
        cause: 'late_pre',
        resolvedAtPost: false,
        preSpan: pre.span,
        postSpan: post.span,
        classification: { state: 'preserved' },
      });
      expect(c.pendingCount).toBe(0);
    });

    it('resolves a held post as pre_snapshot_missing once the grace has passed', () => {
      const c = new Correlator({ reorderGraceMs: 5_000 });
      c.observe(postEvent(snap('s', POST_AT)), NOW);
      expect(c.expire(NOW + 4_999)).toEqual([]);
      const [r] = c.expire(NOW + 5_000);
      expect(r).toMatchObject({
        cause: 'orphan_post',
        resolvedAtPost: false,
        classification: { state: 'unverified', reason: 'pre_snapshot_missing' },
      });
    });

    it('resolves a post with no pre at once when the grace is 0, so it can be written on the post span', () => {
      const c = new Correlator({ reorderGraceMs: 0 });
      const [r] = c.observe(postEvent(snap('s', POST_AT)), NOW);
      expect(r).toMatchObject({
        cause: 'orphan_post',
        resolvedAtPost: true,
        classification: { reason: 'pre_snapshot_missing' },
      });
    });

    it('does not pair a held post with a pre that started after it (the next boundary)', () => {
      const c = new Correlator({ reorderGraceMs: 5_000 });
      c.observe(postEvent(snap('s', POST_AT)), NOW);
      const [orphan] = c.observe(preEvent(snap('s', '2026-11-30T10:30:00Z')), NOW + 1);
      expect(orphan).toMatchObject({
        cause: 'orphan_post',
        classification: { reason: 'pre_snapshot_missing' },
      });
      expect(c.pendingCount).toBe(1);
    });
  });

  describe('approvals', () => {
    it('counts approvals seen between pre and post toward the boundary', () => {
      const c = new Correlator();
      c.observe(preEvent(snap('s', PRE_AT)), NOW);
      c.observe(approvalEvent('s', approval(A, B)), NOW);
      const [r] = c.observe(postEvent(snap('s', POST_AT, B)), NOW);
      expect(r).toMatchObject({
        approvalCount: 1,
        classification: { state: 'approved_change', reason: 'approved_chain' },
      });
      expect(r?.classification.decisions.scope?.approvalRefs).toEqual(['approval-1']);
    });

    it('does not count an approval of another session', () => {
      const c = new Correlator();
      c.observe(preEvent(snap('s', PRE_AT)), NOW);
      c.observe(approvalEvent('other', approval(A, B)), NOW);
      expect(c.observe(postEvent(snap('s', POST_AT, B)), NOW)[0]?.classification.state).toBe('conflicting');
    });

    it('counts an approval that arrived just before the pre (within the grace), not an old one', () => {
      const c = new Correlator({ reorderGraceMs: 1_000 });
      c.observe(approvalEvent('s', approval(A, B)), NOW);
      c.observe(preEvent(snap('s', PRE_AT)), NOW + 500);
      expect(c.observe(postEvent(snap('s', POST_AT, B)), NOW + 600)[0]?.classification.state).toBe(
        'approved_change',
      );

      const d = new Correlator({ reorderGraceMs: 1_000 });
      d.observe(approvalEvent('s', approval(A, B)), NOW);
      d.observe(preEvent(snap('s', PRE_AT)), NOW + 5_000);
      expect(d.observe(postEvent(snap('s', POST_AT, B)), NOW + 5_001)[0]?.classification.state).toBe(
        'conflicting',
      );
    });

    it('does not hold approvals for a late pre when the grace is 0', () => {
      const c = new Correlator({ reorderGraceMs: 0 });
      c.observe(approvalEvent('s', approval(A, B)), NOW);
      c.observe(preEvent(snap('s', PRE_AT)), NOW);
      expect(c.observe(postEvent(snap('s', POST_AT, B)), NOW)[0]?.classification.state).toBe('conflicting');
    });

    it('ignores malformed approvals and bounds approvals per boundary', () => {
      const c = new Correlator({ maxApprovalsPerBoundary: 2 });
      c.observe(preEvent(snap('s', PRE_AT)), NOW);
      c.observe(
        {
          kind: 'approval',
          sessionId: 's',
          timeNs: null,
          approval: null,
          evidenceMissing: 'invalid_attributes',
        },
        NOW,
      );
      c.observe(approvalEvent('s', approval(A, B, 'ap-1')), NOW);
      c.observe(approvalEvent('s', approval(B, A, 'ap-2')), NOW);
      c.observe(approvalEvent('s', approval(B, A, 'ap-3')), NOW);
      const [r] = c.observe(postEvent(snap('s', POST_AT, B)), NOW);
      expect(r?.approvalCount).toBe(2);
      // The A→B approval was the oldest and was dropped: a false alarm, never a fabricated match.
      expect(r?.classification.state).toBe('conflicting');
      expect(c.stats).toMatchObject({ malformedApprovals: 1, approvalsDropped: 1 });
    });
  });

  describe('missing evidence', () => {
    it('resolves a boundary whose pre capture failed to unverified, never a match', () => {
      const c = new Correlator();
      c.observe(missingPre('s', PRE_AT), NOW);
      const [r] = c.observe(postEvent(snap('s', POST_AT)), NOW);
      expect(r).toMatchObject({
        cause: 'post',
        evidenceMissing: 'capture_failed',
        classification: { state: 'unverified', reason: 'pre_snapshot_missing' },
      });
    });

    it('ignores a compactedAt earlier than the pre capture (it would make a stale observation fresh)', () => {
      const c = new Correlator();
      c.observe(preEvent(snap('s', PRE_AT)), NOW);
      const stale = snap('s', POST_AT, A, PRE_AT);
      const [r] = c.observe(postEvent(stale, { compactedAt: '2026-11-30T09:00:00Z' }), NOW);
      expect(r?.classification).toMatchObject({ state: 'unverified', reason: 'stale_observation' });
    });
  });

  describe('post windows', () => {
    it('expires each runtime on its own window with a controllable clock', () => {
      const c = new Correlator();
      c.observe(preEvent(snap('sdk-s', PRE_AT), { runtime: 'sdk' }), NOW);
      c.observe(preEvent(snap('cc-s', PRE_AT), { runtime: 'claude-code' }), NOW);
      c.observe(preEvent(snap('other', PRE_AT)), NOW);
      expect(c.expire(NOW + DEFAULT_POST_WINDOWS_MS.sdk! - 1)).toEqual([]);
      const sdk = c.expire(NOW + DEFAULT_POST_WINDOWS_MS.sdk!);
      expect(sdk.map((r) => [r.sessionId, r.cause, r.classification.reason])).toEqual([
        ['sdk-s', 'post_window_expired', 'post_observation_missing'],
      ]);
      expect(c.expire(NOW + DEFAULT_POST_WINDOWS_MS['claude-code']!).map((r) => r.sessionId)).toEqual([
        'cc-s',
      ]);
      expect(c.expire(NOW + DEFAULT_POST_WINDOWS_MS.default!).map((r) => r.sessionId)).toEqual(['other']);
      expect(c.pendingCount).toBe(0);
    });

    it('honours configured windows and classifies a post that arrives after its window', () => {
      const c = new Correlator({ postWindowsMs: { sdk: 1_000 } });
      c.observe(preEvent(snap('s', PRE_AT), { runtime: 'sdk', boundaryId: 'b1' }), NOW);
      expect(c.expire(NOW + 1_000)[0]?.classification.state).toBe('unverified');
      const [late] = c.observe(
        postEvent(snap('s', POST_AT), { runtime: 'sdk', boundaryId: 'b1' }),
        NOW + 1_500,
      );
      expect(late).toMatchObject({ cause: 'reobserved', classification: { state: 'preserved' } });
    });

    it('clamps bad options with warnings instead of throwing', () => {
      const c = new Correlator({
        postWindowsMs: { sdk: -5 },
        maxPendingBoundaries: 0,
        reorderGraceMs: 10_000_000,
        maxSessions: 1,
      });
      expect(c.options.postWindowsMs.sdk).toBe(DEFAULT_POST_WINDOWS_MS.sdk);
      expect(c.options.maxPendingBoundaries).toBe(100_000);
      expect(c.options.reorderGraceMs).toBe(DEFAULT_POST_WINDOWS_MS.sdk);
      expect(c.options.maxSessions).toBe(100_000);
      expect(c.warnings).toHaveLength(4);
    });
  });

  describe('re-observation', () => {
    it('clears a conflicting boundary after an approval and a fresh re-observation', () => {
      const c = new Correlator();
      c.observe(preEvent(snap('s', PRE_AT), { boundaryId: 'b1' }), NOW);
      expect(
        c.observe(postEvent(snap('s', POST_AT, B), { boundaryId: 'b1' }), NOW)[0]?.classification.state,
      ).toBe('conflicting');
      c.observe(approvalEvent('s', approval(A, B, 'ap-7', '2026-11-30T10:06:00Z')), NOW + 1);
      const [r] = c.observe(postEvent(snap('s', '2026-11-30T10:07:00Z', B), { boundaryId: 'b1' }), NOW + 2);
      expect(r).toMatchObject({
        cause: 'reobserved',
        resolvedAtPost: true,
        classification: { state: 'approved_change' },
      });
      expect(c.sessionSummary()).toEqual([{ state: 'approved_change', activity: 'unknown', sessions: 1 }]);
    });
  });

  describe('bounded memory', () => {
    it('evicts the oldest pending boundary above the limit and resolves it as unverified', () => {
      const c = new Correlator({ maxPendingBoundaries: 3 });
      const evicted = [];
      for (let i = 0; i < 5; i++) evicted.push(...c.observe(preEvent(snap(`s${i}`, PRE_AT)), NOW + i));
      expect(evicted.map((r) => [r.sessionId, r.cause, r.classification.state])).toEqual([
        ['s0', 'evicted', 'unverified'],
        ['s1', 'evicted', 'unverified'],
      ]);
      expect(c.pendingCount).toBe(3);
      expect(c.stats.evicted).toBe(2);
    });

    it('forgets the least recently active session above maxSessions and idle ones after the TTL', () => {
      const c = new Correlator({ maxPendingBoundaries: 2, maxSessions: 2, sessionTtlMs: 1_000 });
      for (const id of ['a', 'b', 'c'])
        c.observe({ kind: 'activity', sessionId: id, timeNs: null, state: 'idle' }, NOW);
      expect(c.sessionCount).toBe(2);
      c.expire(NOW + 1_000);
      expect(c.sessionCount).toBe(0);
    });
  });

  describe('sessions summary', () => {
    it('counts sessions by latest state × activity, never flattened', () => {
      const c = new Correlator();
      const run = (id: string, scope: string, activity: 'working' | 'waiting_human' | 'idle') => {
        c.observe({ kind: 'activity', sessionId: id, timeNs: null, state: activity }, NOW);
        c.observe(preEvent(snap(id, PRE_AT)), NOW);
        c.observe(postEvent(snap(id, POST_AT, scope)), NOW);
      };
      run('w1', B, 'working');
      run('w2', B, 'working');
      run('h1', A, 'waiting_human');
      run('h2', B, 'waiting_human');
      const cells = c
        .sessionSummary()
        .sort((x, y) => `${x.state}${x.activity}`.localeCompare(`${y.state}${y.activity}`));
      expect(cells).toEqual([
        { state: 'conflicting', activity: 'waiting_human', sessions: 1 },
        { state: 'conflicting', activity: 'working', sessions: 2 },
        { state: 'preserved', activity: 'waiting_human', sessions: 1 },
      ]);
      expect(c.needsHuman().map((n) => n.sessionId)).toEqual(['w1', 'w2', 'h2']);
      expect(c.needsHuman(1).map((n) => n.sessionId)).toEqual(['h2']);
    });
  });

  describe('drain', () => {
    it('resolves every pending boundary and held post', () => {
      const c = new Correlator();
      c.observe(preEvent(snap('a', PRE_AT)), NOW);
      c.observe(postEvent(snap('b', POST_AT)), NOW);
      const drained = c.drain();
      expect(drained.map((r) => [r.sessionId, r.cause, r.classification.reason])).toEqual([
        ['a', 'drained', 'post_observation_missing'],
        ['b', 'drained', 'pre_snapshot_missing'],
      ]);
      expect(c.drain()).toEqual([]);
      expect(c.pendingCount).toBe(0);
    });
  });

  describe('export and import', () => {
    it('carries pending boundaries across a restart as JSON', () => {
      const before = new Correlator();
      before.observe({ kind: 'activity', sessionId: 's', timeNs: null, state: 'working' }, NOW);
      before.observe(preEvent(snap('s', PRE_AT), { runtime: 'sdk', boundaryId: 'b1' }), NOW);
      before.observe(approvalEvent('s', approval(A, B)), NOW);
      before.observe(postEvent(snap('held', POST_AT)), NOW);
      const json = JSON.parse(JSON.stringify(before.exportPending()));

      const after = new Correlator();
      expect(after.importPending(readPendingState(json), NOW + 10)).toEqual([]);
      expect(after.pendingCount).toBe(2);
      const [r] = after.observe(postEvent(snap('s', POST_AT, B), { boundaryId: 'b1' }), NOW + 20);
      expect(r).toMatchObject({
        runtime: 'sdk',
        activity: 'working',
        classification: { state: 'approved_change' },
      });
      // The held post keeps its original grace (held at NOW, grace 5 s).
      expect(after.expire(NOW + 4_999)).toEqual([]);
      expect(after.expire(NOW + 5_000).map((x) => [x.sessionId, x.cause])).toEqual([['held', 'orphan_post']]);
      expect(after.pendingCount).toBe(0);
    });

    it('expires imported boundaries against their original opening time', () => {
      const before = new Correlator();
      before.observe(preEvent(snap('s', PRE_AT), { runtime: 'sdk' }), NOW);
      const after = new Correlator();
      after.importPending(readPendingState(before.exportPending()), NOW + 60_000);
      expect(after.expire(NOW + DEFAULT_POST_WINDOWS_MS.sdk!).map((r) => r.cause)).toEqual([
        'post_window_expired',
      ]);
    });

    it('resolves unrecoverable entries to unverified, never preserved', () => {
      const before = new Correlator();
      before.observe(preEvent(snap('s', PRE_AT)), NOW);
      before.observe(postEvent(snap('h', POST_AT)), NOW);
      const state = JSON.parse(JSON.stringify(before.exportPending()));
      state.boundaries[0].pre.decisions.scope.digest = 'sha256:tampered';
      state.heldPosts[0].timeNs = -1;
      state.boundaries.push({ sessionId: '/not an id' }, 42);
      const after = new Correlator();
      const out = after.importPending(readPendingState(state), NOW);
      expect(out.map((r) => [r.sessionId, r.cause, r.classification.state, r.evidenceMissing])).toEqual([
        ['s', 'unrecoverable', 'unverified', 'unrecoverable'],
        ['h', 'unrecoverable', 'unverified', 'unrecoverable'],
      ]);
      expect(after.stats.unrecoverable).toBe(4);
      expect(after.pendingCount).toBe(0);
      // A post for the lost boundary is not matched against anything: no fabricated match.
      const later = new Correlator({ reorderGraceMs: 0 });
      later.importPending(readPendingState(state), NOW);
      expect(later.observe(postEvent(snap('s', POST_AT)), NOW)[0]?.classification.state).toBe('unverified');
    });

    it('rejects a document of another version or shape without throwing', () => {
      const c = new Correlator();
      expect(c.importPending(readPendingState(null), NOW)).toEqual([]);
      expect(c.importPending(readPendingState({ version: 99, boundaries: [] }), NOW)).toEqual([]);
      expect(c.importPending(readPendingState('garbage'), NOW)).toEqual([]);
      expect(c.stats.unrecoverable).toBe(3);
    });
  });
});
