/**
 * The classifier (issue 2 §4), rule by rule. Digests come from real values through the real
 * normalizer; times are fixed strings (the classifier has no clock).
 */
import { describe, expect, it } from 'vitest';
import { classify, eventOnlyRule, findApprovalChain } from '../../src/classify/classify.js';
import {
  ACTIONS,
  ALL_REASONS,
  BOUNDARY_REASONS,
  CONTINUITY_STATES,
  type ContinuityState,
  DECISION_REASONS,
  severity,
} from '../../src/classify/states.js';
import type { Approval, DecisionObservation, Snapshot } from '../../src/decision/model.js';
import { createDigestKey, digestValue } from '../../src/digest/digest.js';

const CAPTURED = '2026-11-30T10:00:00Z'; // pre snapshot capturedAt: the default boundary time
const BEFORE = '2026-11-30T09:59:00Z';
const AT = CAPTURED;
const AFTER = '2026-11-30T10:05:00Z';

const A = digestValue({ command: 'npm test -- ledger' });
const B = digestValue({ command: 'npm test -- ledger reconcile' });
const C = digestValue({ command: 'npm test -- ledger reconcile --ci' });

type Obs = string | Partial<DecisionObservation>;

/** An observation: a digest (observed at `at`), or fields overriding the defaults. */
function obs(o: Obs, at: string): DecisionObservation {
  return typeof o === 'string'
    ? { digest: o, revision: 1, observedAt: at }
    : { digest: A, revision: 1, observedAt: at, ...o };
}

function pre(decisions: Record<string, Obs>, extra: Partial<Snapshot> = {}): Snapshot {
  return {
    sessionId: 'session-1',
    capturedAt: CAPTURED,
    normalizerVersion: 1,
    decisions: Object.fromEntries(Object.entries(decisions).map(([n, o]) => [n, obs(o, BEFORE)])),
    ...extra,
  };
}

/** A post snapshot; observations default to a fresh time. */
function post(decisions: Record<string, Obs>, extra: Partial<Snapshot> = {}): Snapshot {
  return {
    sessionId: 'session-1',
    capturedAt: AFTER,
    normalizerVersion: 1,
    decisions: Object.fromEntries(Object.entries(decisions).map(([n, o]) => [n, obs(o, AFTER)])),
    ...extra,
  };
}

function approval(decision: string, fromDigest: string, toDigest: string, ref: string): Approval {
  return {
    decision,
    fromDigest,
    toDigest,
    approvalRef: ref,
    approvedBy: 'reviewer-17',
    approvedAt: '2026-11-30T10:03:00Z',
  };
}

const stale = (digest: string) => ({ digest, observedAt: AT });

describe('classify', () => {
  describe('boundary evidence', () => {
    it('is unverified with pre_snapshot_missing when no pre snapshot was taken, never a fabricated match', () => {
      expect(classify({ pre: null, post: post({ scope: A }) })).toEqual({
        state: 'unverified',
        action: 'reobserve',
        reason: BOUNDARY_REASONS.preSnapshotMissing,
        primaryDecision: null,
        decisions: {},
      });
    });

    it('is unverified with pre_snapshot_missing when neither snapshot exists', () => {
      expect(classify({ pre: null, post: null }).reason).toBe('pre_snapshot_missing');
    });

    it('is unverified with post_observation_missing when nothing was observed after compaction', () => {
      expect(classify({ pre: pre({ scope: A }), post: null })).toEqual({
        state: 'unverified',
        action: 'reobserve',
        reason: BOUNDARY_REASONS.postObservationMissing,
        primaryDecision: null,
        decisions: {},
      });
    });

    it('is unverified with no_required_decisions when the pre snapshot recorded none', () => {
      const r = classify({ pre: pre({}), post: post({ scope: A }) });
      expect(r).toMatchObject({
        state: 'unverified',
        reason: 'no_required_decisions',
        primaryDecision: null,
      });
    });
  });

  describe('dropped', () => {
    it('marks a required decision absent from the post snapshot as dropped', () => {
      const r = classify({ pre: pre({ scope: A, approval_boundary: B }), post: post({ scope: A }) });
      expect(r.decisions.approval_boundary).toEqual({
        verdict: 'dropped',
        reason: 'absent_after_compaction',
      });
      expect(r).toMatchObject({
        state: 'dropped',
        action: 'pause_and_restore',
        primaryDecision: 'approval_boundary',
      });
    });

    it('marks every decision dropped when the post snapshot is empty', () => {
      const r = classify({ pre: pre({ scope: A, target: B }), post: post({}) });
      expect(Object.values(r.decisions).map((d) => d.verdict)).toEqual(['dropped', 'dropped']);
    });

    it('reports dropped even when the normalizer versions differ: absence needs no comparison', () => {
      const r = classify({
        pre: pre({ scope: A, target: A }),
        post: post({ scope: A }, { normalizerVersion: 2 }),
      });
      expect(r.decisions.target?.verdict).toBe('dropped');
      expect(r.decisions.scope?.reason).toBe('normalizer_mismatch');
    });

    it('does not find a decision named like an Object.prototype member in the post snapshot', () => {
      const r = classify({ pre: pre({ constructor: A }), post: post({ scope: A }) });
      expect(r.decisions.constructor).toEqual({ verdict: 'dropped', reason: 'absent_after_compaction' });
      expect(r.state).toBe('dropped');
    });
  });

  describe('comparability', () => {
    it('is unverified with normalizer_mismatch when the versions differ, even for equal digests', () => {
      const r = classify({ pre: pre({ scope: A }), post: post({ scope: A }, { normalizerVersion: 2 }) });
      expect(r).toMatchObject({
        state: 'unverified',
        reason: 'normalizer_mismatch',
        primaryDecision: 'scope',
      });
    });

    it('is unverified with digest_scheme_mismatch for a plain digest before and a keyed one after', () => {
      const key = createDigestKey(Buffer.alloc(32, 1));
      const r = classify({
        pre: pre({ target: digestValue('main') }),
        post: post({ target: digestValue('main', key) }),
      });
      expect(r.decisions.target).toEqual({ verdict: 'unverified', reason: 'digest_scheme_mismatch' });
    });

    it('is unverified with digest_scheme_mismatch for keyed digests under different key ids', () => {
      const k1 = createDigestKey(Buffer.alloc(32, 1));
      const k2 = createDigestKey(Buffer.alloc(32, 2));
      const r = classify({
        pre: pre({ target: digestValue('main', k1) }),
        post: post({ target: digestValue('main', k2) }),
      });
      expect(r).toMatchObject({ state: 'unverified', reason: 'digest_scheme_mismatch' });
    });

    it('compares keyed digests under the same key id like plain ones', () => {
      const key = createDigestKey(Buffer.alloc(32, 1));
      const r = classify({
        pre: pre({ target: digestValue('main', key) }),
        post: post({ target: digestValue('main', key) }),
      });
      expect(r.state).toBe('preserved');
    });

    it('does not let a scheme mismatch pass as a conflict', () => {
      const key = createDigestKey(Buffer.alloc(32, 1));
      const r = classify({
        pre: pre({ target: digestValue('main') }),
        post: post({ target: digestValue('dev', key) }),
      });
      expect(r.state).toBe('unverified');
    });
  });

  describe('freshness', () => {
    it('preserves a matching digest observed strictly after the boundary', () => {
      const r = classify({ pre: pre({ scope: A }), post: post({ scope: A }) });
      expect(r).toEqual({
        state: 'preserved',
        action: 'continue',
        reason: 'digest_match_fresh',
        primaryDecision: 'scope',
        decisions: { scope: { verdict: 'preserved', reason: 'digest_match_fresh' } },
      });
    });

    it('treats a matching digest observed exactly at the boundary as stale (unverified)', () => {
      const r = classify({ pre: pre({ acceptance_test: A }), post: post({ acceptance_test: stale(A) }) });
      expect(r).toMatchObject({ state: 'unverified', reason: 'stale_observation', action: 'reobserve' });
    });

    it('treats a matching digest observed before the boundary as stale', () => {
      const r = classify({
        pre: pre({ scope: A }),
        post: post({ scope: { digest: A, observedAt: BEFORE } }),
      });
      expect(r.decisions.scope).toEqual({ verdict: 'unverified', reason: 'stale_observation' });
    });

    it('compares times to the nanosecond', () => {
      const at = '2026-11-30T10:00:00.000000001Z';
      const input = (observedAt: string) => ({
        pre: pre({ scope: A }),
        post: post({ scope: { digest: A, observedAt } }),
        compactedAt: at,
      });
      expect(classify(input('2026-11-30T10:00:00.000000002Z')).state).toBe('preserved');
      expect(classify(input('2026-11-30T10:00:00.000000001Z')).state).toBe('unverified');
      expect(classify(input('2026-11-30T10:00:00.000000000Z')).state).toBe('unverified');
    });

    it('treats equal times written differently as equal (stale)', () => {
      const r = classify({
        pre: pre({ scope: A }),
        post: post({ scope: { digest: A, observedAt: '2026-11-30T10:00:00.000Z' } }),
      });
      expect(r.decisions.scope?.reason).toBe('stale_observation');
    });

    it('is unverified, not conflicting, for a changed digest without a fresh observation', () => {
      const r = classify({ pre: pre({ scope: A }), post: post({ scope: stale(B) }) });
      expect(r.decisions.scope).toEqual({ verdict: 'unverified', reason: 'stale_observation' });
    });

    it('is unverified, not approved_change, for an approved change without a fresh observation', () => {
      const r = classify({
        pre: pre({ acceptance_test: A }),
        post: post({ acceptance_test: stale(B) }),
        approvals: [approval('acceptance_test', A, B, 'approval-1')],
      });
      expect(r).toMatchObject({ state: 'unverified', reason: 'stale_observation' });
    });

    it('does not take freshness from the post snapshot capturedAt, only from the observation', () => {
      const r = classify({ pre: pre({ scope: A }), post: post({ scope: stale(A) }, { capturedAt: AFTER }) });
      expect(r.state).toBe('unverified');
    });
  });

  describe('compactedAt', () => {
    it('defaults to the pre snapshot capturedAt', () => {
      const observedAt = '2026-11-30T10:00:01Z';
      const r = classify({ pre: pre({ scope: A }), post: post({ scope: { digest: A, observedAt } }) });
      expect(r.state).toBe('preserved');
      const same = classify({
        pre: pre({ scope: A }),
        post: post({ scope: { digest: A, observedAt } }),
        compactedAt: CAPTURED,
      });
      expect(same).toEqual(r);
    });

    it('overrides the default: an observation after capturedAt but not after compactedAt is stale', () => {
      const r = classify({
        pre: pre({ scope: A }),
        post: post({ scope: { digest: A, observedAt: '2026-11-30T10:02:00Z' } }),
        compactedAt: '2026-11-30T10:02:00Z',
      });
      expect(r).toMatchObject({ state: 'unverified', reason: 'stale_observation' });
    });

    it('overrides the default the other way: an earlier compactedAt makes an earlier observation fresh', () => {
      const r = classify({
        pre: pre({ scope: A }),
        post: post({ scope: { digest: A, observedAt: '2026-11-30T09:59:30Z' } }),
        compactedAt: '2026-11-30T09:59:00Z',
      });
      expect(r.state).toBe('preserved');
    });

    it('throws a TypeError naming compactedAt when it is not RFC 3339 UTC', () => {
      expect(() =>
        classify({ pre: pre({ scope: A }), post: post({ scope: A }), compactedAt: '2026-11-30 10:00' }),
      ).toThrow(/^compactedAt: expected RFC 3339 UTC time/);
    });
  });

  describe('approval chains', () => {
    it('accepts A→B when the change is approved', () => {
      const r = classify({
        pre: pre({ acceptance_test: A }),
        post: post({ acceptance_test: B }),
        approvals: [approval('acceptance_test', A, B, 'approval-4821')],
      });
      expect(r).toEqual({
        state: 'approved_change',
        action: 'continue_with_audit',
        reason: 'approved_chain',
        primaryDecision: 'acceptance_test',
        decisions: {
          acceptance_test: {
            verdict: 'approved_change',
            reason: 'approved_chain',
            approvalRefs: ['approval-4821'],
          },
        },
      });
    });

    it('accepts A→B→C when every step is approved, reporting the chain in order', () => {
      const r = classify({
        pre: pre({ acceptance_test: A }),
        post: post({ acceptance_test: C }),
        approvals: [
          approval('acceptance_test', A, B, 'approval-1'),
          approval('acceptance_test', B, C, 'approval-2'),
        ],
      });
      expect(r.decisions.acceptance_test).toEqual({
        verdict: 'approved_change',
        reason: 'approved_chain',
        approvalRefs: ['approval-1', 'approval-2'],
      });
    });

    it('accepts the chain whatever order the approvals arrive in', () => {
      const r = classify({
        pre: pre({ acceptance_test: A }),
        post: post({ acceptance_test: C }),
        approvals: [
          approval('acceptance_test', B, C, 'approval-2'),
          approval('acceptance_test', A, B, 'approval-1'),
        ],
      });
      expect(r.decisions.acceptance_test?.approvalRefs).toEqual(['approval-1', 'approval-2']);
    });

    it('reports the shortest chain when several lead to the post digest', () => {
      const r = classify({
        pre: pre({ acceptance_test: A }),
        post: post({ acceptance_test: C }),
        approvals: [
          approval('acceptance_test', A, B, 'approval-1'),
          approval('acceptance_test', B, C, 'approval-2'),
          approval('acceptance_test', A, C, 'approval-direct'),
        ],
      });
      expect(r.decisions.acceptance_test?.approvalRefs).toEqual(['approval-direct']);
    });

    it('rejects A→B→C when the B→C step is missing (broken chain): conflicting', () => {
      const r = classify({
        pre: pre({ acceptance_test: A }),
        post: post({ acceptance_test: C }),
        approvals: [approval('acceptance_test', A, B, 'approval-1')],
      });
      expect(r).toMatchObject({
        state: 'conflicting',
        reason: 'unapproved_change',
        action: 'stop_and_ask_human',
      });
    });

    it('rejects a chain that does not start at the pre digest', () => {
      const r = classify({
        pre: pre({ acceptance_test: A }),
        post: post({ acceptance_test: C }),
        approvals: [approval('acceptance_test', B, C, 'approval-2')],
      });
      expect(r.state).toBe('conflicting');
    });

    it('does not count a chain approved for another decision', () => {
      const r = classify({
        pre: pre({ scope: A, acceptance_test: A }),
        post: post({ scope: B, acceptance_test: A }),
        approvals: [approval('acceptance_test', A, B, 'approval-1')],
      });
      expect(r.decisions.scope).toEqual({ verdict: 'conflicting', reason: 'unapproved_change' });
      expect(r).toMatchObject({ state: 'conflicting', primaryDecision: 'scope' });
    });

    it('does not follow an approval backwards: B→A does not approve A→B', () => {
      const r = classify({
        pre: pre({ target: A }),
        post: post({ target: B }),
        approvals: [approval('target', B, A, 'approval-revert')],
      });
      expect(r.state).toBe('conflicting');
    });

    it('treats a change without any approval as conflicting (unapproved_change)', () => {
      const r = classify({ pre: pre({ scope: A }), post: post({ scope: B }) });
      expect(r.decisions.scope).toEqual({ verdict: 'conflicting', reason: 'unapproved_change' });
    });

    it('ends on approval cycles and self-approvals', () => {
      const r = classify({
        pre: pre({ target: A }),
        post: post({ target: C }),
        approvals: [
          approval('target', A, A, 'self'),
          approval('target', A, B, 'ab'),
          approval('target', B, A, 'ba'),
        ],
      });
      expect(r.state).toBe('conflicting');
    });
  });

  describe('added decisions', () => {
    it('reports decisions that appear only after compaction as added, without changing the state', () => {
      const r = classify({ pre: pre({ scope: A }), post: post({ scope: A, branch: B, constructor: C }) });
      expect(r.state).toBe('preserved');
      expect(r.decisions.branch).toEqual({ verdict: 'added', reason: 'added_after_compaction' });
      expect(r.decisions.constructor).toEqual({ verdict: 'added', reason: 'added_after_compaction' });
      expect(r.primaryDecision).toBe('scope');
    });

    it('does not let an added decision stand in for a dropped one', () => {
      const r = classify({ pre: pre({ scope: A }), post: post({ scope_v2: A }) });
      expect(r).toMatchObject({ state: 'dropped', primaryDecision: 'scope' });
      expect(r.decisions.scope_v2?.verdict).toBe('added');
    });

    it('reports a verdict for every decision seen on either side', () => {
      const r = classify({ pre: pre({ scope: A, target: B }), post: post({ target: B, extra: C }) });
      expect(Object.keys(r.decisions).sort()).toEqual(['extra', 'scope', 'target']);
    });
  });

  describe('multiple defects', () => {
    // One decision per verdict; the boundary takes the most severe one still present.
    const all = {
      pre: pre({ c_conflict: A, d_drop: A, u_stale: A, a_approved: A, p_kept: A }),
      post: post({ c_conflict: B, u_stale: stale(A), a_approved: B, p_kept: A }),
      approvals: [approval('a_approved', A, B, 'approval-1')],
    };
    const severityOrder: Array<[ContinuityState, string]> = [
      ['conflicting', 'c_conflict'],
      ['dropped', 'd_drop'],
      ['unverified', 'u_stale'],
      ['approved_change', 'a_approved'],
      ['preserved', 'p_kept'],
    ];

    it('gives each decision its own verdict', () => {
      const r = classify(all);
      for (const [state, name] of severityOrder) expect(r.decisions[name]?.verdict).toBe(state);
    });

    it.each(severityOrder.map(([state], i) => [state, i] as const))(
      'is %s when that is the most severe verdict left (conflicting > dropped > unverified > approved_change > preserved)',
      (state, i) => {
        const keep = new Set(severityOrder.slice(i).map(([, n]) => n));
        const only = (s: Snapshot): Snapshot => ({
          ...s,
          decisions: Object.fromEntries(Object.entries(s.decisions).filter(([n]) => keep.has(n))),
        });
        const r = classify({ ...all, pre: only(all.pre), post: only(all.post) });
        expect(r.state).toBe(state);
        expect(r.primaryDecision).toBe(severityOrder[i]![1]);
        expect(r.action).toBe(ACTIONS[state]);
      },
    );

    it('lets a missing approval boundary outrank a stale acceptance test', () => {
      const r = classify({
        pre: pre({ approval_boundary: A, acceptance_test: B }),
        post: post({ acceptance_test: stale(B) }),
      });
      expect(r).toMatchObject({
        state: 'dropped',
        primaryDecision: 'approval_boundary',
        action: 'pause_and_restore',
      });
      expect(r.decisions.acceptance_test?.verdict).toBe('unverified');
    });

    it('lets a scope conflict outrank a dropped decision and an approved change', () => {
      const r = classify({
        pre: pre({ scope: A, approval_boundary: A, acceptance_test: A }),
        post: post({ scope: C, acceptance_test: B }),
        approvals: [approval('acceptance_test', A, B, 'approval-1')],
      });
      expect(r).toMatchObject({
        state: 'conflicting',
        primaryDecision: 'scope',
        reason: 'unapproved_change',
      });
    });
  });

  describe('primaryDecision', () => {
    const names = ['zeta', 'acceptance_test', 'constraint', 'alpha', 'target', 'scope', 'approval_boundary'];
    const expected = [
      'approval_boundary',
      'scope',
      'target',
      'constraint',
      'acceptance_test',
      'alpha',
      'zeta',
    ];

    it.each(expected.map((n, i) => [n, i] as const))(
      'is %s among the dropped decisions left (approval_boundary > scope > target > constraint > acceptance_test > others alphabetically)',
      (name, i) => {
        const left = names.filter((n) => expected.indexOf(n) >= i);
        const r = classify({ pre: pre(Object.fromEntries(left.map((n) => [n, A]))), post: post({}) });
        expect(r.primaryDecision).toBe(name);
      },
    );

    it('orders other names by code unit, not by length or locale', () => {
      const r = classify({ pre: pre({ beta_2: A, beta: A, b1: A }), post: post({}) });
      expect(r.primaryDecision).toBe('b1');
    });

    it('chooses only among decisions with the boundary state', () => {
      const r = classify({
        pre: pre({ approval_boundary: A, scope: A, acceptance_test: A }),
        post: post({ approval_boundary: stale(A), scope: A }),
      });
      expect(r).toMatchObject({
        state: 'dropped',
        primaryDecision: 'acceptance_test',
        reason: 'absent_after_compaction',
      });
    });

    it('takes the boundary reason from the primary decision', () => {
      const r = classify({
        pre: pre({ approval_boundary: A, target: A }),
        post: post({ approval_boundary: stale(A), target: A }),
      });
      expect(r.reason).toBe(r.decisions[r.primaryDecision!]!.reason);
      expect(r.reason).toBe('stale_observation');
    });
  });

  describe('actions', () => {
    it.each([
      ['preserved', 'continue'],
      ['approved_change', 'continue_with_audit'],
      ['dropped', 'pause_and_restore'],
      ['conflicting', 'stop_and_ask_human'],
      ['unverified', 'reobserve'],
    ] as const)('routes %s to %s', (state, action) => {
      expect(ACTIONS[state]).toBe(action);
    });

    it('gives every classification the action of its state', () => {
      const cases = [
        classify({ pre: pre({ scope: A }), post: post({ scope: A }) }),
        classify({ pre: pre({ scope: A }), post: post({ scope: B }) }),
        classify({ pre: pre({ scope: A }), post: post({}) }),
        classify({ pre: null, post: null }),
      ];
      for (const c of cases) expect(c.action).toBe(ACTIONS[c.state]);
    });
  });

  describe('purity', () => {
    it('does not modify its inputs', () => {
      const input = {
        pre: pre({ scope: A, target: A }),
        post: post({ scope: B, extra: C }),
        approvals: [approval('scope', A, B, 'approval-1')],
      };
      const copy = structuredClone(input);
      classify(input);
      expect(input).toEqual(copy);
    });

    it('does not depend on the order decisions are listed in', () => {
      const one = classify({
        pre: pre({ scope: A, target: A, constraint: A }),
        post: post({ target: B, scope: A }),
      });
      const two = classify({
        pre: pre({ constraint: A, target: A, scope: A }),
        post: post({ scope: A, target: B }),
      });
      expect(two.state).toBe(one.state);
      expect(two.primaryDecision).toBe(one.primaryDecision);
      expect(two.decisions).toEqual(one.decisions);
    });

    it('keeps activity out of the classification: continuity only', () => {
      const r = classify({ pre: pre({ scope: A }), post: post({ scope: A }) });
      expect(Object.keys(r).sort()).toEqual(['action', 'decisions', 'primaryDecision', 'reason', 'state']);
    });
  });
});

describe('states, actions and reasons', () => {
  it('lists the five states most severe first', () => {
    expect(CONTINUITY_STATES).toEqual([
      'conflicting',
      'dropped',
      'unverified',
      'approved_change',
      'preserved',
    ]);
    expect(CONTINUITY_STATES.map(severity)).toEqual([0, 1, 2, 3, 4]);
  });

  it('defines every reason code once', () => {
    expect(new Set(ALL_REASONS).size).toBe(ALL_REASONS.length);
    expect(ALL_REASONS).toEqual(
      expect.arrayContaining([...Object.values(DECISION_REASONS), ...Object.values(BOUNDARY_REASONS)]),
    );
  });
});

describe('findApprovalChain', () => {
  it('returns the approval references from the pre digest to the post digest', () => {
    const approvals = [approval('target', A, B, 'r1'), approval('target', B, C, 'r2')];
    expect(findApprovalChain(approvals, 'target', A, C)).toEqual(['r1', 'r2']);
    expect(findApprovalChain(approvals, 'target', A, B)).toEqual(['r1']);
  });

  it('returns undefined when no chain exists', () => {
    expect(findApprovalChain([approval('target', A, B, 'r1')], 'target', B, A)).toBeUndefined();
    expect(findApprovalChain([approval('scope', A, B, 'r1')], 'target', A, B)).toBeUndefined();
    expect(findApprovalChain([], 'target', A, B)).toBeUndefined();
  });
});

describe('eventOnlyRule', () => {
  it.each([
    [true, true, 'healthy'],
    [true, false, 'unhealthy'],
    [false, true, 'unhealthy'],
    [false, false, 'unhealthy'],
  ] as const)('pre %s, post %s → %s', (preSeen, postSeen, expected) => {
    expect(eventOnlyRule({ pre: preSeen, post: postSeen })).toBe(expected);
  });

  it('calls a boundary healthy whatever its decisions did (what the classifier replaces)', () => {
    const r = classify({ pre: pre({ scope: A }), post: post({ scope: B }) });
    expect(r.state).toBe('conflicting');
    expect(eventOnlyRule({ pre: true, post: true })).toBe('healthy');
  });
});
