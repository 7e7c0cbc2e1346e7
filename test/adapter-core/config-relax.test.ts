/**
 * Which configuration settings relax the write gate (pure comparison with the strict defaults),
 * and the settings the gate keeps until the human seals them.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_GATE_POLICY, policyVerdict } from '../../src/adapters/core/config.js';
import { type GateSettings, relaxationsOf, tightenGate } from '../../src/adapters/core/config-relax.js';
import { ALL_REASONS, CONTINUITY_STATES } from '../../src/classify/states.js';

const STRICT: GateSettings = {
  tools: ['Edit', 'Write', 'Bash'],
  policy: DEFAULT_GATE_POLICY,
  unknownTools: 'ask',
  protectContinuityFiles: true,
};
const file = (over: Partial<GateSettings>): GateSettings => ({ ...STRICT, policy: {}, ...over });
const RANK = { allow: 0, ask: 1, deny: 2 } as const;

describe('relaxationsOf', () => {
  it('finds nothing in the defaults, or in a file that only tightens', () => {
    expect(relaxationsOf(file({}), STRICT)).toEqual([]);
    expect(
      relaxationsOf(
        file({
          tools: ['*'],
          policy: { preserved: 'ask', unverified: 'deny', 'unverified/pre_snapshot_missing': 'deny' },
          unknownTools: 'deny',
        }),
        STRICT,
      ),
    ).toEqual([]);
  });

  it('names every relaxation: tools left out, milder verdicts (state or state/reason), unknown tools allowed, the guard off', () => {
    const found = relaxationsOf(
      file({
        tools: ['Edit', 'None'],
        policy: { conflicting: 'allow', 'dropped/absent_after_compaction': 'ask', preserved: 'deny' },
        unknownTools: 'allow',
        protectContinuityFiles: false,
      }),
      STRICT,
    );
    expect(found).toEqual([
      { setting: 'gate.tools', effect: 'leaves Write, Bash ungated' },
      { setting: 'gate.policy.conflicting', effect: 'allow where the default is deny' },
      { setting: 'gate.policy.dropped/absent_after_compaction', effect: 'ask where the default is deny' },
      { setting: 'gate.unknownTools', effect: 'allow where the default is ask' },
      { setting: 'gate.protectContinuityFiles', effect: 'turns the guard of the continuity files off' },
    ]);
  });

  it('a bare state routed to ask relaxes unverified but not its pre_snapshot_missing, which already asks', () => {
    expect(relaxationsOf(file({ policy: { unverified: 'ask' } }), STRICT).map((r) => r.setting)).toEqual([
      'gate.policy.unverified',
    ]);
    expect(relaxationsOf(file({ policy: { 'unverified/pre_snapshot_missing': 'ask' } }), STRICT)).toEqual([]);
  });
});

describe('tightenGate', () => {
  it('never answers milder than the defaults, for any state and reason, and keeps every tightening', () => {
    const mixed = file({
      tools: ['Write', 'Read'],
      policy: {
        unverified: 'deny',
        'unverified/pre_snapshot_missing': 'allow',
        conflicting: 'ask',
        'conflicting/unapproved_change': 'deny',
        preserved: 'ask',
      },
      unknownTools: 'allow',
      protectContinuityFiles: false,
    });
    const t = tightenGate(mixed, STRICT);
    expect(t.tools).toEqual(['Edit', 'Write', 'Bash', 'Read']);
    expect(t.unknownTools).toBe('ask');
    expect(t.protectContinuityFiles).toBe(true);
    expect(relaxationsOf(t, STRICT)).toEqual([]);
    for (const state of CONTINUITY_STATES)
      for (const reason of ALL_REASONS)
        expect(RANK[policyVerdict(t.policy, state, reason)], `${state}/${reason}`).toBeGreaterThanOrEqual(
          RANK[policyVerdict({}, state, reason)],
        );
    // Tightenings stay: preserved asks, a dropped specific key hands its reason to unverified's deny.
    expect(policyVerdict(t.policy, 'preserved', 'digest_match_fresh')).toBe('ask');
    expect(policyVerdict(t.policy, 'unverified', 'pre_snapshot_missing')).toBe('deny');
    expect(policyVerdict(t.policy, 'conflicting', 'unapproved_change')).toBe('deny');
  });
});
