/**
 * The `continuity classify` fixture format (issue 2 §6, docs/fixture-format.md), in process:
 * defaults, digesting of values, and errors that name the field path.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { InputError } from '../../src/decision/problems.js';
import { digestValue } from '../../src/digest/digest.js';
import { classifyFixture, parseFixture } from '../../src/fixture/cases.js';
import {
  caseResultsJson,
  countStates,
  renderCaseTable,
  renderCounts,
  renderTable,
} from '../../src/report/table.js';

const SIX = JSON.parse(
  readFileSync(new URL('../../examples/six-case/cases.json', import.meta.url), 'utf8'),
) as unknown;

function oneCase(c: Record<string, unknown>): unknown {
  return {
    cases: [
      {
        id: 'c1',
        pre: {
          capturedAt: '2026-11-30T10:00:00Z',
          decisions: { scope: { value: 'acme/payments', observedAt: '2026-11-30T10:00:00Z' } },
        },
        post: {
          capturedAt: '2026-11-30T10:05:00Z',
          decisions: { scope: { value: 'acme/payments', observedAt: '2026-11-30T10:05:00Z' } },
        },
        ...c,
      },
    ],
  };
}

function problemsOf(doc: unknown): Array<{ path: string; message: string }> {
  try {
    parseFixture(doc, 'f.json');
  } catch (e) {
    expect(e).toBeInstanceOf(InputError);
    expect((e as InputError).source).toBe('f.json');
    return (e as InputError).problems;
  }
  throw new Error('expected an InputError');
}

describe('parseFixture', () => {
  it('digests values with normalizer v1 and keeps digests as given', () => {
    const digest = digestValue('main');
    const [b] = parseFixture(
      oneCase({
        post: {
          capturedAt: '2026-11-30T10:05:00Z',
          decisions: {
            scope: { digest, revision: 2, observedAt: '2026-11-30T10:05:00Z', source: 'task-record' },
          },
        },
      }),
      'f.json',
    );
    expect(b!.pre!.decisions.scope).toEqual({
      digest: digestValue('acme/payments'),
      revision: 1,
      observedAt: '2026-11-30T10:00:00Z',
    });
    expect(b!.post!.decisions.scope).toEqual({
      digest,
      revision: 2,
      observedAt: '2026-11-30T10:05:00Z',
      source: 'task-record',
    });
  });

  it('keeps no raw value in what it returns', () => {
    const boundaries = parseFixture(SIX, 'cases.json');
    const text = JSON.stringify(boundaries);
    expect(text).not.toContain('acme/payments');
    expect(text).not.toContain('npm test');
    expect(text).not.toContain('"value"');
  });

  it('defaults normalizerVersion to 1, revision to 1, approvals to none, and events to the snapshots present', () => {
    const [b] = parseFixture(oneCase({ post: null }), 'f.json');
    expect(b!.pre!.normalizerVersion).toBe(1);
    expect(b!.approvals).toEqual([]);
    expect(b!.events).toEqual({ pre: true, post: false });
    expect(b!.compactedAt).toBeUndefined();
  });

  it('takes explicit events and compactedAt', () => {
    const [b] = parseFixture(
      oneCase({ events: { pre: true, post: true }, post: null, compactedAt: '2026-11-30T10:01:00Z' }),
      'f.json',
    );
    expect(b!.events).toEqual({ pre: true, post: true });
    expect(b!.compactedAt).toBe('2026-11-30T10:01:00Z');
  });

  it('digests approval values the same way as decision values', () => {
    const [b] = parseFixture(
      oneCase({
        approvals: [
          {
            decision: 'scope',
            from: 'acme/payments',
            toDigest: digestValue('acme/billing'),
            approvalRef: 'approval-1',
            approvedBy: 'reviewer-17',
            approvedAt: '2026-11-30T10:03:00Z',
          },
        ],
      }),
      'f.json',
    );
    expect(b!.approvals[0]).toEqual({
      decision: 'scope',
      fromDigest: digestValue('acme/payments'),
      toDigest: digestValue('acme/billing'),
      approvalRef: 'approval-1',
      approvedBy: 'reviewer-17',
      approvedAt: '2026-11-30T10:03:00Z',
    });
  });

  it('keeps a "__proto__" key inside a value', () => {
    const doc = JSON.parse(
      JSON.stringify(oneCase({})).replace('"value":"acme/payments"', '"value":{"__proto__":{"x":1}}'),
    ) as unknown;
    const [b] = parseFixture(doc, 'f.json');
    expect(b!.pre!.decisions.scope!.digest).toBe(digestValue(JSON.parse('{"__proto__":{"x":1}}')));
    expect(b!.pre!.decisions.scope!.digest).not.toBe(digestValue({}));
  });

  describe('invalid fixtures name the field path', () => {
    it.each([
      ['root not an object', [], '(root)'],
      ['cases missing', {}, 'cases'],
      ['cases not an array', { cases: {} }, 'cases'],
      ['unknown top-level field', { cases: [], extra: 1 }, 'extra'],
    ])('%s', (_why, doc, path) => {
      expect(problemsOf(doc).map((p) => p.path)).toContain(path);
    });

    it.each([
      [
        'bad decision name',
        {
          pre: {
            capturedAt: '2026-11-30T10:00:00Z',
            decisions: { 'Bad-Name': { value: 1, observedAt: '2026-11-30T10:00:00Z' } },
          },
        },
        'cases[0].pre.decisions["Bad-Name"]',
        /decision name/,
      ],
      ['impossible date', { compactedAt: '2026-02-30T00:00:00Z' }, 'cases[0].compactedAt', /RFC 3339 UTC/],
      [
        'non-UTC offset',
        { post: { capturedAt: '2026-11-30T12:05:00+02:00', decisions: {} } },
        'cases[0].post.capturedAt',
        /RFC 3339 UTC/,
      ],
      [
        'value and digest both set',
        {
          post: {
            capturedAt: '2026-11-30T10:05:00Z',
            decisions: { scope: { value: 1, digest: digestValue(1), observedAt: '2026-11-30T10:05:00Z' } },
          },
        },
        'cases[0].post.decisions.scope',
        /exactly one of "value" or "digest"/,
      ],
      [
        'neither value nor digest',
        {
          post: {
            capturedAt: '2026-11-30T10:05:00Z',
            decisions: { scope: { observedAt: '2026-11-30T10:05:00Z' } },
          },
        },
        'cases[0].post.decisions.scope',
        /exactly one/,
      ],
      [
        'unknown observation field',
        {
          post: {
            capturedAt: '2026-11-30T10:05:00Z',
            decisions: { scope: { value: 1, observedAt: '2026-11-30T10:05:00Z', colour: 'x' } },
          },
        },
        'cases[0].post.decisions.scope.colour',
        /unknown field/,
      ],
      [
        'revision as a string',
        {
          post: {
            capturedAt: '2026-11-30T10:05:00Z',
            decisions: { scope: { value: 1, revision: '2', observedAt: '2026-11-30T10:05:00Z' } },
          },
        },
        'cases[0].post.decisions.scope.revision',
        /integer >= 1/,
      ],
      [
        'bad digest',
        {
          post: {
            capturedAt: '2026-11-30T10:05:00Z',
            decisions: { scope: { digest: 'sha256:abc', observedAt: '2026-11-30T10:05:00Z' } },
          },
        },
        'cases[0].post.decisions.scope.digest',
        /sha256:<64 hex>/,
      ],
      ['id with a space', { id: 'case one' }, 'cases[0].id', /opaque identifier/],
      ['pre as a string', { pre: 'x' }, 'cases[0].pre', /object/],
      [
        'events.post not a boolean',
        { events: { pre: true, post: 'yes' } },
        'cases[0].events.post',
        /boolean/,
      ],
      [
        'normalizerVersion 0',
        { pre: { capturedAt: '2026-11-30T10:00:00Z', normalizerVersion: 0, decisions: {} } },
        'cases[0].pre.normalizerVersion',
        /./,
      ],
      [
        'a value under normalizerVersion 2',
        {
          pre: {
            capturedAt: '2026-11-30T10:00:00Z',
            normalizerVersion: 2,
            decisions: { scope: { value: 1, observedAt: '2026-11-30T10:00:00Z' } },
          },
        },
        'cases[0].pre.decisions.scope.value',
        /give "digest" instead/,
      ],
      [
        'approval with from and fromDigest',
        {
          approvals: [
            {
              decision: 'scope',
              from: 1,
              fromDigest: digestValue(1),
              to: 2,
              approvalRef: 'a-1',
              approvedBy: 'r',
              approvedAt: '2026-11-30T10:03:00Z',
            },
          ],
        },
        'cases[0].approvals[0]',
        /exactly one of "from" or "fromDigest"/,
      ],
      [
        'approval with an empty approvalRef',
        {
          approvals: [
            {
              decision: 'scope',
              from: 1,
              to: 2,
              approvalRef: '',
              approvedBy: 'r',
              approvedAt: '2026-11-30T10:03:00Z',
            },
          ],
        },
        'cases[0].approvals[0].approvalRef',
        /opaque identifier/,
      ],
    ])('%s', (_why, override, path, message) => {
      const problems = problemsOf(oneCase(override as Record<string, unknown>));
      const found = problems.find((p) => p.path === path);
      expect(found, JSON.stringify(problems)).toBeDefined();
      expect(found!.message).toMatch(message);
    });

    it('reports a value the normalizer refuses, with the path inside the value', () => {
      const doc = oneCase({
        pre: {
          capturedAt: '2026-11-30T10:00:00Z',
          decisions: { scope: { value: { name: 'a\uD800' }, observedAt: '2026-11-30T10:00:00Z' } },
        },
      });
      expect(problemsOf(doc)).toEqual([
        {
          path: 'cases[0].pre.decisions.scope.value',
          message: expect.stringMatching(/lone UTF-16 surrogate.*\(at \$\.name\)/),
        },
      ]);
    });

    it('reports every problem, not only the first', () => {
      const problems = problemsOf({ cases: [{ id: 'a b', pre: 1, post: null }, { id: 'ok' }] });
      expect(problems.map((p) => p.path)).toEqual(
        expect.arrayContaining(['cases[0].id', 'cases[0].pre', 'cases[1].pre']),
      );
    });
  });
});

describe('classifyFixture on the six cases', () => {
  const results = classifyFixture(parseFixture(SIX, 'cases.json'));

  it('gives 2 preserved, 1 approved_change, 1 dropped, 1 conflicting, 1 unverified', () => {
    expect(countStates(results.map((r) => r.classification.state))).toEqual({
      preserved: 2,
      approved_change: 1,
      unverified: 1,
      dropped: 1,
      conflicting: 1,
    });
  });

  it('while the event-only rule calls all six healthy', () => {
    expect(results.map((r) => r.eventOnly)).toEqual(Array(6).fill('healthy'));
  });

  it('names the decision and action of each case', () => {
    expect(
      results.map((r) => [
        r.id,
        r.classification.state,
        r.classification.primaryDecision,
        r.classification.action,
      ]),
    ).toEqual([
      ['case-1-preserved', 'preserved', 'approval_boundary', 'continue'],
      ['case-2-preserved', 'preserved', 'approval_boundary', 'continue'],
      ['case-3-approved-test-change', 'approved_change', 'acceptance_test', 'continue_with_audit'],
      ['case-4-dropped-approval-boundary', 'dropped', 'approval_boundary', 'pause_and_restore'],
      ['case-5-conflicting-scope', 'conflicting', 'scope', 'stop_and_ask_human'],
      ['case-6-stale-test-digest', 'unverified', 'acceptance_test', 'reobserve'],
    ]);
  });
});

describe('report', () => {
  const results = classifyFixture(parseFixture(SIX, 'cases.json'));

  it('counts every state, zeros included', () => {
    expect(countStates([])).toEqual({
      preserved: 0,
      approved_change: 0,
      unverified: 0,
      dropped: 0,
      conflicting: 0,
    });
  });

  it('builds the --json document with exactly the fields of issue 2 §6', () => {
    const doc = caseResultsJson(results);
    expect(Object.keys(doc)).toEqual(['cases', 'counts', 'eventOnlyCounts']);
    expect(doc.eventOnlyCounts).toEqual({ healthy: 6, unhealthy: 0 });
    for (const c of doc.cases) {
      expect(Object.keys(c)).toEqual([
        'id',
        'state',
        'action',
        'reason',
        'primaryDecision',
        'decisions',
        'eventOnly',
      ]);
    }
    expect(doc.cases[2]!.decisions.acceptance_test).toEqual({
      verdict: 'approved_change',
      reason: 'approved_chain',
      approvalRefs: ['approval-4821'],
    });
    expect(doc.cases[0]!.decisions.scope).toEqual({ verdict: 'preserved', reason: 'digest_match_fresh' });
  });

  it('renders an aligned table with a header rule', () => {
    expect(renderTable(['a', 'bb'], [['ccc', 'd']])).toBe('a    bb\n---  --\nccc  d');
  });

  it('renders the six-case table with one row per case and its action', () => {
    const lines = renderCaseTable(results).split('\n');
    expect(lines[0]).toMatch(/^case\s+event-only rule\s+continuity state\s+decision\s+reason\s+action$/);
    expect(lines).toHaveLength(8);
    expect(lines[5]).toMatch(
      /^case-4-dropped-approval-boundary\s+healthy\s+dropped\s+approval_boundary\s+absent_after_compaction\s+pause_and_restore$/,
    );
  });

  it('renders counts on one line', () => {
    expect(renderCounts({ healthy: 6, unhealthy: 0 })).toBe('healthy 6 · unhealthy 0');
  });
});
