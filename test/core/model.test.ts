/**
 * The decision model (issue 2 §2): names, observations, snapshots, approvals, RFC 3339 UTC time,
 * criticality order, and activity as its own dimension.
 */
import { describe, expect, it } from 'vitest';
import { CONTINUITY_STATES } from '../../src/classify/states.js';
import {
  ACTIVITY_STATES,
  ApprovalSchema,
  checkDecisionCount,
  DEFAULT_DECISION_BOUNDS,
  DecisionNameSchema,
  DecisionObservationSchema,
  DigestSchema,
  OpaqueIdSchema,
  SnapshotSchema,
  TimestampSchema,
} from '../../src/decision/model.js';
import { compareCriticality, WELL_KNOWN_DECISIONS } from '../../src/decision/names.js';
import { formatPath, InputError, problemsFromZod } from '../../src/decision/problems.js';
import { formatRfc3339Utc, isRfc3339Utc, parseRfc3339Utc } from '../../src/decision/time.js';

const DIGEST = `sha256:${'ab'.repeat(32)}`;

describe('decision names', () => {
  it.each(['scope', 'approval_boundary', 'target', 'acceptance_test', 'constraint', 'branch2', 'a'])(
    'accepts %s',
    (name) => {
      expect(DecisionNameSchema.safeParse(name).success).toBe(true);
    },
  );

  it.each([
    ['upper case', 'Scope'],
    ['leading digit', '1scope'],
    ['leading underscore', '_scope'],
    ['hyphen', 'approval-boundary'],
    ['space', 'acceptance test'],
    ['empty', ''],
    ['65 characters', `a${'b'.repeat(64)}`],
  ])('refuses a name with %s', (_why, name) => {
    expect(DecisionNameSchema.safeParse(name).success).toBe(false);
  });

  it('accepts 64 characters', () => {
    expect(DecisionNameSchema.safeParse(`a${'b'.repeat(63)}`).success).toBe(true);
  });

  it('lists the well-known names most critical first', () => {
    expect(WELL_KNOWN_DECISIONS).toEqual([
      'approval_boundary',
      'scope',
      'target',
      'constraint',
      'acceptance_test',
    ]);
  });
});

describe('compareCriticality', () => {
  it('orders approval_boundary > scope > target > constraint > acceptance_test > any other name', () => {
    const names = ['branch', 'acceptance_test', 'constraint', 'target', 'scope', 'approval_boundary'];
    expect([...names].sort(compareCriticality)).toEqual([
      'approval_boundary',
      'scope',
      'target',
      'constraint',
      'acceptance_test',
      'branch',
    ]);
  });

  it('orders other names alphabetically by code unit', () => {
    expect(['zeta', 'alpha', 'beta_2', 'beta', 'a_b', 'a1'].sort(compareCriticality)).toEqual([
      'a1',
      'a_b',
      'alpha',
      'beta',
      'beta_2',
      'zeta',
    ]);
  });
});

describe('digests', () => {
  it('accepts sha256:<64 hex> and hmac-sha256:<16 hex>:<64 hex>', () => {
    expect(DigestSchema.safeParse(DIGEST).success).toBe(true);
    expect(DigestSchema.safeParse(`hmac-sha256:${'0f'.repeat(8)}:${'ab'.repeat(32)}`).success).toBe(true);
  });

  it.each([
    ['no scheme', 'ab'.repeat(32)],
    ['short hex', 'sha256:abc'],
    ['upper-case hex', `sha256:${'AB'.repeat(32)}`],
    ['unknown algorithm', `md5:${'ab'.repeat(32)}`],
    ['hmac without key id', `hmac-sha256:${'ab'.repeat(32)}`],
    ['hmac with a short key id', `hmac-sha256:abc:${'ab'.repeat(32)}`],
  ])('refuses %s', (_why, digest) => {
    expect(DigestSchema.safeParse(digest).success).toBe(false);
  });
});

describe('opaque identifiers', () => {
  it.each(['session-1', 'approval-4821', 'a:b@c#d+e=f/g', 'x'.repeat(256)])('accepts %s', (id) => {
    expect(OpaqueIdSchema.safeParse(id).success).toBe(true);
  });

  it.each([
    ['an absolute path', '/home/user/.claude/transcript.jsonl'],
    ['a home path', '~/notes'],
    ['white space', 'free text here'],
    ['an empty string', ''],
    ['257 characters', 'x'.repeat(257)],
  ])('refuses %s', (_why, id) => {
    expect(OpaqueIdSchema.safeParse(id).success).toBe(false);
  });
});

describe('RFC 3339 UTC time', () => {
  it.each([
    '2026-11-30T10:00:00Z',
    '2026-11-30T10:00:00.5Z',
    '2026-11-30T10:00:00.123456789Z',
    '2028-02-29T00:00:00Z',
    '2000-02-29T00:00:00Z',
    '0000-02-29T00:00:00Z',
    '0050-06-01T00:00:00Z',
    '9999-12-31T23:59:59Z',
  ])('accepts %s', (t) => {
    expect(isRfc3339Utc(t)).toBe(true);
    expect(TimestampSchema.safeParse(t).success).toBe(true);
  });

  it.each([
    ['a date that does not exist', '2026-02-30T00:00:00Z'],
    ['February 29 outside a leap year', '2027-02-29T00:00:00Z'],
    ['February 29 in a century year not divisible by 400', '1900-02-29T00:00:00Z'],
    ['April 31', '2026-04-31T00:00:00Z'],
    ['day 0', '2026-11-00T00:00:00Z'],
    ['month 0', '2026-00-10T00:00:00Z'],
    ['month 13', '2026-13-01T00:00:00Z'],
    ['hour 24', '2026-11-30T24:00:00Z'],
    ['minute 60', '2026-11-30T10:60:00Z'],
    ['second 60', '2026-11-30T10:00:60Z'],
    ['a positive offset', '2026-11-30T12:00:00+02:00'],
    ['a zero offset written as +00:00', '2026-11-30T10:00:00+00:00'],
    ['no zone', '2026-11-30T10:00:00'],
    ['a space instead of T', '2026-11-30 10:00:00Z'],
    ['lower-case z', '2026-11-30T10:00:00z'],
    ['more than nanoseconds', '2026-11-30T10:00:00.1234567891Z'],
    ['a date only', '2026-11-30'],
  ])('refuses %s', (_why, t) => {
    expect(isRfc3339Utc(t)).toBe(false);
    expect(TimestampSchema.safeParse(t).success).toBe(false);
  });

  it('refuses a non-string with a message naming the expected form', () => {
    const r = TimestampSchema.safeParse(1_700_000_000);
    expect(r.error?.issues[0]?.message).toMatch(/RFC 3339 UTC/);
  });

  it('parses to nanoseconds, so sub-millisecond order is exact', () => {
    expect(parseRfc3339Utc('1970-01-01T00:00:00Z')).toBe(0n);
    expect(parseRfc3339Utc('1970-01-01T00:00:01.000000001Z')).toBe(1_000_000_001n);
    expect(parseRfc3339Utc('2026-11-30T10:00:00.5Z')).toBe(parseRfc3339Utc('2026-11-30T10:00:00.500000000Z'));
    expect(
      parseRfc3339Utc('2026-11-30T10:00:00.000000002Z')! > parseRfc3339Utc('2026-11-30T10:00:00.000000001Z')!,
    ).toBe(true);
  });

  it('parses years before 100 as themselves, not as 19xx', () => {
    // -60589296000 s: 0050-01-01 to 1970-01-01, computed with Python's datetime.
    expect(parseRfc3339Utc('0050-01-01T00:00:00Z')).toBe(-60_589_296_000n * 1_000_000_000n);
    // 0000-03-01: year 0 is a leap year in the proleptic Gregorian calendar (Python: date(1,1,1) has
    // ordinal 1, so 0000-03-01 is 306 days before it; 719162 days from 0001-01-01 to 1970-01-01).
    expect(parseRfc3339Utc('0000-03-01T00:00:00Z')).toBe(-(719_162n + 306n) * 86_400n * 1_000_000_000n);
  });

  it('gives the same answers when a text comes again, whatever came between (the last answer is kept)', () => {
    const texts = [
      '2026-11-30T10:00:00Z',
      '2026-11-30T10:00:00Z',
      '2026-02-30T00:00:00Z',
      '2026-02-30T00:00:00Z',
      '2026-11-30T10:00:00Z',
      '',
      '2026-11-30T10:05:00.25Z',
      '2026-11-30T10:05:00.25Z',
      'not a time',
      '2026-11-30T10:00:00Z',
    ];
    expect(texts.map((t) => isRfc3339Utc(t))).toEqual([
      true,
      true,
      false,
      false,
      true,
      false,
      true,
      true,
      false,
      true,
    ]);
    const at = 1_796_032_800n * 1_000_000_000n;
    const later = at + 300_250_000_000n;
    expect(texts.map((t) => parseRfc3339Utc(t))).toEqual([
      at,
      at,
      undefined,
      undefined,
      at,
      undefined,
      later,
      later,
      undefined,
      at,
    ]);
  });

  it('formats a clock reading as RFC 3339 UTC', () => {
    expect(formatRfc3339Utc(0)).toBe('1970-01-01T00:00:00.000Z');
    expect(isRfc3339Utc(formatRfc3339Utc(1_764_496_800_123))).toBe(true);
  });
});

describe('observations, snapshots and approvals', () => {
  const observation = { digest: DIGEST, revision: 1, observedAt: '2026-11-30T10:00:00Z' };

  it('accepts an observation with its optional source and approval reference', () => {
    expect(
      DecisionObservationSchema.parse({ ...observation, source: 'task-record', approvalRef: 'approval-1' }),
    ).toEqual({ ...observation, source: 'task-record', approvalRef: 'approval-1' });
  });

  it('refuses a revision below 1 or not an integer', () => {
    for (const revision of [0, -1, 1.5, '1']) {
      expect(DecisionObservationSchema.safeParse({ ...observation, revision }).success).toBe(false);
    }
  });

  it('refuses a raw value: observations carry digests only', () => {
    const r = DecisionObservationSchema.safeParse({ ...observation, value: 'main' });
    expect(r.success).toBe(false);
    expect(r.error?.issues[0]?.code).toBe('unrecognized_keys');
  });

  it('carries the normalizer version with every snapshot', () => {
    const snapshot = {
      sessionId: 's-1',
      capturedAt: '2026-11-30T10:00:00Z',
      normalizerVersion: 1,
      decisions: { scope: observation },
    };
    expect(SnapshotSchema.parse(snapshot)).toEqual(snapshot);
    const { normalizerVersion: _omitted, ...without } = snapshot;
    expect(SnapshotSchema.safeParse(without).success).toBe(false);
  });

  it('refuses a snapshot keyed by a bad decision name', () => {
    const r = SnapshotSchema.safeParse({
      sessionId: 's-1',
      capturedAt: '2026-11-30T10:00:00Z',
      normalizerVersion: 1,
      decisions: { 'Bad Name': observation },
    });
    expect(r.success).toBe(false);
    expect(problemsFromZod(r.error!)).toEqual([
      {
        path: 'decisions["Bad Name"]',
        message: 'invalid key: expected a decision name matching ^[a-z][a-z0-9_]{0,63}$',
      },
    ]);
  });

  it('requires every approval field, with a non-empty approval reference', () => {
    const approval = {
      decision: 'acceptance_test',
      fromDigest: DIGEST,
      toDigest: `sha256:${'cd'.repeat(32)}`,
      approvalRef: 'approval-4821',
      approvedBy: 'reviewer-17',
      approvedAt: '2026-11-30T10:03:00Z',
    };
    expect(ApprovalSchema.parse(approval)).toEqual(approval);
    expect(ApprovalSchema.safeParse({ ...approval, approvalRef: '' }).success).toBe(false);
    for (const key of Object.keys(approval)) {
      const partial: Record<string, unknown> = { ...approval };
      delete partial[key];
      expect(ApprovalSchema.safeParse(partial).success, key).toBe(false);
    }
  });
});

describe('checkDecisionCount', () => {
  const decisions = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`d${i}`, {}]));

  it('accepts three to seven decisions by default', () => {
    expect(DEFAULT_DECISION_BOUNDS).toEqual({ min: 3, max: 7 });
    expect(checkDecisionCount(decisions(3))).toBeUndefined();
    expect(checkDecisionCount(decisions(7))).toBeUndefined();
    expect(checkDecisionCount(decisions(2))).toBe('expected 3 to 7 decisions, got 2');
    expect(checkDecisionCount(decisions(8))).toBe('expected 3 to 7 decisions, got 8');
  });

  it('takes other bounds as an option', () => {
    expect(checkDecisionCount(decisions(1), { min: 1, max: 2 })).toBeUndefined();
    expect(checkDecisionCount(decisions(3), { min: 1, max: 2 })).toBe('expected 1 to 2 decisions, got 3');
  });
});

describe('activity', () => {
  it('is its own dimension: no activity state is a continuity state', () => {
    expect(ACTIVITY_STATES).toEqual(['working', 'waiting_human', 'idle']);
    for (const a of ACTIVITY_STATES) expect(CONTINUITY_STATES as readonly string[]).not.toContain(a);
  });
});

describe('input problems', () => {
  it('formats field paths the way a person writes them', () => {
    expect(formatPath(['cases', 3, 'post', 'decisions', 'scope', 'observedAt'])).toBe(
      'cases[3].post.decisions.scope.observedAt',
    );
    expect(formatPath([])).toBe('(root)');
    expect(formatPath(['a b', 0])).toBe('["a b"][0]');
  });

  it('names every unknown field, not only the first', () => {
    const r = SnapshotSchema.safeParse({
      sessionId: 's-1',
      capturedAt: '2026-11-30T10:00:00Z',
      normalizerVersion: 1,
      decisions: {},
      prompt: 'x',
      transcriptPath: 'y',
    });
    expect(problemsFromZod(r.error!, ['cases', 0, 'pre'])).toEqual([
      { path: 'cases[0].pre.prompt', message: 'unknown field; remove it' },
      { path: 'cases[0].pre.transcriptPath', message: 'unknown field; remove it' },
    ]);
  });

  it('names the source and every problem, at most five then a count', () => {
    const problems = Array.from({ length: 7 }, (_, i) => ({ path: `cases[${i}].id`, message: 'bad' }));
    const e = new InputError('fixture.json', problems);
    const lines = e.message.split('\n');
    expect(lines[0]).toBe('fixture.json: cases[0].id: bad');
    expect(lines).toHaveLength(6);
    expect(lines[5]).toBe('fixture.json: … and 2 more problems');
    expect(e.problems).toHaveLength(7);
  });
});
